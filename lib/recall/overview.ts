import type { StoreHandle } from "../db/connection";
import { getRecallMetrics, type RecallMetricsBucket } from "./events";
import { getReflectionSettings, type ReflectionSettings } from "./settings";

export type ReflectionOverview = {
  store: string;
  settings: ReflectionSettings;
  counts: { traces: number; failures: number; learnings: number; awaitingVector: number; skippedBackpressure: number };
  /** Last 24 hours, hourly; hours without recalls are absent (gaps). */
  metrics: RecallMetricsBucket[];
  totals: { recalls: number; hitRate: number | null; rated: number; precision: number | null };
};

/** What the Reflection page header and `GET /stores/{store}/reflection` show. */
export function getReflectionOverview({ handle }: { handle: StoreHandle }): ReflectionOverview {
  const { sqlite } = handle;
  const traces = sqlite
    .prepare(
      `select count(*) as traces, count(*) filter (where outcome = 'failure') as failures, count(*) filter (where embed_skipped_at is not null) as skipped
       from reasoning_traces`,
    )
    .get() as { traces: number; failures: number; skipped: number };
  const { learnings } = sqlite.prepare("select count(*) as learnings from learnings").get() as { learnings: number };
  const { waiting } = sqlite.prepare("select count(*) as waiting from embed_queue where kind in ('trace', 'learning') and parked_at is null").get() as { waiting: number };
  const totals = sqlite
    .prepare(
      `select count(*) as recalls, avg(hit_count > 0) as hit_rate,
         (select count(*) from recall_event_hits where rated_at is not null) as rated,
         (select avg(relevant) from recall_event_hits where rated_at is not null) as precision
       from recall_events`,
    )
    .get() as { recalls: number; hit_rate: number | null; rated: number; precision: number | null };
  return {
    store: handle.store,
    settings: getReflectionSettings({ handle }),
    counts: { traces: traces.traces, failures: traces.failures, learnings, awaitingVector: waiting, skippedBackpressure: traces.skipped },
    metrics: getRecallMetrics({ handle, since: Date.now() - 86_400_000 }),
    totals: { recalls: totals.recalls, hitRate: totals.hit_rate, rated: totals.rated, precision: totals.precision },
  };
}
