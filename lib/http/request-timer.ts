/**
 * In-memory request timing per route: counts, error counts and a log-bucket
 * histogram for percentiles. Costs the hot path two map lookups and a few
 * adds; the minute accumulators are drained to governance.db by
 * lib/metrics/rollups.ts, never written from the request itself.
 */
import { infrastructureError, isAppError } from "../errors";

export const LATENCY_BUCKET_BOUNDS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, Infinity];
const MINUTE_MS = 60_000;

type RouteStats = { count: number; errorCount: number; sumMs: number; byStatus: Map<number, number>; buckets: number[] };
export type MinuteRollup = { ts: number; route: string; count: number; errorCount: number; sumMs: number; buckets: number[]; byStatus: Record<string, number> };

const g = globalThis as unknown as { __dualmindLatency?: Map<string, RouteStats>; __dualmindLatencyMinutes?: Map<string, RouteStats & { ts: number; route: string }> };
function table(): Map<string, RouteStats> {
  g.__dualmindLatency ??= new Map();
  return g.__dualmindLatency;
}
function minutes(): Map<string, RouteStats & { ts: number; route: string }> {
  g.__dualmindLatencyMinutes ??= new Map();
  return g.__dualmindLatencyMinutes;
}

function emptyStats(): RouteStats {
  return { count: 0, errorCount: 0, sumMs: 0, byStatus: new Map(), buckets: LATENCY_BUCKET_BOUNDS_MS.map(() => 0) };
}

export function latencyBucketIndex(ms: number): number {
  return LATENCY_BUCKET_BOUNDS_MS.findIndex((b) => ms <= b);
}

function add(s: RouteStats, status: number, ms: number, bucket: number): void {
  s.count++;
  if (status >= 400) s.errorCount++;
  s.sumMs += ms;
  s.byStatus.set(status, (s.byStatus.get(status) ?? 0) + 1);
  s.buckets[bucket]++;
}

export function recordRequest(route: string, status: number, ms: number, now: number = Date.now()): void {
  const bucket = latencyBucketIndex(ms);
  const t = table();
  let s = t.get(route);
  if (!s) {
    s = emptyStats();
    t.set(route, s);
  }
  add(s, status, ms, bucket);
  const ts = now - (now % MINUTE_MS);
  const key = `${ts}|${route}`;
  const m = minutes();
  let mm = m.get(key);
  if (!mm) {
    mm = { ...emptyStats(), ts, route };
    m.set(key, mm);
  }
  add(mm, status, ms, bucket);
}

/**
 * Time one call under `route`, recorded with the status its caller answers:
 * 200, or the status the thrown error maps to (500 for an untyped one). For
 * work timed apart from its route, e.g. dialectic list vs detail queries.
 */
export function timeCall<T>(route: string, fn: () => T): T {
  const started = performance.now();
  let status = 200;
  try {
    return fn();
  } catch (e) {
    status = isAppError(e) ? e.status : (infrastructureError(e)?.status ?? 500);
    throw e;
  } finally {
    recordRequest(route, status, performance.now() - started);
  }
}

/** Hand over (and forget) every minute accumulated so far; the caller persists them. */
export function drainMinuteRollups(): MinuteRollup[] {
  const m = minutes();
  const out = [...m.values()].map((s) => ({
    ts: s.ts,
    route: s.route,
    count: s.count,
    errorCount: s.errorCount,
    sumMs: s.sumMs,
    buckets: s.buckets,
    byStatus: Object.fromEntries([...s.byStatus.entries()].map(([k, v]) => [String(k), v])),
  }));
  m.clear();
  return out;
}

/** Upper bound of the bucket holding quantile q (a histogram sketch, not exact); null without samples. */
export function quantileFromBuckets(buckets: readonly number[], q: number): number | null {
  const count = buckets.reduce((a, b) => a + b, 0);
  if (count === 0) return null;
  const target = Math.ceil(q * count);
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    seen += buckets[i];
    if (seen >= target) return LATENCY_BUCKET_BOUNDS_MS[i];
  }
  return null;
}

export type RouteLatency = {
  route: string;
  count: number;
  meanMs: number;
  p50Ms: number | null;
  p95Ms: number | null;
  p99Ms: number | null;
  byStatus: Record<string, number>;
};

export function routeLatencySnapshot(): RouteLatency[] {
  return [...table().entries()]
    .map(([route, s]) => ({
      route,
      count: s.count,
      meanMs: s.count ? s.sumMs / s.count : 0,
      p50Ms: quantileFromBuckets(s.buckets, 0.5),
      p95Ms: quantileFromBuckets(s.buckets, 0.95),
      p99Ms: quantileFromBuckets(s.buckets, 0.99),
      byStatus: Object.fromEntries([...s.byStatus.entries()].map(([k, v]) => [String(k), v])),
    }))
    .sort((a, b) => a.route.localeCompare(b.route));
}
