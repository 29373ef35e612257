import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePg, getPg } from "@/lib/db/pg";
import fs from "node:fs";
import path from "node:path";
import { appendAuditPg } from "@/lib/governance/audit";
import { createTask, recordRunStart } from "@/lib/governance/ledger";
import { agentsCommands } from "@/scripts/commands/agents-commands";
import type { Command, CommandContext } from "@/scripts/cli-kit";
import { dbCommands } from "@/scripts/commands/db-commands";
import { storeCommands } from "@/scripts/commands/store-commands";
import { indexCommands } from "@/scripts/commands/index-commands";
import { adminJobs } from "@/lib/db/schema/pg/governance";
import { JOB_STALE_MS, type Job } from "@/lib/index/jobs";
import { createMemoryPg } from "@/lib/index/memories-pg";
import { createStorePg, openStorePg } from "@/lib/stores/engines/pg";
import { eq } from "drizzle-orm";
import { useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

let env: ReturnType<typeof useTempDataDir>;
beforeAll(async () => {
  env = useTempDataDir({ DATABASE_URL: await createTestDatabase() });
});
afterAll(async () => {
  await closePg();
  env.cleanup();
});

async function run(commands: Command[], name: string, flags: CommandContext["flags"] = {}, args: string[] = []) {
  const outs: { human: string; data: unknown }[] = [];
  const ctx: CommandContext = { args, flags, json: false, out: (human, data) => outs.push({ human, data }) };
  const code = (await commands.find((c) => c.name === name)!.run(ctx)) ?? 0;
  return { code, human: outs.map((o) => o.human).join("\n"), data: outs[0]?.data };
}

describe("the CLI with DATABASE_URL", () => {
  it("migrate applies the PostgreSQL governance schema and every PostgreSQL store's, and the local SQLite files", async () => {
    const r = await run(dbCommands, "migrate");
    expect(r.code).toBe(0);
    expect(r.data).toEqual({ backend: "postgres", governance: expect.stringMatching(/^\d{4}_/), stores: [], pgStores: [] });
    expect(r.human).toContain("and 0 PostgreSQL store(s) (what the API, MCP and CLI serve)");
  });

  it("audit verify walks the PostgreSQL chain and the local one, and exits 1 at a tampered entry", async () => {
    const { db, pool } = await getPg()!;
    for (const action of ["token.create", "store.create", "task.create"]) await appendAuditPg({ db, entry: { actor: "user:ann", action } });
    const ok = await run(storeCommands, "audit verify");
    expect(ok).toMatchObject({ code: 0, human: "PostgreSQL (ledger, users, stores): audit chain ok (3 entries)\nlocal governance.db (before DATABASE_URL): audit chain ok (0 entries)" });
    await pool.query("update audit_log set reason = 'rewritten' where id = 2");
    const broken = await run(storeCommands, "audit verify");
    expect(broken.code).toBe(1);
    expect(broken.human).toContain("BROKEN at entry 2");
  });

  it("export ledger writes the PostgreSQL ledger's tasks, oldest first, with their runs — not the empty local governance.db", async () => {
    const pg = await getPg()!;
    const hash = "a".repeat(64);
    await createTask({ handle: pg, input: { task_id: "t-first", intent: "first", spec: {} }, requestedBy: "agent:a" });
    await createTask({ handle: pg, input: { task_id: "t-second", intent: "second", spec: {} }, requestedBy: "agent:a" });
    await recordRunStart({ handle: pg, taskId: "t-second", input: { run_id: "r-1", skill: "s", input_hash: hash, runner_version: "1" }, caller: { agentId: "agent:a", isAdmin: false, stores: null } });
    const file = path.join(env.dataDir, "ledger.json");
    const r = await run(agentsCommands, "export ledger", { out: file });
    expect(r).toMatchObject({ code: 0, human: `wrote 2 task(s) to ${file}` });
    const snapshot = JSON.parse(fs.readFileSync(file, "utf8"));
    expect(snapshot.format).toBe("dualmind.ledger.v2");
    expect(snapshot.tasks.map((t: { task: { task_id: string } }) => t.task.task_id)).toEqual(["t-first", "t-second"]);
    expect(snapshot.tasks[1].runs.map((run: { run_id: string }) => run.run_id)).toEqual(["r-1"]);
  });

  describe("reindex across replicas: one running job per store", () => {
    /** A reindex of `store` another replica claimed, beating its heartbeat `ageMs` ago. */
    async function claimedElsewhere(store: string, ageMs: number) {
      const { db } = await getPg()!;
      const now = Date.now();
      const id = `job-of-another-replica-${store}`;
      await db.insert(adminJobs).values({ id, kind: "reindex", store, actor: "user:ann", status: "running", owner: "another-replica", attempts: 1, startedAt: now - ageMs, heartbeatAt: now - ageMs });
      return id;
    }
    const jobRows = async (store: string) => (await getPg()!).db.select().from(adminJobs).where(eq(adminJobs.store, store));

    it("waits for the reindex a live replica is running and answers that job, starting none of its own", async () => {
      const pg = await getPg()!;
      await createStorePg({ pg, input: { name: "busy" }, actor: "test" });
      const id = await claimedElsewhere("busy", 0);
      let settled = false;
      const cli = run(indexCommands, "reindex", {}, ["busy"]).finally(() => (settled = true));
      // A few of the CLI's polls later it is still waiting: the other replica's heartbeat is fresh.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(settled).toBe(false);
      expect((await jobRows("busy")).map((j) => j.id)).toEqual([id]);
      const result = { store: "busy", counts: { scanned: 0, added: 0, changed: 0, unchanged: 0, removed: 0, skipped: 0 }, byKind: null, skippedBy: { binary: 0, oversized: 0, badName: 0, symlink: 0 }, linksOutsideRoot: [], durationMs: 1 };
      await pg.db.update(adminJobs).set({ status: "succeeded", resultJson: JSON.stringify(result), finishedAt: Date.now() }).where(eq(adminJobs.id, id));
      const r = await cli;
      expect(r.code).toBe(0);
      expect(r.data).toMatchObject({ id, status: "succeeded", attempts: 1 });
      expect(r.human).toMatch(new RegExp(`^busy: scanned 0, .* \\(job ${id}\\)$`));
    });

    it("takes over the reindex of a replica that stopped beating, runs it to the end here, and audits the takeover", async () => {
      const pg = await getPg()!;
      await createStorePg({ pg, input: { name: "orphan" }, actor: "test" });
      await createMemoryPg({ handle: await openStorePg({ pg, store: "orphan" }), input: { path: "runbooks/restart", body: "Restart the worker." }, actor: "test" });
      const id = await claimedElsewhere("orphan", JOB_STALE_MS + 1_000);
      const r = await run(indexCommands, "reindex", {}, ["orphan"]);
      expect(r.code).toBe(0);
      expect(r.data as Job).toMatchObject({ id, status: "succeeded", attempts: 2, result: { counts: { scanned: 1, unchanged: 1 } } });
      expect((await jobRows("orphan")).map((j) => [j.id, j.status])).toEqual([[id, "succeeded"]]);
      const { rows } = await pg.pool.query("select action, details from audit_log where target = 'store:orphan' and action like 'store.reindex%' order by id");
      expect(rows.map((row: { action: string }) => row.action)).toEqual(["store.reindex.resume"]);
    });
  });
});
