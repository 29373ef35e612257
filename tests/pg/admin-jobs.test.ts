import { beforeEach, describe, expect, it } from "vitest";
import type { PgHandle } from "@/lib/db/pg";
import { adminJobs } from "@/lib/db/schema/pg/governance";
import { appendAuditPg, verifyAuditChain, pgLedger } from "@/lib/governance/audit";
import { eq } from "drizzle-orm";
import { beatJobPg, finishJobPg, startReindexJobPg, takeOverStaleJobPg } from "@/lib/stores/engines/pg";
import { JOB_STALE_MS, MAX_ATTEMPTS } from "@/lib/index/jobs";
import { useTwoReplicas } from "./helpers";

const replicas = useTwoReplicas();

beforeEach(async () => {
  await replicas.a().pool.query("truncate admin_jobs, audit_log");
});

async function seedRunningJobs({ n, owner, heartbeatAt }: { n: number; owner: string; heartbeatAt: number }) {
  const rows = Array.from({ length: n }, (_, i) => ({
    id: `job-${i}`,
    kind: "reindex" as const,
    store: `s${i}`,
    actor: "user:ann",
    status: "running" as const,
    owner,
    attempts: 1,
    startedAt: heartbeatAt - 1000 + i,
    heartbeatAt,
  }));
  await replicas.a().db.insert(adminJobs).values(rows);
  return rows;
}

describe("admin jobs on PostgreSQL", () => {
  it("runs one reindex per store however many replicas ask at once", async () => {
    const asks = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        startReindexJobPg({ db: (i % 2 ? replicas.a() : replicas.b()).db, store: "photos", actor: `user:u${i}`, owner: `replica-${i % 2}:${i}` }),
      ),
    );
    const runners = asks.filter((a) => a.run);
    expect(runners).toHaveLength(1);
    expect(new Set(asks.map((a) => a.row.id)).size).toBe(1);
    const rows = await replicas.a().db.select().from(adminJobs);
    expect(rows).toHaveLength(1);
    // Only the ask that started the job is audited as starting it.
    const audited = await replicas.a().pool.query("select actor from audit_log where action = 'store.reindex'");
    expect(audited.rows).toEqual([{ actor: runners[0].row.actor }]);
  });

  it("lets replicas sweeping at once take over a dead owner's jobs, each job exactly once", async () => {
    const now = Date.now();
    const seeded = await seedRunningJobs({ n: 30, owner: "dead-host:1:x", heartbeatAt: now - JOB_STALE_MS - 1 });
    const claimedBy = new Map<string, string[]>();
    const sweeper = async (h: PgHandle, owner: string) => {
      for (;;) {
        const job = await takeOverStaleJobPg({ db: h.db, owner, now });
        if (!job) return;
        claimedBy.set(job.id, [...(claimedBy.get(job.id) ?? []), owner]);
      }
    };
    await Promise.all([sweeper(replicas.a(), "a:1"), sweeper(replicas.a(), "a:2"), sweeper(replicas.b(), "b:1"), sweeper(replicas.b(), "b:2")]);
    expect([...claimedBy.keys()].sort()).toEqual(seeded.map((r) => r.id).sort());
    expect([...claimedBy.values()].every((owners) => owners.length === 1)).toBe(true);
    const rows = await replicas.a().db.select().from(adminJobs);
    expect(rows.every((r) => r.attempts === 2 && r.owner === claimedBy.get(r.id)![0])).toBe(true);
    // More than one sweeper did work: the claims were spread, not serialized onto one.
    expect(new Set([...claimedBy.values()].flat()).size).toBeGreaterThan(1);
    expect(await verifyAuditChain({ handle: pgLedger(replicas.b().db) })).toEqual({ ok: true, entries: 30 });
  });

  it("leaves a job with a fresh heartbeat to its owner, and takes it over once the owner goes silent", async () => {
    const start = Date.now();
    const { row } = await startReindexJobPg({ db: replicas.a().db, store: "notes", actor: "user:ann", owner: "a:1", now: start });
    expect(await takeOverStaleJobPg({ db: replicas.b().db, owner: "b:1", now: start + JOB_STALE_MS / 2 })).toBeNull();
    expect(await beatJobPg({ db: replicas.a().db, id: row.id, owner: "a:1", now: start + JOB_STALE_MS / 2 })).toBe(true);
    // Replica A dies here: no more heartbeats.
    const taken = await takeOverStaleJobPg({ db: replicas.b().db, owner: "b:1", now: start + JOB_STALE_MS * 2 });
    expect(taken).toMatchObject({ id: row.id, owner: "b:1", attempts: 2 });
    // A's late writes are refused; B's result is the one that counts.
    expect(await beatJobPg({ db: replicas.a().db, id: row.id, owner: "a:1" })).toBe(false);
    expect(await finishJobPg({ db: replicas.a().db, id: row.id, owner: "a:1", outcome: { status: "failed", error: "stale" } })).toBe(false);
    expect(await finishJobPg({ db: replicas.b().db, id: row.id, owner: "b:1", outcome: { status: "succeeded", resultJson: "{}" } })).toBe(true);
    const [final] = await replicas.a().db.select().from(adminJobs);
    expect(final).toMatchObject({ status: "succeeded", owner: "b:1", attempts: 2, error: null });
  });

  it(`closes a job that died ${MAX_ATTEMPTS} times as failed instead of running it again`, async () => {
    const now = Date.now();
    await replicas.a().db.insert(adminJobs).values({
      id: "cursed", kind: "reindex", store: "big", actor: "user:ann", status: "running", owner: "dead:1:x",
      attempts: MAX_ATTEMPTS, startedAt: now - 10 * JOB_STALE_MS, heartbeatAt: now - 2 * JOB_STALE_MS,
    });
    expect(await takeOverStaleJobPg({ db: replicas.b().db, owner: "b:1", now })).toBeNull();
    const [row] = await replicas.a().db.select().from(adminJobs);
    expect(row).toMatchObject({ status: "failed", attempts: MAX_ATTEMPTS, error: expect.stringContaining(`${MAX_ATTEMPTS} attempts`) });
    const audit = await replicas.a().pool.query("select action from audit_log");
    expect(audit.rows).toEqual([{ action: "store.reindex.abandon" }]);
  });

  it("leaves a dead owner's job on an archived store alone (a sweep would write to a read-only store), and takes it over once the store is unarchived", async () => {
    const now = Date.now();
    await seedRunningJobs({ n: 2, owner: "dead:1:x", heartbeatAt: now - 2 * JOB_STALE_MS });
    await appendAuditPg({ db: replicas.a().db, entry: { actor: "user:ann", action: "store.archive", target: "store:s0" } });
    // Only s1's job is taken; s0's stays the dead owner's, untouched.
    const taken = await takeOverStaleJobPg({ db: replicas.b().db, owner: "b:1", now });
    expect(taken).toMatchObject({ store: "s1", owner: "b:1" });
    expect(await takeOverStaleJobPg({ db: replicas.b().db, owner: "b:1", now })).toBeNull();
    const [s0] = await replicas.a().db.select().from(adminJobs).where(eq(adminJobs.store, "s0"));
    expect(s0).toMatchObject({ status: "running", owner: "dead:1:x", attempts: 1 });
    await appendAuditPg({ db: replicas.a().db, entry: { actor: "user:ann", action: "store.unarchive", target: "store:s0" } });
    expect(await takeOverStaleJobPg({ db: replicas.b().db, owner: "b:1", now })).toMatchObject({ store: "s0", owner: "b:1", attempts: 2 });
  });
});
