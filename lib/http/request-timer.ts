/**
 * In-memory request timing per route: counts, error counts and a log-bucket
 * histogram for percentiles. Costs the hot path two map lookups and a few
 * adds; the minute accumulators are drained to governance.db by
 * lib/metrics/rollups.ts, never written from the request itself.
 */
import { getConfig } from "../config";
import { infrastructureError, isAppError } from "../errors";
import { isServerFault, LATENCY_BUCKET_BOUNDS_MS, latencyBucketIndex, quantileFromBuckets, type RouteLatency } from "./latency-buckets";

export { isServerFault, LATENCY_BUCKET_BOUNDS_MS, latencyBucketIndex, quantileFromBuckets, type RouteLatency };

const MINUTE_MS = 60_000;

/**
 * errorCount counts server faults (5xx) only; clientErrorCount counts the
 * expected client answers (4xx: a 404 for an unknown id, a 409 for a turn out
 * of phase), which are the API working as documented, shown apart.
 */
type RouteStats = { count: number; errorCount: number; clientErrorCount: number; sumMs: number; byStatus: Map<number, number>; buckets: number[] };
export type MinuteRollup = { ts: number; route: string; count: number; errorCount: number; clientErrorCount: number; sumMs: number; buckets: number[]; byStatus: Record<string, number> };

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
  return { count: 0, errorCount: 0, clientErrorCount: 0, sumMs: 0, byStatus: new Map(), buckets: LATENCY_BUCKET_BOUNDS_MS.map(() => 0) };
}

function add(s: RouteStats, status: number, ms: number, bucket: number): void {
  s.count++;
  if (isServerFault(status)) s.errorCount++;
  else if (status >= 400) s.clientErrorCount++;
  s.sumMs += ms;
  s.byStatus.set(status, (s.byStatus.get(status) ?? 0) + 1);
  s.buckets[bucket]++;
}

/** Where requests are counted once DUALMIND_METRIC_ROUTE_KEYS distinct keys are taken. */
export const OTHER_ROUTE = "other";
/** Longest route key kept as given; longer ones are cut (keys come from code, so this only stops a slip from costing memory). */
const MAX_ROUTE_KEY_CHARS = 120;
/** Minutes kept undrained (a governance database that cannot be written) before the oldest are dropped. */
const MAX_UNDRAINED_MINUTES = 60;

/**
 * The key a request is counted under: its route while the table holds fewer
 * than DUALMIND_METRIC_ROUTE_KEYS keys (or already holds this one), else
 * `other`. So neither the table nor the rollups written from it grow with
 * whatever names callers send.
 */
function routeKey(t: Map<string, RouteStats>, route: string): string {
  const key = route.length > MAX_ROUTE_KEY_CHARS ? route.slice(0, MAX_ROUTE_KEY_CHARS) : route;
  if (t.has(key) || t.size < getConfig().limits.metricRouteKeys) return key;
  return OTHER_ROUTE;
}

export function recordRequest({ route, status, ms, now = Date.now() }: { route: string; status: number; ms: number; now?: number }): void {
  const bucket = latencyBucketIndex(ms);
  const t = table();
  const key = routeKey(t, route);
  let s = t.get(key);
  if (!s) {
    s = emptyStats();
    t.set(key, s);
  }
  add(s, status, ms, bucket);
  const ts = now - (now % MINUTE_MS);
  const minuteKey = `${ts}|${key}`;
  const m = minutes();
  let mm = m.get(minuteKey);
  if (!mm) {
    mm = { ...emptyStats(), ts, route: key };
    m.set(minuteKey, mm);
    pruneUndrained(m);
  }
  add(mm, status, ms, bucket);
}

/** Beyond an hour's worth of route-minutes that no flush took, the oldest accumulated are dropped first. */
function pruneUndrained(m: Map<string, unknown>): void {
  const max = MAX_UNDRAINED_MINUTES * (getConfig().limits.metricRouteKeys + 1);
  for (const k of m.keys()) {
    if (m.size <= max) break;
    m.delete(k);
  }
}

/**
 * Time one call under `route`, recorded with the status its caller answers:
 * 200, or the status the thrown error maps to (500 for an untyped one). For
 * work timed apart from its route, e.g. dialectic list vs detail queries.
 */
export function timeCall<T>({ route, fn }: { route: string; fn: () => T }): T {
  const started = performance.now();
  const statusOf = (e: unknown) => (isAppError(e) ? e.status : (infrastructureError(e)?.status ?? 500));
  const record = (status: number) => recordRequest({ route, status, ms: performance.now() - started });
  let result: T;
  try {
    result = fn();
  } catch (e) {
    record(statusOf(e));
    throw e;
  }
  // An async call (the PostgreSQL backend) is timed until it settles, with the status it settles with.
  if (result instanceof Promise) {
    return result.then(
      (value: unknown) => {
        record(200);
        return value;
      },
      (e: unknown) => {
        record(statusOf(e));
        throw e;
      },
    ) as T;
  }
  record(200);
  return result;
}

/** Hand over (and forget) every minute accumulated so far; the caller persists them. */
export function drainMinuteRollups(): MinuteRollup[] {
  const m = minutes();
  const out = [...m.values()].map((s) => ({
    ts: s.ts,
    route: s.route,
    count: s.count,
    errorCount: s.errorCount,
    clientErrorCount: s.clientErrorCount,
    sumMs: s.sumMs,
    buckets: s.buckets,
    byStatus: Object.fromEntries([...s.byStatus.entries()].map(([k, v]) => [String(k), v])),
  }));
  m.clear();
  return out;
}

export function routeLatencySnapshot(): RouteLatency[] {
  return [...table().entries()]
    .map(([route, s]) => ({
      route,
      count: s.count,
      meanMs: s.count ? s.sumMs / s.count : 0,
      p50Ms: quantileFromBuckets({ buckets: s.buckets, q: 0.5 }),
      p95Ms: quantileFromBuckets({ buckets: s.buckets, q: 0.95 }),
      p99Ms: quantileFromBuckets({ buckets: s.buckets, q: 0.99 }),
      byStatus: Object.fromEntries([...s.byStatus.entries()].map(([k, v]) => [String(k), v])),
    }))
    .sort((a, b) => a.route.localeCompare(b.route));
}
