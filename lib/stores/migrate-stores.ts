import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { sha256Hex } from "../common";
import { closeStoreDb, getStoreDb, storeDir, type StoreHandle } from "../db/connection";
import type { PgHandle } from "../db/pg";
import { withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { listStoreNames, storeExists } from "../db/store-names";
import { AppError } from "../errors";
import { appendAuditPg } from "../governance/audit-pg";
import { ingestDocument } from "../index/ingest";
import { ingestDocumentsPg } from "../index/ingest-pg";
import { importMemoryFolderPg, exportMemoriesPg } from "../index/memories-pg";
import { ensureIndexBuilt, reindexStore } from "../index/reindex";
import { createStore } from "./stores";
import { createStorePg, listStoreNamesPg, openStorePg } from "./stores-pg";

/**
 * The stores' part of `dualmind migrate-data`: every store's truth copied
 * between DATA_DIR's SQLite stores and the PostgreSQL stores, then checked.
 *
 * What is copied is what each side treats as the truth: the memories (on
 * SQLite the files under memory/, on PostgreSQL the memories table, file text
 * byte for byte, with the category descriptions) and the documents sent by
 * API (their text). Chunks are derived and rebuilt on the target by the same
 * deterministic chunking; vectors are re-embedded there by the embed worker.
 *
 * The check: per store, the sorted (path, sha256) of every copied document
 * and the number of chunks they make, read back from the target, must equal
 * the source's, or the store's copy is rolled back (on PostgreSQL it is one
 * transaction per store) and the command fails naming the store.
 *
 * Not copied yet: traces, learnings, recall history, thoughts, chains, the
 * graph and working memory, and documents read from source roots on this
 * machine (SQLite `file` documents outside memory/: they live on this disk).
 * A source store holding any of them is refused before anything is written
 * (governance included) unless `allowLoss`, and then they are counted in the
 * report as left behind. A target store that already holds memories or
 * documents is refused unless `replace` (PostgreSQL: its memories,
 * documents, chunks and chunk vectors emptied in the same transaction, other
 * rows kept; SQLite: refused, remove the store folder first).
 */

export type StoreCopyCheck = {
  store: string;
  created: boolean;
  memories: number;
  apiDocuments: number;
  chunks: number;
  /** sha256 over the sorted "path sha256" lines of the copied documents: equal on both sides. */
  sha256: string;
  /** Rows the source holds that were not copied, by table. */
  notCopied: Record<string, number>;
};

/** Tables a store may hold that migrate-data does not copy yet (counted; a source holding rows in them is refused unless allowLoss). */
const NOT_COPIED_TABLES = ["reasoning_traces", "learnings", "recall_events", "thoughts", "chains", "kg_node", "kg_relation", "kg_frame", "working_memory"] as const;

type Digest = { paths: number; chunks: number; sha256: string };

function digestOf(rows: { path: string; sha256: string }[], chunks: number): Digest {
  const lines = rows.map((r) => `${r.path} ${r.sha256}`).sort();
  return { paths: lines.length, chunks, sha256: sha256Hex(lines.join("\n")) };
}

/** The copied documents of a SQLite store: memories and API documents (source-root files are not copied). */
function sqliteDigest(handle: StoreHandle): Digest {
  const rows = handle.sqlite.prepare(`select path, sha256 from documents where origin = 'api' or path like 'memory/%'`).all() as { path: string; sha256: string }[];
  const { n } = handle.sqlite.prepare(`select count(*) as n from chunks c join documents d on d.doc_id = c.doc_id where d.origin = 'api' or d.path like 'memory/%'`).get() as { n: number };
  return digestOf(rows, n);
}

async function pgDigest(tx: PgStoreTx): Promise<Digest> {
  const rows = (await tx.execute(sql`select path, sha256 from documents`)).rows as { path: string; sha256: string }[];
  const [{ n }] = (await tx.execute(sql`select count(*)::int as n from chunks`)).rows as { n: number }[];
  return digestOf(rows, n);
}

function assertSameDigest(store: string, source: Digest, target: Digest): void {
  if (source.sha256 === target.sha256 && source.chunks === target.chunks) return;
  throw new AppError(
    "conflict",
    `store ${store}: the copy does not match its source (documents ${source.paths} → ${target.paths}, chunks ${source.chunks} → ${target.chunks}, sha256 ${source.sha256.slice(0, 12)} → ${target.sha256.slice(0, 12)}); this store's copy was undone`,
  );
}

function countNotCopied(handle: StoreHandle): Record<string, number> {
  const out: Record<string, number> = {};
  const present = new Set((handle.sqlite.prepare(`select name from sqlite_master where type = 'table'`).all() as { name: string }[]).map((r) => r.name));
  for (const t of NOT_COPIED_TABLES) {
    if (!present.has(t)) continue;
    // Fixed table names from the list above, never from input.
    const { n } = handle.sqlite.prepare(`select count(*) as n from ${t}`).get() as { n: number };
    if (n > 0) out[t] = n;
  }
  const { files } = handle.sqlite.prepare(`select count(*) as files from documents where origin = 'file' and path not like 'memory/%'`).get() as { files: number };
  if (files > 0) out["source-root documents"] = files;
  return out;
}

/** What --replace empties on a PostgreSQL store: what this copy writes (queue rows of other kinds, and the rows not copied, stay). */
const PG_STORE_TABLES_EMPTIED = ["chunk_embeddings", "chunks", "documents", "memories", "categories"] as const;

async function countNotCopiedPg(tx: PgStoreTx): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of NOT_COPIED_TABLES) {
    // Fixed table names from the list above, never from input.
    const [{ n }] = (await tx.execute(sql`select count(*)::int as n from ${sql.identifier(t)}`)).rows as { n: number }[];
    if (n > 0) out[t] = n;
  }
  return out;
}

