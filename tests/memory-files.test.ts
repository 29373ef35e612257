import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { z } from "zod";
import { governance } from "@/lib/backend/governance";
import { closeAllDatabases, getStoreDb, storeDir } from "@/lib/db/connection";
import { isAppError } from "@/lib/errors";
import { createMemorySchema } from "@/lib/index/memories";
import { reindexStore } from "@/lib/index/reindex";
import { verifyStoreAsync } from "@/lib/index/verify";
import { startMemoryWatch, stopMemoryWatch } from "@/lib/index/watch";
import { stores } from "@/lib/stores/backend";
import { closePg } from "@/lib/db/pg";
import { chunksOfDocument, itSqliteOnly, onPg, searchHere, seedStore, storeSql, useTestBackend, type TestEnv } from "./backend";
import { until } from "./helpers";

// The memory folder as a user expects it: frontmatter is metadata (both
// backends); on SQLite the memory/ folder is the truth, so files edited on
// disk, odd names, unindexable files, delete on a full disk and verify's
// budget are checked there (PostgreSQL keeps memories in a table).
const FILES = "the memory/ folder on disk is SQLite's truth (PostgreSQL keeps memories in its memories table)";

let env: TestEnv;
const store = "team";

beforeEach(async () => {
  env = await useTestBackend();
  await seedStore(store);
});
afterEach(async () => {
  await stopMemoryWatch();
  await env.cleanup();
});

const create = (input: z.input<typeof createMemorySchema>) => stores().createMemory({ store, input: createMemorySchema.parse(input), actor: "user:ed" });
const memoryRoot = () => path.join(storeDir(store), "memory");
const writeOnDisk = (rel: string, content: string | Buffer) => {
  const abs = path.join(memoryRoot(), rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, content);
};
const hitPaths = async (q: string) => (await searchHere(store, { q, mode: "fts" })).results.map((h) => h.path);

describe("frontmatter is metadata, not body", () => {
  it("a memory's chunks and search snippets never hold its YAML; its tags and summary are its fields", async () => {
    await create({ path: "projects/apollo", body: "# Apollo\n\nThe launch window opens on Tuesday for the orbiter.\n", tags: ["space", "launch"], summary: "Apollo launch plan" });
    const chunks = await chunksOfDocument(store, "memory/projects/apollo.md");
    expect(chunks.length).toBeGreaterThan(0);
    for (const c of chunks) {
      expect(c.text).not.toMatch(/^---/);
      expect(c.text).not.toContain("created_at");
      expect(c.text).not.toContain("tags:");
    }
    // The byte range still indexes the file: the body starts after the frontmatter.
    expect(chunks[0].startByte).toBeGreaterThan(0);
    const result = await searchHere(store, { q: "launch window orbiter", mode: "fts" });
    const hit = result.results.find((h) => h.path === "memory/projects/apollo.md");
    expect(hit).toBeDefined();
    expect(hit!.snippet).not.toMatch(/^\s*---/);
    expect(hit!.snippet).not.toMatch(/created_at|tags:/);
    const m = await stores().getMemory({ store, memoryPath: "projects/apollo" });
    expect(m.tags).toEqual(["space", "launch"]);
    expect(m.summary).toBe("Apollo launch plan");
    // The tags filter finds it by its field.
    expect((await searchHere(store, { q: "orbiter", mode: "fts", tags: "launch" })).results.map((h) => h.path)).toContain("memory/projects/apollo.md");
  });

  it("a store indexed before the change re-indexes its memories by itself on first open", async () => {
    await create({ path: "notes/old", body: "Plain body words here.\n", tags: ["legacy"] });
    // As an older version left it: the first chunk began with the YAML, and the migration marked the document (sha256 '').
    const oldChunk = "update chunks set text = '---' || chr(10) || 'tags: [legacy]' || chr(10) || text, start_byte = 0, chunk_id = ? where doc_id = (select doc_id from documents where path = 'memory/notes/old.md')";
    await storeSql(store, onPg ? oldChunk : oldChunk.replaceAll("chr(10)", "char(10)"), ["0123456789abcdef0123456789abcdef"]);
    await storeSql(store, "update documents set sha256 = '' where path like 'memory/%'");
    if (onPg) {
      // The migration runs when a replica opens a store whose schema is behind.
      await storeSql(store, "update store_meta set value = 'older' where key = 'schema_version'");
      await closePg();
    } else {
      await storeSql(store, "update documents set ctime = null, inode = null where path like 'memory/%'");
      await storeSql(store, "delete from meta where key = 'index_built_at'");
      closeAllDatabases();
    }
    // Any first use of the store (here a search) opens it, and opening re-indexes what the migration marked.
    expect(await hitPaths("plain body words")).toEqual(["memory/notes/old.md"]);
    const chunks = await chunksOfDocument(store, "memory/notes/old.md");
    expect(chunks.map((c) => c.text).join("")).not.toContain("tags:");
    expect((await stores().verifyStore({ store })).ok).toBe(true);
  });
});

