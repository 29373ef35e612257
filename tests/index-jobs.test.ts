import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { closeAllDatabases, getGovernance, getStoreDb } from "@/lib/db/connection";
import { adminJobs } from "@/lib/db/schema/governance";
import { verifyAuditChain } from "@/lib/governance/audit";
import { getJobById, JOB_STALE_LOCAL_MS, JOB_STALE_MS, jobOwner, listLatestJobs, MAX_ATTEMPTS, ownerIsGone, resumeOrphanedJobs, runReindexJob, startReindexJob, type Job } from "@/lib/index/jobs";
import { closePg } from "@/lib/db/pg";
import { JOB_OWNER } from "@/lib/stores/engines/pg";
import { createMemorySchema } from "@/lib/index/memories";
import { stores } from "@/lib/stores/backend";
import { governanceSql, itSqliteOnly, onPg, seedStore, useTestBackend, type TestEnv } from "./backend";
import { restartWith } from "./helpers";

/**
 * Reindex jobs: durable rows in the ledger's admin_jobs, one per store at a
 * time, audited once. The first describe runs on both backends through
 * stores() (startReindex, getJob); the rest is the SQLite job runner's own:
 * memory files and source roots scanned from disk, the CLI, and owners
 * judged by host and pid (on PostgreSQL a replica's job is taken over by its
 * heartbeat alone: tests/pg/admin-jobs.test.ts).
 */
const FILES = "memory files and source roots on disk (PostgreSQL's truth is its memories table)";
const OWNERS = "the SQLite job runner's owners (host:pid:instance) and its resume on start-up";

let env: TestEnv;

beforeEach(async () => {
  env = await useTestBackend({}, { bootstrap: false });
  await seedStore("notes");
  if (onPg) {
    for (let i = 0; i < 40; i++) await stores().createMemory({ store: "notes", input: createMemorySchema.parse({ path: `bulk/note-${i}`, body: `# Note ${i}\n\nrotation ledger ${i}\n` }), actor: "test" });
  } else {
    const dir = path.join(env.dataDir, "stores", "notes", "memory", "bulk");
    fs.mkdirSync(dir, { recursive: true });
    for (let i = 0; i < 40; i++) fs.writeFileSync(path.join(dir, `note-${i}.md`), `# Note ${i}\n\nrotation ledger ${i}\n`);
  }
});
afterEach(async () => {
  // A job still running in the background must end before its data dir goes.
  await waitForJobs();
  await env.cleanup();
});

async function waitForJobs(): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    // This process's jobs only: a planted job of another owner never ends by itself.
    const [{ n }] = await governanceSql<{ n: number | string }>("select count(*) as n from admin_jobs where status = 'running' and owner = ?", [onPg ? JOB_OWNER : jobOwner()]);
    if (Number(n) === 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("a reindex job never finished");
}

async function finished(id: string): Promise<Job> {
  await waitForJobs();
  return (await stores().getJob({ id, stores: null }))!;
}

/** A pid that surely belongs to no process: a child that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(child.stdout);
}

function plantRunningJob({ owner, heartbeatAt = Date.now(), attempts = 1, store = "notes" }: { owner: string; heartbeatAt?: number; attempts?: number; store?: string }): string {
  const id = "5b3c1a52-6f1e-4f7e-9a0c-2d6a7c1e9f00";
  getGovernance()
    .db.insert(adminJobs)
    .values({ id, kind: "reindex", store, actor: "user:admin", status: "running", owner, attempts, startedAt: Date.now() - 5_000, heartbeatAt })
    .run();
  return id;
}

/** A live process on this host that is not us: the test runner's parent. */
const livePeer = () => `${os.hostname()}:${process.ppid}:peer`;

async function auditActions(): Promise<string[]> {
  return (await governanceSql<{ action: string }>("select action from audit_log order by id")).map((r) => r.action);
}

