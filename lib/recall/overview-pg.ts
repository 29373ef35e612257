import { count, inArray, isNotNull, isNull, sql, and } from "drizzle-orm";
import { withStoreTx, type PgStoreHandle } from "../db/pg-store";
import { embedQueue, learnings, reasoningTraces, recallEventHits, recallEvents } from "../db/schema/pg/store";
import { getRecallMetricsPg } from "./events-pg";
import { LEARNING_KIND } from "./learnings";
import type { ReflectionOverview } from "./overview";
import { getReflectionSettingsPg } from "./settings-pg";
import { TRACE_KIND } from "./traces";

/** `GET /stores/{store}/reflection` on PostgreSQL: the same overview as getReflectionOverview (./overview.ts), in one read-only transaction. */
export async function getReflectionOverviewPg({ handle }: { handle: PgStoreHandle }): Promise<ReflectionOverview> {
  return withStoreTx({ handle, readOnly: true }, async (tx) => {
    const [traces] = await tx
      .select({
        traces: count(),
        failures: sql<number>`count(*) filter (where ${reasoningTraces.outcome} = 'failure')::int`,
        skipped: sql<number>`count(*) filter (where ${reasoningTraces.embedSkippedAt} is not null)::int`,
      })
      .from(reasoningTraces);
    const [{ learnings: learningCount }] = await tx.select({ learnings: count() }).from(learnings);
    const [{ waiting }] = await tx
      .select({ waiting: count() })
      .from(embedQueue)
      .where(and(inArray(embedQueue.kind, [TRACE_KIND, LEARNING_KIND]), isNull(embedQueue.parkedAt)));
    const [hits] = await tx.select({ rated: count(), precision: sql<number | null>`avg(case when ${recallEventHits.relevant} then 1.0 else 0.0 end)::float8` }).from(recallEventHits).where(isNotNull(recallEventHits.ratedAt));
    const [recalls] = await tx.select({ recalls: count(), hitRate: sql<number | null>`avg(case when ${recallEvents.hitCount} > 0 then 1.0 else 0.0 end)::float8` }).from(recallEvents);
    return {
      store: handle.store,
      settings: await getReflectionSettingsPg(tx),
      counts: { traces: traces.traces, failures: traces.failures, learnings: learningCount, awaitingVector: waiting, skippedBackpressure: traces.skipped },
      metrics: await getRecallMetricsPg({ tx, since: Date.now() - 86_400_000 }),
      totals: { recalls: recalls.recalls, hitRate: recalls.hitRate, rated: hits.rated, precision: hits.precision },
    };
  });
}
