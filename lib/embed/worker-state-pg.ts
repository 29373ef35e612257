import { sql } from "drizzle-orm";
import { rowsOf, type SqlRunner } from "../db/pg-store";
import { log } from "../log";
import type { Fingerprint } from "./providers";
import { WORKER_STALE_MS, type WorkerMode, type WorkerState } from "./worker-state";

/**
 * The embed worker registry on PostgreSQL (the SQLite twin is ./worker-state.ts):
 * one row per worker in public.embed_workers, shared by every replica, so a
 * store's health lists the workers of all replicas — each row's heartbeat
 * says whether it is still alive (a replica that died stops beating and is
 * shown as not running after WORKER_STALE_MS). Written per batch that did or
 * failed something and by a heartbeat while idle; never fatal to the worker.
 */

/** Rows silent for longer are not listed (as on SQLite). */
const WORKER_LISTED_MS = 24 * 3_600_000;
const RATE_ALPHA = 0.3;

// Workers this process runs (in_this_process); on globalThis like the other process-wide registries.
const g = globalThis as unknown as { __dualmindPgWorkers?: Set<string> };
const ownWorkers = () => (g.__dualmindPgWorkers ??= new Set());

async function safely(what: string, f: () => PromiseLike<unknown>): Promise<void> {
  try {
    await f();
  } catch (e) {
    log("warn", `could not record embed worker ${what} (PostgreSQL)`, { error: (e as Error).message });
  }
}

export async function registerWorkerPg({ db, workerId, mode, now = Date.now() }: { db: SqlRunner; workerId: string; mode: WorkerMode; now?: number }): Promise<void> {
  ownWorkers().add(workerId);
  await safely("start", () =>
    db.execute(sql`insert into public.embed_workers (worker_id, pid, mode, started_at, heartbeat_at) values (${workerId}, ${process.pid}, ${mode}, ${now}, ${now})
      on conflict (worker_id) do update set heartbeat_at = excluded.heartbeat_at`),
  );
  // A worker of the same kind starting replaces the ones that stopped (a replica restarted, or one that died): not listed again.
  await safely("start", () => db.execute(sql`delete from public.embed_workers where mode = ${mode} and worker_id <> ${workerId} and heartbeat_at < ${now - WORKER_STALE_MS}`));
}

export async function heartbeatWorkerPg({ db, workerId, now = Date.now() }: { db: SqlRunner; workerId: string; now?: number }): Promise<void> {
  await safely("heartbeat", () => db.execute(sql`update public.embed_workers set heartbeat_at = ${now} where worker_id = ${workerId}`));
}

/** A worker that stopped on purpose says so at once (not after WORKER_STALE_MS). */
export async function stopWorkerPg({ db, workerId }: { db: SqlRunner; workerId: string }): Promise<void> {
  ownWorkers().delete(workerId);
  await safely("stop", () => db.execute(sql`update public.embed_workers set heartbeat_at = least(heartbeat_at, ${Date.now() - WORKER_STALE_MS}) where worker_id = ${workerId}`));
}

/** One batch's outcome: a success updates the last batch and the items/s moving average (in SQL: replicas never race on it), a failure the last error. */
export async function recordWorkerBatchPg(a: { db: SqlRunner; workerId: string; store: string; embedded: number; durationMs: number; error?: string; fingerprint: Fingerprint | null; now?: number }): Promise<void> {
  const now = a.now ?? Date.now();
  const rate = (a.embedded * 1000) / Math.max(1, a.durationMs);
  const fp = a.fingerprint;
  await safely("batch", () =>
    a.db.execute(sql`update public.embed_workers set heartbeat_at = ${now},
        provider = coalesce(${fp?.provider ?? null}, provider), model = coalesce(${fp?.model ?? null}, model), dimension = coalesce(${fp?.dimension ?? null}::int, dimension),
        last_batch_at = case when ${a.embedded} > 0 then ${now} else last_batch_at end,
        last_batch_store = case when ${a.embedded} > 0 then ${a.store} else last_batch_store end,
        last_batch_items = case when ${a.embedded} > 0 then ${a.embedded}::int else last_batch_items end,
        items_per_s = case when ${a.embedded} <= 0 then items_per_s when items_per_s is null then ${rate}::float8 else ${RATE_ALPHA}::float8 * ${rate}::float8 + ${1 - RATE_ALPHA}::float8 * items_per_s end,
        last_error = coalesce(${a.error?.slice(0, 500) ?? null}, last_error),
        last_error_at = case when ${a.error ?? null}::text is not null then ${now} else last_error_at end,
        last_error_store = case when ${a.error ?? null}::text is not null then ${a.store} else last_error_store end
      where worker_id = ${a.workerId}`),
  );
}

type Row = {
  worker_id: string;
  pid: number;
  mode: WorkerMode;
  started_at: string;
  heartbeat_at: string;
  last_batch_at: string | null;
  last_batch_store: string | null;
  last_batch_items: number | null;
  items_per_s: number | null;
  last_error: string | null;
  last_error_at: string | null;
  last_error_store: string | null;
  model: string | null;
  dimension: number | null;
};

const num = (v: string | null) => (v === null ? null : Number(v));

/** Workers of every replica seen in the last day, most recently alive first (as listWorkerStates on SQLite). */
export async function listWorkerStatesPg({ db, now = Date.now() }: { db: SqlRunner; now?: number }): Promise<WorkerState[]> {
  const rows = await rowsOf<Row>(db, sql`select * from public.embed_workers where heartbeat_at >= ${now - WORKER_LISTED_MS} order by heartbeat_at desc, worker_id limit 10`);
  return rows.map((r) => ({
    workerId: r.worker_id,
    pid: r.pid,
    mode: r.mode,
    inThisProcess: ownWorkers().has(r.worker_id),
    running: now - Number(r.heartbeat_at) < WORKER_STALE_MS,
    startedAt: Number(r.started_at),
    heartbeatAt: Number(r.heartbeat_at),
    lastBatchAt: num(r.last_batch_at),
    lastBatchStore: r.last_batch_store,
    lastBatchItems: r.last_batch_items,
    itemsPerSecond: r.items_per_s,
    lastError: r.last_error,
    lastErrorAt: num(r.last_error_at),
    lastErrorStore: r.last_error_store,
    model: r.model,
    dimension: r.dimension,
  }));
}
