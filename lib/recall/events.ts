import { and, asc, between, count, desc, eq, gt, inArray, isNotNull, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { recallEventHits, recallEvents, type RecallEventHitRow, type RecallEventRow } from "../db/schema/recall";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import type { RecallMode } from "./recall";
import { pushTo } from "../collections";
import { getConfig } from "../config";

/** Query text kept in the recall log: enough to read and rate a recall, not a place to store 2,000 characters per call. */
export const RECALL_LOG_QUERY_CHARS = 500;
/** Every this many recalls, the log is trimmed to its retention (DUALMIND_RECALL_EVENTS_MAX_ROWS / _MAX_DAYS). */
export const RECALL_PRUNE_EVERY = 100;

/**
 * The retention deletes after event `id` (both backends; `?` placeholders):
 * rows beyond the newest DUALMIND_RECALL_EVENTS_MAX_ROWS, and rows older than
 * DUALMIND_RECALL_EVENTS_MAX_DAYS, with their hits. None between trims.
 */
export function recallRetentionStatements(id: number, now = Date.now()): { sql: string; params: number[] }[] {
  if (id % RECALL_PRUNE_EVERY !== 0) return [];
  const { recallEventsMaxRows, recallEventsMaxDays } = getConfig().limits;
  const params = [id - recallEventsMaxRows, now - recallEventsMaxDays * 86_400_000];
  return [
    { sql: "delete from recall_event_hits where event_id in (select id from recall_events where id <= ? or created_at < ?)", params },
    { sql: "delete from recall_events where id <= ? or created_at < ?", params },
  ];
}

export type RecallEventInput = {
  agentId: string;
  query: string;
  mode: RecallMode;
  fallbackReason: string | null;
  latencyMs: number;
  cacheHit: boolean;
  warning: boolean;
  hits: { artifact: "trace" | "learning"; refId: number; score: number; summary: string }[];
};

/** A recall's row, and its hits' rows once the event has its id (both backends). */
export function recallEventRows(event: RecallEventInput, now = Date.now()) {
  const topScore = event.hits.reduce<number | null>((m, h) => (m === null || h.score > m ? h.score : m), null);
  return {
    event: { agentId: event.agentId, query: event.query.slice(0, RECALL_LOG_QUERY_CHARS), mode: event.mode, fallbackReason: event.fallbackReason, latencyMs: event.latencyMs, cacheHit: event.cacheHit, hitCount: event.hits.length, topScore, warning: event.warning, createdAt: now },
    hits: (eventId: number) => event.hits.map((h, i) => ({ eventId, rank: i + 1, artifact: h.artifact, refId: h.refId, score: h.score, summary: h.summary })),
  };
}

/** One recall and its hits, in one transaction. Returns the event id the response carries. */
export function logRecallEvent({ handle, event }: { handle: StoreHandle; event: RecallEventInput }): number {
  const { db } = handle;
  return handle.sqlite
    .transaction(() => {
      const rows = recallEventRows(event);
      const { id } = db.insert(recallEvents).values(rows.event).returning({ id: recallEvents.id }).get();
      if (event.hits.length > 0) db.insert(recallEventHits).values(rows.hits(id)).run();
      for (const q of recallRetentionStatements(id)) handle.sqlite.prepare(q.sql).run(...q.params);
      return id;
    })
    .immediate();
}

export type RecallEventHit = { id: number; rank: number; artifact: "trace" | "learning"; refId: number; score: number; summary: string; relevant: boolean | null; ratedBy: string | null };
export type RecallEvent = Omit<RecallEventInput, "hits"> & { id: number; hitCount: number; topScore: number | null; createdAt: number; hits: RecallEventHit[] };

export const toHit = (h: Omit<RecallEventHitRow, "eventId" | "ratedAt">): RecallEventHit => ({ id: h.id, rank: h.rank, artifact: h.artifact, refId: h.refId, score: h.score, summary: h.summary, relevant: h.relevant, ratedBy: h.ratedBy });

/** Recall rows with their hits, each event's in rank order (both backends read the rows, this assembles them). */
export function assembleRecallEvents({ events, hits }: { events: RecallEventRow[]; hits: Omit<RecallEventHitRow, "ratedAt">[] }): RecallEvent[] {
  return events.map((e) => ({
    id: e.id,
    agentId: e.agentId,
    query: e.query,
    mode: e.mode,
    fallbackReason: e.fallbackReason,
    latencyMs: e.latencyMs,
    cacheHit: e.cacheHit,
    hitCount: e.hitCount,
    topScore: e.topScore,
    warning: e.warning,
    createdAt: e.createdAt,
    hits: hits
      .filter((h) => h.eventId === e.id)
      .sort((a, b) => a.rank - b.rank)
      .map(toHit),
  }));
}

/** Recall rows with their hits in rank order: one query for all the hits. */
function withHits({ handle, events }: { handle: StoreHandle; events: RecallEventRow[] }): RecallEvent[] {
  const hits = handle.db
    .select()
    .from(recallEventHits)
    .where(
      inArray(
        recallEventHits.eventId,
        events.map((e) => e.id),
      ),
    )
    .orderBy(asc(recallEventHits.eventId), asc(recallEventHits.rank))
    .all();
  return assembleRecallEvents({ events, hits });
}

/** The newest recalls with their hits (dashboard). */
export function listRecentRecallEvents({ handle, limit = 20 }: { handle: StoreHandle; limit?: number }): RecallEvent[] {
  const events = handle.db.select().from(recallEvents).orderBy(desc(recallEvents.id)).limit(limit).all();
  return withHits({ handle, events });
}

/** One recall with its hits; 404 when unknown. */
export function getRecallEventById({ handle, id }: { handle: StoreHandle; id: number }): RecallEvent {
  const event = handle.db.select().from(recallEvents).where(eq(recallEvents.id, id)).get();
  if (!event) throw new AppError("not_found", `no recall ${id}`);
  return withHits({ handle, events: [event] })[0];
}

/**
 * The recent recalls that returned one trace or learning, newest first. Only
 * the last `window` recalls are looked at (hits have no index by artifact), so
 * the cost is bounded however long the log grows.
 */
export function listRecallsReturning({ handle, artifact, refId, limit = 10, window = 2000 }: { handle: StoreHandle; artifact: "trace" | "learning"; refId: number; limit?: number; window?: number }): RecallEvent[] {
  const recent = sql`(select coalesce(max(${recallEvents.id}), 0) - ${window} from ${recallEvents})`;
  const ids = handle.db
    .selectDistinct({ id: recallEventHits.eventId })
    .from(recallEventHits)
    .where(and(gt(recallEventHits.eventId, recent), eq(recallEventHits.artifact, artifact), eq(recallEventHits.refId, refId)))
    .orderBy(desc(recallEventHits.eventId))
    .limit(limit)
    .all()
    .map((r) => r.id);
  if (ids.length === 0) return [];
  const events = handle.db.select().from(recallEvents).where(inArray(recallEvents.id, ids)).orderBy(desc(recallEvents.id)).all();
  return withHits({ handle, events });
}

export type RatingQueueItem = RecallEventHit & { eventId: number; query: string; createdAt: number };

/**
 * A sample of unrated hits from recent recalls for people to judge. Random
 * within the window, so the precision estimate is not biased to one agent
 * or one hour.
 */
export function listRatingQueue({ handle, limit = 10, window = 500 }: { handle: StoreHandle; limit?: number; window?: number }): RatingQueueItem[] {
  const rows = handle.db
    .select({ hit: recallEventHits, query: recallEvents.query, createdAt: recallEvents.createdAt })
    .from(recallEventHits)
    .innerJoin(recallEvents, eq(recallEvents.id, recallEventHits.eventId))
    .where(and(isNull(recallEventHits.ratedAt), gt(recallEvents.id, sql`(select coalesce(max(${recallEvents.id}), 0) - ${window} from ${recallEvents})`)))
    .orderBy(sql`random()`)
    .limit(limit)
    .all();
  return rows.map((r) => ({ ...toHit(r.hit), eventId: r.hit.eventId, query: r.query, createdAt: r.createdAt }));
}

export const rateRecallHitSchema = z.object({ hit_id: z.coerce.number().int().positive(), relevant: z.boolean() }).strict();

/** A person's judgement of one hit; re-rating overwrites. Audited. */
export function rateRecallHit({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof rateRecallHitSchema>; actor: string }): RecallEventHit {
  const { hit_id: hitId, relevant } = rateRecallHitSchema.parse(input);
  return handle.sqlite
    .transaction(() => {
      const hit = handle.db.update(recallEventHits).set({ relevant, ratedBy: actor, ratedAt: Date.now() }).where(eq(recallEventHits.id, hitId)).returning().get();
      if (!hit) throw new AppError("not_found", `no recall hit ${hitId}`);
      appendAudit({ actor, action: "reflection.hit.rate", target: `store:${handle.store}:recall_hit:${hitId}`, details: { relevant } });
      return toHit(hit);
    })
    .immediate();
}

export type RecallMetricsBucket = {
  start: number;
  recalls: number;
  /** Share of recalls that returned at least one hit. */
  hitRate: number;
  /** Hits people rated, and the share of those rated relevant; null when none were rated (a gap, not a zero). */
  rated: number;
  precision: number | null;
  fallbackRate: number;
  p50Ms: number;
  p95Ms: number;
};

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

/**
 * Hit rate, precision and latency percentiles per time bucket, for the
 * metrics dashboard. Buckets without recalls are left out (gaps).
 */
export function getRecallMetrics({ handle, bucketMs = 3_600_000, since = 0, until = Date.now() }: { handle: StoreHandle; bucketMs?: number; since?: number; until?: number }): RecallMetricsBucket[] {
  const inWindow = between(recallEvents.createdAt, since, until);
  const events = handle.db
    .select({ createdAt: recallEvents.createdAt, latencyMs: recallEvents.latencyMs, hitCount: recallEvents.hitCount, fallbackReason: recallEvents.fallbackReason })
    .from(recallEvents)
    .where(inWindow)
    .orderBy(asc(recallEvents.createdAt))
    .all();
  const bucketStart = sql<number>`cast(${recallEvents.createdAt} / ${bucketMs} as integer) * ${bucketMs}`;
  const ratings = handle.db
    .select({ start: bucketStart, rated: count(), relevant: sql<number>`sum(${recallEventHits.relevant})` })
    .from(recallEventHits)
    .innerJoin(recallEvents, eq(recallEvents.id, recallEventHits.eventId))
    .where(and(isNotNull(recallEventHits.ratedAt), inWindow))
    .groupBy(bucketStart)
    .all();
  return bucketRecallMetrics({ events, ratings, bucketMs });
}

/** Recalls and hit ratings of a window, bucketed (both backends read the rows, this does the arithmetic). */
export function bucketRecallMetrics({
  events,
  ratings,
  bucketMs,
}: {
  events: { createdAt: number; latencyMs: number; hitCount: number; fallbackReason: string | null }[];
  ratings: { start: number; rated: number; relevant: number }[];
  bucketMs: number;
}): RecallMetricsBucket[] {
  const byStart = new Map<number, typeof events>();
  for (const e of events) {
    const start = Math.floor(e.createdAt / bucketMs) * bucketMs;
    // Appended in place: copying the bucket on every event was quadratic (100k recalls in one hour held the event loop for minutes).
    pushTo(byStart, start, e);
  }
  return [...byStart.entries()].map(([start, es]) => {
    const latencies = es.map((e) => e.latencyMs).sort((a, b) => a - b);
    const r = ratings.find((x) => x.start === start);
    return {
      start,
      recalls: es.length,
      hitRate: es.filter((e) => e.hitCount > 0).length / es.length,
      rated: r?.rated ?? 0,
      precision: r && r.rated > 0 ? r.relevant / r.rated : null,
      fallbackRate: es.filter((e) => e.fallbackReason !== null).length / es.length,
      p50Ms: percentile(latencies, 0.5),
      p95Ms: percentile(latencies, 0.95),
    };
  });
}
