import { and, count, inArray, isNotNull, isNull, sql } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { embedQueue } from "../db/schema/embed";
import { learnings, reasoningTraces, recallEventHits, recallEvents } from "../db/schema/recall";
import { getRecallMetrics, type RecallMetricsBucket } from "./events";
import { LEARNING_KIND } from "./learnings";
import { getReflectionSettings, type ReflectionSettings } from "./settings";
import { TRACE_KIND } from "./traces";

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
  const { db } = handle;
  const traces = db
    .select({
      traces: count(),
      failures: sql<number>`count(*) filter (where ${reasoningTraces.outcome} = 'failure')`,
      skipped: sql<number>`count(*) filter (where ${reasoningTraces.embedSkippedAt} is not null)`,
    })
    .from(reasoningTraces)
    .get()!;
  const { learnings: learningCount } = db.select({ learnings: count() }).from(learnings).get()!;
  const { waiting } = db
    .select({ waiting: count() })
    .from(embedQueue)
    .where(and(inArray(embedQueue.kind, [TRACE_KIND, LEARNING_KIND]), isNull(embedQueue.parkedAt)))
    .get()!;
  const hits = db.select({ rated: count(), precision: sql<number | null>`avg(${recallEventHits.relevant})` }).from(recallEventHits).where(isNotNull(recallEventHits.ratedAt)).get()!;
  const recalls = db.select({ recalls: count(), hitRate: sql<number | null>`avg(${recallEvents.hitCount} > 0)` }).from(recallEvents).get()!;
  return {
    store: handle.store,
    settings: getReflectionSettings({ handle }),
    counts: { traces: traces.traces, failures: traces.failures, learnings: learningCount, awaitingVector: waiting, skippedBackpressure: traces.skipped },
    metrics: getRecallMetrics({ handle, since: Date.now() - 86_400_000 }),
    totals: { recalls: recalls.recalls, hitRate: recalls.hitRate, rated: hits.rated, precision: hits.precision },
  };
}
