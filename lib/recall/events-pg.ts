import { and, asc, between, count, eq, isNotNull, sql } from "drizzle-orm";
import type { PgStoreTx } from "../db/pg-store";
import { recallEventHits, recallEvents } from "../db/schema/pg/store";
import { bucketRecallMetrics, recallEventRows, type RecallEventInput, type RecallMetricsBucket } from "./events";

/** The recall log on PostgreSQL (the SQLite twin is ./events.ts). */

/** One recall and its hits, in the caller's transaction. Returns the event id the response carries. */
export async function logRecallEventPg({ tx, event }: { tx: PgStoreTx; event: RecallEventInput }): Promise<number> {
  const rows = recallEventRows(event);
  const [{ id }] = await tx.insert(recallEvents).values(rows.event).returning({ id: recallEvents.id });
  if (event.hits.length > 0) await tx.insert(recallEventHits).values(rows.hits(id));
  return id;
}

/** Hit rate, precision and latency percentiles per time bucket (see getRecallMetrics, ./events.ts). */
export async function getRecallMetricsPg({ tx, bucketMs = 3_600_000, since = 0, until = Date.now() }: { tx: PgStoreTx; bucketMs?: number; since?: number; until?: number }): Promise<RecallMetricsBucket[]> {
  const inWindow = between(recallEvents.createdAt, since, until);
  const events = await tx
    .select({ createdAt: recallEvents.createdAt, latencyMs: recallEvents.latencyMs, hitCount: recallEvents.hitCount, fallbackReason: recallEvents.fallbackReason })
    .from(recallEvents)
    .where(inWindow)
    .orderBy(asc(recallEvents.createdAt));
  // The width as a literal (a checked integer): the grouped expression must be the selected one, which two parameters are not.
  const width = sql.raw(String(Math.max(1, Math.trunc(bucketMs))));
  const bucketStart = sql<string>`(${recallEvents.createdAt} / ${width}) * ${width}`;
  const ratings = await tx
    .select({ start: bucketStart, rated: count(), relevant: sql<number>`count(*) filter (where ${recallEventHits.relevant})::int` })
    .from(recallEventHits)
    .innerJoin(recallEvents, eq(recallEvents.id, recallEventHits.eventId))
    .where(and(isNotNull(recallEventHits.ratedAt), inWindow))
    .groupBy(bucketStart);
  return bucketRecallMetrics({ events, ratings: ratings.map((r) => ({ ...r, start: Number(r.start) })), bucketMs });
}
