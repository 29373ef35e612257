import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import type { RecallMode } from "./recall";

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

/** One recall and its hits, in one transaction. Returns the event id the response carries. */
export function logRecallEvent({ handle, event }: { handle: StoreHandle; event: RecallEventInput }): number {
  const { sqlite } = handle;
  return sqlite
    .transaction(() => {
      const topScore = event.hits.reduce<number | null>((m, h) => (m === null || h.score > m ? h.score : m), null);
      const { id } = sqlite
        .prepare(
          `insert into recall_events(agent_id, query, mode, fallback_reason, latency_ms, cache_hit, hit_count, top_score, warning, created_at)
           values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) returning id`,
        )
        .get(event.agentId, event.query, event.mode, event.fallbackReason, event.latencyMs, event.cacheHit ? 1 : 0, event.hits.length, topScore, event.warning ? 1 : 0, Date.now()) as {
        id: number;
      };
      const ins = sqlite.prepare("insert into recall_event_hits(event_id, rank, artifact, ref_id, score, summary) values (?, ?, ?, ?, ?, ?)");
      event.hits.forEach((h, i) => ins.run(id, i + 1, h.artifact, h.refId, h.score, h.summary));
      return id;
    })
    .immediate();
}

export type RecallEventHit = { id: number; rank: number; artifact: "trace" | "learning"; refId: number; score: number; summary: string; relevant: boolean | null; ratedBy: string | null };
export type RecallEvent = Omit<RecallEventInput, "hits"> & { id: number; hitCount: number; topScore: number | null; createdAt: number; hits: RecallEventHit[] };

type EventDbRow = {
  id: number;
  agent_id: string;
  query: string;
  mode: RecallMode;
  fallback_reason: string | null;
  latency_ms: number;
  cache_hit: number;
  hit_count: number;
  top_score: number | null;
  warning: number;
  created_at: number;
};
type HitDbRow = { id: number; event_id: number; rank: number; artifact: "trace" | "learning"; ref_id: number; score: number; summary: string; relevant: number | null; rated_by: string | null };

const toHit = (h: HitDbRow): RecallEventHit => ({
  id: h.id,
  rank: h.rank,
  artifact: h.artifact,
  refId: h.ref_id,
  score: h.score,
  summary: h.summary,
  relevant: h.relevant === null ? null : h.relevant === 1,
  ratedBy: h.rated_by,
});

/** The newest recalls with their hits (dashboard). */
export function listRecentRecallEvents({ handle, limit = 20 }: { handle: StoreHandle; limit?: number }): RecallEvent[] {
  const rows = handle.sqlite.prepare("select * from recall_events order by id desc limit ?").all(limit) as EventDbRow[];
  const hits = handle.sqlite
    .prepare("select * from recall_event_hits where event_id in (select value from json_each(?)) order by event_id, rank")
    .all(JSON.stringify(rows.map((r) => r.id))) as HitDbRow[];
  return rows.map((r) => ({
    id: r.id,
    agentId: r.agent_id,
    query: r.query,
    mode: r.mode,
    fallbackReason: r.fallback_reason,
    latencyMs: r.latency_ms,
    cacheHit: r.cache_hit === 1,
    hitCount: r.hit_count,
    topScore: r.top_score,
    warning: r.warning === 1,
    createdAt: r.created_at,
    hits: hits.filter((h) => h.event_id === r.id).map(toHit),
  }));
}

export type RatingQueueItem = RecallEventHit & { eventId: number; query: string; createdAt: number };

/**
 * A sample of unrated hits from recent recalls for people to judge. Random
 * within the window, so the precision estimate is not biased to one agent
 * or one hour.
 */
export function listRatingQueue({ handle, limit = 10, window = 500 }: { handle: StoreHandle; limit?: number; window?: number }): RatingQueueItem[] {
  const rows = handle.sqlite
    .prepare(
      `select h.*, e.query, e.created_at from recall_event_hits h join recall_events e on e.id = h.event_id
       where h.rated_at is null and e.id > (select coalesce(max(id), 0) - ? from recall_events)
       order by random() limit ?`,
    )
    .all(window, limit) as (HitDbRow & { query: string; created_at: number })[];
  return rows.map((r) => ({ ...toHit(r), eventId: r.event_id, query: r.query, createdAt: r.created_at }));
}

export const rateRecallHitSchema = z.object({ hit_id: z.coerce.number().int().positive(), relevant: z.boolean() }).strict();

/** A person's judgement of one hit; re-rating overwrites. Audited. */
export function rateRecallHit({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof rateRecallHitSchema>; actor: string }): RecallEventHit {
  const { hit_id: hitId, relevant } = rateRecallHitSchema.parse(input);
  return handle.sqlite
    .transaction(() => {
      const changed = handle.sqlite.prepare("update recall_event_hits set relevant = ?, rated_by = ?, rated_at = ? where id = ?").run(relevant ? 1 : 0, actor, Date.now(), hitId).changes;
      if (changed === 0) throw new AppError("not_found", `no recall hit ${hitId}`);
      appendAudit({ actor, action: "reflection.hit.rate", target: `store:${handle.store}:recall_hit:${hitId}`, details: { relevant } });
      return toHit(handle.sqlite.prepare("select * from recall_event_hits where id = ?").get(hitId) as HitDbRow);
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
  const events = handle.sqlite
    .prepare("select id, created_at, latency_ms, hit_count, fallback_reason from recall_events where created_at >= ? and created_at <= ? order by created_at")
    .all(since, until) as { id: number; created_at: number; latency_ms: number; hit_count: number; fallback_reason: string | null }[];
  const ratings = handle.sqlite
    .prepare(
      `select cast(e.created_at / ? as integer) * ? as start, count(*) as rated, sum(h.relevant) as relevant from recall_event_hits h join recall_events e on e.id = h.event_id
       where h.rated_at is not null and e.created_at >= ? and e.created_at <= ? group by start`,
    )
    .all(bucketMs, bucketMs, since, until) as { start: number; rated: number; relevant: number }[];
  const byStart = new Map<number, typeof events>();
  for (const e of events) {
    const start = Math.floor(e.created_at / bucketMs) * bucketMs;
    byStart.set(start, [...(byStart.get(start) ?? []), e]);
  }
  return [...byStart.entries()].map(([start, es]) => {
    const latencies = es.map((e) => e.latency_ms).sort((a, b) => a - b);
    const r = ratings.find((x) => x.start === start);
    return {
      start,
      recalls: es.length,
      hitRate: es.filter((e) => e.hit_count > 0).length / es.length,
      rated: r?.rated ?? 0,
      precision: r && r.rated > 0 ? r.relevant / r.rated : null,
      fallbackRate: es.filter((e) => e.fallback_reason !== null).length / es.length,
      p50Ms: percentile(latencies, 0.5),
      p95Ms: percentile(latencies, 0.95),
    };
  });
}
