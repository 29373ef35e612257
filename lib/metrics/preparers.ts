/**
 * Pure chart preparers: SQL hands over sparse buckets, these turn them into
 * evenly spaced points. A bucket with no data stays null (recharts draws a
 * gap); only a measured zero is a zero.
 */
import { isServerFault, LATENCY_BUCKET_BOUNDS_MS, quantileFromBuckets, type RouteLatency } from "../http/latency-buckets";
import { pushTo } from "../collections";

export const RANGES = {
  "1h": { ms: 3_600_000, stepMs: 60_000 },
  "24h": { ms: 86_400_000, stepMs: 15 * 60_000 },
  "7d": { ms: 7 * 86_400_000, stepMs: 3_600_000 },
  "30d": { ms: 30 * 86_400_000, stepMs: 6 * 3_600_000 },
} as const;
export type RangeKey = keyof typeof RANGES;
export const RANGE_KEYS = Object.keys(RANGES) as RangeKey[];

export function parseRange(value: unknown): RangeKey {
  return typeof value === "string" && value in RANGES ? (value as RangeKey) : "24h";
}

export type Window = { from: number; to: number; stepMs: number };

/** The window for a range ending now: bucket-aligned, last bucket includes now. */
export function windowForRange({ range, now }: { range: RangeKey; now: number }): Window {
  const { ms, stepMs } = RANGES[range];
  const to = now - (now % stepMs) + stepMs;
  return { from: to - ms, to, stepMs };
}

export function bucketStarts({ from, to, stepMs }: Window): number[] {
  const out: number[] = [];
  for (let t = from - (from % stepMs); t < to; t += stepMs) out.push(t);
  return out;
}

export function bucketOf({ ts, stepMs }: { ts: number; stepMs: number }): number {
  return ts - (ts % stepMs);
}

/** Indexes of points with a value whose neighbours have none: a line cannot show them, so the chart draws a dot. */
export function isolatedPoints({ points, key }: { points: readonly Record<string, number | null | undefined>[]; key: string }): Set<number> {
  const has = (i: number) => i >= 0 && i < points.length && points[i][key] !== null && points[i][key] !== undefined;
  const out = new Set<number>();
  for (let i = 0; i < points.length; i++) if (has(i) && !has(i - 1) && !has(i + 1)) out.add(i);
  return out;
}

/** One bucket's latency, for one route or several merged (`route` then absent). */
export type LatencyBucketRow = { bucket: number; route?: string; count: number; errorCount: number; clientErrorCount: number; sumMs: number; hist: number[] };
/**
 * p50/p95/p99 are estimates from the histogram (see quantileFromBuckets), to
 * be labelled as such. errorPct: server faults (5xx) per 100 requests;
 * clientErrorPct: expected client answers (4xx: 404, 409, ...), shown apart.
 */
export type LatencyPoint = { t: number; count: number | null; p50: number | null; p95: number | null; p99: number | null; errorPct: number | null; clientErrorPct: number | null };

/** Merge the routes of each bucket (histograms add exactly) and estimate percentiles from the merged histogram. */
export function prepareLatencySeries({ rows, window }: { rows: LatencyBucketRow[]; window: Window }): LatencyPoint[] {
  const merged = new Map<number, { count: number; errorCount: number; clientErrorCount: number; hist: number[] }>();
  for (const r of rows) {
    const b = bucketOf({ ts: r.bucket, stepMs: window.stepMs });
    let m = merged.get(b);
    if (!m) {
      m = { count: 0, errorCount: 0, clientErrorCount: 0, hist: LATENCY_BUCKET_BOUNDS_MS.map(() => 0) };
      merged.set(b, m);
    }
    m.count += r.count;
    m.errorCount += r.errorCount;
    m.clientErrorCount += r.clientErrorCount;
    r.hist.forEach((n, i) => (m.hist[i] += n));
  }
  return bucketStarts(window).map((t) => {
    const m = merged.get(t);
    if (!m || m.count === 0) return { t, count: null, p50: null, p95: null, p99: null, errorPct: null, clientErrorPct: null };
    return {
      t,
      count: m.count,
      p50: finite(quantileFromBuckets({ buckets: m.hist, q: 0.5 })),
      p95: finite(quantileFromBuckets({ buckets: m.hist, q: 0.95 })),
      p99: finite(quantileFromBuckets({ buckets: m.hist, q: 0.99 })),
      errorPct: (100 * m.errorCount) / m.count,
      clientErrorPct: (100 * m.clientErrorCount) / m.count,
    };
  });
}

/** The open-ended top bucket (> 10 s) has no finite bound; chart it at the last finite one. */
function finite(v: number | null): number | null {
  if (v === null) return null;
  return Number.isFinite(v) ? v : LATENCY_BUCKET_BOUNDS_MS[LATENCY_BUCKET_BOUNDS_MS.length - 2];
}