describe("the memory folder is live", () => {
  itSqliteOnly("files edited, added, deleted and renamed on disk are indexed without a reindex, and audited as a file change", FILES, async () => {
    await create({ path: "notes/first", body: "alpha content\n" });
    startMemoryWatch({ scanMs: 60_000, batchMs: 50 });
    writeOnDisk("notes/pulled.md", "---\ntags: [\"git\"]\n---\nzephyrous words from a pull\n");
    await until("added file searchable", () => hitPaths("zephyrous"), (p) => p.includes("memory/notes/pulled.md"));
    writeOnDisk("notes/first.md", "bravo replaced text\n");
    await until("edited file searchable by its new text", () => hitPaths("bravo"), (p) => p.includes("memory/notes/first.md"));
    expect(await hitPaths("alpha")).not.toContain("memory/notes/first.md");
    fs.renameSync(path.join(memoryRoot(), "notes/pulled.md"), path.join(memoryRoot(), "notes/renamed.md"));
    await until("renamed file under its new name only", () => hitPaths("zephyrous"), (p) => p.length === 1 && p[0] === "memory/notes/renamed.md");
    fs.rmSync(path.join(memoryRoot(), "notes/first.md"));
    await until("deleted file gone from search", () => hitPaths("bravo"), (p) => p.length === 0);
    const audit = await governance().listAuditTail({ limit: 50 });
    expect(audit.some((a) => a.action === "store.file_change" && a.actor === "system:files" && a.target === `store:${store}`)).toBe(true);
    expect((await stores().verifyStore({ store })).ok).toBe(true);
  });

  itSqliteOnly("a tree changed while the server was down is noticed at start-up", FILES, async () => {
    await create({ path: "notes/kept", body: "kept words\n" });
    writeOnDisk("notes/offline.md", "quixotic edit made while stopped\n");
    expect(await hitPaths("quixotic")).toEqual([]);
    startMemoryWatch({ scanMs: 60_000, batchMs: 50 });
    await until("offline edit indexed after start", () => hitPaths("quixotic"), (p) => p.includes("memory/notes/offline.md"));
  });
});

describe("names a person would use", () => {
  itSqliteOnly("dots, spaces, a top-level README, depth and Latin-1 are indexed; verify agrees", FILES, async () => {
    const deep = Array.from({ length: 10 }, (_, i) => `level${i}`).join("/");
    writeOnDisk("releases/v1.2-release.md", "gossamer release notes\n");
    writeOnDisk("Team Stuff/Team Notes.md", "halcyon team notes\n");
    writeOnDisk("README.md", "# Our memory\n\nlabyrinthine readme words\n");
    writeOnDisk(`${deep}/bottom.md`, "subterranean deep file\n");
    writeOnDisk("notes/latin1.md", Buffer.from("caf\xe9 cr\xe8me br\xfbl\xe9e fa\xe7ade\n", "latin1"));
    const r = reindexStore({ handle: getStoreDb({ store }) });
    expect(r.unindexable).toEqual([]);
    expect(await hitPaths("gossamer")).toEqual(["memory/releases/v1.2-release.md"]);
    expect(await hitPaths("halcyon")).toEqual(["memory/Team Stuff/Team Notes.md"]);
    expect(await hitPaths("labyrinthine")).toEqual(["memory/README.md"]);
    expect(await hitPaths("subterranean")).toEqual([`memory/${deep}/bottom.md`]);
    expect(await hitPaths("façade")).toEqual(["memory/notes/latin1.md"]);
    expect((await stores().getMemory({ store, memoryPath: "Team Stuff/Team Notes" })).body).toBe("halcyon team notes\n");
    const v = await stores().verifyStore({ store });
    expect(v.unindexable).toEqual([]);
    expect(v.ok).toBe(true);
  });

  itSqliteOnly("conflict markers and unclosed frontmatter are listed with the reason, never indexed with their tags dropped", FILES, async () => {
    writeOnDisk("notes/conflicted.md", "---\ntags: [\"a\"]\n---\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> main\n");
    writeOnDisk("notes/unclosed.md", "---\ntags: [\"lost\"]\nsummary: \"never closed\"\nbody words\n");
    writeOnDisk("notes/_draft.md", "a name no memory path takes\n");
    const r = reindexStore({ handle: getStoreDb({ store }) });
    const reasons = Object.fromEntries(r.unindexable.map((u) => [u.path, u.reason]));
    expect(reasons["memory/notes/conflicted.md"]).toMatch(/merge-conflict/);
    expect(reasons["memory/notes/unclosed.md"]).toMatch(/never closed/);
    expect(reasons["memory/notes/_draft.md"]).toMatch(/^name:/);
    expect(await hitPaths("theirs")).toEqual([]);
    expect(await hitPaths("lost")).toEqual([]);
    const v = await stores().verifyStore({ store });
    expect(v.ok).toBe(false);
    expect(v.in_sync).toBe(false);
    expect(v.unindexable.map((u) => u.path)).toEqual(["memory/notes/_draft.md", "memory/notes/conflicted.md", "memory/notes/unclosed.md"]);
    expect(v.unindexable.every((u) => u.reason.length > 0)).toBe(true);
  });
});

