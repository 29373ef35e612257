import { getConfig } from "../config";
import { sql, type SQL } from "drizzle-orm";
import { getGovernance, type GovernanceHandle } from "../db/connection";
import { PG_LOCK } from "../db/pg";
import { engineStep, ledgerLock, readLedger, sqlRows, sqlRun, writeLedger, type LedgerHandle, type OnLedger, type Op } from "../db/port";
import type { MetricsRead } from "./series";
import { drainMinuteRollups, LATENCY_BUCKET_BOUNDS_MS, OTHER_ROUTE, quantileFromBuckets, type MinuteRollup } from "../http/request-timer";

export const MINUTE_MS = 60_000;
export const QUARTER_HOUR_MS = 15 * MINUTE_MS;
export const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Minute and quarter-hour rows serve ranges up to a week; hour rows (written alongside) serve a year. */
export const MINUTE_RETENTION_MS = 7 * DAY_MS;
export const HOUR_RETENTION_MS = 365 * DAY_MS;

export type RollupResolution = 60 | 900 | 3600;

/** The resolution a snapshot chart with this bucket width reads: hour rows once buckets are an hour or wider (snapshots keep minutes and hours only). */
export function resolutionForStep(stepMs: number): 60 | 3600 {
  return stepMs >= HOUR_MS ? 3600 : 60;
}

/**
 * The coarsest latency rollup whose buckets tile a chart bucket of this width
 * exactly (so the sums are the minutes' sums): hour rows for hour-wide
 * buckets, quarter-hour rows for the 24h chart's 15-minute buckets, else minutes.
 */
export function rollupResolutionForStep(stepMs: number): RollupResolution {
  if (stepMs % HOUR_MS === 0) return 3600;
  if (stepMs % QUARTER_HOUR_MS === 0) return 900;
  return 60;
}

const H_COLS = LATENCY_BUCKET_BOUNDS_MS.map((_, i) => `h${i}`);

function mergeInto(target: MinuteRollup, r: MinuteRollup): void {
  target.count += r.count;
  target.errorCount += r.errorCount;
  target.clientErrorCount += r.clientErrorCount;
  target.sumMs += r.sumMs;
  r.buckets.forEach((n, i) => (target.buckets[i] += n));
  for (const [k, v] of Object.entries(r.byStatus)) target.byStatus[k] = (target.byStatus[k] ?? 0) + v;
}

/** Sum rows into one per route and `bucketMs` bucket (histograms add exactly). */
export function foldRollups({ rows, bucketMs }: { rows: MinuteRollup[]; bucketMs: number }): MinuteRollup[] {
  const hours = new Map<string, MinuteRollup>();
  for (const r of rows) {
    const ts = r.ts - (r.ts % bucketMs);
    const key = `${ts}|${r.route}`;
    let h = hours.get(key);
    if (!h) {
      h = { ts, route: r.route, count: 0, errorCount: 0, clientErrorCount: 0, sumMs: 0, buckets: H_COLS.map(() => 0), byStatus: {} };
      hours.set(key, h);
    }
    mergeInto(h, r);
  }
  return [...hours.values()];
}

/** The distinct routes the stored rollups hold (hour rows keep every route for a year), read once per process. */
export const ROLLUP_ROUTES_SELECT = "select distinct route from metric_rollups where resolution_s = 3600";
const g = globalThis as unknown as { __dualmindRollupRoutes?: { dataDir: string; routes: Set<string> } };

/** The routes already stored, as this process knows them (undefined until read, and again for another data dir or database). */
export function cachedRollupRoutes(): Set<string> | undefined {
  const where = getConfig().databaseUrl ?? getConfig().dataDir;
  return g.__dualmindRollupRoutes?.dataDir === where ? g.__dualmindRollupRoutes.routes : undefined;
}
export function rememberRollupRoutes(routes: string[]): Set<string> {
  g.__dualmindRollupRoutes = { dataDir: getConfig().databaseUrl ?? getConfig().dataDir, routes: new Set(routes) };
  return g.__dualmindRollupRoutes.routes;
}

/**
 * Rows whose route is new once the stored rollups hold
 * DUALMIND_METRIC_ROUTE_KEYS routes are counted under `other` (merged into one
 * row per minute), so governance.db holds a bounded set of routes whatever
 * several processes or restarts recorded. `known` learns the routes let in.
 */