describe("reindex jobs are durable", () => {
  it("a finished job keeps its id, counts and outcome after every connection is closed (a restart)", async () => {
    const started = await stores().startReindex({ store: "notes", actor: "user:admin" });
    expect(started).toMatchObject({ status: "running", attempts: 1 });
    const done = await finished(started.id);
    expect(done.status).toBe("succeeded");
    expect(done.result?.counts).toMatchObject({ scanned: 40 });
    // Written through the API, the memories were indexed already: on either backend the job finds 40, indexed as they are.
    expect(done.result!.counts.added + done.result!.counts.unchanged).toBe(40);

    closeAllDatabases();
    await closePg();
    expect(await stores().getJob({ id: started.id, stores: null })).toMatchObject({ status: "succeeded", result: { counts: { scanned: 40 } }, finished_at: expect.any(Number) });
    // A caller limited to other stores does not see it.
    expect(await stores().getJob({ id: started.id, stores: ["elsewhere"] })).toBeNull();
  });

  it("asking again while a reindex runs returns the same job, and only the first ask is audited", async () => {
    // Asked at once: the second ask meets the first's job while it runs (asked one after the other, a fast machine can finish the first in between).
    const [first, second] = await Promise.all([stores().startReindex({ store: "notes", actor: "user:admin" }), stores().startReindex({ store: "notes", actor: "agent:ops" })]);
    expect(second.id).toBe(first.id);
    await finished(first.id);
    expect((await auditActions()).filter((a) => a === "store.reindex")).toHaveLength(1);
    // Once finished, a new ask is a new job, and nothing has changed since.
    const third = await stores().startReindex({ store: "notes", actor: "user:admin" });
    expect(third.id).not.toBe(first.id);
    expect((await finished(third.id)).result?.counts).toMatchObject({ unchanged: 40, added: 0 });
  });

  itSqliteOnly("the job list names each store's latest job", "listLatestJobs, the SQLite ledger's admin page query", async () => {
    const started = await stores().startReindex({ store: "notes", actor: "user:admin" });
    await finished(started.id);
    expect(listLatestJobs().map((j) => [j.store, j.id])).toEqual([["notes", started.id]]);
  });
});

describe("reindex reports documents and memories apart", () => {
  itSqliteOnly("counts memories and source-root documents separately, and the totals are their sum", FILES, async () => {
    const src = fs.mkdtempSync(path.join(os.tmpdir(), "dm-src-"));
    try {
      for (let i = 0; i < 3; i++) fs.writeFileSync(path.join(src, `doc-${i}.md`), `# Doc ${i}\n\nsource text ${i}\n`);
      restartWith({ DUALMIND_SOURCE_ROOTS: `notes=${src}` });
      const first = await finished(startReindexJob({ handle: getStoreDb({ store: "notes" }), actor: "user:admin" }).id);
      expect(first.result?.by_kind).toEqual({
        documents: { scanned: 3, added: 3, changed: 0, unchanged: 0, removed: 0 },
        memories: { scanned: 40, added: 40, changed: 0, unchanged: 0, removed: 0 },
      });
      expect(first.result?.counts).toMatchObject({ scanned: 43, added: 43 });

      fs.rmSync(path.join(src, "doc-0.md"));
      fs.appendFileSync(path.join(env.dataDir, "stores", "notes", "memory", "bulk", "note-1.md"), "edited\n");
      const second = await finished(startReindexJob({ handle: getStoreDb({ store: "notes" }), actor: "user:admin" }).id);
      expect(second.result?.by_kind).toEqual({
        documents: { scanned: 2, added: 0, changed: 0, unchanged: 2, removed: 1 },
        memories: { scanned: 40, added: 0, changed: 1, unchanged: 39, removed: 0 },
      });
    } finally {
      restartWith({ DUALMIND_SOURCE_ROOTS: undefined });
      fs.rmSync(src, { recursive: true, force: true });
    }
  });
});

describe("the CLI's reindex is the same job", () => {
  itSqliteOnly("runs to the end before returning, with a job row and one audit entry like the API's", "the SQLite CLI's reindex (runReindexJob)", async () => {
    const job = await runReindexJob({ handle: getStoreDb({ store: "notes" }), actor: "cli:ops", reason: "dualmind reindex" });
    expect(job).toMatchObject({ status: "succeeded", actor: "cli:ops", attempts: 1, result: { counts: { scanned: 40, added: 40 } } });
    expect(getJobById({ id: job.id })).toEqual(job);
    const audits = getGovernance().sqlite.prepare("select actor, reason, details from audit_log where action = 'store.reindex'").all();
    expect(audits).toEqual([{ actor: "cli:ops", reason: "dualmind reindex", details: JSON.stringify({ jobId: job.id }) }]);
  });

  itSqliteOnly("waits for a reindex of the store already running instead of starting a second one", "the SQLite CLI's reindex (runReindexJob)", async () => {
    const api = startReindexJob({ handle: getStoreDb({ store: "notes" }), actor: "agent:ops" });
    const cli = await runReindexJob({ handle: getStoreDb({ store: "notes" }), actor: "cli:ops" });
    expect(cli).toMatchObject({ id: api.id, status: "succeeded", actor: "agent:ops" });
    expect((await auditActions()).filter((a) => a === "store.reindex")).toHaveLength(1);
  });
});

