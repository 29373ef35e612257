import { randomUUID } from "node:crypto";
import os from "node:os";
import { and, desc, eq, sql } from "drizzle-orm";
import { getGovernance, getStoreDb, holdingStoreHandles, type GovernanceHandle, type StoreHandle } from "../db/connection";
import { readLedger, row, rows, tablePair, update, writeLedger, type LedgerHandle, type OnLedger, type Op } from "../db/port";
import * as pgGovernance from "../db/schema/pg/governance";
import { adminJobs, type AdminJobRow } from "../db/schema/governance";
import { appendAudit, auditStep } from "../governance/audit";
import { processAlive } from "../embed/healing";
import { log } from "../log";
import { storeExists } from "../db/store-names";
import { isStoreArchived } from "../db/store-lifecycle";
import { reindexStoreAsync, type ReindexProgress, type ReindexResult } from "./reindex";

/**
 * Admin jobs (reindex) are rows in governance.db, so a crash or restart keeps the job, its id and its outcome. A
 * running job whose owner is gone is taken over by the next server that looks (at start-up and every SWEEP_MS) and run
 * again from the scan: the reindex write is one transaction, and files already indexed cost only a hash check.
 */
export type Job = {
  id: string;
  kind: "reindex";
  store: string;
  actor: string;
  status: "running" | "succeeded" | "failed";
  progress: ReindexProgress | null;
  result: ReindexResult | null;
  error: string | null;
  /** 1, plus one per takeover after the process running it died. */
  attempts: number;
  started_at: number;
  heartbeat_at: number;
  finished_at: number | null;
};

/** Progress is written at most this often (it is also the heartbeat). */
const PROGRESS_WRITE_MS = 1_000;
/** Heartbeat while a job waits on something other than progress. */
const HEARTBEAT_MS = 10_000;
/** An owner on another host not heard from for this long is presumed dead. */
export const JOB_STALE_MS = 60_000;
/**
 * On this host a live pid is trusted over a silent heartbeat (a long scan or
 * write blocks the event loop), up to this long, in case the pid was reused.
 */
export const JOB_STALE_LOCAL_MS = 10 * 60_000;
/** A job that has taken its process down this many times is not run again. */
export const MAX_ATTEMPTS = 3;
/** Finished jobs kept per store. */
const KEEP_FINISHED = 50;
export const SWEEP_MS = 30_000;

type JobsState = { owner: string; sweepers: Map<string, NodeJS.Timeout>; active: Set<string> };
const g = globalThis as unknown as { __dualmindJobs?: JobsState };
function state(): JobsState {
  // On globalThis: Next may load this module once per bundle, but the process is one owner.
  g.__dualmindJobs ??= { owner: `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`, sweepers: new Map(), active: new Set() };
  return g.__dualmindJobs;
}

/** Thrown into a run whose job another process took over: it stops rather than reindex twice. */
class JobLostError extends Error {}

/** This process's name in `admin_jobs.owner`. */
export function jobOwner(): string {
  return state().owner;
}

/** A reindex result as `admin_jobs.result_json` holds it: snake_case, or camelCase in rows written before, and some fields only in later rows. */
type StoredReindexResult = Partial<ReindexResult> & {
  byKind?: ReindexResult["by_kind"];
  skippedBy?: { binary: number; oversized: number; badName: number; symlink: number };
  linksOutsideRoot?: string[];
  changedPaths?: string[];
  durationMs?: number;
};

/**
 * A stored reindex result in the spelling the API answers, whichever spelling it was written in; jobs recorded
 * before the documents/memories split have no by_kind (null, not missing), older ones no unindexable or changed_paths.
 */
