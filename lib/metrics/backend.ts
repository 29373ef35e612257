import type { MinuteRollup } from "../http/request-timer";
import { perEngine, type Engine } from "../db/engine";
import { flushLatencyRollupsPg, pruneMetricsPg, saveRollupsPg, saveStoreSnapshotsPg, snapshotAllStoresPg } from "./metrics-pg";
import { flushLatencyRollups, pruneMetrics, saveRollups, type PruneCounts } from "./rollups";
import { saveStoreSnapshots, snapshotAllStores, type StoreSnapshot } from "./snapshots";

/**
 * Where the Health and Observability history is written on this process's
 * backend: governance.db on SQLite, the shared PostgreSQL tables with
 * DATABASE_URL (lib/metrics/metrics-pg.ts). The metrics loop, the CLI and
 * tests write through it; the pages read through lib/metrics/health.ts.
 */
export type MetricsBackend = {
  /** Drain this process's request minutes into the history; how many route-minutes were written. */
  flushLatencyRollups: () => Promise<number>;
  saveRollups: (a: { rows: MinuteRollup[]; resolutionS?: 60 | 3600 }) => Promise<number>;
  pruneMetrics: (a?: { now?: number }) => Promise<PruneCounts>;
  snapshotAllStores: (a?: { now?: number }) => Promise<{ saved: number; failed: { store: string; error: string }[] }>;
  saveStoreSnapshots: (a: { snapshots: StoreSnapshot[]; resolutionS?: 60 | 3600 }) => Promise<void>;
};

const sqliteMetrics: MetricsBackend = {
  flushLatencyRollups: async () => flushLatencyRollups(),
  saveRollups: async (a) => saveRollups(a),
  pruneMetrics: async (a) => pruneMetrics(a),
  snapshotAllStores: (a) => snapshotAllStores(a),
  saveStoreSnapshots: async (a) => saveStoreSnapshots(a),
};

const pgMetrics: MetricsBackend = {
  flushLatencyRollups: flushLatencyRollupsPg,
  saveRollups: saveRollupsPg,
  pruneMetrics: pruneMetricsPg,
  snapshotAllStores: snapshotAllStoresPg,
  saveStoreSnapshots: saveStoreSnapshotsPg,
};

export function metricsOn(engine: Engine): MetricsBackend {
  return engine.kind === "pg" ? pgMetrics : sqliteMetrics;
}

/** The metrics backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite (the same choice as stores()). */
export const metricsBackend: () => MetricsBackend = perEngine(metricsOn);