describe("a job whose process died is taken over", () => {
  itSqliteOnly("a dead local owner: resumed at once, finished, attempt 2, audited, and not resumed twice", OWNERS, async () => {
    const id = plantRunningJob({ owner: `${os.hostname()}:${deadPid()}:gone` });
    expect(resumeOrphanedJobs()).toEqual([id]);
    expect(resumeOrphanedJobs()).toEqual([]);
    const done = await finished(id);
    expect(done).toMatchObject({ status: "succeeded", attempts: 2, result: { counts: { added: 40 } } });
    expect(await auditActions()).toContain("store.reindex.resume");
    expect(verifyAuditChain().ok).toBe(true);
  });

  itSqliteOnly("an owner that is alive and beating is left alone; asking to reindex returns its job instead of starting a second", OWNERS, () => {
    const id = plantRunningJob({ owner: livePeer() });
    expect(resumeOrphanedJobs()).toEqual([]);
    const asked = startReindexJob({ handle: getStoreDb({ store: "notes" }), actor: "user:admin" });
    expect(asked).toMatchObject({ id, status: "running", attempts: 1 });
    expect(getGovernance().sqlite.prepare("select count(*) as n from admin_jobs").get()).toEqual({ n: 1 });
  });

  itSqliteOnly("a live local pid is trusted over a silent heartbeat for a while (a long scan blocks it), then presumed reused", OWNERS, async () => {
    const id = plantRunningJob({ owner: livePeer(), heartbeatAt: Date.now() - JOB_STALE_MS - 1_000 });
    expect(resumeOrphanedJobs()).toEqual([]);
    getGovernance().sqlite.prepare("update admin_jobs set heartbeat_at = ? where id = ?").run(Date.now() - JOB_STALE_LOCAL_MS - 1_000, id);
    const asked = startReindexJob({ handle: getStoreDb({ store: "notes" }), actor: "user:admin" });
    expect(asked).toMatchObject({ id, attempts: 2 });
    expect((await finished(id)).status).toBe("succeeded");
  });

  itSqliteOnly("our own pid under another instance tag is a previous run of this server (a container restart keeps the pid)", OWNERS, async () => {
    const id = plantRunningJob({ owner: `${os.hostname()}:${process.pid}:before` });
    expect(resumeOrphanedJobs()).toEqual([id]);
    expect((await finished(id)).status).toBe("succeeded");
  });

  itSqliteOnly("a job this process owns but no longer runs (its final write failed) can be run again", OWNERS, async () => {
    const id = plantRunningJob({ owner: jobOwner() });
    expect(startReindexJob({ handle: getStoreDb({ store: "notes" }), actor: "user:admin" })).toMatchObject({ id, attempts: 2 });
    expect((await finished(id)).status).toBe("succeeded");
  });

  itSqliteOnly("a job that keeps taking its process down, or whose store is gone, is closed as failed instead of run", OWNERS, async () => {
    const dead = `${os.hostname()}:${deadPid()}:gone`;
    const id = plantRunningJob({ owner: dead, attempts: MAX_ATTEMPTS });
    expect(resumeOrphanedJobs()).toEqual([]);
    expect(getJobById({ id })).toMatchObject({ status: "failed", error: expect.stringContaining("3 attempts") });
    getGovernance().sqlite.prepare("delete from admin_jobs").run();
    const ghost = plantRunningJob({ owner: dead, store: "ghost" });
    expect(resumeOrphanedJobs()).toEqual([]);
    expect(getJobById({ id: ghost })).toMatchObject({ status: "failed", error: "store ghost no longer exists" });
    // Resuming must not recreate the store it was for.
    expect(fs.existsSync(path.join(env.dataDir, "stores", "ghost"))).toBe(false);
    expect((await auditActions()).filter((a) => a === "store.reindex.abandon")).toHaveLength(2);
  });

  itSqliteOnly("an owner on another host is judged by its heartbeat alone", OWNERS, () => {
    const id = "x";
    expect(ownerIsGone({ id, owner: "elsewhere:1:abc", heartbeatAt: Date.now() })).toBe(false);
    expect(ownerIsGone({ id, owner: "elsewhere:1:abc", heartbeatAt: Date.now() - JOB_STALE_MS - 1 })).toBe(true);
  });
});
