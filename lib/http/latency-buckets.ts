/**
 * Latency buckets and the numbers read from them: pure, with no server
 * imports, so the dashboard's chart components (client code) can use them
 * without pulling the server's configuration into the browser bundle.
 */
export const LATENCY_BUCKET_BOUNDS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, Infinity];

/** A server fault: what the error rate counts. */
export function isServerFault(status: number): boolean {
  return status >= 500;
}

export function latencyBucketIndex(ms: number): number {
  return LATENCY_BUCKET_BOUNDS_MS.findIndex((b) => ms <= b);
}

/**
 * An ESTIMATE of quantile q from the histogram, never a measured value: the
 * bucket holding the q-th sample is found exactly and the value placed inside
 * it by log-linear interpolation, so it always lies within that bucket's
 * edges (accuracy against exact quantiles: bench/latency-quantiles.ts). A
 * sketch library would be closer but cannot be summed exactly in SQL as
 * these counters are. Infinity in the open last bucket; null without samples.
 */
export function quantileFromBuckets({ buckets, q }: { buckets: readonly number[]; q: number }): number | null {
  const count = buckets.reduce((a, b) => a + b, 0);
  if (count === 0) return null;
  const target = Math.max(1, Math.ceil(q * count));
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    if (buckets[i] === 0 || seen + buckets[i] < target) {
      seen += buckets[i];
      continue;
    }
    const lo = i === 0 ? 0 : LATENCY_BUCKET_BOUNDS_MS[i - 1];
    const hi = LATENCY_BUCKET_BOUNDS_MS[i];
    if (!Number.isFinite(hi)) return Infinity;
    const f = (target - seen) / buckets[i];
    return lo > 0 ? lo * Math.pow(hi / lo, f) : lo + f * (hi - lo);
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
