import pg from "pg";
import type { PoolClient } from "pg";
import { getPg, PG_LOCK, type PgHandle } from "../db/pg";
import { drainMinuteRollups, type MinuteRollup } from "../http/request-timer";
import { activeStoreNamesPg } from "../db/store-lifecycle";
import { listStoreNamesPg, openStorePg } from "../stores/stores-pg";
import { withStoreTx } from "../db/pg-store";
import { capRollupRoutes, foldRollups, HOUR_MS, cachedRollupRoutes, rememberRollupRoutes, ROLLUP_ROUTES_SELECT, mergedWithStored, pruneStatements, QUARTER_HOUR_MS, ROLLUP_UPSERT, rollupValues, STORED_ROLLUP_SELECT, type PruneCounts, type StoredRollup } from "./rollups";
import type { MetricsRead } from "./series";
import { SNAPSHOT_UPSERT, snapshotOf, snapshotRows, type StoreSnapshot } from "./snapshots";
import { getStoreStatusPg, measureRecallStatsPg } from "./store-status-pg";

/**
 * The Health and Observability history with DATABASE_URL: the same
 * metric_rollups and metric_snapshots tables, in the governance schema every
 * replica shares, written and read with the same SQL as on SQLite
 * (lib/metrics/series.ts, rollups.ts, snapshots.ts).
 * - Request latency: each replica drains its own minutes and adds them to the
 *   shared rows (a minute served by two replicas holds both's requests);
 *   flushes take turns on an advisory lock, so two replicas never merge the
 *   same row at once.
 * - Store snapshots: measured from PostgreSQL by every replica's loop; the
 *   minute's row is replaced by the latest measure (the same database, so the
 *   same numbers), never doubled.
 */

/** int8 sums and numeric averages as JS numbers (node-pg gives strings for both by default), for these reads only. */
const NUMBERS = {
  getTypeParser: (oid: number, format?: "text" | "binary") => (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)),
};

function toPg(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

async function query<T>(db: Pick<PoolClient, "query">, { sql, params }: MetricsRead): Promise<T[]> {
  return (await db.query({ text: toPg(sql), values: params, types: NUMBERS })).rows as T[];
}

/** A metrics read (lib/metrics/series.ts) on PostgreSQL. */
export async function readPg<T>(q: MetricsRead): Promise<T[]> {
  return query<T>((await pgHandle()).pool, q);
}

async function pgHandle(): Promise<PgHandle> {
  const handle = getPg();
  if (!handle) throw new Error("metrics on PostgreSQL need DATABASE_URL");
  return handle;
}

async function inTransaction<T>(fn: (c: PoolClient) => Promise<T>): Promise<T> {
  const client = await (await pgHandle()).pool.connect();
  try {
    await client.query("begin");
    const out = await fn(client);
    await client.query("commit");
    return out;
  } catch (e) {
    await client.query("rollback").catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}

/** Add rollups to the shared rows (minute rows also into their quarter-hour and hour rows), in one transaction. */
export async function saveRollupsPg({ rows, resolutionS = 60 }: { rows: MinuteRollup[]; resolutionS?: 60 | 3600 }): Promise<number> {
  if (rows.length === 0) return 0;
  const sets: [MinuteRollup[], number][] = resolutionS === 60 ? [[rows, 60], [foldRollups(rows, QUARTER_HOUR_MS), 900], [foldRollups(rows, HOUR_MS), 3600]] : [[rows, resolutionS]];
  await inTransaction(async (c) => {
    await c.query("select pg_advisory_xact_lock($1)", [PG_LOCK.metrics]);
    for (const [set, res] of sets) {
      for (const r of set) {
        const [prev] = await query<StoredRollup>(c, { sql: `${STORED_ROLLUP_SELECT} where resolution_s = ? and route = ? and ts = ?`, params: [res, r.route, r.ts] });
        await query(c, { sql: ROLLUP_UPSERT, params: rollupValues(mergedWithStored(r, prev), res) });
      }
    }
  });
  return rows.length;
}

/** Drain this replica's in-memory minutes into PostgreSQL; a failed write throws (the loop logs it). */
export async function flushLatencyRollupsPg(): Promise<number> {
  const rows = drainMinuteRollups();
  if (rows.length === 0) return 0;
  const known = cachedRollupRoutes() ?? rememberRollupRoutes((await readPg<{ route: string }>({ sql: ROLLUP_ROUTES_SELECT, params: [] })).map((r) => r.route));
  return saveRollupsPg({ rows: capRollupRoutes({ rows, known }) });
}

/** Retention, as on SQLite (lib/metrics/rollups.ts pruneMetrics). */
export async function pruneMetricsPg({ now = Date.now() }: { now?: number } = {}): Promise<PruneCounts> {
  return inTransaction(async (c) => {
    const s = pruneStatements(now);
    const total = async (qs: MetricsRead[]) => {
      let n = 0;
      for (const q of qs) n += (await c.query(toPg(q.sql), q.params)).rowCount ?? 0;
      return n;
    };
    return { minuteRows: await total(s.minuteRows), quarterHourRows: await total(s.quarterHourRows), yearOld: await total(s.yearOld) };
  });
}

/** Write snapshots in one transaction (lib/metrics/snapshots.ts snapshotRows). */
export async function saveStoreSnapshotsPg({ snapshots, resolutionS = 60 }: { snapshots: StoreSnapshot[]; resolutionS?: 60 | 3600 }): Promise<void> {
  if (snapshots.length === 0) return;
  await inTransaction(async (c) => {
    for (const snapshot of snapshots) for (const values of snapshotRows({ snapshot, resolutionS, bool: (b) => b })) await c.query(toPg(SNAPSHOT_UPSERT), values);
  });
}

/** Measure and save every PostgreSQL store; a store that fails to measure is reported, the others still saved. */
export async function snapshotAllStoresPg({ now = Date.now() }: { now?: number } = {}): Promise<{ saved: number; failed: { store: string; error: string }[] }> {
  const handle = await pgHandle();
  const snapshots: StoreSnapshot[] = [];
  const failed: { store: string; error: string }[] = [];
  // Archived stores are not measured: nothing changes in them.
  for (const store of await activeStoreNamesPg({ pg: handle, names: await listStoreNamesPg({ pg: handle }) })) {
    try {
      const storeHandle = await openStorePg({ pg: handle, store });
      const status = await getStoreStatusPg({ handle: storeHandle, now });
      const recall = await withStoreTx({ handle: storeHandle, readOnly: true }, (tx) => measureRecallStatsPg({ tx, now }));
      snapshots.push(snapshotOf({ store, status, recall, now }));
    } catch (e) {
      failed.push({ store, error: (e as Error).message });
    }
  }
  await saveStoreSnapshotsPg({ snapshots });
  return { saved: snapshots.length, failed };
}

/** The newest snapshot time among `stores` (the history's "as of"), or null before the first. */
export async function latestSnapshotTsPg({ stores }: { stores: string[] }): Promise<number | null> {
  if (stores.length === 0) return null;
  const [row] = await readPg<{ ts: number | null }>({ sql: `select max(ts) as ts from metric_snapshots where store in (${stores.map(() => "?").join(", ")})`, params: stores });
  return row?.ts ?? null;
}