export function reindexResultOf(stored: StoredReindexResult): ReindexResult {
  const skipped = stored.skipped_by ?? (stored.skippedBy && { binary: stored.skippedBy.binary, oversized: stored.skippedBy.oversized, bad_name: stored.skippedBy.badName, symlink: stored.skippedBy.symlink });
  const unindexable = stored.unindexable;
  const changed = stored.changed_paths ?? stored.changedPaths;
  return {
    store: stored.store!,
    counts: stored.counts!,
    by_kind: stored.by_kind ?? stored.byKind ?? null,
    skipped_by: skipped!,
    links_outside_root: stored.links_outside_root ?? stored.linksOutsideRoot ?? [],
    ...(unindexable ? { unindexable } : {}),
    ...(changed ? { changed_paths: changed } : {}),
    duration_ms: stored.duration_ms ?? stored.durationMs ?? 0,
  } as ReindexResult;
}

/** A job row (either dialect's admin_jobs) as the API answers it. */
export function jobFromRow(row: AdminJobRow): Job {
  return {
    id: row.id,
    kind: "reindex",
    store: row.store,
    actor: row.actor,
    status: row.status,
    progress: row.progressJson ? (JSON.parse(row.progressJson) as ReindexProgress) : null,
    result: row.resultJson ? reindexResultOf(JSON.parse(row.resultJson) as StoredReindexResult) : null,
    error: row.error,
    attempts: row.attempts,
    started_at: row.startedAt,
    heartbeat_at: row.heartbeatAt,
    finished_at: row.finishedAt,
  };
}

/**
 * Is the process that owns a running job gone? This process: when the job is not actually running here. This host:
 * a dead pid, or our own pid under another instance tag (a restarted container), at once; a live pid is trusted
 * unless silent for JOB_STALE_LOCAL_MS (pid reuse). Another host: a heartbeat older than JOB_STALE_MS.
 */
export function ownerIsGone({ id, owner, heartbeatAt, now = Date.now() }: { id: string; owner: string; heartbeatAt: number; now?: number }): boolean {
  if (owner === jobOwner()) return !state().active.has(id);
  const [host, pidText] = owner.split(":");
  if (host === os.hostname() && /^\d+$/.test(pidText ?? "")) {
    const pid = Number(pidText);
    if (pid === process.pid || !processAlive(pid)) return true;
    return now - heartbeatAt > JOB_STALE_LOCAL_MS;
  }
  return now - heartbeatAt > JOB_STALE_MS;
}

const jobsTable = tablePair(adminJobs, pgGovernance.adminJobs);

/** A job by id, on governance.db or the PostgreSQL ledger; with `stores` (a token's allow-list), only a job of one of those stores (null = every store). */
export function getJobById<H extends LedgerHandle = GovernanceHandle>({ ledger = getGovernance() as H, id, stores = null }: { ledger?: H; id: string; stores?: readonly string[] | null }): OnLedger<H, Job | null> {
  return readLedger(ledger, function* () {
    const found = yield* row(jobsTable, (t) => and(eq(t.id, id), eq(t.kind, "reindex")));
    return !found || (stores !== null && !stores.includes(found.store)) ? null : jobFromRow(found);
  });
}

/** What a reindex of the store would go over, as indexed now: memory files and source-root documents (API documents are kept as they are). */
export type ReindexScope = { store: string; memories: number; documents: number; apiDocuments: number; running: boolean; truth: "files" | "memories table" };

/** One grouped count, for the confirmation before a reindex. */
export function describeReindexScope({ handle }: { handle: StoreHandle }): ReindexScope {
  const rows = handle.sqlite
    .prepare(
      `select case when origin != 'file' then 'api' when path like 'memory/%' then 'memory' else 'document' end as kind, count(*) as n
       from documents group by kind`,
    )
    .all() as { kind: "api" | "memory" | "document"; n: number }[];
  const n = (kind: string) => rows.find((r) => r.kind === kind)?.n ?? 0;
  return { store: handle.store, memories: n("memory"), documents: n("document"), apiDocuments: n("api"), running: runningJob(handle.store) !== undefined, truth: "files" };
}

/** Latest job per store (for the admin panel after a reload), on either ledger. */
export function listLatestJobs<H extends LedgerHandle = GovernanceHandle>({ ledger = getGovernance() as H }: { ledger?: H } = {}): OnLedger<H, Job[]> {
  return readLedger(ledger, function* () {
    const latest = yield* rows(jobsTable, {
      where: (t) => sql`${t.kind} = 'reindex' and ${t.startedAt} = (select max(k.started_at) from admin_jobs k where k.store = ${t.store} and k.kind = 'reindex')`,
      orderBy: (t) => [t.store],
    });
    return latest.map(jobFromRow);
  });
}

