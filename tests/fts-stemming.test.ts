import Database from "better-sqlite3";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { applyPragmas, closeAllDatabases, getGovernance, getStoreDb, loadVectorExtension, type StoreHandle } from "@/lib/db/connection";
import { seededRandom } from "@/bench/corpus";
import { CHUNKING_VERSION } from "@/lib/index/chunking";
import { CHUNK_FTS_TOKENIZER, ftsRebuildState, rebuildFtsBatch, runFtsRebuild } from "@/lib/index/fts-rebuild";
import { deleteDocumentByPath, ingestDocument } from "@/lib/index/ingest";
import { reindexStore } from "@/lib/index/reindex";
import { searchInputSchema, searchStore } from "@/lib/index/search";
import { verifyStore } from "@/lib/index/verify";
import { stores } from "@/lib/stores/backend";
import { createStore, openStore } from "@/lib/stores/stores";
import { itSqliteOnly, searchHere, seedDocument, seedStore, sqliteOnlyCheck, useTestBackend, type TestEnv } from "./backend";
import { spawnCli } from "./fixtures/cli";
import { migrationsUpTo } from "./helpers";
import { patience } from "./fixtures/patience";

// The chunk full-text index gains stemming (porter) by a migration that
// rebuilds only that index, resumably. These tests build a store the way the
// previous release left it (migrations up to 0008: unicode61, no stemming),
// open it with this code, and check what a user sees: stemmed queries find
// their words once rebuilt, search answers during the rebuild, a kill -9
// loses nothing, and writes during the rebuild keep the index exact. Those
// are SQLite's FTS5 index; what a user sees of stemming (inflected words
// found, writes followed at once) runs on PostgreSQL too, whose chunks.tsv is
// to_tsvector('english', …) with the same stemming.

const LAST_OLD_MIGRATION = "0008_recall_fts";
const EARLY = { path: "ops/backups.md", text: "The backup job runs every night and copies the archive offsite." };
const LATE = { path: "zoo/birds.md", text: "Migratory birds flies south before the first frost." };

let env: TestEnv;
let scratch: string;
beforeEach(async () => {
  env = await useTestBackend();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-fts-old-"));
});
afterEach(async () => {
  await env.cleanup();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const FILLER = "ledger harbor quartz meadow lantern copper violet summit orchard canyon ember willow granite parcel beacon thistle".split(" ");

/**
 * A store at the old schema with `docs` documents of 10 chunks each (EARLY
 * first, LATE last), written with the old schema's own SQL, as the previous
 * release's ingest left them (its chunk FTS index filled by its triggers).
 */
function createOldStore({ store, docs }: { store: string; docs: number }): void {
  const dir = path.join(env.dataDir, "stores", store);
  fs.mkdirSync(path.join(dir, "memory"), { recursive: true });
  const sqlite = new Database(path.join(dir, "index.db"));
  applyPragmas(sqlite);
  loadVectorExtension(sqlite);
  migrate(drizzle(sqlite), { migrationsFolder: migrationsUpTo({ which: "index", last: LAST_OLD_MIGRATION, scratch }) });
  const random = seededRandom(16);
  const filler = (n: number) => Array.from({ length: n }, () => FILLER[Math.floor(random() * FILLER.length)]).join(" ");
  const all = [EARLY, ...Array.from({ length: docs - 2 }, (_, i) => ({ path: `notes/n${String(i).padStart(5, "0")}.md`, text: "" })), LATE];
  const addDoc = sqlite.prepare("insert into documents(path, origin, kind, sha256, bytes, mtime, content, indexed_at) values (?, 'api', 'markdown', ?, ?, 0, null, 0)");
  const addChunk = sqlite.prepare("insert into chunks(chunk_id, doc_id, chunk_index, chunk_sha256, chunking_version, start_byte, end_byte, text) values (?, ?, ?, ?, ?, 0, 0, ?)");
  sqlite.transaction(() => {
    for (const [d, doc] of all.entries()) {
      const docId = Number(addDoc.run(doc.path, `sha-${d}`, 100).lastInsertRowid);
      for (let c = 0; c < 10; c++) {
        const text = c === 0 && doc.text ? doc.text : filler(40);
        addChunk.run(`${d}:${c}`, docId, c, `sha-${d}-${c}`, CHUNKING_VERSION, text);
      }
    }
    sqlite.prepare("insert into meta(key, value) values ('index_built_at', '1'), ('chunking_version', ?)").run(String(CHUNKING_VERSION));
  })();
  // What the old index could not do: an inflected form never matched.
  const hits = (q: string) => (sqlite.prepare("select count(*) as n from chunks_fts where chunks_fts match ?").get(q) as { n: number }).n;
  expect(hits('"runs" "backup"')).toBe(1);
  expect(hits('"running" "backup"')).toBe(0);
  sqlite.close();
}

/** Why the old-store tests are SQLite's alone. */
const OLD_STORE = "an index.db at the old SQLite schema (unicode61 FTS5) and its resumable FTS5 rebuild; PostgreSQL stems from its first migration";

const pathsHere = async (store: string, q: string) => (await searchHere(store, { q, mode: "fts" })).results.map((h) => h.path);

async function searchPaths(handle: StoreHandle, q: string): Promise<string[]> {
  const res = await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, mode: "fts" }) });
  return res.results.map((h) => h.path);
}