function refuseLoss(store: string, where: string, left: Record<string, number>): AppError {
  const what = Object.entries(left).map(([t, n]) => `${n} ${t}`).join(", ");
  return new AppError("conflict", `store ${store} holds rows migrate-data does not copy yet (${what}); nothing was copied. Pass --allow-loss to copy the rest and leave these in ${where}`, [{ path: "stores", message: `${store}: ${what}` }]);
}

/**
 * Before anything is written (the governance copy included): every store the copy would leave rows of is
 * refused unless allowLoss. Returns what would be left, per store.
 */
export async function checkStoresCopyable({ pg, to, allowLoss = false }: { pg: PgHandle; to: "pg" | "sqlite"; allowLoss?: boolean }): Promise<Record<string, Record<string, number>>> {
  const left: Record<string, Record<string, number>> = {};
  if (to === "pg") {
    for (const store of listStoreNames()) left[store] = countNotCopied(getStoreDb(store));
  } else {
    for (const store of await listStoreNamesPg({ pg })) left[store] = await withStoreTx({ handle: await openStorePg({ pg, store }), readOnly: true }, countNotCopiedPg);
  }
  for (const [store, rows] of Object.entries(left)) {
    if (Object.keys(rows).length > 0 && !allowLoss) throw refuseLoss(store, to === "pg" ? "DATA_DIR" : "PostgreSQL", rows);
  }
  return left;
}

async function pgStoreHolds(tx: PgStoreTx): Promise<number> {
  const [{ n }] = (await tx.execute(sql`select (select count(*) from documents) + (select count(*) from memories) as n`)).rows as { n: string | number }[];
  return Number(n);
}

/** Every SQLite store in DATA_DIR into PostgreSQL, one transaction per store. */
export async function migrateStoresToPg({ pg, replace = false, actor = "cli:migrate-data" }: { pg: PgHandle; replace?: boolean; actor?: string }): Promise<StoreCopyCheck[]> {
  const existing = new Set(await listStoreNamesPg({ pg }));
  const out: StoreCopyCheck[] = [];
  for (const store of listStoreNames()) {
    // getStoreDb, not openStore: with DATABASE_URL set openStore refuses local stores, and reading them is the point here.
    const source = getStoreDb(store);
    ensureIndexBuilt({ handle: source });
    const created = !existing.has(store);
    if (created) await createStorePg({ pg, input: { name: store }, actor });
    const target: PgStoreHandle = await openStorePg({ pg, store });
    const sourceDigest = sqliteDigest(source);
    const apiDocs = source.sqlite.prepare(`select path, kind, content, mtime from documents where origin = 'api' order by path`).all() as { path: string; kind: "memory" | "markdown" | "code" | "text"; content: string | null; mtime: number }[];
    const check = await withStoreTx({ handle: target }, async (tx) => {
      const holds = await pgStoreHolds(tx);
      if (holds > 0 && !replace) throw new AppError("conflict", `store ${store} in PostgreSQL already holds ${holds} memories and documents; pass --replace to empty it first`);
      if (holds > 0) {
        await tx.execute(sql`delete from embed_queue where kind = 'chunk'`);
        for (const t of PG_STORE_TABLES_EMPTIED) await tx.execute(sql`delete from ${sql.identifier(t)}`);
      }
      const memoryFolder = path.join(storeDir(store), "memory");
      const imported = fs.existsSync(memoryFolder) ? await importMemoryFolderPg({ tx, dir: memoryFolder }) : null;
      // A file under memory/ that is not a memory would be lost silently: refused, inside the transaction.
      if (imported && imported.skipped.length > 0) throw new AppError("conflict", `store ${store}: ${imported.skipped.length} file(s) under memory/ are not memories and would not be copied: ${imported.skipped.map((f) => f.path).join(", ")}`);
      for (let i = 0; i < apiDocs.length; i += 500) {
        const batch = apiDocs.slice(i, i + 500).map((d) => ({ path: d.path, origin: "api" as const, kind: d.kind, text: d.content ?? "", mtime: d.mtime }));
        await ingestDocumentsPg({ tx, docs: batch });
      }
      assertSameDigest(store, sourceDigest, await pgDigest(tx));
      await appendAuditPg({ db: tx, entry: { actor, action: "store.migrate", target: `store:${store}`, details: { from: "sqlite", memories: imported?.added ?? 0, apiDocuments: apiDocs.length, sha256: sourceDigest.sha256 } } });
      return { memories: (imported?.added ?? 0) + (imported?.changed ?? 0) + (imported?.unchanged ?? 0) };
    });
    out.push({ store, created, memories: check.memories, apiDocuments: apiDocs.length, chunks: sourceDigest.chunks, sha256: sourceDigest.sha256, notCopied: countNotCopied(source) });
  }
  return out;
}

