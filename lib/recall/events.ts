import { and, asc, between, count, desc, eq, gt, inArray, isNotNull, isNull, sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import { engineStep, read, rows, select, sqlRows, sqlRun, update, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import type { RecallEventHitRow, RecallEventRow } from "../db/schema/recall";
import { AppError } from "../errors";
import { audit } from "../index/engine-steps";
import { recallTables } from "./tables";
import { fixedRows } from "./statements";
import { preparedOnce } from "../db/statements";
import type { RecallMode } from "./recall";
import { pushTo } from "../collections";
import { getConfig } from "../config";

/** Query text kept in the recall log: enough to read and rate a recall, not a place to store 2,000 characters per call. */
export const RECALL_LOG_QUERY_CHARS = 500;
/** Every this many recalls, the log is trimmed to its row and day retention (DUALMIND_RECALL_EVENTS_MAX_ROWS / _MAX_DAYS). */
export const RECALL_PRUNE_EVERY = 100;
/** A hit's summary kept in the log: enough to rate it; the artifact itself holds the rest. */
export const RECALL_LOG_SUMMARY_CHARS = 300;
/** What an event row and a hit row count beyond their text (ids, numbers, index entries). */
const EVENT_ROW_BYTES = 128;
const HIT_ROW_BYTES = 64;
/** The most events one recall drops to bring the log back under DUALMIND_RECALL_LOG_MAX_BYTES (a lowered limit catches up over the next recalls). */
export const RECALL_TRIM_BATCH = 500;

/**
 * The recall log, one repository over both engines (lib/db/port.ts): every
 * recall and its hits, people's ratings of them, and the metrics read back.
 */
const { events: eventsTable, hits: hitsTable } = recallTables;

const utf8 = (s: string | null) => (s === null ? 0 : Buffer.byteLength(s));

function* deleteEvents(where: SQL): Op<void> {
  yield* sqlRun(sql`delete from recall_event_hits where event_id in (select id from recall_events where ${where})`);
  yield* sqlRun(sql`delete from recall_events where ${where}`);
}

/**
 * The retention deletes after event `id`, in its write. Every
 * RECALL_PRUNE_EVERY recalls: rows beyond the newest
 * DUALMIND_RECALL_EVENTS_MAX_ROWS and rows older than
 * DUALMIND_RECALL_EVENTS_MAX_DAYS, with their hits. At every recall: when the
 * log's bytes (the newest event's running sum, less the oldest's before it,
 * two key lookups) pass DUALMIND_RECALL_LOG_MAX_BYTES, the oldest events that
 * bring it back under, at most RECALL_TRIM_BATCH of them.
 */
function* trimRecallLog(id: number, bytesThrough: number, now = Date.now()): Op<void> {
  const { recallEventsMaxRows, recallEventsMaxDays, recallLogMaxBytes } = getConfig().limits;
  if (id % RECALL_PRUNE_EVERY === 0) {
    const [upTo, before] = [id - recallEventsMaxRows, now - recallEventsMaxDays * 86_400_000];
    yield* deleteEvents(sql`id <= ${upTo} or created_at < ${before}`);
  }
  const [oldest] = yield* fixedRows<{ before: unknown }>("select bytes_through - bytes as before from recall_events order by id limit 1");
  const keepAbove = bytesThrough - recallLogMaxBytes;
  if (!oldest || Number(oldest.before) >= keepAbove) return;
  // The first event (by its running sum, indexed) reaching keepAbove is the newest one over; no more than RECALL_TRIM_BATCH, never the one just logged.
  const [over] = yield* sqlRows<{ id: unknown }>(sql`select id from recall_events where bytes_through >= ${keepAbove} order by bytes_through limit 1`);
  const [batch] = yield* sqlRows<{ id: unknown }>(sql`select id from recall_events order by id limit 1 offset ${RECALL_TRIM_BATCH - 1}`);
  const cut = Math.min(Number(over?.id ?? id), Number(batch?.id ?? id), id - 1);
  yield* deleteEvents(sql`id <= ${cut}`);
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
export function recallEventRows(event: RecallEventInput, now = Date.now(), bytesBefore = 0) {
  const topScore = event.hits.reduce<number | null>((m, h) => (m === null || h.score > m ? h.score : m), null);
  const query = event.query.slice(0, RECALL_LOG_QUERY_CHARS);
  const hits = event.hits.map((h) => ({ ...h, summary: h.summary.slice(0, RECALL_LOG_SUMMARY_CHARS) }));
  const bytes = EVENT_ROW_BYTES + utf8(event.agentId) + utf8(query) + utf8(event.fallbackReason) + hits.reduce((n, h) => n + HIT_ROW_BYTES + utf8(h.summary), 0);
  return {
    event: { agentId: event.agentId, query, mode: event.mode, fallbackReason: event.fallbackReason, latencyMs: event.latencyMs, cacheHit: event.cacheHit, hitCount: hits.length, topScore, warning: event.warning, createdAt: now, bytes, bytesThrough: bytesBefore + bytes },
    hits: (eventId: number) => hits.map((h, i) => ({ eventId, rank: i + 1, artifact: h.artifact, refId: h.refId, score: h.score, summary: h.summary })),
  };
}

type EventValues = ReturnType<typeof recallEventRows>["event"];
type HitValues = ReturnType<ReturnType<typeof recallEventRows>["hits"]>;

/** Every recall writes one event and its hits: on SQLite by statements prepared once per connection (preparing them cost more than writing). */
const SQLITE_INSERT_EVENT =
  "insert into recall_events (agent_id, query, mode, fallback_reason, latency_ms, cache_hit, hit_count, top_score, warning, created_at, bytes, bytes_through) values (@agentId, @query, @mode, @fallbackReason, @latencyMs, @cacheHit, @hitCount, @topScore, @warning, @createdAt, @bytes, @bytesThrough) returning id";
const SQLITE_INSERT_HIT = "insert into recall_event_hits (event_id, rank, artifact, ref_id, score, summary) values (@eventId, @rank, @artifact, @refId, @score, @summary)";

/** The event's row, its id back. */
function insertEvent(values: EventValues): Op<number> {
  return engineStep({
    sqlite: (h) => (preparedOnce({ sqlite: h.sqlite, sql: SQLITE_INSERT_EVENT }).get({ ...values, cacheHit: Number(values.cacheHit), warning: Number(values.warning) }) as { id: number }).id,
    pg: async (tx) => (await tx.insert(eventsTable.pg).values(values).returning({ id: eventsTable.pg.id }))[0].id,
  });
}

/** The event's hits' rows, nothing read back. */
function insertHits(values: HitValues): Op<void> {
  return engineStep({
    sqlite: (h) => {
      const insertHit = preparedOnce({ sqlite: h.sqlite, sql: SQLITE_INSERT_HIT });
      for (const v of values) insertHit.run(v);
    },
    pg: async (tx) => void (values.length > 0 && (await tx.insert(hitsTable.pg).values(values))),
  });
}

/** One recall and its hits, as a step of the caller's write, within the log's retention. Returns the event id the response carries. */
export function* recallEventLogged(event: RecallEventInput): Op<number> {
  const [newest] = yield* fixedRows<{ bytes_through: unknown }>("select bytes_through from recall_events order by id desc limit 1");
  const r = recallEventRows(event, Date.now(), Number(newest?.bytes_through ?? 0));
  const id = yield* insertEvent(r.event);
  yield* insertHits(r.hits(id));
  yield* trimRecallLog(id, r.event.bytesThrough);
  return id;
}

/** One recall and its hits, in one transaction. Returns the event id the response carries. */
export function logRecallEvent<H extends AnyStoreHandle>({ handle, event }: { handle: H; event: RecallEventInput }): On<H, number> {
  return write(handle, recallEventLogged(event));
}

export type RecallEventHit = { id: number; rank: number; artifact: "trace" | "learning"; refId: number; score: number; summary: string; relevant: boolean | null; ratedBy: string | null };
export type RecallEvent = Omit<RecallEventInput, "hits"> & { id: number; hitCount: number; topScore: number | null; createdAt: number; hits: RecallEventHit[] };

export const toHit = (h: Omit<RecallEventHitRow, "eventId" | "ratedAt">): RecallEventHit => ({ id: h.id, rank: h.rank, artifact: h.artifact, refId: h.refId, score: h.score, summary: h.summary, relevant: h.relevant, ratedBy: h.ratedBy });

/** Recall rows with their hits in rank order: one query for all the hits. */
function* withHits(events: RecallEventRow[]): Op<RecallEvent[]> {
  if (events.length === 0) return [];
  const ids = events.map((e) => e.id);
  const hits = yield* rows(hitsTable, { where: (t) => inArray(t.eventId, ids), orderBy: (t) => [asc(t.eventId), asc(t.rank)] });
  return events.map((e) => ({ ...e, hits: hits.filter((h) => h.eventId === e.id).map(toHit) }));
}

/** The newest recalls with their hits (dashboard). */
export function listRecentRecallEvents<H extends AnyStoreHandle>({ handle, limit = 20 }: { handle: H; limit?: number }): On<H, RecallEvent[]> {
  return read(handle, function* () {
    return yield* withHits(yield* rows(eventsTable, { orderBy: (t) => [desc(t.id)], limit }));
  }, { snapshot: true });
}

/** One recall with its hits; 404 when unknown. */
export function getRecallEventById<H extends AnyStoreHandle>({ handle, id }: { handle: H; id: number }): On<H, RecallEvent> {
  return read(handle, function* () {
    const events = yield* rows(eventsTable, { where: (t) => eq(t.id, id) });
    if (events.length === 0) throw new AppError("not_found", `no recall ${id}`);
    return (yield* withHits(events))[0];
  }, { snapshot: true });
}

/** The ids of the last `window` recalls start above this (a bounded look-back however long the log grows). */
const recentFloor = (events: typeof eventsTable.sqlite, window: number) => sql`(select coalesce(max(${events.id}), 0) - ${window} from ${events})`;

/**
 * The recent recalls that returned one trace or learning, newest first. Only
 * the last `window` recalls are looked at (hits have no index by artifact), so
 * the cost is bounded however long the log grows.
 */
export function listRecallsReturning<H extends AnyStoreHandle>({ handle, artifact, refId, limit = 10, window = 2000 }: { handle: H; artifact: "trace" | "learning"; refId: number; limit?: number; window?: number }): On<H, RecallEvent[]> {
  return read(handle, function* () {
    const found = yield* select({ hits: hitsTable, events: eventsTable }, (db, t) =>
      db
        .selectDistinct({ id: t.hits.eventId })
        .from(t.hits)
        .where(and(gt(t.hits.eventId, recentFloor(t.events, window)), eq(t.hits.artifact, artifact), eq(t.hits.refId, refId)))
        .orderBy(desc(t.hits.eventId))
        .limit(limit),
    );
    if (found.length === 0) return [];
    const ids = found.map((r) => r.id);
    return yield* withHits(yield* rows(eventsTable, { where: (t) => inArray(t.id, ids), orderBy: (t) => [desc(t.id)] }));
  }, { snapshot: true });
}

export type RatingQueueItem = RecallEventHit & { eventId: number; query: string; createdAt: number };

/**
 * A sample of unrated hits from recent recalls for people to judge. Random
 * within the window, so the precision estimate is not biased to one agent
 * or one hour.
 */
export function listRatingQueue<H extends AnyStoreHandle>({ handle, limit = 10, window = 500 }: { handle: H; limit?: number; window?: number }): On<H, RatingQueueItem[]> {
  return read(handle, function* () {
    const found = yield* select({ hits: hitsTable, events: eventsTable }, (db, t) =>
      db
        .select({ hit: t.hits, query: t.events.query, createdAt: t.events.createdAt })
        .from(t.hits)
        .innerJoin(t.events, eq(t.events.id, t.hits.eventId))
        .where(and(isNull(t.hits.ratedAt), gt(t.events.id, recentFloor(t.events, window))))
        .orderBy(sql`random()`)
        .limit(limit),
    );
    return found.map((r) => ({ ...toHit(r.hit), eventId: r.hit.eventId, query: r.query, createdAt: r.createdAt }));
  });
}

export const rateRecallHitSchema = z.object({ hit_id: z.coerce.number().int().positive(), relevant: z.boolean() }).strict();

/** A person's judgement of one hit; re-rating overwrites. Audited. */
export function rateRecallHit<H extends AnyStoreHandle>({ handle, input, actor }: { handle: H; input: z.input<typeof rateRecallHitSchema>; actor: string }): On<H, RecallEventHit> {
  const { hit_id: hitId, relevant } = rateRecallHitSchema.parse(input);
  return write(handle, function* () {
    const [hit] = yield* update(hitsTable, { relevant, ratedBy: actor, ratedAt: Date.now() }, (t) => eq(t.id, hitId));
    if (!hit) throw new AppError("not_found", `no recall hit ${hitId}`);
    yield* audit({ actor, action: "reflection.hit.rate", target: `store:${handle.store}:recall_hit:${hitId}`, details: { relevant } });
    return toHit(hit);
  });
}

export type RecallMetricsBucket = {
  start: number;
  recalls: number;
  /** Share of recalls that returned at least one hit. */
  hit_rate: number;
  /** Hits people rated, and the share of those rated relevant; null when none were rated (a gap, not a zero). */
  rated: number;
  precision: number | null;
  fallback_rate: number;
  p50_ms: number;
  p95_ms: number;
};

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

type MetricsWindow = { bucketMs?: number; since?: number; until?: number };

/** Hit rate, precision and latency percentiles per time bucket, as a step of a repository operation (see getRecallMetrics). */
export function* recallMetrics({ bucketMs = 3_600_000, since = 0, until = Date.now() }: MetricsWindow = {}): Op<RecallMetricsBucket[]> {
  // The width as a literal (a checked integer): the grouped expression must be the selected one, which two parameters are not.
  const width = sql.raw(String(Math.max(1, Math.trunc(bucketMs))));
  const events = yield* select({ events: eventsTable }, (db, t) =>
    db
      .select({ createdAt: t.events.createdAt, latencyMs: t.events.latencyMs, hitCount: t.events.hitCount, fallbackReason: t.events.fallbackReason })
      .from(t.events)
      .where(between(t.events.createdAt, since, until))
      .orderBy(asc(t.events.createdAt)),
  );
  const ratings = yield* select({ events: eventsTable, hits: hitsTable }, (db, t) => {
    const bucketStart = sql<number>`(${t.events.createdAt} / ${width}) * ${width}`.mapWith(Number);
    return db
      .select({ start: bucketStart, rated: count(), relevant: sql<number>`count(*) filter (where ${t.hits.relevant})`.mapWith(Number) })
      .from(t.hits)
      .innerJoin(t.events, eq(t.events.id, t.hits.eventId))
      .where(and(isNotNull(t.hits.ratedAt), between(t.events.createdAt, since, until)))
      .groupBy(bucketStart);
  });
  return bucketRecallMetrics({ events, ratings, bucketMs });
}

/**
 * Hit rate, precision and latency percentiles per time bucket, for the
 * metrics dashboard. Buckets without recalls are left out (gaps).
 */
export function getRecallMetrics<H extends AnyStoreHandle>({ handle, ...window }: { handle: H } & MetricsWindow): On<H, RecallMetricsBucket[]> {
  return read(handle, recallMetrics(window), { snapshot: true });
}

/** Recalls and hit ratings of a window, bucketed. */
function bucketRecallMetrics({
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
      hit_rate: es.filter((e) => e.hitCount > 0).length / es.length,
      rated: r?.rated ?? 0,
      precision: r && r.rated > 0 ? r.relevant / r.rated : null,
      fallback_rate: es.filter((e) => e.fallbackReason !== null).length / es.length,
      p50_ms: percentile(latencies, 0.5),
      p95_ms: percentile(latencies, 0.95),
    };
  });
}