/** FTS5's own check that an external-content index matches its content table row for row (throws if not). */
function ftsIntegrityCheck(handle: StoreHandle): void {
  handle.sqlite.prepare("insert into chunks_fts(chunks_fts, rank) values ('integrity-check', 1)").run();
}

describe("stemmed chunk full-text index (migration 0009)", () => {
  itSqliteOnly("rebuilds an old store's index in batches: search answers from the rows done so far, and finds inflected words when done", OLD_STORE, async () => {
    createOldStore({ store: "old", docs: 200 });
    const handle = getStoreDb({ store: "old" });
    const meta = (key: string) => (handle.sqlite.prepare("select value from meta where key = ?").get(key) as { value: string } | undefined)?.value;
    expect(meta("fts_tokenizer")).toBe(CHUNK_FTS_TOKENIZER);
    expect(ftsRebuildState(handle)).toEqual({ pending: true, done: 0, total: 2000 });
    // The migration itself indexed nothing: opening stays quick however big the store.
    expect(await searchPaths(handle, "runs backup")).toEqual([]);

    expect(rebuildFtsBatch({ handle, batchSize: 500 })).toBe(true);
    expect(ftsRebuildState(handle)).toEqual({ pending: true, done: 500, total: 2000 });
    expect(await searchPaths(handle, "running backup")).toEqual([EARLY.path]);
    expect(await searchPaths(handle, "bird frosts")).toEqual([]);
    // The answer says it was given from part of the index, so an empty or thin answer is not mistaken for "not there".
    const during = await searchStore({ handle, core: null, input: searchInputSchema.parse({ q: "bird frosts", mode: "fts" }) });
    expect(during.fts_rebuild).toEqual([{ store: "old", pending: true, done: 500, total: 2000 }]);
    expect(during.warnings.map((w) => w.code)).toContain("fts_rebuilding");

    const end = await runFtsRebuild({ handle, batchSize: 500 });
    expect(end).toEqual({ pending: false, done: 2000, total: 2000 });
    expect(ftsRebuildState(handle)).toEqual({ pending: false, done: 0, total: 0 });
    expect(meta("fts_rebuild_target")).toBeUndefined();
    expect(await searchPaths(handle, "running backups")).toEqual([EARLY.path]);
    expect(await searchPaths(handle, "bird frosts")).toEqual([LATE.path]);
    const after = await searchStore({ handle, core: null, input: searchInputSchema.parse({ q: "bird frosts", mode: "fts" }) });
    expect(after.fts_rebuild).toBeUndefined();
    expect(after.warnings.map((w) => w.code)).not.toContain("fts_rebuilding");
    ftsIntegrityCheck(handle);
    expect(verifyStore({ handle }).consistent).toBe(true);
  });

  itSqliteOnly("a rebuild killed with SIGKILL resumes where it stopped on the next open and completes; a later unchanged reindex does not redo it", OLD_STORE, async () => {
    createOldStore({ store: "big", docs: 600 });
    closeAllDatabases();
    const child = spawn(process.execPath, ["--import", "tsx", path.join("tests", "fixtures", "fts-rebuild-child.ts"), "big", "40"], {
      cwd: process.cwd(),
      env: { ...process.env, DATA_DIR: env.dataDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let reported = 0;
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        reported = Math.max(reported, ...[...out.matchAll(/DONE (\d+)/g)].map((m) => Number(m[1])));
        if (reported >= 1200) resolve();
      });
      child.on("exit", () => reject(new Error(`child exited before it was killed: ${out.slice(-500)}`)));
    });
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    expect(out).not.toContain("FINISHED");

    const handle = getStoreDb({ store: "big" });
    expect(handle.sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
    const after = ftsRebuildState(handle);
    // Every batch it reported is kept; it did not get to the end.
    expect(after.pending).toBe(true);
    expect(after.done).toBeGreaterThanOrEqual(reported);
    expect(after.done).toBeLessThan(after.total);
    // The rows indexed so far are exact (nothing missing outside the pending range, nothing extra), and searchable.
    const mid = verifyStore({ handle });
    expect(mid).toMatchObject({ consistent: true, fts_missing: 0, fts_extra: 0 });
    expect(await searchPaths(handle, "running backup")).toEqual([EARLY.path]);
    expect(await searchPaths(handle, "bird frosts")).toEqual([]);

    // Opening the store the way every request does carries the rebuild on in the background.
    const opened = openStore({ store: "big" });
    await vi.waitFor(() => expect(ftsRebuildState(opened).pending).toBe(false), { timeout: 30_000, interval: 20 });
    expect(await searchPaths(opened, "bird frosts")).toEqual([LATE.path]);
    // Resumed, not restarted over the rows already done: a row indexed twice would fail this.
    ftsIntegrityCheck(opened);
    expect((opened.sqlite.prepare("select count(*) as n from chunks_fts_docsize").get() as { n: number }).n).toBe(6000);

    const changesBefore = (opened.sqlite.prepare("select total_changes() as n").get() as { n: number }).n;
    reindexStore({ handle: opened });
    expect((opened.sqlite.prepare("select total_changes() as n").get() as { n: number }).n).toBe(changesBefore);
    expect(ftsRebuildState(opened).pending).toBe(false);
  }, patience(60_000));

  itSqliteOnly("writes during the rebuild (new, changed and deleted documents on both sides of its progress) leave the index exact", OLD_STORE, async () => {
    createOldStore({ store: "busy", docs: 100 });
    const handle = getStoreDb({ store: "busy" });
    rebuildFtsBatch({ handle, batchSize: 300 });
    // Documents 0..29 are indexed, 30..99 are not yet.
    ingestDocument({ handle, path: "new/rivers.md", origin: "api", text: "# Rivers\n\nThe river floods every spring after heavy rains.", mtime: 1 });
    expect(await searchPaths(handle, "flooding rivers")).toEqual(["new/rivers.md"]);
    ingestDocument({ handle, path: EARLY.path, origin: "api", text: "# Backups\n\nSnapshots are taken hourly and pruned weekly.", mtime: 2 });
    ingestDocument({ handle, path: LATE.path, origin: "api", text: "# Birds\n\nSwallows nesting under the eaves returned.", mtime: 2 });
    deleteDocumentByPath({ handle, path: "notes/n00050.md" });
    deleteDocumentByPath({ handle, path: "notes/n00005.md" });

    await runFtsRebuild({ handle, batchSize: 300 });
    ftsIntegrityCheck(handle);
    expect(verifyStore({ handle }).consistent).toBe(true);
    expect(await searchPaths(handle, "running backup")).toEqual([]);
    expect(await searchPaths(handle, "snapshot pruning")).toEqual([EARLY.path]);
    expect(await searchPaths(handle, "swallow nest")).toEqual([LATE.path]);
  });

  it("a new store starts with the stemmed index and nothing to rebuild: inflected words find their document", async () => {
    await seedStore("fresh");
    await sqliteOnlyCheck("the FTS5 tokenizer and rebuild state in index.db meta", () => {
      const handle = openStore({ store: "fresh" });
      expect(ftsRebuildState(handle)).toEqual({ pending: false, done: 0, total: 0 });
      expect((handle.sqlite.prepare("select value from meta where key = 'fts_tokenizer'").get() as { value: string }).value).toBe(CHUNK_FTS_TOKENIZER);
    });
    await seedDocument("fresh", "ops/backups.md", EARLY.text);
    expect(await pathsHere("fresh", "running backups")).toEqual(["ops/backups.md"]);
    expect((await searchHere("fresh", { q: "running backups", mode: "fts" })).warnings.map((w) => w.code)).not.toContain("fts_rebuilding");
  });

  it("new, changed and deleted documents are found by their stems at once, and only they", async () => {
    await seedStore("busy");
    for (const d of [EARLY, LATE]) await seedDocument("busy", d.path, d.text);
    expect(await pathsHere("busy", "bird frosts")).toEqual([LATE.path]);
    await seedDocument("busy", "new/rivers.md", "# Rivers\n\nThe river floods every spring after heavy rains.");
    expect(await pathsHere("busy", "flooding rivers")).toEqual(["new/rivers.md"]);
    await seedDocument("busy", EARLY.path, "# Backups\n\nSnapshots are taken hourly and pruned weekly.");
    await seedDocument("busy", LATE.path, "# Birds\n\nSwallows nesting under the eaves returned.");
    await stores().deleteDocument({ store: "busy", path: "new/rivers.md", actor: "test" });
    expect(await pathsHere("busy", "running backup")).toEqual([]);
    expect(await pathsHere("busy", "snapshot pruning")).toEqual([EARLY.path]);
    expect(await pathsHere("busy", "swallow nest")).toEqual([LATE.path]);
    expect(await pathsHere("busy", "flooding rivers")).toEqual([]);
    expect((await stores().verifyStore({ store: "busy" })).consistent).toBe(true);
  });

  it("an exact written form outranks a stem-only match, in every mode that reads full text", async () => {
    await seedStore("forms");
    // The stem-only document says "configured" more often, so bm25 alone (of the stemmed chunks, without the exact-form and proximity factors) ranks it first.
    await seedDocument("forms", "a/stem-only.md", "The proxy is configured, and configured again, for the edge hosts.");
    await seedDocument("forms", "b/exact.md", "The proxy configuration lives in one file for the edge hosts.");
    await sqliteOnlyCheck("bm25 without the exact-form, proximity and document factors (a SearchTuning of the SQLite ranking)", async () => {
      const bm25Only = await searchStore({ handle: openStore({ store: "forms" }), core: null, input: searchInputSchema.parse({ q: "proxy configuration", mode: "fts" }), tuning: { exactFormBoost: 0, proximity: { weight: 0, window: 5 }, document: { wholeDocument: 0, fieldBoost: 0, shortQuery: { wholeDocument: 0, fieldBoost: 0 } } } });
      expect(bm25Only.results.map((h) => h.path)).toEqual(["a/stem-only.md", "b/exact.md"]);
    });
    for (const mode of ["fts", "hybrid"] as const) {
      const r = await searchHere("forms", { q: "proxy configuration", mode, explain: true });
      expect(r.results.map((h) => h.path)).toEqual(["b/exact.md", "a/stem-only.md"]);
      expect(r.results[0].signals?.why).toMatch(/100% of the words as written/);
    }
  });

  itSqliteOnly("`reindex --fts-only` rebuilds the whole full-text index from the chunks, audited", "the CLI's FTS5 rebuild of index.db (PostgreSQL's tsvector is a generated column)", () => {
    createStore({ input: { name: "cli" }, actor: "test" });
    ingestDocument({ handle: openStore({ store: "cli" }), path: "ops/backups.md", origin: "api", text: EARLY.text, mtime: 1 });
    closeAllDatabases();
    const run = spawnCli({ args: ["reindex", "cli", "--fts-only", "--json"], env: { DATA_DIR: env.dataDir, DUALMIND_LOG_LEVEL: "warn" } });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ store: "cli", resumed: false, chunks: 1 });
    const audit = getGovernance().sqlite.prepare("select actor, target from audit_log where action = 'store.reindex.fts'").all();
    expect(audit).toEqual([{ actor: expect.stringMatching(/^cli/), target: "store:cli" }]);
    const handle = getStoreDb({ store: "cli" });
    ftsIntegrityCheck(handle);
    expect(ftsRebuildState(handle).pending).toBe(false);
  });
});
