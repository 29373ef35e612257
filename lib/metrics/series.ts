import { getGovernance } from "../db/connection";
import { storesOnPostgres } from "../stores/on-postgres";
import { readPg } from "./engines/pg";
import { LATENCY_BUCKET_BOUNDS_MS } from "../http/request-timer";
import { resolutionForStep, rollupResolutionForStep } from "./rollups";
import type { LatencyBucketRow, SnapshotBucketRow, Window } from "./preparers";

const H_SUMS = LATENCY_BUCKET_BOUNDS_MS.map((_, i) => `sum(h${i}) as h${i}`).join(", ");

/** A rollup sum per route or bucket: counts plus one `h<i>` column per latency bucket. */
type LatencySumRow = Record<string, number>;
type RouteSumRow = LatencySumRow & { route: string };
type ErrorStatusRow = { route: string; byStatus: string };
export type ModelChangeRow = { ts: number; store: string; modelId: string | null };

/**
 * A metrics read as SQL both backends run: `?` placeholders, quoted
 * camel-case aliases (PostgreSQL folds unquoted ones to lower case).
 */
export type MetricsRead = { sql: string; params: unknown[] };

function sqliteRead<T>({ sql, params }: MetricsRead): T[] {
  return getGovernance().sqlite.prepare(sql).all(...params) as T[];
}

/** A metrics read on this process's backend: governance.db, or PostgreSQL (where sums and averages come back as numbers too). */
export async function readMetrics<T>(read: MetricsRead): Promise<T[]> {
  return storesOnPostgres() ? readPg<T>(read) : sqliteRead<T>(read);
}

function toLatencyRow(r: LatencySumRow): LatencyBucketRow {
  return { bucket: r.bucket, count: r.count, errorCount: r.errorCount, clientErrorCount: r.clientErrorCount, sumMs: r.sumMs, hist: LATENCY_BUCKET_BOUNDS_MS.map((_, i) => r[`h${i}`]) };
}

const inList = (values: unknown[]) => values.map(() => "?").join(", ");

/**
 * Latency per bucket of the window, the routes merged (histograms add
 * exactly), summed in SQL from the coarsest rollup that tiles the bucket
 * width (indexed range reads; the 24h chart reads quarter-hour rows).
 * `routes` narrows to given route names.
 */
function latencyBucketsRead({ window, routes }: { window: Window; routes?: string[] }): MetricsRead {
  const routeFilter = routes ? `and route in (${inList(routes)})` : "";
  return {
    sql: `select ts - (ts % ?) as bucket, sum(count) as count, sum(error_count) as "errorCount", sum(client_error_count) as "clientErrorCount", sum(sum_ms) as "sumMs", ${H_SUMS}
       from metric_rollups where resolution_s = ? ${routeFilter} and ts >= ? and ts < ? group by bucket order by bucket`,
    params: [window.stepMs, rollupResolutionForStep(window.stepMs), ...(routes ?? []), window.from, window.to],
  };
}

export async function listLatencyBucketsByWindow(args: { window: Window; routes?: string[] }): Promise<LatencyBucketRow[]> {
  return (await readMetrics<LatencySumRow>(latencyBucketsRead(args))).map(toLatencyRow);
}

export type RouteTotals = { route: string; count: number; errorCount: number; clientErrorCount: number; sumMs: number; hist: number[]; errorsByStatus: Record<string, number> };

/**
 * One row per route over the window, from the coarsest rollup that tiles the
 * window's buckets (so the totals are the minutes' totals over exactly the
 * charted window); status codes are merged only from rows that had errors
 * (few), so the table stays cheap.
 */
function routeTotalsReads({ window }: { window: Window }): { totals: MetricsRead; errors: MetricsRead } {
  const params = [rollupResolutionForStep(window.stepMs), window.from, window.to];
  return {
    totals: {
      sql: `select route, sum(count) as count, sum(error_count) as "errorCount", sum(client_error_count) as "clientErrorCount", sum(sum_ms) as "sumMs", ${H_SUMS}
       from metric_rollups where resolution_s = ? and ts >= ? and ts < ? group by route order by route`,
      params,
    },
    errors: { sql: `select route, by_status as "byStatus" from metric_rollups where resolution_s = ? and ts >= ? and ts < ? and (error_count > 0 or client_error_count > 0)`, params },
  };
}

export async function listRouteTotalsByWindow({ window }: { window: Window }): Promise<RouteTotals[]> {
  const q = routeTotalsReads({ window });
  const [rows, errorRows] = [await readMetrics<RouteSumRow>(q.totals), await readMetrics<ErrorStatusRow>(q.errors)];
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
function snapshotBucketsRead({ window, stores }: { window: Window; stores: string[] }): MetricsRead {
  return {
    sql: `select ts - (ts % ?) as bucket, store, max(backlog) as backlog, max(watermark) as watermark, max(parked) as parked, max(drift_count) as "driftCount",
         max(drift_pct) as "driftPct", min(coverage_pct) as "coveragePct", avg(hit_rate) as "hitRate", avg(precision) as precision,
         max(recall_p50_ms) as "recallP50Ms", max(recall_p95_ms) as "recallP95Ms", max(embedded) as embedded
       from metric_snapshots where store in (${inList(stores)}) and resolution_s = ? and ts >= ? and ts < ?
       group by store, bucket order by bucket`,
    params: [window.stepMs, ...stores, resolutionForStep(window.stepMs), window.from, window.to],
  };
}

export async function listSnapshotBucketsByWindow(args: { window: Window; stores: string[] }): Promise<SnapshotBucketRow[]> {
  return args.stores.length === 0 ? [] : readMetrics(snapshotBucketsRead(args));
}

/** Snapshots where a store's model differs from its previous one (window functions keep this in SQL). */
function modelChangesRead({ window, stores }: { window: Window; stores: string[] }): MetricsRead {
  return {
    sql: `select ts, store, model_id as "modelId" from (
         select ts, store, model_id, lag(model_id) over (partition by store order by ts) as prev
         from metric_snapshots where store in (${inList(stores)}) and resolution_s = ? and ts >= ? and ts < ? and model_id is not null) as m
       where prev is null or prev != model_id order by ts`,
    params: [...stores, resolutionForStep(window.stepMs), window.from, window.to],
  };
}

export async function listModelChangesByWindow(args: { window: Window; stores: string[] }): Promise<ModelChangeRow[]> {
  return args.stores.length === 0 ? [] : readMetrics(modelChangesRead(args));
}
