import type { z } from "zod";
import { backendChooser, type PgHandle } from "../db/pg";
import { deleteApiDocument, getChunkByChunkId, listDocumentsByPrefix, putDocuments, type ChunkDetail, type DocumentSummary, type IngestResult, type putDocumentsSchema } from "../index/ingest";
import { deleteApiDocumentPg, getChunkByChunkIdPg, listDocumentsByPrefixPg, putDocumentsPg } from "../index/ingest-pg";
import {
  createMemory,
  deleteMemory,
  getMemoryByPath,
  getTrashedMemory,
  listMemoryTrash,
  purgeTrashedMemory,
  restoreMemory,
  type restoreMemorySchema,
  type TrashedMemory,
  type TrashedMemoryWithBody,
  listAllCategories,
  listCategoryChildren,
  listMemoriesByFilter,
  listMemoryHistory,
  setCategoryDescription,
  updateMemory,
  type CategoryChild,
  type createMemorySchema,
  type Memory,
  type MemoryFilter,
  type MemoryHistoryEntry,
  type MemoryWithBody,
  type setCategorySchema,
  type updateMemorySchema,
} from "../index/memories";
import { listDocumentTitles } from "../index/titles";
import { createMemoryPg, deleteMemoryPg, getMemoryByPathPg, getTrashedMemoryPg, listMemoryHistoryPg, listMemoryTrashPg, purgeTrashedMemoryPg, restoreMemoryPg, setCategoryDescriptionPg, updateMemoryPg } from "../index/memories-pg";
import { getJobById, listLatestJobs, runReindexJob, startReindexJob, type Job } from "../index/jobs";
import { lastUnindexableFiles, type ReindexProgress } from "../index/reindex";
import type { UnindexableFile } from "../index/files";
import { readChunkInDocument, type ChunkReader } from "../index/reader";
import { takeOverStaleJobPg } from "../index/admin-jobs-pg";
import { getJobByIdPg, JOB_OWNER, listLatestJobsPg, runReindexJobPg, runReindexJobToEndPg, startReindexJobOnPg, verifyStorePg } from "../index/maintenance-pg";
import { searchStore, type SearchInput, type SearchResult } from "../index/search";
import { verifyStoreAsync, type VerifyReport } from "../index/verify";
import { searchStorePg } from "../index/search-pg";
import { planQueryVectorPg } from "../index/query-vector-pg";
import { archiveStore, createStore, deleteStore, describeStore, ensureCoreStore, ensureDefaultStore, listStores, openCoreFor, openStore, removeDeletedStoreLeftovers, storeHasContent, unarchiveStore, type createStoreSchema, type StoreSummary } from "./stores";
import { archiveStorePg, createStorePg, deleteStorePg, describeStorePg, ensureCoreStorePg, ensureDefaultStorePg, listStoreNamesPg, listStoresPg, openCoreForPg, openStorePg, storeHasContentPg, unarchiveStorePg, type PgStoreSummary } from "./stores-pg";
import { refusingArchivedWrites } from "../db/store-lifecycle";
import { listStoreNames } from "../db/store-names";

/**
 * The stores behind one interface, as governance() is for the ledger:
 * embedded SQLite (one index.db and memory/ folder per store in DATA_DIR) by
 * default, PostgreSQL (a schema per store, memories table as the truth) when
 * DATABASE_URL is set. Routes and MCP tools call stores() and never pick a
 * backend or open a handle themselves; an unknown store is a 404 on both.
 *
 * What is not here has its own backend chooser (graphBackend() for
 * thoughts, the graph, working memory and remember; recallBackend();
 * embeddingsBackend() for re-embed and retry-parked). A route not ported to
 * PostgreSQL would answer 501 not_implemented (lib/api/route.ts `postgres`),
 * never from a local index.db the rest of the stores no longer use.
 */

/** A store as the API describes it: on PostgreSQL there are no files (`files` is null). */
export type StoreInfo = Omit<StoreSummary, "files"> & { files: StoreSummary["files"] | null };

