import { and, desc, eq, gte, lt, ne, sql } from "drizzle-orm";
import { getGovernance, type GovernanceHandle } from "../db/connection";
import * as pgSchema from "../db/schema/pg/governance";
import { embedWorkers, type EmbedWorkerRow } from "../db/schema/governance";
import { readLedger, remove, rows, tablePair, update, upsert, writeLedger, type LedgerHandle, type OnLedger, type Op } from "../db/port";
import { log } from "../log";
import type { Fingerprint } from "./providers";
import { snakeCased, type SnakeCased } from "../common";

/**
 * What each embed worker process is doing, persisted in the ledger so the
 * app shows a worker that runs in another process or replica: one row per
 * process, written per batch and by an idle heartbeat, never fatal to the
 * worker; a silent one is shown as not running after WORKER_STALE_MS.
 */
export type WorkerMode = EmbedWorkerRow["mode"];
/** Idle workers write a heartbeat this often; one silent for WORKER_STALE_MS is reported as not running. */
export const HEARTBEAT_MS = 5_000;
export const WORKER_STALE_MS = 30_000;
/** Workers silent for longer than this are no longer listed. */
const WORKER_LISTED_MS = 24 * 3_600_000;
/** Weight of the newest batch in the items/s moving average. */
const RATE_ALPHA = 0.3;

/** A worker's row (its provider aside), and whether it runs here and is running at all. */
export type WorkerState = Omit<EmbedWorkerRow, "provider" | "itemsPerS"> & {
  /** The worker runs in the process that answers this request. */
  inThisProcess: boolean;
  running: boolean;
  itemsPerSecond: number | null;
};

/** A worker as the health report answers it (GET /stores/{store}/health, MCP store_health, CLI metrics status): snake_case, on both backends. */
export function workerReportOf(w: WorkerState): SnakeCased<WorkerState> {
  return snakeCased(w);
}

const WORKERS = tablePair(embedWorkers, pgSchema.embedWorkers);

// Workers this process runs (in_this_process); on globalThis like the other process-wide registries.
const g = globalThis as unknown as { __dualmindWorkers?: Set<string> };
const ownWorkers = () => (g.__dualmindWorkers ??= new Set());

type OnHandle<H extends LedgerHandle> = { handle?: H };

/** Run a bookkeeping write: a failure is logged, never thrown (worker bookkeeping must never stop the worker). */
function safely<H extends LedgerHandle>(what: string, handle: H | undefined, op: Op<unknown>): OnLedger<H, void> {
  const warn = (e: unknown) => void log("warn", `could not record embed worker ${what}`, { error: (e as Error).message });
  try {
    const done = writeLedger(handle ?? (getGovernance() as H), op);
    if (done instanceof Promise) return done.then(() => undefined, warn) as OnLedger<H, void>;
  } catch (e) {
    warn(e);
  }
  return undefined as OnLedger<H, void>;
}

export function registerWorker<H extends LedgerHandle = GovernanceHandle>({ handle, workerId, mode, now = Date.now() }: OnHandle<H> & { workerId: string; mode: WorkerMode; now?: number }): OnLedger<H, void> {
  ownWorkers().add(workerId);
  return safely(
    "start",
    handle,
    (function* () {
      yield* upsert(WORKERS, { workerId, pid: process.pid, mode, startedAt: now, heartbeatAt: now }, (t) => t.workerId, { heartbeatAt: now });
      // A worker of the same kind starting replaces the ones that stopped (a restarted server or replica): not listed again.
      yield* remove(WORKERS, (t) => and(eq(t.mode, mode), ne(t.workerId, workerId), lt(t.heartbeatAt, now - WORKER_STALE_MS)));
    })(),
  );
}

export function heartbeatWorker<H extends LedgerHandle = GovernanceHandle>({ handle, workerId, now = Date.now() }: OnHandle<H> & { workerId: string; now?: number }): OnLedger<H, void> {
  return safely("heartbeat", handle, update(WORKERS, { heartbeatAt: now }, (t) => eq(t.workerId, workerId)));
}

/** A worker that stopped on purpose says so at once (not after WORKER_STALE_MS). */
export function stopWorker<H extends LedgerHandle = GovernanceHandle>({ handle, workerId }: OnHandle<H> & { workerId: string }): OnLedger<H, void> {
  ownWorkers().delete(workerId);
  const stale = Date.now() - WORKER_STALE_MS;
  return safely("stop", handle, update(WORKERS, { heartbeatAt: sql`case when heartbeat_at < ${stale} then heartbeat_at else ${stale} end` }, (t) => eq(t.workerId, workerId)));
}

/**
 * One batch's outcome: a success updates the last batch and the items/s
 * moving average (in SQL, so replicas never race on it), a failure the last error.
 */
export function recordWorkerBatch<H extends LedgerHandle = GovernanceHandle>(args: OnHandle<H> & {
  workerId: string;
  store: string;
  embedded: number;
  durationMs: number;
  error?: string;
  fingerprint: Fingerprint | null;
  now?: number;
}): OnLedger<H, void> {
  const now = args.now ?? Date.now();
  const set: Parameters<typeof update<typeof WORKERS>>[1] = { heartbeatAt: now };
  if (args.fingerprint) Object.assign(set, { provider: args.fingerprint.provider, model: args.fingerprint.model, dimension: args.fingerprint.dimension });
  if (args.embedded > 0) {
    const rate = (args.embedded * 1000) / Math.max(1, args.durationMs);
    Object.assign(set, {
      lastBatchAt: now,
      lastBatchStore: args.store,
      lastBatchItems: args.embedded,
      itemsPerS: sql`case when items_per_s is null then ${rate} else ${RATE_ALPHA * rate} + ${1 - RATE_ALPHA} * items_per_s end`,
    });
  }
  if (args.error) Object.assign(set, { lastError: args.error.slice(0, 500), lastErrorAt: now, lastErrorStore: args.store });
  return safely("batch", args.handle, update(WORKERS, set, (t) => eq(t.workerId, args.workerId)));
}

/** Workers (of every replica on PostgreSQL) seen in the last day, most recently alive first. */
export function listWorkerStates<H extends LedgerHandle = GovernanceHandle>({ handle, now = Date.now() }: OnHandle<H> & { now?: number } = {}): OnLedger<H, WorkerState[]> {
  return readLedger(handle ?? (getGovernance() as H), function* () {
    const found = yield* rows(WORKERS, { where: (t) => gte(t.heartbeatAt, now - WORKER_LISTED_MS), orderBy: (t) => [desc(t.heartbeatAt), t.workerId], limit: 10 });
    return found.map(({ provider: _provider, itemsPerS, ...r }): WorkerState => ({ ...r, inThisProcess: ownWorkers().has(r.workerId), running: now - r.heartbeatAt < WORKER_STALE_MS, itemsPerSecond: itemsPerS }));
  });
}
