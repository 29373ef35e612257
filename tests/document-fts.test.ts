import Database from "better-sqlite3";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyPragmas, getStoreDb, loadVectorExtension, type StoreHandle } from "@/lib/db/connection";
import { CHUNKING_VERSION } from "@/lib/index/chunking";
import { documentFtsReady, documentFtsRebuildState } from "@/lib/index/document-fts";
import { rebuildFtsBatch, restartFtsRebuild, runFtsRebuild } from "@/lib/index/fts-rebuild";
import { deleteDocumentByPath, ingestDocument } from "@/lib/index/ingest";
import { searchInputSchema, searchStore, type SearchTuning } from "@/lib/index/search";
import { stores } from "@/lib/stores/backend";
import { createStore } from "@/lib/stores/stores";
import { itSqliteOnly, searchHere, seedDocument, seedStore, useTestBackend, type TestEnv } from "./backend";
import { migrationsUpTo } from "./helpers";

// The whole-document index (migration 0013): each document's path, title and
// whole text, unstemmed, beside the stemmed chunk index. What a user notices:
// with group=document, a document about the query as a whole outranks one
// lucky passage elsewhere; edits and deletes are reflected at once; a store
// from before the migration keeps answering while the index is filled, and
// then ranks the same way as a fresh one. On PostgreSQL, documents rank by
// their chunks (lib/index/search-pg.ts: no whole-document index); what both
// must agree on is marked, and the difference is an expected failure there.

let env: TestEnv;
let scratch: string;
beforeEach(async () => {
  env = await useTestBackend();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-docfts-"));
});
afterEach(async () => {
  await env.cleanup();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const FILLER = "ledger harbor quartz meadow lantern copper violet summit orchard canyon ember willow granite parcel beacon thistle".split(" ");
const filler = (n: number, offset: number) => Array.from({ length: n }, (_, i) => FILLER[(i * 7 + offset) % FILLER.length]).join(" ");

/**
 * "Spread" is about backups through and through: each of its sections names
 * two of the query's eight words, so it holds all eight; "Lucky" is about
 * something else and has one passage that names three of them. Filler notes
 * give the words their rarity (bm25's idf).
 */
const QUERY_WORDS = ["snapshot", "retention", "offsite", "encryption", "rotation", "checksum", "archive", "restore"];
const SPREAD = {
  path: "ops/backup-plan.md",
  text: ["# Backup plan", "", ...[0, 2, 4, 6].map((k, i) => `## Part ${i}\n\n${filler(25, i)} The ${QUERY_WORDS[k]} and ${QUERY_WORDS[k + 1]} steps. ${filler(35, i + 3)}\n`)].join("\n"),
};
const LUCKY = { path: "zoo/aviary.md", text: `# Aviary\n\n${filler(30, 9)}\n\nThe snapshot, checksum and archive of the aviary.\n\n${filler(30, 11)}\n` };
const NOTES = Array.from({ length: 8 }, (_, i) => ({ path: `notes/n${i}.md`, text: `# Note ${i}\n\n${filler(60, i)}\n` }));
const QUERY = QUERY_WORDS.join(" ");

async function documentPaths(handle: StoreHandle, q: string, tuning?: SearchTuning, mode: "fts" | "hybrid" = "fts"): Promise<string[]> {
  const res = await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, mode, match: "any", group: "document" }), tuning });
  return res.results.map((h) => h.path);
}

const rowsMatching = (handle: StoreHandle, q: string) => (handle.sqlite.prepare("select rowid from documents_fts where documents_fts match ?").all(q) as { rowid: number }[]).map((r) => r.rowid);

async function seedDocs(): Promise<void> {
  await seedStore("docs");
  for (const d of [SPREAD, LUCKY, ...NOTES]) await seedDocument("docs", d.path, d.text);
}
const pathsHere = async (q: string, mode: "fts" | "hybrid" = "fts") => (await searchHere("docs", { q, mode, match: "any", group: "document" })).results.map((h) => h.path);