type StoreArg = { store: string };

export type StoresBackend = {
  kind: "sqlite" | "postgres";
  /** Start-up: the core store, and on a fresh install the `default` store. */
  ensureStartupStores: () => Promise<{ createdDefault: boolean }>;
  listStores: () => Promise<StoreInfo[]>;
  /** The names only (core first), without describing each store: for pickers and allow-list checks. */
  listStoreNames: () => Promise<string[]>;
  /** Whether a store holds anything a page would show (documents, memories, traces, learnings, thoughts): index probes, no counts. */
  storeHasContent: (a: StoreArg) => Promise<boolean>;
  createStore: (a: { input: z.input<typeof createStoreSchema>; actor: string }) => Promise<StoreInfo>;
  /** Remove a store and everything in it (admin; audited; `confirm` repeats the name); core and default cannot be deleted. */
  deleteStore: (a: { name: string; actor: string; confirm: string | undefined }) => Promise<{ deleted: string }>;
  /** Make a store read-only and closed to background work (admin; audited); reads still work. */
  archiveStore: (a: { name: string; actor: string }) => Promise<{ store: string; archived: boolean }>;
  unarchiveStore: (a: { name: string; actor: string }) => Promise<{ store: string; archived: boolean }>;
  describeStore: (a: StoreArg) => Promise<StoreInfo>;
  putDocuments: (a: StoreArg & { input: z.output<typeof putDocumentsSchema>; actor: string }) => Promise<IngestResult[]>;
  listDocuments: (a: StoreArg & { prefix: string; limit: number; offset: number }) => Promise<{ total: number; documents: DocumentSummary[] }>;
  deleteDocument: (a: StoreArg & { path: string; actor: string }) => Promise<void>;
  getChunk: (a: StoreArg & { chunkId: string }) => Promise<ChunkDetail>;
  /** The search reader: a chunk in its document, its neighbours, metadata and vector provenance. */
  readChunk: (a: StoreArg & { chunkId: string }) => Promise<ChunkReader>;
  /** fts, vector or hybrid, core included when asked (the caller's right to read core was checked with the request). */
  search: (a: StoreArg & { input: SearchInput }) => Promise<SearchResult>;
  /** What a result list calls each document (heading, first line or file name), by path. */
  documentTitles: (a: StoreArg & { paths: string[] }) => Promise<Map<string, string>>;
  getMemory: (a: StoreArg & { memoryPath: string }) => Promise<MemoryWithBody>;
  listMemories: (a: StoreArg & { filter: MemoryFilter }) => Promise<{ total: number; memories: Memory[] }>;
  createMemory: (a: StoreArg & { input: z.output<typeof createMemorySchema>; actor: string }) => Promise<MemoryWithBody>;
  updateMemory: (a: StoreArg & { input: z.output<typeof updateMemorySchema>; actor: string }) => Promise<MemoryWithBody>;
  deleteMemory: (a: StoreArg & { memoryPath: string; actor: string }) => Promise<void>;
  /** Deleted memories kept for DUALMIND_MEMORY_TRASH_DAYS (newest first), one with its text, put back, or purged now. */
  listMemoryTrash: (a: StoreArg) => Promise<TrashedMemory[]>;
  getTrashedMemory: (a: StoreArg & { id: string }) => Promise<TrashedMemoryWithBody>;
  restoreMemory: (a: StoreArg & { input: z.output<typeof restoreMemorySchema>; actor: string }) => Promise<MemoryWithBody>;
  purgeTrashedMemory: (a: StoreArg & { id: string; actor: string }) => Promise<void>;
  listCategoryChildren: (a: StoreArg & { parent: string | null }) => Promise<CategoryChild[]>;
  /** Every category of the store with its recursive memory count (the memories browser's tree). */
  listAllCategories: (a: StoreArg) => Promise<CategoryChild[]>;
  /** A memory's change history from the audit log, newest first (moves followed back). */
  listMemoryHistory: (a: StoreArg & { memoryPath: string; limit: number }) => Promise<MemoryHistoryEntry[]>;
  setCategoryDescription: (a: StoreArg & { input: z.output<typeof setCategorySchema>; actor: string }) => Promise<CategoryChild>;
  /** Compare the truth (memory files; on PostgreSQL the memories table) with the index, without writing. */
  verifyStore: (a: StoreArg) => Promise<VerifyReport>;
  /** Files under memory/ the last scan could not index, with the reason (none on PostgreSQL: no files there). */
  listUnindexableFiles: (a: StoreArg) => Promise<UnindexableFile[]>;
  /** Start (or join) the store's reindex job: the derived index rebuilt from the truth. */
  startReindex: (a: StoreArg & { actor: string }) => Promise<Job>;
  /**
   * The same reindex job as startReindex (its row, its audit entry, one per store), run to the end before
   * answering (the CLI): a job another process or replica is running is waited for, and taken over if it dies.
   */
  runReindex: (a: StoreArg & { actor: string; reason?: string; onProgress?: (p: ReindexProgress) => void }) => Promise<Job>;
  /** An admin job; a store-limited caller sees only its stores' jobs. */
  getJob: (a: { id: string; stores: readonly string[] | null }) => Promise<Job | null>;
  /** Each store's latest admin job (the Admin page; admins only). */
  listLatestJobs: () => Promise<Job[]>;
};

