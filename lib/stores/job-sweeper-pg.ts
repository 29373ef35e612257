import { getPg } from "../db/pg";
import { takeOverStaleJobPg } from "../index/admin-jobs-pg";
import { SWEEP_MS } from "../index/jobs";
import { JOB_OWNER, runReindexJobPg } from "../index/maintenance-pg";
import { log } from "../log";
import { openStorePg } from "./stores-pg";

/**
 * The PostgreSQL twin of startJobSweeper (lib/index/jobs.ts): at start-up
 * and every SWEEP_MS, take over and run every reindex whose replica went
 * silent (heartbeat older than JOB_STALE_MS), on any store. Without it a job
 * a killed replica left running stayed "running" until someone asked for
 * that store's reindex again. Claims use FOR UPDATE SKIP LOCKED
 * (takeOverStaleJobPg), so replicas sweeping at once never take one job twice.
 */
export async function resumeStaleJobsPg(): Promise<string[]> {
  const handle = getPg();
  if (!handle) return [];
  const pg = await handle;
  const resumed: string[] = [];
  for (let row = await takeOverStaleJobPg({ db: pg.db, owner: JOB_OWNER }); row; row = await takeOverStaleJobPg({ db: pg.db, owner: JOB_OWNER })) {
    log("warn", "resuming a reindex whose replica stopped", { jobId: row.id, store: row.store, attempt: row.attempts });
    try {
      void runReindexJobPg({ pg, handle: await openStorePg({ pg, store: row.store }), jobId: row.id });
      resumed.push(row.id);
    } catch (e) {
      // Its store is gone: the job stays this replica's until its heartbeat is stale again, and is closed after MAX_ATTEMPTS.
      log("error", "cannot resume a reindex", { jobId: row.id, store: row.store, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return resumed;
}

let sweeper: NodeJS.Timeout | null = null;

export function startJobSweeperPg(): void {
  if (sweeper) return;
  const sweep = () => void resumeStaleJobsPg().catch((e: unknown) => log("error", "job sweep on PostgreSQL failed", { error: e instanceof Error ? e.message : String(e) }));
  // Not inside register(): start-up finishes first, then the sweep runs.
  setTimeout(sweep, 0).unref();
  sweeper = setInterval(sweep, SWEEP_MS);
  sweeper.unref();
}
