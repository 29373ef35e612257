import { log } from "../log";
import { metricsBackend } from "./backend";
import { HOUR_MS, MINUTE_MS } from "./rollups";

const g = globalThis as unknown as { __dualmindMetricsLoop?: NodeJS.Timeout };

/** One pass: persist the minutes, snapshot every store, prune once an hour. Errors are logged, never thrown into the server. */
export async function runMetricsPass({ now = Date.now(), prune = false }: { now?: number; prune?: boolean } = {}): Promise<void> {
  // With DATABASE_URL the history lives in PostgreSQL, shared by every replica (lib/metrics/engines/pg.ts).
  const m = metricsBackend();
  try {
    await m.flushLatencyRollups();
  } catch (e) {
    log("error", "metrics: could not save latency rollups", { error: (e as Error).message });
  }
  try {
    const { failed } = await m.snapshotAllStores({ now });
    for (const f of failed) log("warn", "metrics: store snapshot failed", f);
  } catch (e) {
    log("error", "metrics: could not save store snapshots", { error: (e as Error).message });
  }
  if (prune) {
    try {
      await m.pruneMetrics({ now });
    } catch (e) {
      log("error", "metrics: pruning failed", { error: (e as Error).message });
    }
  }
}

/** Start the once-a-minute metrics loop in this process (idempotent across Next dev reloads). */
export function startMetricsLoop(): void {
  if (g.__dualmindMetricsLoop) return;
  let lastPrune = 0;
  const tick = () => {
    const now = Date.now();
    const prune = now - lastPrune >= HOUR_MS;
    if (prune) lastPrune = now;
    void runMetricsPass({ now, prune });
  };
  tick();
  g.__dualmindMetricsLoop = setInterval(tick, MINUTE_MS);
  // Metrics must never keep a CLI or test process alive.
  g.__dualmindMetricsLoop.unref();
}