/** The SQLite functions, unchanged; wrapped, a throw becomes a rejection like on PostgreSQL. */
const sqliteStores: StoresBackend = {
  kind: "sqlite",
  ensureStartupStores: async () => {
    ensureCoreStore();
    removeDeletedStoreLeftovers();
    return { createdDefault: ensureDefaultStore() };
  },
  listStores: async () => listStores(),
  listStoreNames: async () => listStoreNames(),
  storeHasContent: async ({ store }) => storeHasContent({ handle: openStore({ store }) }),
  createStore: async (a) => createStore(a),
  deleteStore: async (a) => deleteStore(a),
  archiveStore: async (a) => archiveStore(a),
  unarchiveStore: async (a) => unarchiveStore(a),
  describeStore: async ({ store }) => describeStore({ handle: openStore({ store }) }),
  putDocuments: async ({ store, ...a }) => putDocuments({ handle: openStore({ store }), ...a }),
  listDocuments: async ({ store, ...a }) => listDocumentsByPrefix({ handle: openStore({ store }), ...a }),
  deleteDocument: async ({ store, ...a }) => deleteApiDocument({ handle: openStore({ store }), ...a }),
  getChunk: async ({ store, ...a }) => getChunkByChunkId({ handle: openStore({ store }), ...a }),
  readChunk: async ({ store, ...a }) => readChunkInDocument({ handle: openStore({ store }), ...a }),
  search: async ({ store, input }) => {
    const handle = openStore({ store });
    return searchStore({ handle, core: openCoreFor({ handle, includeCore: input.include_core }), input });
  },
  documentTitles: async ({ store, ...a }) => listDocumentTitles({ handle: openStore({ store }), ...a }),
  // The SQLite writes answer the memory read back from its file (with its body).
  getMemory: async ({ store, ...a }) => getMemoryByPath({ handle: openStore({ store }), ...a }),
  listMemories: async ({ store, ...a }) => listMemoriesByFilter({ handle: openStore({ store }), ...a }),
  createMemory: async ({ store, ...a }) => createMemory({ handle: openStore({ store }), ...a }) as MemoryWithBody,
  updateMemory: async ({ store, ...a }) => updateMemory({ handle: openStore({ store }), ...a }) as MemoryWithBody,
  deleteMemory: async ({ store, ...a }) => deleteMemory({ handle: openStore({ store }), ...a }),
  listMemoryTrash: async ({ store }) => listMemoryTrash({ handle: openStore({ store }) }),
  getTrashedMemory: async ({ store, ...a }) => getTrashedMemory({ handle: openStore({ store }), ...a }),
  restoreMemory: async ({ store, ...a }) => restoreMemory({ handle: openStore({ store }), ...a }) as MemoryWithBody,
  purgeTrashedMemory: async ({ store, ...a }) => purgeTrashedMemory({ handle: openStore({ store }), ...a }),
  listCategoryChildren: async ({ store, ...a }) => listCategoryChildren({ handle: openStore({ store }), ...a }),
  listAllCategories: async ({ store }) => listAllCategories({ handle: openStore({ store }) }),
  listMemoryHistory: async ({ store, ...a }) => listMemoryHistory({ handle: openStore({ store }), ...a }),
  setCategoryDescription: async ({ store, ...a }) => setCategoryDescription({ handle: openStore({ store }), ...a }),
  verifyStore: ({ store }) => verifyStoreAsync({ handle: openStore({ store }) }),
  listUnindexableFiles: async ({ store }) => lastUnindexableFiles({ handle: openStore({ store }) }),
  // The job is the build: no silent rebuild on open first (see openStore).
  startReindex: async ({ store, actor }) => startReindexJob({ handle: openStore({ store, buildIndex: false }), actor }),
  runReindex: async ({ store, ...a }) => runReindexJob({ handle: openStore({ store, buildIndex: false }), ...a }),
  getJob: async (a) => getJobById(a),
  listLatestJobs: async () => listLatestJobs(),
};

