import { getConfig } from "../config";
import { getPg } from "../db/pg";
import { isAppError } from "../errors";
import { getGovernanceStatus } from "../governance/status";
import { describeReindexScope, startReindexJob, type Job, type ReindexScope } from "../index/jobs";
import { memoryFilterSchema } from "../index/memories";
import { getStoreStatusDetail } from "./health";
import { headlineOfStore, type StatusHeadline } from "./status-summary";
import type { EmbeddingStatus, StoreStatus } from "../embed/status";
import type { WorkerState } from "../embed/worker-state";
import { storeNameSchema } from "../db/store-names";
import { stores, type StoreInfo } from "../stores/backend";
import { openStore } from "../stores/stores";

/**
 * What the dashboard shows of stores and of where they live, on this process's backend (stores() picks
 * it once): pages render one tree from these and never ask which database serves them.
 */

const onSqlite = () => stores().kind === "sqlite";

/** The vector search a store has: "sqlite-vec v0.1.6", "pgvector 0.8.0", or why it falls back. */
export function vectorEngineLabel(info: StoreInfo): { text: string; warning: boolean; title: string | null } {
  if (onSqlite()) return info.vectors.available ? { text: `sqlite-vec ${info.vectors.version}`, warning: false, title: null } : { text: `unavailable: ${info.vectors.reason}`, warning: true, title: null };
  // The exact scan works on any PostgreSQL; `reason` says which method answers and its limit.
  return { text: info.vectors.version ? `pgvector ${info.vectors.version}` : "exact scan (no pgvector)", warning: false, title: info.vectors.reason };
}

/** Where a store's index lives and its size: its files on SQLite, a schema on PostgreSQL. */
export function storageFacts(info: StoreInfo): { where: string; bytes: number | null; walBytes: number | null; memoryFiles: number | null } {
  if (!info.files) return { where: "PostgreSQL schema", bytes: null, walBytes: null, memoryFiles: null };
  return { where: "index.db", bytes: info.files.index_bytes, walBytes: info.files.wal_bytes, memoryFiles: info.files.memory_files };
}

/** The ledger's storage as the Overview lists it (label, value). */
export function ledgerStorageFacts(): { label: string; value: string | { bytes: number; walBytes: number } }[] {
  if (!onSqlite()) return [{ label: "Where", value: "PostgreSQL (DATABASE_URL)" }];
  const gov = getGovernanceStatus();
  return [
    { label: "governance.db", value: { bytes: gov.bytes, walBytes: gov.walBytes } },
    { label: "Schema", value: gov.schemaVersion ?? "—" },
  ];
}

/** The database files the Observability page lists: each file with its WAL, or the one PostgreSQL database. */
export async function listDatabaseFiles(): Promise<{ name: string; bytes: number | null; walBytes: number | null }[]> {
  if (onSqlite()) {
    const gov = getGovernanceStatus();
    const storeFiles = (await stores().listStores()).flatMap((s) => (s.files ? [{ name: `stores/${s.name}/index.db`, bytes: s.files.index_bytes, walBytes: s.files.wal_bytes }] : []));
    return [{ name: "governance.db", bytes: gov.bytes, walBytes: gov.walBytes }, ...storeFiles];
  }
  const pg = await getPg();
  const bytes = pg ? Number((await pg.pool.query<{ bytes: string }>("select pg_database_size(current_database()) as bytes")).rows[0].bytes) : null;
  return [{ name: "PostgreSQL database (stores and the ledger, DATABASE_URL)", bytes, walBytes: null }];
}

/** A line under the navigation saying where the stores live, when that is not this machine's DATA_DIR. */
export function backendNotice(): string | null {
  return onSqlite()
    ? null
    : "Stores are in PostgreSQL (DATABASE_URL): every view shows the PostgreSQL stores, shared by every replica, never the local stores in DATA_DIR, which agents do not write to.";
}

/** What a reindex rebuilds from, for the Admin page's reindex card. */
export function reindexExplanation(): string {
  return onSqlite()
    ? "Rebuild a store's index from its memory/ folder and source roots. Each reindex asks first and says what it goes over; the result counts memories and documents apart. Unchanged files are skipped; the write is one transaction."
    : "Rebuild a PostgreSQL store's documents and chunks from its memories table (the truth there); documents sent by API are kept. Each reindex asks first and says what it goes over; one runs per store across replicas.";
}

/**
 * What a reindex would go over (the confirmation's counts). On PostgreSQL the memories table is the
 * truth and every other document came by API: a reindex rebuilds the memories' documents and keeps the
 * API ones; a running job is joined by the start (one per store across replicas), so `running` is not looked up.
 */
export async function describeReindexScopeFor({ store }: { store: string }): Promise<ReindexScope> {
  if (onSqlite()) return describeReindexScope({ handle: openStore({ store, buildIndex: false }) });
  const { counts } = await stores().describeStore({ store });
  const memories = counts.memories ?? 0;
  return { store, memories, documents: 0, apiDocuments: Math.max(0, (counts.documents ?? 0) - memories), running: false, truth: "memories table" };
}

/** Start (or join) a store's reindex job with the reason its audit row records. */
export async function startReindexFor({ store, actor, reason }: { store: string; actor: string; reason: string }): Promise<Job> {
  if (onSqlite()) return startReindexJob({ handle: openStore({ store, buildIndex: false }), actor, reason });
  return stores().startReindex({ store, actor });
}

export type StorePageData = {
  info: StoreInfo;
  documents: number;
  recent: { path: string; updatedAt: number }[];
  status: StoreStatus;
  headline: StatusHeadline;
  embeddings: EmbeddingStatus;
  workers: WorkerState[];
  workerInServer: boolean;
};

/** Everything the store page draws, on either backend; null for a store that does not exist (the page answers 404). */
export async function loadStorePage({ store }: { store: string }): Promise<StorePageData | null> {
  const name = storeNameSchema.safeParse(store);
  if (!name.success) return null;
  let info: StoreInfo;
  try {
    info = await stores().describeStore({ store: name.data });
  } catch (e) {
    if (isAppError(e) && e.code === "not_found") return null;
    throw e;
  }
  const docs = await stores().listDocuments({ store: name.data, prefix: "", limit: 1, offset: 0 });
  const recent = await stores().listMemories({ store: name.data, filter: memoryFilterSchema.parse({ limit: 10 }) });
  const { status, embeddings, workers } = await getStoreStatusDetail({ store: name.data });
  return {
    info,
    documents: docs.total,
    recent: recent.memories.map((m) => ({ path: m.path, updatedAt: m.updated_at })),
    status,
    headline: headlineOfStore(status),
    embeddings,
    workers,
    workerInServer: getConfig().embed.workerInServer,
  };
}

/** Whether a page's store exists on this backend (a malformed name does not): checked before a page streams, so an unknown one answers 404. */
export async function dashboardStoreExists({ store }: { store: string }): Promise<boolean> {
  const name = storeNameSchema.safeParse(store);
  return name.success && (await stores().listStoreNames()).includes(name.data);
}