describe("whole-document full-text index (migration 0013)", () => {
  it("ranks the document that covers the query as a whole above one lucky passage", async () => {
    await seedDocs();
    expect(await pathsHere(QUERY)).toEqual([SPREAD.path, LUCKY.path]);
    expect(await pathsHere(QUERY, "hybrid")).toEqual([SPREAD.path, LUCKY.path]);
  });

  itSqliteOnly("which the chunks alone did not, and explain names the whole-document bm25", "the SQLite ranking's tuning (wholeDocument: 0) and the documents_fts index", async () => {
    await seedDocs();
    const handle = getStoreDb({ store: "docs" });
    expect((handle.sqlite.prepare("select count(*) as n from chunks c join documents d on d.doc_id = c.doc_id where d.path = ?").get(SPREAD.path) as { n: number }).n).toBeGreaterThan(2);
    expect(await documentPaths(handle, QUERY, { document: { wholeDocument: 0 } })).toEqual([LUCKY.path, SPREAD.path]);
    expect(await documentPaths(handle, QUERY)).toEqual([SPREAD.path, LUCKY.path]);
    // Explain says where the rank came from.
    const explained = await searchStore({ handle, core: null, input: searchInputSchema.parse({ q: QUERY, mode: "fts", match: "any", explain: true }) });
    expect(explained.results[0].signals?.why).toMatch(/whole-document bm25/);
  });

  itSqliteOnly("weighs a short keyword query mostly by its passages, and a sentence-long one by the document as a whole", "the whole-document index's weights, as explain reports them (PostgreSQL has no whole-document index)", async () => {
    await seedDocs();
    const handle = getStoreDb({ store: "docs" });
    const why = async (q: string) => (await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, mode: "fts", match: "any", explain: true }) })).results.map((h) => h.signals?.why ?? "");
    // Three words: the document index counts half, path and title not at all.
    const short = await why("snapshot checksum archive");
    expect(short[0]).toMatch(/weight 0\.5/);
    expect(short.join(" ")).not.toMatch(/path\/title/);
    // The document named by the words of its path, with a long query: path and title count.
    const long = await why("backup plan snapshot retention offsite encryption rotation checksum");
    expect(long.find((w) => /path\/title/.test(w))).toBeDefined();
    expect(long[0]).toMatch(/weight 1\b/);
  });

  it("follows edits and deletes at once: the new words find the document, the old ones and a deleted document do not", async () => {
    await seedStore("docs");
    const found = async (q: string) => (await searchHere("docs", { q, mode: "fts", group: "document" })).results.map((h) => h.path);
    await seedDocument("docs", "notes/a.md", "# Quartz\n\nThe quartz crystal hums.");
    expect(await found("hums")).toEqual(["notes/a.md"]);
    await seedDocument("docs", "notes/a.md", "# Copper\n\nThe copper wire sings.");
    expect(await found("hums")).toEqual([]);
    expect(await found("sings")).toEqual(["notes/a.md"]);
    await stores().deleteDocument({ store: "docs", path: "notes/a.md", actor: "test" });
    expect(await found("sings")).toEqual([]);
  });

  itSqliteOnly("the whole-document index follows edits and deletes, with title and path as fields of their own", "documents_fts rows (PostgreSQL has no whole-document index)", () => {
    createStore({ input: { name: "docs" }, actor: "test" });
    const handle = getStoreDb({ store: "docs" });
    const { doc_id: docId } = ingestDocument({ handle, path: "notes/a.md", origin: "api", text: "# Quartz\n\nThe quartz crystal hums.", mtime: 0 });
    expect(rowsMatching(handle, "hums")).toEqual([docId]);
    // Title and path are fields of their own.
    expect(rowsMatching(handle, "title:quartz")).toEqual([docId]);
    expect(rowsMatching(handle, 'path:"notes"')).toEqual([docId]);
    ingestDocument({ handle, path: "notes/a.md", origin: "api", text: "# Copper\n\nThe copper wire sings.", mtime: 1 });
    expect(rowsMatching(handle, "hums")).toEqual([]);
    expect(rowsMatching(handle, "sings")).toEqual([docId]);
    expect(deleteDocumentByPath({ handle, path: "notes/a.md" })).toBe(true);
    expect(rowsMatching(handle, "sings")).toEqual([]);
    expect(rowsMatching(handle, "notes")).toEqual([]);
  });

  itSqliteOnly("fills an older store's index in resumable batches, answering from the chunks meanwhile; --fts-only rebuilds it again", "an index.db at an older SQLite migration, filled by the FTS5 rebuild", async () => {
    // A store as the previous release left it (migrations up to 0011), with SPREAD and LUCKY and some filler documents.
    const dir = path.join(env.dataDir, "stores", "old");
    fs.mkdirSync(path.join(dir, "memory"), { recursive: true });
    const sqlite = new Database(path.join(dir, "index.db"));
    applyPragmas(sqlite);
    loadVectorExtension(sqlite);
    migrate(drizzle(sqlite), { migrationsFolder: migrationsUpTo({ which: "index", last: "0011_embedding_log", scratch }) });
    sqlite.prepare("insert into meta(key, value) values ('index_built_at', '1'), ('chunking_version', ?)").run(String(CHUNKING_VERSION));
    sqlite.close();
    const handle = getStoreDb({ store: "old" });
    // Written as the old release wrote them: documents and chunks, no document index row.
    for (const d of [SPREAD, LUCKY, ...NOTES]) {
      ingestDocument({ handle, path: d.path, origin: d.path.startsWith("notes/") ? "api" : "file", text: d.text, mtime: 0 });
    }
    handle.sqlite.prepare("insert into documents_fts(documents_fts) values ('delete-all')").run();
    handle.sqlite.prepare("insert into meta(key, value) values ('docs_fts_rebuild_target', (select max(doc_id) from documents)), ('docs_fts_rebuilt_through', '0')").run();

    expect(documentFtsReady(handle)).toBe(false);
    expect(documentFtsRebuildState(handle)).toEqual({ pending: true, done: 0, total: 10 });
    // Meanwhile documents rank by their chunks alone, and search never fails.
    expect(await documentPaths(handle, QUERY)).toEqual([LUCKY.path, SPREAD.path]);
    expect(rebuildFtsBatch({ handle, batchSize: 40 })).toBe(true); // 4 documents a batch
    expect(documentFtsRebuildState(handle)).toEqual({ pending: true, done: 4, total: 10 });
    await runFtsRebuild({ handle, batchSize: 40 });
    expect(documentFtsReady(handle)).toBe(true);
    expect(await documentPaths(handle, QUERY)).toEqual([SPREAD.path, LUCKY.path]);
    // A file document's text is rebuilt from its chunks: every word of it is found.
    const spreadId = (handle.sqlite.prepare("select doc_id as id from documents where path = ?").get(SPREAD.path) as { id: number }).id;
    expect(rowsMatching(handle, "encryption")).toEqual([spreadId]);
    expect(rowsMatching(handle, `title:"backup plan"`)).toEqual([spreadId]);

    restartFtsRebuild({ handle });
    expect(documentFtsReady(handle)).toBe(false);
    expect(rowsMatching(handle, "encryption")).toEqual([]);
    await runFtsRebuild({ handle });
    expect(rowsMatching(handle, "encryption")).toEqual([spreadId]);
  });
});
