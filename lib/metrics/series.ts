import { getGovernance } from "../db/connection";
import { LATENCY_BUCKET_BOUNDS_MS } from "../http/request-timer";
import { resolutionForStep, rollupResolutionForStep } from "./rollups";
import type { LatencyBucketRow, SnapshotBucketRow, Window } from "./preparers";

const H_SUMS = LATENCY_BUCKET_BOUNDS_MS.map((_, i) => `sum(h${i}) as h${i}`).join(", ");

/** A rollup sum per route or bucket: counts plus one `h<i>` column per latency bucket. */
type LatencySumRow = Record<string, number>;
type RouteSumRow = LatencySumRow & { route: string };
type ErrorStatusRow = { route: string; byStatus: string };
export type ModelChangeRow = { ts: number; store: string; modelId: string | null };

function toLatencyRow(r: LatencySumRow): LatencyBucketRow {
  return { bucket: r.bucket, count: r.count, errorCount: r.errorCount, clientErrorCount: r.clientErrorCount, sumMs: r.sumMs, hist: LATENCY_BUCKET_BOUNDS_MS.map((_, i) => r[`h${i}`]) };
}

/**
 * Latency per bucket of the window, the routes merged (histograms add
 * exactly), summed in SQL from the coarsest rollup that tiles the bucket
 * width (indexed range reads; the 24h chart reads quarter-hour rows).
 * `routes` narrows to given route names.
 */
export function listLatencyBucketsByWindow({ window, routes }: { window: Window; routes?: string[] }): LatencyBucketRow[] {
  const { sqlite } = getGovernance();
  const routeFilter = routes ? `and route in (${routes.map(() => "?").join(", ")})` : "";
  const rows = sqlite
    .prepare(
      `select ts - (ts % ?) as bucket, sum(count) as count, sum(error_count) as errorCount, sum(client_error_count) as clientErrorCount, sum(sum_ms) as sumMs, ${H_SUMS}
       from metric_rollups where resolution_s = ? ${routeFilter} and ts >= ? and ts < ? group by bucket order by bucket`,
    )
    .all(window.stepMs, rollupResolutionForStep(window.stepMs), ...(routes ?? []), window.from, window.to) as LatencySumRow[];
  return rows.map(toLatencyRow);
}

export type RouteTotals = { route: string; count: number; errorCount: number; clientErrorCount: number; sumMs: number; hist: number[]; errorsByStatus: Record<string, number> };

/**
 * One row per route over the window, from the coarsest rollup that tiles the
 * window's buckets (so the totals are the minutes' totals over exactly the
 * charted window); status codes are merged only from rows that had errors
 * (few), so the table stays cheap.
 */
export function listRouteTotalsByWindow({ window }: { window: Window }): RouteTotals[] {
  const { sqlite } = getGovernance();
  const resolution = rollupResolutionForStep(window.stepMs);
  const rows = sqlite
    .prepare(
      `select route, sum(count) as count, sum(error_count) as errorCount, sum(client_error_count) as clientErrorCount, sum(sum_ms) as sumMs, ${H_SUMS}
       from metric_rollups where resolution_s = ? and ts >= ? and ts < ? group by route order by route`,
    )
    .all(resolution, window.from, window.to) as RouteSumRow[];
  const errorRows = sqlite
    .prepare("select route, by_status as byStatus from metric_rollups where resolution_s = ? and ts >= ? and ts < ? and (error_count > 0 or client_error_count > 0)")
    .all(resolution, window.from, window.to) as ErrorStatusRow[];
  const errors = new Map<string, Record<string, number>>();
  for (const r of errorRows) {
    const acc = errors.get(r.route) ?? {};
    for (const [code, n] of Object.entries(JSON.parse(r.byStatus) as Record<string, number>)) if (Number(code) >= 400) acc[code] = (acc[code] ?? 0) + n;
    errors.set(r.route, acc);
  }
  return rows.map((r) => ({ route: r.route, count: r.count, errorCount: r.errorCount, clientErrorCount: r.clientErrorCount, sumMs: r.sumMs, hist: LATENCY_BUCKET_BOUNDS_MS.map((_, i) => r[`h${i}`]), errorsByStatus: errors.get(r.route) ?? {} }));
}

// Buckets are `ts - ts % step`: `%` is integer arithmetic in SQLite, while `/` on a
// bound JS number is real division and would give every row its own bucket.

/**
 * Snapshot buckets per store: the worst backlog/drift of the bucket, mean
 * rates, the largest embedded count (for throughput). Aggregates skip NULLs,
 * so an unmeasured value stays NULL.
 */
export function listSnapshotBucketsByWindow({ window, stores }: { window: Window; stores: string[] }): SnapshotBucketRow[] {
  if (stores.length === 0) return [];
  const { sqlite } = getGovernance();
  return sqlite
    .prepare(
      `select ts - (ts % @step) as bucket, store, max(backlog) as backlog, max(watermark) as watermark, max(parked) as parked, max(drift_count) as driftCount,
         max(drift_pct) as driftPct, min(coverage_pct) as coveragePct, avg(hit_rate) as hitRate, avg(precision) as precision,
         max(recall_p50_ms) as recallP50Ms, max(recall_p95_ms) as recallP95Ms, max(embedded) as embedded
       from metric_snapshots where store in (${stores.map((_, i) => `@s${i}`).join(", ")}) and resolution_s = @resolution and ts >= @from and ts < @to
       group by store, bucket order by bucket`,
    )
    .all({ step: window.stepMs, resolution: resolutionForStep(window.stepMs), from: window.from, to: window.to, ...Object.fromEntries(stores.map((s, i) => [`s${i}`, s])) }) as SnapshotBucketRow[];
}

/** Snapshots where a store's model differs from its previous one (window functions keep this in SQL). */
export function listModelChangesByWindow({ window, stores }: { window: Window; stores: string[] }): ModelChangeRow[] {
  if (stores.length === 0) return [];
  const { sqlite } = getGovernance();
  return sqlite
    .prepare(
      `select ts, store, model_id as modelId from (
         select ts, store, model_id, lag(model_id) over (partition by store order by ts) as prev
         from metric_snapshots where store in (${stores.map((_, i) => `@s${i}`).join(", ")}) and resolution_s = @resolution and ts >= @from and ts < @to and model_id is not null)
       where prev is null or prev != model_id order by ts`,
    )
    .all({ resolution: resolutionForStep(window.stepMs), from: window.from, to: window.to, ...Object.fromEntries(stores.map((s, i) => [`s${i}`, s])) }) as ModelChangeRow[];
}
