import { and, asc, between, count, desc, eq, gt, inArray, isNotNull, isNull, sql } from "drizzle-orm";
import type { z } from "zod";
import { withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { recallEventHits, recallEvents, type PgRecallEventRow } from "../db/schema/pg/store";
import { AppError } from "../errors";
import { appendAuditPg } from "../governance/audit-pg";
import {
  assembleRecallEvents,
  bucketRecallMetrics,
  rateRecallHitSchema,
  recallEventRows,
  recallRetentionStatements,
  toHit,
  type RatingQueueItem,
  type RecallEvent,
  type RecallEventHit,
  type RecallEventInput,
  type RecallMetricsBucket,
} from "./events";

/** The recall log on PostgreSQL (the SQLite twin is ./events.ts). */

/** One recall and its hits, in the caller's transaction. Returns the event id the response carries. */
export async function logRecallEventPg({ tx, event }: { tx: PgStoreTx; event: RecallEventInput }): Promise<number> {
  const rows = recallEventRows(event);
  const [{ id }] = await tx.insert(recallEvents).values(rows.event).returning({ id: recallEvents.id });
  if (event.hits.length > 0) await tx.insert(recallEventHits).values(rows.hits(id));
  for (const q of recallRetentionStatements(id)) {
    let n = 0;
    await tx.execute(sql.raw(q.sql.replace(/\?/g, () => String(Math.trunc(q.params[n++])))));
  }
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

/** Recall rows with their hits in rank order: one query for all the hits. */
async function withHitsPg(tx: PgStoreTx, events: PgRecallEventRow[]): Promise<RecallEvent[]> {
  if (events.length === 0) return [];
  const hits = await tx
    .select()
    .from(recallEventHits)
    .where(
      inArray(
        recallEventHits.eventId,
        events.map((e) => e.id),
      ),
    )
    .orderBy(asc(recallEventHits.eventId), asc(recallEventHits.rank));
  return assembleRecallEvents({ events, hits });
}

/** The newest recalls with their hits (dashboard; see listRecentRecallEvents, ./events.ts). */
export async function listRecentRecallEventsPg({ handle, limit = 20 }: { handle: PgStoreHandle; limit?: number }): Promise<RecallEvent[]> {
  return withStoreTx({ handle, readOnly: true }, async (tx) => withHitsPg(tx, await tx.select().from(recallEvents).orderBy(desc(recallEvents.id)).limit(limit)));
}

/** One recall with its hits; 404 when unknown. */
export async function getRecallEventByIdPg({ handle, id }: { handle: PgStoreHandle; id: number }): Promise<RecallEvent> {
  return withStoreTx({ handle, readOnly: true }, async (tx) => {
    const events = await tx.select().from(recallEvents).where(eq(recallEvents.id, id));
    if (events.length === 0) throw new AppError("not_found", `no recall ${id}`);
    return (await withHitsPg(tx, events))[0];
  });
}

/** The ids of the last `window` recalls start above this (a bounded look-back however long the log grows). */
const recentFloor = (window: number) => sql`(select coalesce(max(${recallEvents.id}), 0) - ${window} from ${recallEvents})`;

/** The recent recalls that returned one trace or learning, newest first (see listRecallsReturning, ./events.ts). */
export async function listRecallsReturningPg({
  handle,
  artifact,
  refId,
  limit = 10,
  window = 2000,
}: {
  handle: PgStoreHandle;
  artifact: "trace" | "learning";
  refId: number;
  limit?: number;
  window?: number;
}): Promise<RecallEvent[]> {
  return withStoreTx({ handle, readOnly: true }, async (tx) => {
    const ids = (
      await tx
        .selectDistinct({ id: recallEventHits.eventId })
        .from(recallEventHits)
        .where(and(gt(recallEventHits.eventId, recentFloor(window)), eq(recallEventHits.artifact, artifact), eq(recallEventHits.refId, refId)))
        .orderBy(desc(recallEventHits.eventId))
        .limit(limit)
    ).map((r) => r.id);
    if (ids.length === 0) return [];
    return withHitsPg(tx, await tx.select().from(recallEvents).where(inArray(recallEvents.id, ids)).orderBy(desc(recallEvents.id)));
  });
}

/** A random sample of unrated hits from recent recalls (see listRatingQueue, ./events.ts). */
export async function listRatingQueuePg({ handle, limit = 10, window = 500 }: { handle: PgStoreHandle; limit?: number; window?: number }): Promise<RatingQueueItem[]> {
  const rows = await withStoreTx({ handle, readOnly: true }, (tx) =>
    tx
      .select({ hit: recallEventHits, query: recallEvents.query, createdAt: recallEvents.createdAt })
      .from(recallEventHits)
      .innerJoin(recallEvents, eq(recallEvents.id, recallEventHits.eventId))
      .where(and(isNull(recallEventHits.ratedAt), gt(recallEvents.id, recentFloor(window))))
      .orderBy(sql`random()`)
      .limit(limit),
  );
  return rows.map((r) => ({ ...toHit(r.hit), eventId: r.hit.eventId, query: r.query, createdAt: r.createdAt }));
}

/** A person's judgement of one hit; re-rating overwrites. Audited in the same transaction. */
export async function rateRecallHitPg({ handle, input, actor }: { handle: PgStoreHandle; input: z.input<typeof rateRecallHitSchema>; actor: string }): Promise<RecallEventHit> {
  const { hit_id: hitId, relevant } = rateRecallHitSchema.parse(input);
  return withStoreTx({ handle }, async (tx) => {
    const [hit] = await tx.update(recallEventHits).set({ relevant, ratedBy: actor, ratedAt: Date.now() }).where(eq(recallEventHits.id, hitId)).returning();
    if (!hit) throw new AppError("not_found", `no recall hit ${hitId}`);
    await appendAuditPg({ db: tx, entry: { actor, action: "reflection.hit.rate", target: `store:${handle.store}:recall_hit:${hitId}`, details: { relevant } } });
    return toHit(hit);
  });
}