function runningJob(store: string): AdminJobRow | undefined {
  return getGovernance()
    .db.select()
    .from(adminJobs)
    .where(and(eq(adminJobs.kind, "reindex"), eq(adminJobs.store, store), eq(adminJobs.status, "running")))
    .get();
}

/** Take over a running job whose owner is gone: compare-and-swap on the old owner, so of two servers noticing at once exactly one wins. Audited. */
function takeOver(row: AdminJobRow): AdminJobRow | null {
  return writeLedger(getGovernance(), takeOverOp({ row, owner: jobOwner(), refusal: refuseResume(row) }));
}

/**
 * A stale job (either ledger) taken over by `owner`, its attempts counted and audited store.reindex.resume; or, with
 * a `refusal`, closed as failed and audited store.reindex.abandon (null). Both only while `row`'s owner still holds it.
 */
export function* takeOverOp({ row, owner, refusal, now = Date.now() }: { row: AdminJobRow; owner: string; refusal: string | null; now?: number }): Op<AdminJobRow | null> {
  if (refusal) {
    yield* update(jobsTable, { status: "failed", error: refusal, finishedAt: now, heartbeatAt: now }, (t) => and(eq(t.id, row.id), eq(t.owner, row.owner), eq(t.status, "running")));
    yield* auditStep({ actor: "system:jobs", action: "store.reindex.abandon", target: `store:${row.store}`, reason: refusal, details: { jobId: row.id, attempts: row.attempts } });
    return null;
  }
  const [taken] = yield* update(jobsTable, { owner, attempts: row.attempts + 1, heartbeatAt: now, progressJson: null }, (t) => and(eq(t.id, row.id), eq(t.owner, row.owner), eq(t.status, "running")));
  if (!taken) return null;
  yield* auditStep({
    actor: "system:jobs",
    action: "store.reindex.resume",
    target: `store:${row.store}`,
    reason: "the process running this reindex stopped before it finished",
    details: { jobId: row.id, attempt: taken.attempts, previousOwner: row.owner },
  });
  return taken;
}

/** Run a job this process owns; every write is conditional on still owning it, and a run that lost its job stops. Never rejects: the outcome is in the row. */
function runJob(args: { row: AdminJobRow; handle: StoreHandle; onProgress?: (p: ReindexProgress) => void }): Promise<void> {
  // The job outlives the request that started it: its store stays open (never closed as idle) until it ends.
  return holdingStoreHandles({ work: () => runHeldJob(args), handles: [args.handle] });
}

