import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { RACY_MS, reindexStore } from "@/lib/index/reindex";
import { verifyStore } from "@/lib/index/verify";
import { createStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";

// An unchanged reindex trusts a file's size and mtime instead of reading and
// hashing it, but only when its content was read well after its mtime (a
// "racy" read could be followed by a same-size edit in the same timestamp
// tick). These tests edit files behind the index's back and check what a
// reindex and verify report.

let env: ReturnType<typeof useTempDataDir>;
let src: string;
beforeEach(() => {
  src = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-src-"));
  env = useTempDataDir({ DUALMIND_SOURCE_ROOTS: `notes=${src}` });
  createStore({ input: { name: "notes" }, actor: "test" });
});
afterEach(() => {
  env.cleanup();
  fs.rmSync(src, { recursive: true, force: true });
});

const reindex = () => reindexStore({ handle: getStoreDb("notes") });
const file = (name: string) => path.join(src, name);
/** Set a file's mtime (ms) the way a copy that preserves times would. */
const setMtime = (name: string, ms: number) => fs.utimesSync(file(name), new Date(ms), new Date(ms));
const mtimeOf = (name: string) => Math.floor(fs.statSync(file(name)).mtimeMs);
/** The root is named after its folder: `source/<folder>/<file>`. */
const docPath = (name: string) => `source/${path.basename(src)}/${name}`;
const indexedText = (name: string) =>
  (getStoreDb("notes").sqlite.prepare("select group_concat(c.text, '') as t from chunks c join documents d using (doc_id) where d.path = ?").get(docPath(name)) as { t: string | null }).t ?? "";

describe("unchanged reindex by size and mtime", () => {
  it("a same-size edit that keeps the mtime is still caught when the file was indexed right after it was written (racy)", () => {
    fs.writeFileSync(file("a.md"), "# Alpha\n\nthe harbor lantern\n");
    const written = mtimeOf("a.md");
    expect(reindex().counts).toMatchObject({ added: 1 });
    fs.writeFileSync(file("a.md"), "# Alpha\n\nthe meadow lantern\n");
    setMtime("a.md", written);
    expect(reindex().counts).toMatchObject({ changed: 1, unchanged: 0 });
    expect(indexedText("a.md")).toContain("meadow");
  });

  it("a file read well after its mtime is not read again while size and mtime stay; any change to either is picked up; verify still hashes", () => {
    const old = Math.floor((Date.now() - 60 * RACY_MS) / 1000) * 1000; // whole seconds: utimes keeps them exactly
    fs.writeFileSync(file("b.md"), "# Beta\n\nquartz summit orchard\n");
    setMtime("b.md", old);
    expect(reindex().counts).toMatchObject({ added: 1 });
    expect(reindex().counts).toMatchObject({ unchanged: 1, changed: 0 });

    // Edited behind the index's back with the size and mtime restored (a time-preserving copy): stat vouches, so reindex keeps the old text...
    fs.writeFileSync(file("b.md"), "# Beta\n\nquartz canyon orchard\n");
    setMtime("b.md", old);
    expect(reindex().counts).toMatchObject({ unchanged: 1, changed: 0 });
    expect(indexedText("b.md")).toContain("summit");
    // ...which verify, reading every file, reports.
    expect(verifyStore({ handle: getStoreDb("notes") })).toMatchObject({ ok: false, hashMismatches: [docPath("b.md")] });

    // A new mtime (any save) makes reindex read it again.
    setMtime("b.md", old + 1000);
    expect(reindex().counts).toMatchObject({ changed: 1 });
    expect(indexedText("b.md")).toContain("canyon");
    // A new size as well, even under the old mtime.
    fs.writeFileSync(file("b.md"), "# Beta\n\nquartz canyon orchard, longer now\n");
    setMtime("b.md", old + 1000);
    expect(reindex().counts).toMatchObject({ changed: 1 });
    expect(verifyStore({ handle: getStoreDb("notes") }).ok).toBe(true);
  });

  it("a touched file (same content, new mtime) counts as unchanged and its new mtime is recorded, so the next scan trusts it", () => {
    const old = Math.floor((Date.now() - 60 * RACY_MS) / 1000) * 1000; // whole seconds: utimes keeps them exactly
    fs.writeFileSync(file("c.md"), "# Gamma\n\nember willow granite\n");
    setMtime("c.md", old);
    reindex();
    setMtime("c.md", old + 5000);
    expect(reindex().counts).toMatchObject({ unchanged: 1, changed: 0 });
    const row = getStoreDb("notes").sqlite.prepare("select mtime, indexed_at as indexedAt from documents where path = ?").get(docPath("c.md")) as { mtime: number; indexedAt: number };
    expect(row.mtime).toBe(old + 5000);
    expect(row.indexedAt - row.mtime).toBeGreaterThanOrEqual(RACY_MS);
    // Trusted now: a same-size, same-mtime edit is not read (verify would report it, as above).
    fs.writeFileSync(file("c.md"), "# Gamma\n\nember willow thistle\n");
    setMtime("c.md", old + 5000);
    expect(reindex().counts).toMatchObject({ unchanged: 1 });
    expect(indexedText("c.md")).toContain("granite");
  });
});
