import { and, desc, eq, gte, lt, ne } from "drizzle-orm";
import { getGovernance } from "../db/connection";
import { embedWorkers, type EmbedWorkerRow } from "../db/schema/governance";
import { log } from "../log";
import type { Fingerprint } from "./providers";

/**
 * What each embed worker process is doing, persisted in governance.db so the
 * app shows the state of a worker that runs in another process
 * (`npm run worker`). One row per process: written per batch that did or
 * failed something, and by a heartbeat while idle.
 */
export type WorkerMode = EmbedWorkerRow["mode"];
/** Idle workers write a heartbeat this often; one silent for WORKER_STALE_MS is reported as not running. */
export const HEARTBEAT_MS = 5_000;
export const WORKER_STALE_MS = 30_000;
/** Workers silent for longer than this are no longer listed. */
const WORKER_LISTED_MS = 24 * 3_600_000;
/** Weight of the newest batch in the items/s moving average. */
const RATE_ALPHA = 0.3;

export type WorkerState = {
  workerId: string;
  pid: number;
  mode: WorkerMode;
  /** The worker runs in the process that answers this request. */
  inThisProcess: boolean;
  running: boolean;
  startedAt: number;
  heartbeatAt: number;
  lastBatchAt: number | null;
  lastBatchStore: string | null;
  lastBatchItems: number | null;
  itemsPerSecond: number | null;
  lastError: string | null;
  lastErrorAt: number | null;
  lastErrorStore: string | null;
  model: string | null;
  dimension: number | null;
};

/** A worker as the health report answers it (GET /stores/{store}/health, MCP store_health, CLI metrics status): snake_case, on both backends. */
export function workerReportOf(w: WorkerState) {
  return {
    worker_id: w.workerId,
    pid: w.pid,
    mode: w.mode,
    in_this_process: w.inThisProcess,
    running: w.running,
    started_at: w.startedAt,
    heartbeat_at: w.heartbeatAt,
    last_batch_at: w.lastBatchAt,
    last_batch_store: w.lastBatchStore,
    last_batch_items: w.lastBatchItems,
    items_per_second: w.itemsPerSecond,
    last_error: w.lastError,
    last_error_at: w.lastErrorAt,
    last_error_store: w.lastErrorStore,
    model: w.model,
    dimension: w.dimension,
  };
}

function safely(what: string, f: () => void): void {
  try {
    f();
  } catch (e) {
    // Worker bookkeeping must never stop the worker.
    log("warn", `could not record embed worker ${what}`, { error: (e as Error).message });
  }
}

export function registerWorker({ workerId, mode, now = Date.now() }: { workerId: string; mode: WorkerMode; now?: number }): void {
  safely("start", () => {
    const { db } = getGovernance();
    db.insert(embedWorkers).values({ workerId, pid: process.pid, mode, startedAt: now, heartbeatAt: now }).onConflictDoNothing().run();
    // A worker of the same kind starting replaces the ones that stopped (a restarted server's previous worker): not listed again.
    db.delete(embedWorkers).where(and(eq(embedWorkers.mode, mode), ne(embedWorkers.workerId, workerId), lt(embedWorkers.heartbeatAt, now - WORKER_STALE_MS))).run();
  });
}

export function heartbeatWorker({ workerId, now = Date.now() }: { workerId: string; now?: number }): void {
  safely("heartbeat", () => {
    getGovernance().db.update(embedWorkers).set({ heartbeatAt: now }).where(eq(embedWorkers.workerId, workerId)).run();
  });
}

/** One batch's outcome: a success updates the last batch and the rate, a failure the last error. */
export function recordWorkerBatch(args: {
  workerId: string;
  store: string;
  embedded: number;
  durationMs: number;
  error?: string;
  fingerprint: Fingerprint | null;
  now?: number;
}): void {
  const now = args.now ?? Date.now();
  safely("batch", () => {
    const { db } = getGovernance();
    const prev = db.select({ itemsPerS: embedWorkers.itemsPerS }).from(embedWorkers).where(eq(embedWorkers.workerId, args.workerId)).get();
    const set: Partial<EmbedWorkerRow> = { heartbeatAt: now };
    if (args.fingerprint) Object.assign(set, { provider: args.fingerprint.provider, model: args.fingerprint.model, dimension: args.fingerprint.dimension });
    if (args.embedded > 0) {
      const rate = (args.embedded * 1000) / Math.max(1, args.durationMs);
      Object.assign(set, {
        lastBatchAt: now,
        lastBatchStore: args.store,
        lastBatchItems: args.embedded,
        itemsPerS: prev?.itemsPerS == null ? rate : RATE_ALPHA * rate + (1 - RATE_ALPHA) * prev.itemsPerS,
      });
    }
    if (args.error) Object.assign(set, { lastError: args.error.slice(0, 500), lastErrorAt: now, lastErrorStore: args.store });
    db.update(embedWorkers).set(set).where(eq(embedWorkers.workerId, args.workerId)).run();
  });
}

/** Workers seen in the last day, most recently alive first. */
export function listWorkerStates({ now = Date.now() }: { now?: number } = {}): WorkerState[] {
  return getGovernance()
    .db.select()
    .from(embedWorkers)
    .where(gte(embedWorkers.heartbeatAt, now - WORKER_LISTED_MS))
    .orderBy(desc(embedWorkers.heartbeatAt))
    .limit(10)
    .all()
    .map((r) => ({
      workerId: r.workerId,
      pid: r.pid,
      mode: r.mode,
      inThisProcess: r.pid === process.pid && r.mode === "in_server",
      running: now - r.heartbeatAt < WORKER_STALE_MS,
      startedAt: r.startedAt,
      heartbeatAt: r.heartbeatAt,
      lastBatchAt: r.lastBatchAt,
      lastBatchStore: r.lastBatchStore,
      lastBatchItems: r.lastBatchItems,
      itemsPerSecond: r.itemsPerS,
      lastError: r.lastError,
      lastErrorAt: r.lastErrorAt,
      lastErrorStore: r.lastErrorStore,
      model: r.model,
      dimension: r.dimension,
    }));
}
