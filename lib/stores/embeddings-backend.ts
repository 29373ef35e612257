import { byStore, perEngine, type Engine } from "../db/engine";
import type { AnyStoreHandle } from "../db/port";
import { refusingArchivedWrites } from "../db/store-lifecycle";
import { compareCandidateModel, type ModelComparison } from "../embed/compare";
import type { Fingerprint } from "../embed/providers";
import { retryParkedEmbeddings } from "../embed/queue";
import { startEmbedWorker } from "../embed/worker";
import { describeReembedIntent, estimateReembed, getReembedProgress, startReembed, switchHeldReembed, type ReembedEstimate, type ReembedIntent, type SwitchGate, type ReembedProgress, type StartReembedResult } from "../embed/reembed";
import { compareCandidateModelPg, describeReembedIntentPg, estimateReembedPg, getReembedProgressPg, startReembedPg, switchHeldReembedPg } from "../index/reembed-pg";
import { storeEngineOf } from "./backend";
import { startStoresEmbedWorkerPg } from "./engines/pg";

/**
 * A store's embedding administration — re-embed (estimate, start, progress,
 * held switch, comparison of the candidate model), the retry of parked items
 * and a worker to run the queue here — behind one interface for the REST
 * routes and the store page's actions. An unknown store is a 404 on both.
 */

type StoreArg = { store: string };
export type { ReembedIntent };

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

/** Writes an archived store refuses (409 store_archived), whichever surface asks. */
const EMBEDDING_WRITES = ["startReembed", "switchHeldReembed", "retryParkedEmbeddings"] as const;

/** A store's embedding administration on one engine: re-embed's PostgreSQL twin is picked here, the rest is written once. */
export function embeddingsOn(engine: Engine): EmbeddingsBackend {
  const on = byStore(storeEngineOf(engine).open);
  const pg = engine.kind === "pg";
  const backend: EmbeddingsBackend = {
    getReembedProgress: pg ? on(getReembedProgressPg) : on(getReembedProgress),
    estimateReembed: pg ? on(estimateReembedPg) : on(estimateReembed),
    describeReembedIntent: pg ? on(describeReembedIntentPg) : on(describeReembedIntent),
    startReembed: pg ? on(startReembedPg) : on(startReembed),
    switchHeldReembed: pg ? on(switchHeldReembedPg) : on(switchHeldReembed),
    compareCandidateModel: pg ? on(compareCandidateModelPg) : on(compareCandidateModel),
    retryParkedEmbeddings: on((a: { handle: AnyStoreHandle; actor: string }) => retryParkedEmbeddings(a)),
    // On PostgreSQL the worker `npm run worker` runs beside the server (this process's pool, every PostgreSQL store).
    runEmbedWorker: (a) => (pg ? startStoresEmbedWorkerPg(a) : startEmbedWorker(a)),
  };
  return refusingArchivedWrites({ backend, writes: EMBEDDING_WRITES });
}

/** The embeddings backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite (the same choice as stores()). */
export const embeddingsBackend: () => EmbeddingsBackend = perEngine(embeddingsOn);
