import type { MinuteRollup } from "../http/request-timer";
import { perEngine, type Engine } from "../db/engine";
import { snapshotAllStoresPg } from "./engines/pg";
import { flushLatencyRollups, pruneMetrics, saveRollups, type PruneCounts } from "./rollups";
import { saveStoreSnapshots, snapshotAllStores, type StoreSnapshot } from "./snapshots";

/**
 * Where the Health and Observability history is written on this process's
 * engine: governance.db on SQLite, the tables every replica shares with
 * DATABASE_URL. The writes are written once over the ledger port; only which
 * stores are measured differs. The metrics loop, the CLI and tests write
 * through it; the pages read through lib/metrics/health.ts.
 */
export type MetricsBackend = {
  /** Drain this process's request minutes into the history; how many route-minutes were written. */
  flushLatencyRollups: () => Promise<number>;
  saveRollups: (a: { rows: MinuteRollup[]; resolutionS?: 60 | 3600 }) => Promise<number>;
  pruneMetrics: (a?: { now?: number }) => Promise<PruneCounts>;
  snapshotAllStores: (a?: { now?: number }) => Promise<{ saved: number; failed: { store: string; error: string }[] }>;
  saveStoreSnapshots: (a: { snapshots: StoreSnapshot[]; resolutionS?: 60 | 3600 }) => Promise<void>;
};

export function metricsOn(engine: Engine): MetricsBackend {
  // governance.db is opened by the write itself, not before (a flush with nothing to write must not create it).
  const handle = async () => (engine.kind === "pg" ? await engine.pg : undefined);
  return {
    flushLatencyRollups: async () => flushLatencyRollups({ handle: await handle() }),
    saveRollups: async (a) => saveRollups({ ...a, handle: await handle() }),
    pruneMetrics: async (a) => pruneMetrics({ ...a, handle: await handle() }),
    snapshotAllStores: async (a) => (engine.kind === "pg" ? snapshotAllStoresPg({ ...a, pg: await engine.pg }) : snapshotAllStores(a)),
    saveStoreSnapshots: async (a) => saveStoreSnapshots({ ...a, handle: await handle() }),
  };
}

/** The metrics backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite (the same choice as stores()). */
export const metricsBackend: () => MetricsBackend = perEngine(metricsOn);
