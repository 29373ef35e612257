import { randomUUID } from "node:crypto";
import os from "node:os";
import { sql } from "drizzle-orm";
import { JOB_STALE_MS } from "../index/jobs";
import { getConfig } from "../config";
import { AppError } from "../errors";
import { log } from "../log";
import { auditSelfRecall, govRow, govRun, num, numOrNull } from "./db";
import type { EvalProgress, EvaluationJob } from "./report";

/**
 * Evaluations are admin jobs: a row in admin_jobs (kind `evaluate`, under the
 * one-running-per-store index reindex uses), one SQL text for both databases.
 * A job whose process stopped is closed as failed when the next evaluation of
 * its store is asked for: a run is cheap to start again, so it is not taken over.
 */
const PROGRESS_WRITE_MS = 1_000;

type JobsState = { owner: string; active: Set<string> };
const g = globalThis as unknown as { __dualmindEvalJobs?: JobsState };
function state(): JobsState {
  g.__dualmindEvalJobs ??= { owner: `${os.hostname()}:${process.pid}:eval-${randomUUID().slice(0, 8)}`, active: new Set() };
  return g.__dualmindEvalJobs;
}

/** An admin_jobs row as `select *` reads it (PostgreSQL's bigints as text). */
type JobRow = Omit<EvaluationJob, "progress" | "result" | "started_at" | "finished_at"> & { owner: string; attempts: unknown; progress_json: string | null; result_json: string | null; started_at: unknown; heartbeat_at: unknown; finished_at: unknown };

/** A finished job's result_json, in either spelling (jobs finished before the snake_case one say runId). */
function resultOf(json: string): NonNullable<EvaluationJob["result"]> {
  const { runId, ...result } = JSON.parse(json) as Omit<NonNullable<EvaluationJob["result"]>, "run_id"> & { run_id?: number; runId?: number };
  return { ...result, run_id: result.run_id ?? runId ?? 0 };
}

function jobOf({ owner: _owner, attempts: _attempts, heartbeat_at: _beat, progress_json, result_json, ...r }: JobRow): EvaluationJob {
  const progress = progress_json ? (JSON.parse(progress_json) as EvalProgress) : null;
  return { ...r, progress, result: result_json ? resultOf(result_json) : null, started_at: num(r.started_at), finished_at: numOrNull(r.finished_at) };
}

export async function getEvaluationJob({ id, store }: { id: string; store: string }): Promise<EvaluationJob | null> {
  const row = await govRow<JobRow>(sql`select * from admin_jobs where id = ${id} and store = ${store} and kind = 'evaluate'`);
  return row ? jobOf(row) : null;
}

export async function latestEvaluationJob({ store }: { store: string }): Promise<EvaluationJob | null> {
  const row = await govRow<JobRow>(sql`select * from admin_jobs where store = ${store} and kind = 'evaluate' order by started_at desc limit 1`);
  return row ? jobOf(row) : null;
}

function isOrphan(row: JobRow, now: number): boolean {
  if (row.owner === state().owner) return !state().active.has(row.id);
  return now - num(row.heartbeat_at) > JOB_STALE_MS;
}

/**
 * The store's running evaluation, or a new job row (audited) this process
 * must run (`run: true`). A running one whose process stopped is closed first.
 * With `notSince` (a run nobody asked for), nothing is claimed — `job: null`
 * — when an evaluation of the store has started since then: of several
 * replicas seeing the same store due, one inserts, the others find its row.
 */