/** A PostgreSQL store's summary in the API's shape (see StoreInfo). */
function storeInfoOf(s: PgStoreSummary): StoreInfo {
  return {
    name: s.name,
    description: s.description,
    archived: s.archived,
    createdAt: s.createdAt,
    schemaVersion: s.schemaVersion,
    // The exact scan works on any PostgreSQL; `reason` says which method answers and its limit.
    vectors: { available: true, version: s.vectors.pgvector, reason: s.vectors.reason },
    counts: s.counts,
    files: null,
  };
}

/** Every method awaits the process's pool (migrated on first use) and opens the store there (404 when unknown). */
export function pgStores(pgHandle: Promise<PgHandle> | PgHandle): StoresBackend {
  const open = async (store: string) => {
    const pg = await pgHandle;
    return { pg, handle: await openStorePg({ pg, store }) };
  };
  return {
    kind: "postgres",
    ensureStartupStores: async () => {
      const pg = await pgHandle;
      await ensureCoreStorePg({ pg });
      return { createdDefault: await ensureDefaultStorePg({ pg }) };
    },
    listStores: async () => (await listStoresPg({ pg: await pgHandle })).map(storeInfoOf),
    listStoreNames: async () => listStoreNamesPg({ pg: await pgHandle }),
    storeHasContent: async ({ store }) => storeHasContentPg({ handle: (await open(store)).handle }),
    createStore: async (a) => storeInfoOf(await createStorePg({ pg: await pgHandle, ...a })),
    deleteStore: async (a) => deleteStorePg({ pg: await pgHandle, ...a }),
    archiveStore: async (a) => archiveStorePg({ pg: await pgHandle, ...a }),
    unarchiveStore: async (a) => unarchiveStorePg({ pg: await pgHandle, ...a }),
    describeStore: async ({ store }) => storeInfoOf(await describeStorePg({ handle: (await open(store)).handle })),
    putDocuments: async ({ store, ...a }) => putDocumentsPg({ handle: (await open(store)).handle, ...a }),
    listDocuments: async ({ store, ...a }) => listDocumentsByPrefixPg({ handle: (await open(store)).handle, ...a }),
    deleteDocument: async ({ store, ...a }) => deleteApiDocumentPg({ handle: (await open(store)).handle, ...a }),
    getChunk: async ({ store, ...a }) => getChunkByChunkIdPg({ handle: (await open(store)).handle, ...a }),
    readChunk: async ({ store, ...a }) => readChunkInDocument({ handle: (await open(store)).handle, ...a }),
    search: async ({ store, input }) => {
      const { pg, handle } = await open(store);
      const core = await openCoreForPg({ pg, handle, includeCore: input.include_core });
      // The query is embedded only when vectors can take part; fts never waits for the provider.
      const vector = input.mode === "fts" ? undefined : await planQueryVectorPg({ handle, text: input.q });
      return searchStorePg({ handle, core, input, vector });
    },
    documentTitles: async ({ store, ...a }) => listDocumentTitles({ handle: (await open(store)).handle, ...a }),
    getMemory: async ({ store, ...a }) => getMemoryByPathPg({ handle: (await open(store)).handle, ...a }),
    listMemories: async ({ store, ...a }) => listMemoriesByFilter({ handle: (await open(store)).handle, ...a }),
    createMemory: async ({ store, ...a }) => createMemoryPg({ handle: (await open(store)).handle, ...a }),
    updateMemory: async ({ store, ...a }) => updateMemoryPg({ handle: (await open(store)).handle, ...a }),
    deleteMemory: async ({ store, ...a }) => deleteMemoryPg({ handle: (await open(store)).handle, ...a }),
    listMemoryTrash: async ({ store }) => listMemoryTrashPg({ handle: (await open(store)).handle }),
    getTrashedMemory: async ({ store, ...a }) => getTrashedMemoryPg({ handle: (await open(store)).handle, ...a }),
    restoreMemory: async ({ store, ...a }) => restoreMemoryPg({ handle: (await open(store)).handle, ...a }),
    purgeTrashedMemory: async ({ store, ...a }) => purgeTrashedMemoryPg({ handle: (await open(store)).handle, ...a }),
    listCategoryChildren: async ({ store, ...a }) => listCategoryChildren({ handle: (await open(store)).handle, ...a }),
    listAllCategories: async ({ store }) => listAllCategories({ handle: (await open(store)).handle }),
    listMemoryHistory: async ({ store, ...a }) => listMemoryHistoryPg({ handle: (await open(store)).handle, ...a }),
    setCategoryDescription: async ({ store, ...a }) => setCategoryDescriptionPg({ handle: (await open(store)).handle, ...a }),
    verifyStore: async ({ store }) => verifyStorePg({ handle: (await open(store)).handle }),
    listUnindexableFiles: async () => [],
    startReindex: async ({ store, actor }) => {
      const { pg, handle } = await open(store);
      // A reindex of this store whose replica died (heartbeat older than JOB_STALE_MS) is taken over first, by whichever replica is asked next.
      const takeOver = () => takeOverStaleJobPg({ db: pg.db, owner: JOB_OWNER, store: handle.store });
      for (let row = await takeOver(); row; row = await takeOver()) void runReindexJobPg({ pg, handle, jobId: row.id });
      return startReindexJobOnPg({ pg, handle, actor });
    },
    // The PostgreSQL rebuild reports no progress (one transaction over the memories): its counts come with the finished job.
    runReindex: async ({ store, actor, reason }) => {
      const { pg, handle } = await open(store);
      return runReindexJobToEndPg({ pg, handle, actor, reason });
    },
    getJob: async (a) => getJobByIdPg({ pg: await pgHandle, ...a }),
    listLatestJobs: async () => listLatestJobsPg({ pg: await pgHandle }),
  };
}

/** The writes of a store's content: refused (409 store_archived) while it is archived, whichever surface asks. */
const CONTENT_WRITES = ["putDocuments", "deleteDocument", "createMemory", "updateMemory", "deleteMemory", "setCategoryDescription", "startReindex"] as const;

/** The stores backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite. */
const guardedSqliteStores = refusingArchivedWrites(sqliteStores, CONTENT_WRITES);
export const stores: () => StoresBackend = backendChooser(guardedSqliteStores, (pg) => refusingArchivedWrites(pgStores(pg), CONTENT_WRITES));

export function sqliteStoresBackend(): StoresBackend {
  return guardedSqliteStores;
}

export { assertStoresNotOnPostgres, notServedOnPostgres, storesOnPostgres } from "./on-postgres";