export function capRollupRoutes({ rows, known }: { rows: MinuteRollup[]; known: Set<string> }): MinuteRollup[] {
  const cap = getConfig().limits.metricRouteKeys;
  let capped = false;
  const out = rows.map((r) => {
    if (known.has(r.route)) return r;
    if (known.size < cap) {
      known.add(r.route);
      return r;
    }
    capped = true;
    return { ...r, route: OTHER_ROUTE };
  });
  // Each row is within one minute (or hour, for hour rows): folding by the minute merges the `other` rows of a minute and keeps the rest.
  return capped ? foldRollups({ rows: out, bucketMs: MINUTE_MS }) : out;
}

/** A rollup row as stored: counts, sums, histogram columns, status counts as JSON. */
export type StoredRollup = Record<string, number> & { byStatus: string };

/** `r` merged with the row already stored for its bucket, if any: a bucket flushed more than once (a minute in two flushes or by two replicas, an hour in sixty) adds up. */
export function mergedWithStored({ rollup: r, prev }: { rollup: MinuteRollup; prev: StoredRollup | undefined }): MinuteRollup {
  const merged: MinuteRollup = { ...r, buckets: [...r.buckets], byStatus: { ...r.byStatus } };
  if (prev) mergeInto(merged, { ts: r.ts, route: r.route, count: prev.count, errorCount: prev.errorCount, clientErrorCount: prev.clientErrorCount, sumMs: prev.sumMs, buckets: H_COLS.map((c) => prev[c]), byStatus: JSON.parse(prev.byStatus) as Record<string, number> });
  return merged;
}

/** The stored columns of a merged rollup, in ROLLUP_COLUMNS order. */
export const ROLLUP_COLUMNS = ["ts", "resolution_s", "route", "count", "error_count", "client_error_count", "sum_ms", "p50_ms", "p95_ms", "p99_ms", "by_status", ...H_COLS] as const;
export function rollupValues({ rollup: m, resolutionS }: { rollup: MinuteRollup; resolutionS: number }): unknown[] {
  const q = (p: number) => quantileFromBuckets({ buckets: m.buckets, q: p });
  return [m.ts, resolutionS, m.route, m.count, m.errorCount, m.clientErrorCount, m.sumMs, q(0.5), q(0.95), q(0.99), JSON.stringify(m.byStatus), ...m.buckets];
}
/** How a stored rollup is read back for merging (both backends). */
export const STORED_ROLLUP_SELECT = `select count, error_count as "errorCount", client_error_count as "clientErrorCount", sum_ms as "sumMs", by_status as "byStatus", ${H_COLS.join(", ")} from metric_rollups`;
/** The upsert both backends run (`?` placeholders, one row). */
export const ROLLUP_UPSERT = `insert into metric_rollups (${ROLLUP_COLUMNS.join(", ")}) values (${ROLLUP_COLUMNS.map(() => "?").join(", ")})
     on conflict (resolution_s, route, ts) do update set ${ROLLUP_COLUMNS.filter((c) => !["ts", "resolution_s", "route"].includes(c)).map((c) => `${c} = excluded.${c}`).join(", ")}`;

/** A metrics statement (`?` placeholders, the same text on both engines) as Drizzle SQL, so the port runs it on either. */
export function metricsSql({ sql: text, params }: MetricsRead): SQL {
  const parts = text.split("?");
  return sql.join(parts.map((part, i) => (i === 0 ? sql.raw(part) : sql`${params[i - 1]}${sql.raw(part)}`)));
}

/** How many rows a statement changed, on either engine. */
function changes(q: MetricsRead): Op<number> {
  return engineStep({
    sqlite: (h) => h.db.run(metricsSql(q)).changes,
    pg: async (tx) => (await tx.execute(metricsSql(q))).rowCount ?? 0,
  });
}

function* upsertRollups(rows: MinuteRollup[], resolutionS: number): Op<void> {
  for (const r of rows) {
    const [prev] = yield* sqlRows<StoredRollup>(metricsSql({ sql: `${STORED_ROLLUP_SELECT} where resolution_s = ? and route = ? and ts = ?`, params: [resolutionS, r.route, r.ts] }));
    yield* sqlRun(metricsSql({ sql: ROLLUP_UPSERT, params: rollupValues({ rollup: mergedWithStored({ rollup: r, prev }), resolutionS }) }));
  }
}

