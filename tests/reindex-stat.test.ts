import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { RACY_MS, reindexStore } from "@/lib/index/reindex";
import { verifyStore } from "@/lib/index/verify";
import { createStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";

// An unchanged reindex trusts a file's size, mtime, ctime and inode instead
// of reading and hashing it, but only when its content was read well after
// its last change (a "racy" read could be followed by a same-size edit in the
// same timestamp tick). These tests edit files behind the index's back and
// check what a reindex and verify report. Writing a file moves its ctime to
// now, which the tests cannot set back: `later` moves the clock the index
// reads (Date only) past the racy window instead of sleeping.

let env: ReturnType<typeof useTempDataDir>;
let src: string;
beforeEach(() => {
  src = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-src-"));
  env = useTempDataDir({ DUALMIND_SOURCE_ROOTS: `notes=${src}` });
  createStore({ input: { name: "notes" }, actor: "test" });
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  env.cleanup();
  fs.rmSync(src, { recursive: true, force: true });
});

const reindex = () => reindexStore({ handle: getStoreDb({ store: "notes" }) });
const file = (name: string) => path.join(src, name);
/** Set a file's mtime (ms) the way a copy that preserves times would. */
const setMtime = (name: string, ms: number) => fs.utimesSync(file(name), new Date(ms), new Date(ms));
const mtimeOf = (name: string) => Math.floor(fs.statSync(file(name)).mtimeMs);
/** The index reads and records times this much later than the files' last change (the clock moves, the files do not). */
const later = (ms: number) => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(Date.now() + ms);
};
/** How many times the reindex opened this file (to read it). */
function opensDuring<T>(name: string, run: () => T): { result: T; opens: number } {
  const spy = vi.spyOn(fs, "openSync");
  try {
    const result = run();
    return { result, opens: spy.mock.calls.filter(([p]) => p === file(name)).length };
  } finally {
    spy.mockRestore();
  }
}
/** The root is named after its folder: `source/<folder>/<file>`. */
const docPath = (name: string) => `source/${path.basename(src)}/${name}`;
const indexedText = (name: string) =>
  (getStoreDb({ store: "notes" }).sqlite.prepare("select group_concat(c.text, '') as t from chunks c join documents d using (doc_id) where d.path = ?").get(docPath(name)) as { t: string | null }).t ?? "";

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

  it("a file read well after its last change is not read again while its stat stays; a same-size edit under the old mtime is caught (its ctime moved); verify agrees", () => {
    const old = Math.floor((Date.now() - 60 * RACY_MS) / 1000) * 1000; // whole seconds: utimes keeps them exactly
    fs.writeFileSync(file("b.md"), "# Beta\n\nquartz summit orchard\n");
    setMtime("b.md", old);
    later(2 * RACY_MS);
    expect(reindex().counts).toMatchObject({ added: 1 });
    const again = opensDuring("b.md", reindex);
    expect(again.result.counts).toMatchObject({ unchanged: 1, changed: 0 });
    expect(again.opens).toBe(0);

    // Edited behind the index's back with the size and mtime restored (a time-preserving copy): the ctime moved, so it is read.
    fs.writeFileSync(file("b.md"), "# Beta\n\nquartz canyon orchard\n");
    setMtime("b.md", old);
    expect(reindex().counts).toMatchObject({ changed: 1 });
    expect(indexedText("b.md")).toContain("canyon");
    // A new size as well, even under the old mtime.
    fs.writeFileSync(file("b.md"), "# Beta\n\nquartz canyon orchard, longer now\n");
    setMtime("b.md", old);
    expect(reindex().counts).toMatchObject({ changed: 1 });
    expect(verifyStore({ handle: getStoreDb({ store: "notes" }) }).ok).toBe(true);
  });

  it("a file replaced by another of the same size and mtime (a rename over it: a new inode) is read again", () => {
    const old = Math.floor((Date.now() - 60 * RACY_MS) / 1000) * 1000;
    fs.writeFileSync(file("d.md"), "# Delta\n\nbasalt harbor\n");
    setMtime("d.md", old);
    later(2 * RACY_MS);
    expect(reindex().counts).toMatchObject({ added: 1 });
    expect(opensDuring("d.md", reindex).opens).toBe(0);

    const inodeBefore = fs.statSync(file("d.md")).ino;
    fs.writeFileSync(file("d.md.new"), "# Delta\n\nbasalt meadow\n");
    expect(fs.statSync(file("d.md.new")).size).toBe(fs.statSync(file("d.md")).size);
    setMtime("d.md.new", old);
    fs.renameSync(file("d.md.new"), file("d.md"));
    expect(fs.statSync(file("d.md")).ino).not.toBe(inodeBefore);
    expect(mtimeOf("d.md")).toBe(old);

    later(2 * RACY_MS);
    expect(reindex().counts).toMatchObject({ changed: 1 });
    expect(indexedText("d.md")).toContain("meadow");
    expect(verifyStore({ handle: getStoreDb({ store: "notes" }) }).ok).toBe(true);
  });

  it("rows indexed before ctime and inode were recorded are read once, then trusted", () => {
    const old = Math.floor((Date.now() - 60 * RACY_MS) / 1000) * 1000;
    fs.writeFileSync(file("e.md"), "# Epsilon\n\nslate lantern\n");
    setMtime("e.md", old);
    later(2 * RACY_MS);
    reindex();
    getStoreDb({ store: "notes" }).sqlite.prepare("update documents set ctime = null, inode = null").run();
    expect(opensDuring("e.md", reindex)).toMatchObject({ result: { counts: { unchanged: 1 } }, opens: 1 });
    expect(opensDuring("e.md", reindex)).toMatchObject({ result: { counts: { unchanged: 1 } }, opens: 0 });
  });

  it("a touched file (same content, new mtime) counts as unchanged and its new mtime is recorded, so the next scan trusts it", () => {
    const old = Math.floor((Date.now() - 60 * RACY_MS) / 1000) * 1000; // whole seconds: utimes keeps them exactly
    fs.writeFileSync(file("c.md"), "# Gamma\n\nember willow granite\n");
    setMtime("c.md", old);
    reindex();
    setMtime("c.md", old + 5000);
    later(2 * RACY_MS);
    expect(reindex().counts).toMatchObject({ unchanged: 1, changed: 0 });
    const row = getStoreDb({ store: "notes" }).sqlite.prepare("select mtime, indexed_at as indexedAt from documents where path = ?").get(docPath("c.md")) as { mtime: number; indexedAt: number };
    expect(row.mtime).toBe(old + 5000);
    expect(row.indexedAt - row.mtime).toBeGreaterThanOrEqual(RACY_MS);
    // Trusted now: not read again.
    expect(opensDuring("c.md", reindex)).toMatchObject({ result: { counts: { unchanged: 1 } }, opens: 0 });
  });
});