export type SnapshotBucketRow = {
  bucket: number;
  store: string;
  backlog: number | null;
  watermark: number | null;
  parked: number | null;
  driftCount: number | null;
  driftPct: number | null;
  coveragePct: number | null;
  hitRate: number | null;
  precision: number | null;
  recallP50Ms: number | null;
  recallP95Ms: number | null;
  embedded: number | null;
};
/** `throughput`: rows embedded per throughputUnitOf(window) (a minute at the 1 h range, an hour beyond). */
export type HealthPoint = Omit<SnapshotBucketRow, "bucket" | "store" | "embedded"> & { t: number; throughput: number | null };

/**
 * The unit embed throughput is charted in, from the chart's step: per minute where a point is a minute (1 h),
 * per hour where it is longer — never a minute's growth scaled to a made-up hourly peak.
 */
export function throughputUnitOf(window: Pick<Window, "stepMs">): { per: "minute" | "hour"; ms: number } {
  return window.stepMs <= 60_000 ? { per: "minute", ms: 60_000 } : { per: "hour", ms: 3_600_000 };
}

function sumOrNull(values: (number | null)[]): number | null {
  const v = values.filter((x): x is number => x !== null);
  return v.length ? v.reduce((a, b) => a + b, 0) : null;
}
function meanOrNull(values: (number | null)[]): number | null {
  const s = sumOrNull(values);
  const n = values.filter((x) => x !== null).length;
  return s === null ? null : s / n;
}
function maxOrNull(values: (number | null)[]): number | null {
  const v = values.filter((x): x is number => x !== null);
  return v.length ? Math.max(...v) : null;
}

/**
 * Health series for one store or several (overall): counts add across stores,
 * percentages average, latency takes the worst store. A watermark is each
 * store's own limit, so over several stores it is not drawn (a sum of limits
 * limits nothing). Worker throughput is the growth of embedded artifacts since
 * the previous bucket, in throughputUnitOf(window); it is a gap when either
 * bucket is missing and never negative (a re-embed that resets vectors is not
 * negative work).
 */
export function prepareHealthSeries({ rows, window, stores = 1 }: { rows: SnapshotBucketRow[]; window: Window; stores?: number }): HealthPoint[] {
  const unit = throughputUnitOf(window);
  const byBucket = new Map<number, SnapshotBucketRow[]>();
  for (const r of rows) {
    const b = bucketOf({ ts: r.bucket, stepMs: window.stepMs });
    pushTo(byBucket, b, r);
  }
  let prevEmbedded: number | null = null;
  return bucketStarts(window).map((t) => {
    const rs = byBucket.get(t);
    if (!rs) {
      prevEmbedded = null;
      return { t, backlog: null, watermark: null, parked: null, driftCount: null, driftPct: null, coveragePct: null, hitRate: null, precision: null, recallP50Ms: null, recallP95Ms: null, throughput: null };
    }
    const embedded = sumOrNull(rs.map((r) => r.embedded));
    const throughput = embedded !== null && prevEmbedded !== null ? (Math.max(0, embedded - prevEmbedded) * unit.ms) / window.stepMs : null;
    prevEmbedded = embedded;
    return {
      t,
      backlog: sumOrNull(rs.map((r) => r.backlog)),
      watermark: stores === 1 ? maxOrNull(rs.map((r) => r.watermark)) : null,
      parked: sumOrNull(rs.map((r) => r.parked)),
      driftCount: sumOrNull(rs.map((r) => r.driftCount)),
      driftPct: meanOrNull(rs.map((r) => r.driftPct)),
      coveragePct: meanOrNull(rs.map((r) => r.coveragePct)),
      hitRate: meanOrNull(rs.map((r) => r.hitRate)),
      precision: meanOrNull(rs.map((r) => r.precision)),
      recallP50Ms: maxOrNull(rs.map((r) => r.recallP50Ms)),
      recallP95Ms: maxOrNull(rs.map((r) => r.recallP95Ms)),
      throughput,
    };
  });
}

export type ModelChange = { t: number; store: string; from: string | null; to: string };

/** Markers where a store's active model differs from its previous snapshot (rows in time order). */
export function findModelChanges(rows: { ts: number; store: string; modelId: string | null }[]): ModelChange[] {
  const last = new Map<string, string | null>();
  const out: ModelChange[] = [];
  for (const r of rows) {
    if (r.modelId === null) continue;
    if (last.has(r.store) && last.get(r.store) !== r.modelId) out.push({ t: r.ts, store: r.store, from: last.get(r.store) ?? null, to: r.modelId });
    last.set(r.store, r.modelId);
  }
  return out;
}

