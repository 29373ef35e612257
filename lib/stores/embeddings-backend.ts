import { perEngine, type Engine } from "../db/engine";
import type { PgHandle } from "../db/pg";
import { refusingArchivedWrites } from "../db/store-lifecycle";
import { compareCandidateModel, type ModelComparison } from "../embed/compare";
import type { Fingerprint } from "../embed/providers";
import { retryParkedEmbeddings } from "../embed/queue";
import { startEmbedWorker } from "../embed/worker";
import { describeReembedIntent, estimateReembed, getReembedProgress, startReembed, switchHeldReembed, type ReembedEstimate, type SwitchGate, type ReembedProgress, type StartReembedResult } from "../embed/reembed";
import { compareCandidateModelPg, describeReembedIntentPg, estimateReembedPg, getReembedProgressPg, startReembedPg, switchHeldReembedPg } from "../index/reembed-pg";
import { openStore } from "./stores";
import { startStoresEmbedWorkerPg } from "./engines/pg";
import { openStorePg } from "./engines/pg";

/**
 * A store's embedding administration — re-embed (estimate, start, progress,
 * held switch, comparison of the candidate model), the retry of parked
 * items and a worker to run the queue here — behind one interface for the REST routes and the store page's
 * actions, as recallBackend() is for recall: the SQLite functions
 * (lib/embed/reembed.ts, compare.ts, queue.ts) unchanged, or their PostgreSQL
 * twins (lib/index/reembed-pg.ts, embed-queue-pg.ts) with DATABASE_URL. An
 * unknown store is a 404 on both.
 */

type StoreArg = { store: string };
export type ReembedIntent = "start" | "start_stale" | "start_hold" | "switch";

export type EmbeddingsBackend = {
  getReembedProgress: (a: StoreArg) => Promise<ReembedProgress | null>;
  estimateReembed: (a: StoreArg & { configured: Fingerprint; onlyStale: boolean }) => Promise<ReembedEstimate>;
  describeReembedIntent: (a: StoreArg & { configured: Fingerprint; intent: ReembedIntent }) => Promise<string>;
  startReembed: (a: StoreArg & { configured: Fingerprint; onlyStale: boolean; holdSwitch: boolean; actor: string }) => Promise<StartReembedResult>;
  switchHeldReembed: (a: StoreArg & { actor: string; gate: SwitchGate }) => Promise<void>;
  compareCandidateModel: (a: StoreArg & { n: number; k: number }) => Promise<ModelComparison>;
  retryParkedEmbeddings: (a: StoreArg & { actor: string }) => Promise<number>;
  /**
   * An embed worker over every store of this backend until `signal` aborts (the CLI's `reembed --wait`):
   * claims are atomic on both backends, so it can run beside the servers' and other replicas' workers.
   */
  runEmbedWorker: (a: { signal: AbortSignal; idleMs?: number }) => Promise<void>;
};

/** The SQLite functions, unchanged; wrapped, a throw becomes a rejection like on PostgreSQL. */
const sqliteEmbeddings: EmbeddingsBackend = {
  getReembedProgress: async ({ store }) => getReembedProgress({ handle: openStore({ store }) }),
  estimateReembed: async ({ store, ...a }) => estimateReembed({ handle: openStore({ store }), ...a }),
  describeReembedIntent: async ({ store, ...a }) => describeReembedIntent({ handle: openStore({ store }), ...a }),
  startReembed: async ({ store, ...a }) => startReembed({ handle: openStore({ store }), ...a }),
  switchHeldReembed: async ({ store, ...a }) => switchHeldReembed({ handle: openStore({ store }), ...a }),
  compareCandidateModel: async ({ store, ...a }) => compareCandidateModel({ handle: openStore({ store }), ...a }),
  retryParkedEmbeddings: async ({ store, ...a }) => retryParkedEmbeddings({ handle: openStore({ store }), ...a }),
  runEmbedWorker: (a) => startEmbedWorker(a),
};

/** The PostgreSQL twins: every method awaits the process's pool and opens the store there (404 when unknown). */
function pgEmbeddings(pgHandle: Promise<PgHandle>): EmbeddingsBackend {
  const open = async (store: string) => openStorePg({ pg: await pgHandle, store });
  return {
    getReembedProgress: async ({ store }) => getReembedProgressPg({ handle: await open(store) }),
    estimateReembed: async ({ store, ...a }) => estimateReembedPg({ handle: await open(store), ...a }),
    describeReembedIntent: async ({ store, ...a }) => describeReembedIntentPg({ handle: await open(store), ...a }),
    startReembed: async ({ store, ...a }) => startReembedPg({ handle: await open(store), ...a }),
    switchHeldReembed: async ({ store, ...a }) => switchHeldReembedPg({ handle: await open(store), ...a }),
    compareCandidateModel: async ({ store, ...a }) => compareCandidateModelPg({ handle: await open(store), ...a }),
    retryParkedEmbeddings: async ({ store, ...a }) => retryParkedEmbeddings({ handle: await open(store), ...a }),
    // The worker `npm run worker` runs beside the server (this process's pool, every PostgreSQL store).
    runEmbedWorker: (a) => startStoresEmbedWorkerPg(a),
  };
}

/** Writes an archived store refuses (409 store_archived), whichever surface asks. */
const EMBEDDING_WRITES = ["startReembed", "switchHeldReembed", "retryParkedEmbeddings"] as const;

/** A store's embedding administration on one engine (re-embed still has a PostgreSQL twin). */
export function embeddingsOn(engine: Engine): EmbeddingsBackend {
  return refusingArchivedWrites({ backend: engine.kind === "pg" ? pgEmbeddings(engine.pg) : sqliteEmbeddings, writes: EMBEDDING_WRITES });
}

/** The embeddings backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite (the same choice as stores()). */
export const embeddingsBackend: () => EmbeddingsBackend = perEngine(embeddingsOn);
