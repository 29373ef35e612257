import { getPg, type PgHandle } from "../../db/pg";
import { activeStoreNamesPg } from "../../db/store-lifecycle";
import type { WorkerMode } from "../../embed/worker-state";
import { startEmbedWorkerPg } from "../../index/embed-queue-pg";
import { SWEEP_MS } from "../../index/jobs";
import { log } from "../../log";
import type { PgStoreHandle } from "../../db/pg-store";
import { deleteApiDocumentPg, getChunkByChunkIdPg, listDocumentsByPrefixPg, putDocumentsPg } from "../../index/ingest-pg";
import { createMemoryPg, deleteMemoryPg, getMemoryByPathPg, listMemoryHistoryPg, setCategoryDescriptionPg, updateMemoryPg } from "../../index/memories-pg";
import { takeOverStaleJobPg } from "../../index/admin-jobs-pg";
import { getJobByIdPg, JOB_OWNER, listLatestJobsPg, runReindexJobPg, runReindexJobToEndPg, startReindexJobOnPg, verifyStorePg } from "../../index/maintenance-pg";
import { searchStorePg } from "../../index/search-pg";
import { planQueryVectorPg } from "../../index/query-vector-pg";
import type { StoreEngine, StoreInfo } from "../backend";
import { archiveStorePg, createStorePg, deleteStorePg, describeStorePg, ensureCoreStorePg, ensureDefaultStorePg, listStoreNamesPg, listStoresPg, openCoreForPg, openStorePg, storeHasContentPg, unarchiveStorePg, type PgStoreSummary } from "../stores-pg";

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

/**
 * The stores on PostgreSQL: a schema per store, the memories table as the
 * truth. Every method awaits the process's pool (migrated on first use) and
 * opens the store there (404 when unknown).
 */
export function pgStoreEngine(pgHandle: Promise<PgHandle>): StoreEngine {
  const open = async (store: string) => {
    const pg = await pgHandle;
    return { pg, handle: await openStorePg({ pg, store }) };
  };
  return {
    kind: "postgres",
    open: async (store) => (await open(store)).handle,
    openCore: async (handle, includeCore) => openCoreForPg({ pg: await pgHandle, handle: handle as PgStoreHandle, includeCore }),
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
    search: async ({ store, input }) => {
      const { pg, handle } = await open(store);
      const core = await openCoreForPg({ pg, handle, includeCore: input.include_core });
      // The query is embedded only when vectors can take part; fts never waits for the provider.
      const vector = input.mode === "fts" ? undefined : await planQueryVectorPg({ handle, text: input.q });
      return searchStorePg({ handle, core, input, vector });
    },
    getMemory: async ({ store, ...a }) => getMemoryByPathPg({ handle: (await open(store)).handle, ...a }),
    createMemory: async ({ store, ...a }) => createMemoryPg({ handle: (await open(store)).handle, ...a }),
    updateMemory: async ({ store, ...a }) => updateMemoryPg({ handle: (await open(store)).handle, ...a }),
    deleteMemory: async ({ store, ...a }) => deleteMemoryPg({ handle: (await open(store)).handle, ...a }),
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

/**
 * The embed worker over every PostgreSQL store (DATABASE_URL set), started
 * beside the SQLite one by the server and `npm run worker`. Each round asks
 * for the process's pool again, so a database that was down at start-up is
 * picked up when it comes back.
 */
export function startStoresEmbedWorkerPg({ signal, idleMs, mode }: { signal?: AbortSignal; idleMs?: number; mode?: WorkerMode } = {}): Promise<void> {
  const pg = async () => {
    const handle = getPg();
    if (!handle) throw new Error("DATABASE_URL is not set");
    return handle;
  };
  return startEmbedWorkerPg({
    signal,
    idleMs,
    // Archived stores are left alone.
    listStores: async () => {
      const handle = await pg();
      return activeStoreNamesPg({ pg: handle, names: await listStoreNamesPg({ pg: handle }) });
    },
    openStore: async (store) => openStorePg({ pg: await pg(), store }),
    registry: async () => (await pg()).db,
    mode,
  });
}

/**
 * The PostgreSQL twin of startJobSweeper (lib/index/jobs.ts): at start-up
 * and every SWEEP_MS, take over and run every reindex whose replica went
 * silent (heartbeat older than JOB_STALE_MS), on any store. Without it a job
 * a killed replica left running stayed "running" until someone asked for
 * that store's reindex again. Claims use FOR UPDATE SKIP LOCKED
 * (takeOverStaleJobPg), so replicas sweeping at once never take one job twice.
 */
export async function resumeStaleJobsPg(): Promise<string[]> {
  const handle = getPg();
  if (!handle) return [];
  const pg = await handle;
  const resumed: string[] = [];
  for (let row = await takeOverStaleJobPg({ db: pg.db, owner: JOB_OWNER }); row; row = await takeOverStaleJobPg({ db: pg.db, owner: JOB_OWNER })) {
    log("warn", "resuming a reindex whose replica stopped", { jobId: row.id, store: row.store, attempt: row.attempts });
    try {
      void runReindexJobPg({ pg, handle: await openStorePg({ pg, store: row.store }), jobId: row.id });
      resumed.push(row.id);
    } catch (e) {
      // Its store is gone: the job stays this replica's until its heartbeat is stale again, and is closed after MAX_ATTEMPTS.
      log("error", "cannot resume a reindex", { jobId: row.id, store: row.store, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return resumed;
}

let sweeper: NodeJS.Timeout | null = null;

export function startJobSweeperPg(): void {
  if (sweeper) return;
  const sweep = () => void resumeStaleJobsPg().catch((e: unknown) => log("error", "job sweep on PostgreSQL failed", { error: e instanceof Error ? e.message : String(e) }));
  // Not inside register(): start-up finishes first, then the sweep runs.
  setTimeout(sweep, 0).unref();
  sweeper = setInterval(sweep, SWEEP_MS);
  sweeper.unref();
}
