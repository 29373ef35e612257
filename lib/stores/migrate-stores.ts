import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { sha256Hex } from "../common";
import { closeStoreDb, getStoreDb, storeDir, type StoreHandle } from "../db/connection";
import type { PgHandle } from "../db/pg";
import { withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import * as sqliteGraph from "../db/schema/graph";
import * as pgGraph from "../db/schema/pg/graph";
import * as pgStore from "../db/schema/pg/store";
import * as sqliteRecall from "../db/schema/recall";
import { listStoreNames, storeExists } from "../db/store-names";
import { copyTables, pgSide, sqliteSide, type TableCheck, type TwinTable } from "../db/twin-copy";
import { listEmbeddables } from "../embed/embeddables";
import { enqueueEmbeddings, enqueueEmbeddingsOp } from "../embed/queue";
import { AppError } from "../errors";
import { appendAuditPg } from "../governance/audit";
import { inCallerTx } from "../db/port";
import { ingestDocument, ingestDocumentsOp } from "../index/ingest";
import { pgEmbeddableKinds } from "../index/embed-kinds-pg";
import { importMemoryFolderPg, exportMemoriesPg } from "../index/memories-pg";
import { ensureIndexBuilt, reindexStore } from "../index/reindex";
import { createStore } from "./stores";
import { createStorePg, listStoreNamesPg, openStorePg } from "./engines/pg";

/**
 * The stores' part of `dualmind migrate-data` (docs/postgresql.md, "Moving an install to PostgreSQL and back"): each
 * store's truth (memories, API documents, the primary tables row for row) copied and checked by counts and sha256s
 * read back from the target, or that store's copy undone. Derived rows are rebuilt on the target, never copied:
 * chunks by the same deterministic chunking, vectors by the target's embed worker with the target's model.
 */

export type StoreCopyCheck = {
  store: string;
  created: boolean;
  memories: number;
  apiDocuments: number;
  chunks: number;
  /** sha256 over the sorted "path sha256" lines of the copied documents: equal on both sides. */
  sha256: string;
  /** Each primary table's rows and hash, read back from the target. */
  tables: TableCheck[];
  /** Artifacts queued for vectors on the target, by kind. */
  queued: Record<string, number>;
  /** Rows the source holds that were not copied, by what they are. */
  notCopied: Record<string, number>;
};

/** A store's primary tables: parents before children (foreign keys are checked as rows go in). */
const PRIMARY_TABLES: readonly TwinTable[] = [
  ...(["reasoningTraces", "learnings", "reflectionSettings", "recallEvents", "recallEventHits"] as const).map((n) => ({ sqlite: sqliteRecall[n], pg: pgStore[n] })),
  ...(["chains", "thoughts", "kgNodes", "kgFrames", "kgRelations", "kgFrameEvidence", "kgRelationEvidence", "workingMemory"] as const).map((n) => ({ sqlite: sqliteGraph[n], pg: pgGraph[n] })),
];

/**
 * The embeddable kinds kept in the primary tables, and where their ref id and
 * input hash live on PostgreSQL (the SQLite kinds list their own, see
 * lib/embed/embeddables.ts). Names are code constants, quoted as identifiers.
 */
const PRIMARY_KINDS_PG = [
  { kind: "trace", table: "reasoning_traces", id: "id", hash: "descriptor_hash" },
  { kind: "learning", table: "learnings", id: "id", hash: "handle_hash" },
  { kind: "thought", table: "thoughts", id: "seq", hash: "content_hash" },
  { kind: "node", table: "kg_node", id: "seq", hash: "embed_hash" },
] as const;

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

/** What a SQLite store holds that the copy leaves behind: documents of source roots on this machine. */
function countNotCopied(handle: StoreHandle): Record<string, number> {
  const { files } = handle.sqlite.prepare(`select count(*) as files from documents where origin = 'file' and path not like 'memory/%'`).get() as { files: number };
  return files > 0 ? { "source-root documents": files } : {};
}

/** What --replace empties on a PostgreSQL store besides the primary tables: what this copy writes (queue rows of other kinds stay). */
const PG_STORE_TABLES_EMPTIED = ["chunk_embeddings", "chunks", "documents", "memories", "categories"] as const;

function refuseLoss(store: string, where: string, left: Record<string, number>): AppError {
  const what = Object.entries(left).map(([t, n]) => `${n} ${t}`).join(", ");
  return new AppError("conflict", `store ${store} holds rows migrate-data does not copy (${what}); nothing was copied. Pass --allow-loss to copy the rest and leave these in ${where}`, [{ path: "stores", message: `${store}: ${what}` }]);
}

/**
 * Before anything is written (the governance copy included): every store the copy would leave rows of is
 * refused unless allowLoss. Returns what would be left, per store.
 */
export async function checkStoresCopyable({ to, allowLoss = false }: { pg: PgHandle; to: "pg" | "sqlite"; allowLoss?: boolean }): Promise<Record<string, Record<string, number>>> {
  const left: Record<string, Record<string, number>> = {};
  // PostgreSQL stores hold nothing the copy leaves behind.
  if (to === "pg") for (const store of listStoreNames()) left[store] = countNotCopied(getStoreDb({ store }));
  for (const [store, rows] of Object.entries(left)) {
    if (Object.keys(rows).length > 0 && !allowLoss) throw refuseLoss(store, "DATA_DIR", rows);
  }
  return left;
}

async function pgStoreHolds(tx: PgStoreTx): Promise<number> {
  const [{ n }] = (await tx.execute(sql`select (select count(*) from documents) + (select count(*) from memories) as n`)).rows as { n: string | number }[];
  return Number(n);
}

/**
 * Queue every copied artifact of the primary kinds this process embeds (registered) for a vector on
 * PostgreSQL, after dropping what the store held for those kinds (vectors of replaced rows would answer for the wrong rows).
 */
async function queuePrimaryKindsPg(tx: PgStoreTx): Promise<Record<string, number>> {
  const kinds = PRIMARY_KINDS_PG.map((k) => k.kind);
  await tx.execute(sql`delete from embed_queue where kind in ${kinds}`);
  await tx.execute(sql`delete from embeddings where kind in ${kinds}`);
  const registered = new Set(pgEmbeddableKinds());
  const queued: Record<string, number> = {};
  for (const k of PRIMARY_KINDS_PG) {
    if (!registered.has(k.kind)) continue;
    const rows = (await tx.execute(sql`select ${sql.identifier(k.id)} as id, ${sql.identifier(k.hash)} as hash from ${sql.identifier(k.table)}`)).rows as { id: string | number; hash: string }[];
    for (let i = 0; i < rows.length; i += 1000) {
      await inCallerTx(tx, enqueueEmbeddingsOp({ items: rows.slice(i, i + 1000).map((r) => ({ kind: k.kind, refId: Number(r.id), inputHash: r.hash })) }));
    }
    if (rows.length > 0) queued[k.kind] = rows.length;
  }
  return queued;
}

/** Queue every artifact of the non-chunk kinds for a vector on a SQLite store (chunks are queued by the reindex). */
function queuePrimaryKinds(handle: StoreHandle): Record<string, number> {
  const queued: Record<string, number> = {};
  for (const e of listEmbeddables()) {
    if (e.kind === "chunk") continue;
    const items = [...e.listAll({ handle })].map((r) => ({ kind: e.kind, refId: r.refId, inputHash: r.inputHash }));
    for (let i = 0; i < items.length; i += 1000) enqueueEmbeddings({ handle, items: items.slice(i, i + 1000) });
    if (items.length > 0) queued[e.kind] = items.length;
  }
  return queued;
}

/** Every SQLite store in DATA_DIR into PostgreSQL, one transaction per store. */
export async function migrateStoresToPg({ pg, replace = false, actor = "cli:migrate-data" }: { pg: PgHandle; replace?: boolean; actor?: string }): Promise<StoreCopyCheck[]> {
  const existing = new Set(await listStoreNamesPg({ pg }));
  const out: StoreCopyCheck[] = [];
  for (const store of listStoreNames()) {
    // getStoreDb, not openStore: with DATABASE_URL set openStore refuses local stores, and reading them is the point here.
    const source = getStoreDb({ store });
    ensureIndexBuilt({ handle: source });
    const created = !existing.has(store);
    if (created) await createStorePg({ pg, input: { name: store }, actor });
    const target: PgStoreHandle = await openStorePg({ pg, store });
    // One read transaction on index.db: every table comes from the same snapshot (WAL).
    source.sqlite.exec("begin");
    try {
      const sourceDigest = sqliteDigest(source);
      const apiDocs = source.sqlite.prepare(`select path, kind, content, mtime from documents where origin = 'api' order by path`).all() as { path: string; kind: "memory" | "markdown" | "code" | "text"; content: string | null; mtime: number }[];
      const check = await withStoreTx({ handle: target, work: async (tx) => {
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
          await inCallerTx(tx, ingestDocumentsOp({ docs: batch }));
        }
        assertSameDigest(store, sourceDigest, await pgDigest(tx));
        const tables = await copyTables({ source: sqliteSide(source), target: pgSide(tx), tables: PRIMARY_TABLES, replace, where: `store ${store} in PostgreSQL` });
        const queued = await queuePrimaryKindsPg(tx);
        await appendAuditPg({ db: tx, entry: { actor, action: "store.migrate", target: `store:${store}`, details: { from: "sqlite", memories: imported?.added ?? 0, apiDocuments: apiDocs.length, sha256: sourceDigest.sha256, rows: Object.fromEntries(tables.map((t) => [t.table, t.rows])) } } });
        return { memories: (imported?.added ?? 0) + (imported?.changed ?? 0) + (imported?.unchanged ?? 0), tables, queued };
      } });
      out.push({ store, created, memories: check.memories, apiDocuments: apiDocs.length, chunks: sourceDigest.chunks, sha256: sourceDigest.sha256, tables: check.tables, queued: check.queued, notCopied: countNotCopied(source) });
    } finally {
      source.sqlite.exec("commit");
    }
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
    const target = getStoreDb({ store });
    ensureIndexBuilt({ handle: target });
    const holds = (target.sqlite.prepare(`select (select count(*) from documents) + (select count(*) from memories) as n`).get() as { n: number }).n;
    if (holds > 0) {
      throw new AppError("conflict", `store ${store} in ${storeDir(store)} already holds ${holds} memories and documents${replace ? " (--replace empties PostgreSQL targets only: remove the store's folder to copy it again)" : ""}`);
    }
    try {
      // The memories table as files (the SQLite truth), then the API documents, then the index built from both, then the primary tables.
      const exported = await exportMemoriesPg({ handle: source, dir: path.join(storeDir(store), "memory") });
      const { apiDocs, sourceDigest, tables, queued } = await withStoreTx({ handle: source, readOnly: true, snapshot: true, work: async (tx) => {
        const apiDocs = (await tx.execute(sql`select path, kind, content, mtime from documents where origin = 'api' order by path`)).rows as { path: string; kind: "memory" | "markdown" | "code" | "text"; content: string | null; mtime: number | string }[];
        const sourceDigest = await pgDigest(tx);
        target.sqlite.transaction(() => {
          for (const d of apiDocs) ingestDocument({ handle: target, path: d.path, origin: "api", kind: d.kind, text: d.content ?? "", mtime: Number(d.mtime) });
        })();
        reindexStore({ handle: target });
        assertSameDigest(store, sourceDigest, sqliteDigest(target));
        target.sqlite.exec("begin immediate");
        try {
          const tables = await copyTables({ source: pgSide(tx), target: sqliteSide(target), tables: PRIMARY_TABLES, replace: false, where: `store ${store} in ${storeDir(store)}` });
          const queued = queuePrimaryKinds(target);
          target.sqlite.exec("commit");
          return { apiDocs, sourceDigest, tables, queued };
        } catch (e) {
          target.sqlite.exec("rollback");
          throw e;
        }
      } });
      out.push({ store, created, memories: exported.memories, apiDocuments: apiDocs.length, chunks: sourceDigest.chunks, sha256: sourceDigest.sha256, tables, queued, notCopied: {} });
    } catch (e) {
      // A store this copy created is removed again, so a re-run starts clean.
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
    const rows = c.tables.filter((t) => t.rows > 0).map((t) => `${t.rows} ${t.table}`);
    const queued = Object.entries(c.queued).map(([k, n]) => `${n} ${k}`);
    return `  ${c.store}${c.created ? " (created)" : ""}: ${c.memories} memories, ${c.apiDocuments} API documents, ${c.chunks} chunks, sha256 ${c.sha256.slice(0, 12)}${rows.length ? `; rows ${rows.join(", ")}` : ""}${queued.length ? `; queued for vectors ${queued.join(", ")}` : ""}${left.length ? `; left behind (--allow-loss): ${left.join(", ")}` : ""}`;
  });
  return [`stores (${checks.length}), each checked on the target:`, ...lines].join("\n");
}