function runHeldJob({ row, handle, onProgress: report }: { row: AdminJobRow; handle: StoreHandle; onProgress?: (p: ReindexProgress) => void }): Promise<void> {
  const { db } = getGovernance();
  const active = state().active;
  const mine = and(eq(adminJobs.id, row.id), eq(adminJobs.owner, jobOwner()));
  let lastWrite = 0;
  let lost = false;
  /** A progress or heartbeat write: a busy or full governance.db is logged, not fatal to the reindex. */
  const touch = (set: Partial<AdminJobRow>) => {
    try {
      if (db.update(adminJobs).set(set).where(mine).run().changes === 0) lost = true;
    } catch (e) {
      log("warn", "could not record reindex progress", { jobId: row.id, error: String(e) });
    }
  };
  const beat = setInterval(() => touch({ heartbeatAt: Date.now() }), HEARTBEAT_MS);
  beat.unref();
  const onProgress = (p: ReindexProgress) => {
    // Thrown inside the reindex: its write transaction rolls back and the new owner's run is the one that counts.
    if (lost) throw new JobLostError(`reindex job ${row.id} was taken over by another process`);
    report?.(p);
    const now = Date.now();
    if (now - lastWrite < PROGRESS_WRITE_MS && p.done !== p.total) return;
    lastWrite = now;
    touch({ progressJson: JSON.stringify(p), heartbeatAt: now });
  };
  const finish = (set: Partial<AdminJobRow>) => {
    const write = () => db.update(adminJobs).set({ ...set, finishedAt: Date.now(), heartbeatAt: Date.now() }).where(mine).run().changes;
    let changed: number | null = null;
    for (let attempt = 0; attempt < 3 && changed === null; attempt++) {
      try {
        changed = write();
      } catch (e) {
        log("error", "could not record the end of a reindex job", { jobId: row.id, attempt, error: String(e) });
      }
    }
    // Another server presumed us dead and took the job over; its outcome is the one kept.
    if (changed === 0) log("warn", "reindex job finished after another process took it over", { jobId: row.id, store: row.store });
    if (changed) pruneFinished(row.store);
  };
  active.add(row.id);
  return reindexStoreAsync({ handle, onProgress })
    .then(
      (result) => finish({ status: "succeeded", resultJson: JSON.stringify(result) }),
      (e: unknown) => {
        if (e instanceof JobLostError) return log("warn", e.message, { store: row.store });
        log("error", "reindex job failed", { store: row.store, jobId: row.id, error: e instanceof Error ? e.stack : String(e) });
        finish({ status: "failed", error: e instanceof Error ? e.message : String(e) });
      },
    )
    .finally(() => {
      // Not active any more: if the final write failed, the row still says running and ownerIsGone lets it be run again.
      clearInterval(beat);
      active.delete(row.id);
    })
    .then(() => undefined);
}

function pruneFinished(store: string): void {
  try {
    getGovernance()
      .sqlite.prepare(
        `delete from admin_jobs where store = ? and status != 'running'
           and id not in (select id from admin_jobs where store = ? and status != 'running' order by started_at desc limit ?)`,
      )
      .run(store, store, KEEP_FINISHED);
  } catch (e) {
    log("warn", "could not prune old reindex jobs", { store, error: String(e) });
  }
}

/** A job that cannot be resumed (its store is gone, or it has failed too often) is closed as failed, not run. */
function refuseResume(row: AdminJobRow): string | null {
  if (!storeExists(row.store)) return `store ${row.store} no longer exists`;
  return tooManyAttempts(row);
}

/** Why a job that has taken its process down MAX_ATTEMPTS times is not run again (both ledgers), or null. */
export function tooManyAttempts(row: { attempts: number }): string | null {
  return row.attempts >= MAX_ATTEMPTS ? `stopped after ${row.attempts} attempts: its process stopped during each one` : null;
}

/** The job for a reindex ask, in one transaction: the store's running job if its owner is alive (run: false), else one taken over or a new row, audited (run: true: this process runs it). */
function claimReindexJob({ store, actor, reason }: { store: string; actor: string; reason?: string }): { row: AdminJobRow; run: boolean } {
  const { sqlite, db } = getGovernance();
  return sqlite
    .transaction((): { row: AdminJobRow; run: boolean } => {
      const current = runningJob(store);
      if (current && !ownerIsGone(current)) return { row: current, run: false };
      if (current) {
        const taken = takeOver(current);
        if (taken) return { row: taken, run: true };
        // Abandoned (too many attempts): this ask starts afresh below.
        const still = runningJob(store);
        if (still) return { row: still, run: false };
      }
      const now = Date.now();
      const id = randomUUID();
      appendAudit({ actor, action: "store.reindex", target: `store:${store}`, reason: reason ?? null, details: { jobId: id } });
      const row = db
        .insert(adminJobs)
        .values({ id, kind: "reindex", store, actor, reason: reason ?? null, status: "running", owner: jobOwner(), attempts: 1, startedAt: now, heartbeatAt: now })
        .returning()
        .get();
      return { row, run: true };
    })
    .immediate();
}

/**
 * Start a reindex in the background and return at once (poll getJobById). A running reindex of the store (here or
 * in another process sharing the data dir) is returned instead, or taken over if its owner died. Audited.
 */