export type RouteTotalsInput = { route: string; count: number; errorCount: number; clientErrorCount: number; sumMs: number; hist: number[]; errorsByStatus: Record<string, number> };
/** errorPct counts server faults (5xx); clientErrorPct the expected 4xx answers; each with its codes, most frequent first. */
export type RouteTableRow = Omit<RouteLatency, "byStatus"> & {
  errorPct: number;
  clientErrorPct: number;
  serverErrorsByStatus: [string, number][];
  clientAnswersByStatus: [string, number][];
};

/** Route table rows, slowest p95 first; status codes sorted by how often they happened. */
export function prepareRouteTable(rows: RouteTotalsInput[]): RouteTableRow[] {
  const byFrequency = (entries: [string, number][]) => entries.sort((a, b) => b[1] - a[1]);
  return rows
    .filter((r) => r.count > 0)
    .map((r) => {
      const codes = Object.entries(r.errorsByStatus);
      return {
        route: r.route,
        count: r.count,
        meanMs: r.sumMs / r.count,
        p50Ms: finite(quantileFromBuckets({ buckets: r.hist, q: 0.5 })),
        p95Ms: finite(quantileFromBuckets({ buckets: r.hist, q: 0.95 })),
        p99Ms: finite(quantileFromBuckets({ buckets: r.hist, q: 0.99 })),
        errorPct: (100 * r.errorCount) / r.count,
        clientErrorPct: (100 * r.clientErrorCount) / r.count,
        serverErrorsByStatus: byFrequency(codes.filter(([code]) => isServerFault(Number(code)))),
        clientAnswersByStatus: byFrequency(codes.filter(([code]) => !isServerFault(Number(code)))),
      };
    })
    .sort((a, b) => (b.p95Ms ?? 0) - (a.p95Ms ?? 0) || b.count - a.count || a.route.localeCompare(b.route));
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const TICK_STEPS = [5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 3 * HOUR, 4 * HOUR, 6 * HOUR, 8 * HOUR, 12 * HOUR, DAY, 2 * DAY, 5 * DAY, 7 * DAY];

/**
 * Time-axis ticks at round UTC times (every 10 minutes, 3 hours, a day, ...), as many as `width` px holds
 * at about 64 px a label, with the label each needs: "HH:MM" within a day, "MM-DD" from a day up — so a
 * 7-day chart names each day once (never "11-22 11-22"), and no tick sits at the right edge to be cut.
 */
export function timeTicks({ from, to, width }: { from: number; to: number; width: number }): { ticks: number[]; daily: boolean } {
  const span = Math.max(1, to - from);
  const room = Math.max(2, Math.floor(width / 64));
  const step = TICK_STEPS.find((s) => span / s <= room) ?? TICK_STEPS[TICK_STEPS.length - 1];
  const ticks: number[] = [];
  // Leave the last few percent of the axis free: a label centred on the right edge is cut off.
  const last = to - span * 0.04;
  for (let t = Math.ceil(from / step) * step; t <= last; t += step) ticks.push(t);
  return { ticks, daily: step >= DAY };
}

/** An event drawn on a chart as a labelled vertical line. */
export type ChartAnnotation = { t: number; label: string };

/** Annotations drawn on one chart at most: past this, the newest are kept (a flapping store would bury the lines). */
export const MAX_CHART_ANNOTATIONS = 12;

/**
 * The events worth a line on the health charts, inside the window only:
 * model switches, reindex runs (when each started) and store status alerts
 * (the status a store entered). Labels name the store when the charts
 * cover all stores. Newest kept when there are too many, returned oldest first.
 */
export function chartAnnotations({
  window,
  allStores,
  modelChanges,
  reindexes,
  alerts,
}: {
  window: { from: number; to: number };
  allStores: boolean;
  modelChanges: { t: number; store: string }[];
  reindexes: { startedAt: number; store: string; status: string }[];
  alerts: { ts: number; store: string | null; kind: string; status: string }[];
}): ChartAnnotation[] {
  const named = (store: string | null, what: string) => (allStores && store ? `${store}: ${what}` : what);
  const all: ChartAnnotation[] = [
    ...modelChanges.map((m) => ({ t: m.t, label: named(m.store, "new model") })),
    ...reindexes.map((j) => ({ t: j.startedAt, label: named(j.store, j.status === "failed" ? "reindex failed" : "reindex") })),
    ...alerts.filter((a) => a.kind === "store_status").map((a) => ({ t: a.ts, label: named(a.store, a.status) })),
  ];
  return all
    .filter((a) => a.t >= window.from && a.t <= window.to)
    .sort((a, b) => a.t - b.t || a.label.localeCompare(b.label))
    .slice(-MAX_CHART_ANNOTATIONS);
}
