/**
 * In-memory request timing per route: counts, error counts and a log-bucket
 * histogram for percentiles. Costs the hot path one map lookup and a few adds.
 */
const BUCKET_BOUNDS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, Infinity];

type RouteStats = { count: number; sumMs: number; byStatus: Map<number, number>; buckets: number[] };

const g = globalThis as unknown as { __dualmindLatency?: Map<string, RouteStats> };
function table(): Map<string, RouteStats> {
  g.__dualmindLatency ??= new Map();
  return g.__dualmindLatency;
}

export function recordRequest(route: string, status: number, ms: number): void {
  const t = table();
  let s = t.get(route);
  if (!s) {
    s = { count: 0, sumMs: 0, byStatus: new Map(), buckets: BUCKET_BOUNDS_MS.map(() => 0) };
    t.set(route, s);
  }
  s.count++;
  s.sumMs += ms;
  s.byStatus.set(status, (s.byStatus.get(status) ?? 0) + 1);
  s.buckets[BUCKET_BOUNDS_MS.findIndex((b) => ms <= b)]++;
}

/** Upper bound of the bucket holding quantile q (a histogram sketch, not exact). */
function quantile(buckets: number[], count: number, q: number): number | null {
  if (count === 0) return null;
  const target = Math.ceil(q * count);
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    seen += buckets[i];
    if (seen >= target) return BUCKET_BOUNDS_MS[i];
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
      p50Ms: quantile(s.buckets, s.count, 0.5),
      p95Ms: quantile(s.buckets, s.count, 0.95),
      p99Ms: quantile(s.buckets, s.count, 0.99),
      byStatus: Object.fromEntries([...s.byStatus.entries()].map(([k, v]) => [String(k), v])),
    }))
    .sort((a, b) => a.route.localeCompare(b.route));
}
