import { randomUUID } from "node:crypto";
import { and, asc, eq, lt, sql } from "drizzle-orm";
import type { PgGovernanceExecutor } from "../db/pg";
import { adminJobs, type AdminJobRow } from "../db/schema/pg/governance";
import { appendAuditPg } from "../governance/audit";
import { JOB_STALE_MS, MAX_ATTEMPTS } from "./jobs";

/**
 * Admin job claims on PostgreSQL, where N replicas share one admin_jobs table
 * (the SQLite twin is ./jobs.ts; the job runner itself is not ported yet).
 * - start: one running job per (kind, store), by the partial unique index;
 *   concurrent asks get the same job and exactly one of them runs it;
 * - take over: a running job whose owner has not beaten its heartbeat for
 *   JOB_STALE_MS is claimed with FOR UPDATE SKIP LOCKED, so replicas sweeping
 *   at once each claim different jobs and none is claimed twice;
 * - every write of a running job is conditional on still owning it.
 * Replicas share no pids, so liveness is the heartbeat alone.
 */
export type ClaimedJob = { row: AdminJobRow; run: boolean };

export async function startReindexJobPg({
  db,
  store,
  actor,
  reason,
  owner,
  now = Date.now(),
}: {
  db: PgGovernanceExecutor;
  store: string;
  actor: string;
  reason?: string;
  owner: string;
  now?: number;
}): Promise<ClaimedJob> {
  return db.transaction(async (tx) => {
    const id = randomUUID();
    const [inserted] = await tx
      .insert(adminJobs)
      .values({ id, kind: "reindex", store, actor, reason: reason ?? null, status: "running", owner, attempts: 1, startedAt: now, heartbeatAt: now })
      .onConflictDoNothing({ target: [adminJobs.kind, adminJobs.store], where: sql`status = 'running'` })
      .returning();
    if (inserted) {
      await appendAuditPg({ db: tx, entry: { actor, action: "store.reindex", target: `store:${store}`, reason: reason ?? null, details: { jobId: id } } });
      return { row: inserted, run: true };
    }
    // Another ask won the insert; its row is committed (the unique index waited for it).
    const [running] = await tx
      .select()
      .from(adminJobs)
      .where(and(eq(adminJobs.kind, "reindex"), eq(adminJobs.store, store), eq(adminJobs.status, "running")));
    if (!running) throw new Error(`reindex of ${store}: no running job after a conflicting insert`);
    return { row: running, run: false };
  });
}

/**
 * Claim one running job whose owner went silent, or null when there is none
 * free. A job that has already died MAX_ATTEMPTS times is closed as failed
 * instead (audited), and the next one is looked at.
 */
export async function takeOverStaleJobPg({
  db,
  owner,
  store,
  now = Date.now(),
  staleMs = JOB_STALE_MS,
}: {
  db: PgGovernanceExecutor;
  owner: string;
  /** Only this store's stale jobs (a request for one store takes over nothing of another's). */
  store?: string;
  now?: number;
  staleMs?: number;
}): Promise<AdminJobRow | null> {
  for (;;) {
    const outcome = await db.transaction(async (tx): Promise<AdminJobRow | "abandoned" | null> => {
      const [stale] = await tx
        .select()
        .from(adminJobs)
        .where(and(eq(adminJobs.kind, "reindex"), eq(adminJobs.status, "running"), lt(adminJobs.heartbeatAt, now - staleMs), store === undefined ? undefined : eq(adminJobs.store, store)))
        .orderBy(asc(adminJobs.startedAt))
        .limit(1)
        .for("update", { skipLocked: true });
      if (!stale) return null;
      if (stale.attempts >= MAX_ATTEMPTS) {
        const refusal = `stopped after ${stale.attempts} attempts: its process stopped during each one`;
        await tx.update(adminJobs).set({ status: "failed", error: refusal, finishedAt: now, heartbeatAt: now }).where(eq(adminJobs.id, stale.id));
        await appendAuditPg({
          db: tx,
          entry: { actor: "system:jobs", action: "store.reindex.abandon", target: `store:${stale.store}`, reason: refusal, details: { jobId: stale.id, attempts: stale.attempts } },
        });
        return "abandoned";
      }
      const [taken] = await tx
        .update(adminJobs)
        .set({ owner, attempts: stale.attempts + 1, heartbeatAt: now, progressJson: null })
        .where(eq(adminJobs.id, stale.id))
        .returning();
      await appendAuditPg({
        db: tx,
        entry: {
          actor: "system:jobs",
          action: "store.reindex.resume",
          target: `store:${stale.store}`,
          reason: "the process running this reindex stopped before it finished",
          details: { jobId: stale.id, attempt: taken.attempts, previousOwner: stale.owner },
        },
      });
      return taken;
    });
    if (outcome !== "abandoned") return outcome;
  }
}

/** The owner's heartbeat (and progress); false when the job is no longer this owner's (taken over), so its run must stop. */
export async function beatJobPg({
  db,
  id,
  owner,
  progressJson,
  now = Date.now(),
}: {
  db: PgGovernanceExecutor;
  id: string;
  owner: string;
  progressJson?: string;
  now?: number;
}): Promise<boolean> {
  const rows = await db
    .update(adminJobs)
    .set({ heartbeatAt: now, ...(progressJson === undefined ? {} : { progressJson }) })
    .where(and(eq(adminJobs.id, id), eq(adminJobs.owner, owner), eq(adminJobs.status, "running")))
    .returning({ id: adminJobs.id });
  return rows.length === 1;
}

/** Close a job this owner still holds; false when it lost the job meanwhile (the new owner's outcome counts). */
export async function finishJobPg({
  db,
  id,
  owner,
  outcome,
  now = Date.now(),
}: {
  db: PgGovernanceExecutor;
  id: string;
  owner: string;
  outcome: { status: "succeeded"; resultJson: string } | { status: "failed"; error: string };
  now?: number;
}): Promise<boolean> {
  const set = outcome.status === "succeeded" ? { status: outcome.status, resultJson: outcome.resultJson } : { status: outcome.status, error: outcome.error };
  const rows = await db
    .update(adminJobs)
    .set({ ...set, finishedAt: now, heartbeatAt: now })
    .where(and(eq(adminJobs.id, id), eq(adminJobs.owner, owner), eq(adminJobs.status, "running")))
    .returning({ id: adminJobs.id });
  return rows.length === 1;
}