/** Every PostgreSQL store into DATA_DIR's SQLite stores; the PostgreSQL side is read in repeatable-read snapshots. */
export async function migrateStoresToSqlite({ pg, replace = false, actor = "cli:migrate-data" }: { pg: PgHandle; replace?: boolean; actor?: string }): Promise<StoreCopyCheck[]> {
  const out: StoreCopyCheck[] = [];
  for (const store of await listStoreNamesPg({ pg })) {
    const source = await openStorePg({ pg, store });
    const created = !storeExists(store);
    if (created) createStore({ input: { name: store }, actor });
    const target = getStoreDb(store);
    ensureIndexBuilt({ handle: target });
    const holds = (target.sqlite.prepare(`select (select count(*) from documents) + (select count(*) from memories) as n`).get() as { n: number }).n;
    if (holds > 0) {
      throw new AppError("conflict", `store ${store} in ${storeDir(store)} already holds ${holds} memories and documents${replace ? " (--replace empties PostgreSQL targets only: remove the store's folder to copy it again)" : ""}`);
    }
    try {
      // The memories table as files (the SQLite truth), then the API documents, then the index built from both.
      const exported = await exportMemoriesPg({ handle: source, dir: path.join(storeDir(store), "memory") });
      const { apiDocs, sourceDigest, notCopied } = await withStoreTx({ handle: source, readOnly: true }, async (tx) => ({
        apiDocs: (await tx.execute(sql`select path, kind, content, mtime from documents where origin = 'api' order by path`)).rows as { path: string; kind: "memory" | "markdown" | "code" | "text"; content: string | null; mtime: number | string }[],
        sourceDigest: await pgDigest(tx),
        notCopied: await countNotCopiedPg(tx),
      }));
      target.sqlite.transaction(() => {
        for (const d of apiDocs) ingestDocument({ handle: target, path: d.path, origin: "api", kind: d.kind, text: d.content ?? "", mtime: Number(d.mtime) });
      })();
      reindexStore({ handle: target });
      assertSameDigest(store, sourceDigest, sqliteDigest(target));
      out.push({ store, created, memories: exported.memories, apiDocuments: apiDocs.length, chunks: sourceDigest.chunks, sha256: sourceDigest.sha256, notCopied });
    } catch (e) {
      // A store this copy created is removed again, so a re-run starts clean; one that existed (empty) is emptied of what was written.
      if (created) {
        closeStoreDb(store);
        fs.rmSync(storeDir(store), { recursive: true, force: true });
      }
      throw e;
    }
  }
  return out;
}

export function storeCopyReport(checks: StoreCopyCheck[]): string {
  const lines = checks.map((c) => {
    const left = Object.entries(c.notCopied).map(([t, n]) => `${n} ${t}`);
    return `  ${c.store}${c.created ? " (created)" : ""}: ${c.memories} memories, ${c.apiDocuments} API documents, ${c.chunks} chunks, sha256 ${c.sha256.slice(0, 12)}${left.length ? `; left behind (--allow-loss: not copied by migrate-data yet): ${left.join(", ")}` : ""}`;
  });
  return [`stores (${checks.length}), each checked on the target:`, ...lines].join("\n");
}