export function startReindexJob({ handle, actor, reason }: { handle: StoreHandle; actor: string; reason?: string }): Job {
  const decided = claimReindexJob({ store: handle.store, actor, reason });
  if (decided.run) void runJob({ row: decided.row, handle });
  return jobFromRow(decided.row);
}

const WAIT_POLL_MS = 250;

/**
 * The same job run to the end before returning (the CLI), with the same row and audit entry; a reindex of the store
 * already running elsewhere is waited for (and taken over if its process dies), not started twice.
 */
export async function runReindexJob({ handle, actor, reason, onProgress }: { handle: StoreHandle; actor: string; reason?: string; onProgress?: (p: ReindexProgress) => void }): Promise<Job> {
  const decided = claimReindexJob({ store: handle.store, actor, reason });
  if (decided.run) await runJob({ row: decided.row, handle, onProgress });
  return waitForJob({ ledger: getGovernance(), id: decided.row.id, takeOver: (row) => (ownerIsGone(row) ? takeOver(row) : null), run: (row) => runJob({ row, handle, onProgress }), onProgress });
}

/**
 * Wait for a job to end (either ledger), its progress passed on; while it runs, `takeOver` says whether this process
 * takes it over (its owner is gone), and a job taken over is `run` here.
 */
export async function waitForJob({ ledger, id, takeOver: claim, run, onProgress }: { ledger: LedgerHandle; id: string; takeOver: (row: AdminJobRow) => AdminJobRow | null | Promise<AdminJobRow | null>; run: (row: AdminJobRow) => Promise<void>; onProgress?: (p: ReindexProgress) => void }): Promise<Job> {
  for (;;) {
    const current = await readLedger(ledger, row(jobsTable, (t) => eq(t.id, id)));
    if (!current) throw new Error(`reindex job ${id} disappeared`);
    if (current.status !== "running") return jobFromRow(current);
    const taken = await claim(current);
    if (taken) await run(taken);
    else {
      if (current.progressJson) onProgress?.(JSON.parse(current.progressJson) as ReindexProgress);
      await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
    }
  }
}

/** Take over and run every running job whose owner is gone. Returns the ids resumed. */
export function resumeOrphanedJobs(): string[] {
  const running = getGovernance().db.select().from(adminJobs).where(and(eq(adminJobs.kind, "reindex"), eq(adminJobs.status, "running"))).orderBy(desc(adminJobs.startedAt)).all();
  const resumed: string[] = [];
  for (const row of running) {
    if (!ownerIsGone(row)) continue;
    // An archived store is left closed: its job resumes once it is unarchived.
    if (isStoreArchived(row.store)) continue;
    const taken = takeOver(row);
    if (!taken) continue;
    log("warn", "resuming a reindex whose process stopped", { jobId: row.id, store: row.store, attempt: taken.attempts });
    // Opened by name: getStoreDb, not openStore (lib/index sits below lib/stores; refuseResume checked the store exists).
    void runJob({ row: taken, handle: getStoreDb({ store: taken.store, create: false }) });
    resumed.push(row.id);
  }
  return resumed;
}

/** At start-up and then every SWEEP_MS: pick up jobs a crashed process (this one before a restart, or a peer) left running. */
export function startJobSweeper(): void {
  startSweeping({ name: "sqlite", sweep: resumeOrphanedJobs });
}

/** Run `sweep` now (after start-up finishes) and every SWEEP_MS, once per name in the process; a failed sweep is logged. */
export function startSweeping({ name, sweep }: { name: string; sweep: () => unknown }): void {
  const s = state();
  if (s.sweepers.has(name)) return;
  const run = () => {
    try {
      void Promise.resolve(sweep()).catch((e: unknown) => log("error", "job sweep failed", { engine: name, error: e instanceof Error ? e.message : String(e) }));
    } catch (e) {
      log("error", "job sweep failed", { engine: name, error: e instanceof Error ? e.message : String(e) });
    }
  };
  // Not inside register(): start-up finishes first, then the sweep runs.
  setTimeout(run, 0).unref();
  const timer = setInterval(run, SWEEP_MS);
  timer.unref();
  s.sweepers.set(name, timer);
}
