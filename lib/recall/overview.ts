import { and, count, inArray, isNotNull, isNull, sql } from "drizzle-orm";
import { read, select, type AnyStoreHandle, type On } from "../db/port";
import { recallMetrics, type RecallMetricsBucket } from "./events";
import { LEARNING_KIND } from "./learnings";
import { reflectionSettingsInForce, type ReflectionSettings } from "./settings";
import { recallTables } from "./tables";
import { TRACE_KIND } from "./traces";

export type ReflectionOverview = {
  store: string;
  settings: ReflectionSettings;
  counts: { traces: number; failures: number; learnings: number; awaiting_vector: number; skipped_backpressure: number };
  /** Last 24 hours, hourly; hours without recalls are absent (gaps). */
  metrics: RecallMetricsBucket[];
  totals: { recalls: number; hit_rate: number | null; rated: number; precision: number | null };
};

/** A share (0..1) of the rows where `condition` holds, or null without rows. */
const shareWhere = (condition: ReturnType<typeof sql>) => sql<number | null>`avg(case when ${condition} then 1.0 else 0.0 end)`.mapWith(Number);

/** What the Reflection page header and `GET /stores/{store}/reflection` show, read as one state. */
export function getReflectionOverview<H extends AnyStoreHandle>({ handle }: { handle: H }): On<H, ReflectionOverview> {
  const { traces: tracesTable, learnings, embedQueue, hits: hitsTable, events } = recallTables;
  return read(handle, function* () {
    const [traces] = yield* select({ t: tracesTable }, (db, { t }) =>
      db
        .select({
          traces: count(),
          failures: sql<number>`count(*) filter (where ${t.outcome} = 'failure')`.mapWith(Number),
          skipped: sql<number>`count(*) filter (where ${t.embedSkippedAt} is not null)`.mapWith(Number),
        })
        .from(t),
    );
    const [{ learnings: learningCount }] = yield* select({ l: learnings }, (db, { l }) => db.select({ learnings: count() }).from(l));
    const [{ waiting }] = yield* select({ q: embedQueue }, (db, { q }) =>
      db
        .select({ waiting: count() })
        .from(q)
        .where(and(inArray(q.kind, [TRACE_KIND, LEARNING_KIND]), isNull(q.parkedAt))),
    );
    const [hits] = yield* select({ h: hitsTable }, (db, { h }) => db.select({ rated: count(), precision: shareWhere(sql`${h.relevant}`) }).from(h).where(isNotNull(h.ratedAt)));
    const [recalls] = yield* select({ e: events }, (db, { e }) => db.select({ recalls: count(), hitRate: shareWhere(sql`${e.hitCount} > 0`) }).from(e));
    return {
      store: handle.store,
      settings: yield* reflectionSettingsInForce(),
      counts: { traces: traces.traces, failures: traces.failures, learnings: learningCount, awaiting_vector: waiting, skipped_backpressure: traces.skipped },
      metrics: yield* recallMetrics({ since: Date.now() - 86_400_000 }),
      totals: { recalls: recalls.recalls, hit_rate: recalls.hitRate, rated: hits.rated, precision: hits.precision },
    };
  }, { snapshot: true });
}