export async function claimEvaluationJob(a: { store: string; actor: string; reason?: string; details: Record<string, unknown> }): Promise<{ job: EvaluationJob; run: boolean }>;
export async function claimEvaluationJob(a: { store: string; actor: string; reason?: string; details: Record<string, unknown>; notSince: number }): Promise<{ job: EvaluationJob | null; run: boolean }>;
export async function claimEvaluationJob({ store, actor, reason, details, notSince }: { store: string; actor: string; reason?: string; details: Record<string, unknown>; notSince?: number }): Promise<{ job: EvaluationJob | null; run: boolean }> {
  const now = Date.now();
  const running = await govRow<JobRow>(sql`select * from admin_jobs where store = ${store} and kind = 'evaluate' and status = 'running'`);
  if (running && !isOrphan(running, now)) return { job: jobOf(running), run: false };
  if (running) {
    const error = "the process running this evaluation stopped before it finished";
    await govRun(sql`update admin_jobs set status = 'failed', error = ${error}, finished_at = ${now}, heartbeat_at = ${now} where id = ${running.id} and status = 'running'`);
    await auditSelfRecall({ actor: "system:jobs", action: "store.evaluate.abandon", target: `store:${store}`, reason: error, details: { jobId: running.id } });
  }
  // Each evaluation is a burst of searches: a bounded number run at once across all stores (their own stale rows aside).
  const busy = await govRow<{ n: number | string }>(sql`select count(*) as n from admin_jobs where kind = 'evaluate' and status = 'running' and heartbeat_at > ${now - JOB_STALE_MS}`);
  const max = getConfig().limits.maxEvaluations;
  if (Number(busy?.n ?? 0) >= max) throw new AppError("rate_limited", `${max} self-recall evaluation(s) already running (DUALMIND_MAX_EVALUATIONS); ask again when one has finished`);
  const id = randomUUID();
  const inserted = await govRow<JobRow>(
    sql`insert into admin_jobs (id, kind, store, actor, reason, status, owner, attempts, started_at, heartbeat_at)
        select ${id}, 'evaluate', ${store}, ${actor}, ${reason ?? null}, 'running', ${state().owner}, 1, ${now}, ${now}
        where not exists (select 1 from admin_jobs where store = ${store} and kind = 'evaluate' and started_at >= ${notSince ?? Number.MAX_SAFE_INTEGER})
        on conflict do nothing returning *`,
  );
  if (!inserted) {
    // Another process's ask won the one running slot: its job is the answer.
    const other = await govRow<JobRow>(sql`select * from admin_jobs where store = ${store} and kind = 'evaluate' and status = 'running'`);
    if (other) return { job: jobOf(other), run: false };
    if (notSince !== undefined) return { job: null, run: false };
    throw new Error(`evaluation of ${store}: no running job after a conflicting insert`);
  }
  try {
    await auditSelfRecall({ actor, action: "store.evaluate", target: `store:${store}`, reason: reason ?? null, details: { jobId: id, ...details } });
  } catch (e) {
    // Refused at its audit row (the ledger full, the agent past its share): the ask leaves no job behind.
    await govRun(sql`delete from admin_jobs where id = ${id}`);
    throw e;
  }
  state().active.add(id);
  return { job: jobOf(inserted), run: true };
}

/** Progress and heartbeat of a job this process runs (at most once a second; the last step always). */
export function progressWriter(id: string): (p: EvalProgress) => Promise<void> {
  let last = 0;
  return async (p) => {
    const now = Date.now();
    if (now - last < PROGRESS_WRITE_MS && p.done !== p.total) return;
    last = now;
    try {
      await govRun(sql`update admin_jobs set progress_json = ${JSON.stringify(p)}, heartbeat_at = ${now} where id = ${id} and owner = ${state().owner}`);
    } catch (e) {
      log("warn", "could not record evaluation progress", { jobId: id, error: String(e) });
    }
  };
}

/** While it runs, a job's heartbeat is beaten this often whatever its progress (a paced run may go long between questions). */
const HEARTBEAT_MS = 10_000;

/** Beat the job's heartbeat until the returned function is called: no other process takes a slow, paced run for a dead one. */
export function keepJobAlive(id: string): () => void {
  const beat = setInterval(() => {
    void govRun(sql`update admin_jobs set heartbeat_at = ${Date.now()} where id = ${id} and owner = ${state().owner} and status = 'running'`).catch((e: unknown) =>
      log("warn", "could not beat an evaluation's heartbeat", { jobId: id, error: String(e) }),
    );
  }, HEARTBEAT_MS);
  beat.unref();
  return () => clearInterval(beat);
}

export async function finishEvaluationJob({ id, outcome }: { id: string; outcome: { result: NonNullable<EvaluationJob["result"]> } | { error: string } }): Promise<void> {
  const now = Date.now();
  try {
    if ("result" in outcome)
      await govRun(sql`update admin_jobs set status = 'succeeded', result_json = ${JSON.stringify(outcome.result)}, finished_at = ${now}, heartbeat_at = ${now} where id = ${id} and owner = ${state().owner}`);
    else await govRun(sql`update admin_jobs set status = 'failed', error = ${outcome.error}, finished_at = ${now}, heartbeat_at = ${now} where id = ${id} and owner = ${state().owner}`);
  } finally {
    state().active.delete(id);
  }
}