describe("delete keeps the file and the index in step", () => {
  /** A tmpfs of 1 MB mounted over the store's folder (root only), its content copied in. */
  function mountSmallDisk(): (() => void) | null {
    const dir = storeDir(store);
    const saved = `${dir}.saved`;
    closeAllDatabases();
    fs.renameSync(dir, saved);
    fs.mkdirSync(dir);
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1M", "tmpfs", dir], { stdio: "ignore" });
    } catch {
      fs.rmdirSync(dir);
      fs.renameSync(saved, dir);
      return null;
    }
    fs.cpSync(saved, dir, { recursive: true });
    return () => {
      closeAllDatabases();
      execFileSync("umount", [dir]);
      fs.rmSync(saved, { recursive: true, force: true });
    };
  }

  itSqliteOnly("a delete on a full disk answers 503 with the reason and keeps both the file and its search hits; the retry succeeds once there is room", FILES, async () => {
    await create({ path: "notes/doomed", body: "obstinate memory that must survive a failed delete\n" });
    const unmount = mountSmallDisk();
    if (!unmount) return; // No tmpfs here (not root): the full-disk path cannot be made real.
    try {
      const handle = getStoreDb({ store });
      handle.sqlite.pragma("wal_checkpoint(TRUNCATE)");
      const filler = path.join(storeDir(store), "filler");
      const fd = fs.openSync(filler, "w");
      try {
        for (;;) fs.writeSync(fd, Buffer.alloc(4096));
      } catch (e) {
        expect((e as NodeJS.ErrnoException).code).toBe("ENOSPC");
      } finally {
        fs.closeSync(fd);
      }
      expect(fs.statfsSync(storeDir(store)).bavail).toBe(0);
      const err = await stores().deleteMemory({ store, memoryPath: "notes/doomed", actor: "user:ed" }).then(() => null, (e: unknown) => e);
      expect(isAppError(err) && err.status).toBe(503);
      expect((err as Error).message).toMatch(/storage is full/);
      expect(fs.existsSync(path.join(memoryRoot(), "notes/doomed.md"))).toBe(true);
      expect(await hitPaths("obstinate")).toEqual(["memory/notes/doomed.md"]);
      fs.rmSync(filler);
      await stores().deleteMemory({ store, memoryPath: "notes/doomed", actor: "user:ed" });
      expect(fs.existsSync(path.join(memoryRoot(), "notes/doomed.md"))).toBe(false);
      expect(await hitPaths("obstinate")).toEqual([]);
      expect(fs.readdirSync(path.join(memoryRoot(), "notes"))).toEqual([]);
    } finally {
      unmount();
    }
  });
});

describe("verify is bounded", () => {
  itSqliteOnly("ten verifies at once share one run, and the event loop keeps turning while it hashes", FILES, async () => {
    for (let i = 0; i < 300; i++) writeOnDisk(`bulk/n${i}.md`, `note ${i} ${"words ".repeat(200)}\n`);
    reindexStore({ handle: getStoreDb({ store }) });
    let turns = 0;
    let counting = true;
    const tick = () => {
      turns++;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    const reports = await Promise.all(Array.from({ length: 10 }, () => verifyStoreAsync({ handle: getStoreDb({ store }) })));
    counting = false;
    expect(new Set(reports).size).toBe(1);
    expect(reports[0].ok).toBe(true);
    expect(reports[0].counts.files).toBe(300);
    // Other work ran between the hashing steps (a synchronous verify would leave none).
    expect(turns).toBeGreaterThan(5);
  });
});