type OnHandle<H extends LedgerHandle> = { handle?: H };
const nothing = <H extends LedgerHandle, T>(handle: H | undefined, value: T) => (handle?.kind === "pg" ? Promise.resolve(value) : value) as OnLedger<H, T>;

/**
 * Persist rollups in one transaction, merging into rows already there; minute
 * rows are also folded into their quarter-hour and hour rows, so a long chart
 * reads few rows. On PostgreSQL replicas add to the shared rows, taking turns
 * on an advisory lock so two never merge the same row at once.
 */
export function saveRollups<H extends LedgerHandle = GovernanceHandle>({ handle, rows, resolutionS = 60 }: OnHandle<H> & { rows: MinuteRollup[]; resolutionS?: 60 | 3600 }): OnLedger<H, number> {
  if (rows.length === 0) return nothing(handle, 0);
  const sets: [MinuteRollup[], number][] = resolutionS === 60 ? [[rows, 60], [foldRollups({ rows, bucketMs: QUARTER_HOUR_MS }), 900], [foldRollups({ rows, bucketMs: HOUR_MS }), 3600]] : [[rows, resolutionS]];
  return writeLedger(handle ?? (getGovernance() as H), function* () {
    yield* ledgerLock(PG_LOCK.metrics);
    for (const [set, res] of sets) yield* upsertRollups(set, res);
    return rows.length;
  });
}

/** Drain this process's in-memory minutes into the history; a failed write throws (the loop logs it). */
export function flushLatencyRollups<H extends LedgerHandle = GovernanceHandle>({ handle }: OnHandle<H> = {}): OnLedger<H, number> {
  const rows = drainMinuteRollups();
  // Nothing to write: the ledger is not opened (a flush must not create or migrate governance.db by itself).
  if (rows.length === 0) return nothing(handle, 0);
  const save = (known: Set<string>) => saveRollups({ handle, rows: capRollupRoutes({ rows, known }) });
  const cached = cachedRollupRoutes();
  if (cached) return save(cached);
  const routes = readLedger(handle ?? (getGovernance() as H), sqlRows<{ route: string }>(metricsSql({ sql: ROLLUP_ROUTES_SELECT, params: [] })));
  const known = (found: { route: string }[]) => rememberRollupRoutes(found.map((r) => r.route));
  return (routes instanceof Promise ? routes.then((found) => save(known(found))) : save(known(routes as { route: string }[]))) as OnLedger<H, number>;
}

/**
 * Retention: minute and quarter-hour rows older than a week and anything
 * older than a year go. Hour rows already hold the minutes' sums, so nothing
 * is lost but detail.
 */
export function pruneMetrics<H extends LedgerHandle = GovernanceHandle>({ handle, now = Date.now() }: OnHandle<H> & { now?: number } = {}): OnLedger<H, PruneCounts> {
  return writeLedger(handle ?? (getGovernance() as H), function* () {
    const s = pruneStatements(now);
    const total = function* (qs: MetricsRead[]) {
      let n = 0;
      for (const q of qs) n += yield* changes(q);
      return n;
    };
    return { minuteRows: yield* total(s.minuteRows), quarterHourRows: yield* total(s.quarterHourRows), yearOld: yield* total(s.yearOld) };
  });
}

export type PruneCounts = { minuteRows: number; quarterHourRows: number; yearOld: number };

/** The retention deletes (both backends): each statement with its parameters. */
export function pruneStatements(now: number) {
  const minuteCutoff = now - MINUTE_RETENTION_MS;
  const yearCutoff = now - HOUR_RETENTION_MS;
  return {
    minuteRows: [
      { sql: "delete from metric_rollups where resolution_s = 60 and ts < ?", params: [minuteCutoff] },
      { sql: "delete from metric_snapshots where resolution_s = 60 and ts < ?", params: [minuteCutoff] },
    ],
    quarterHourRows: [{ sql: "delete from metric_rollups where resolution_s = 900 and ts < ?", params: [minuteCutoff] }],
    yearOld: [
      { sql: "delete from metric_rollups where ts < ?", params: [yearCutoff] },
      { sql: "delete from metric_snapshots where ts < ?", params: [yearCutoff] },
    ],
  };
}

