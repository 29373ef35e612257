import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePg, getPg } from "@/lib/db/pg";
import fs from "node:fs";
import path from "node:path";
import { appendAuditPg } from "@/lib/governance/audit-pg";
import { createTaskPg, recordRunStartPg } from "@/lib/governance/ledger-pg";
import { agentsCommands } from "@/scripts/commands/agents-commands";
import type { Command, CommandContext } from "@/scripts/cli-kit";
import { dbCommands } from "@/scripts/commands/db-commands";
import { storeCommands } from "@/scripts/commands/store-commands";
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

async function run(commands: Command[], name: string, flags: CommandContext["flags"] = {}) {
  const outs: { human: string; data: unknown }[] = [];
  const ctx: CommandContext = { args: [], flags, json: false, out: (human, data) => outs.push({ human, data }) };
  const code = (await commands.find((c) => c.name === name)!.run(ctx)) ?? 0;
  return { code, human: outs.map((o) => o.human).join("\n"), data: outs[0]?.data };
}

describe("the CLI with DATABASE_URL", () => {
  it("migrate applies the PostgreSQL governance schema and every PostgreSQL store's, and the local SQLite files", async () => {
    const r = await run(dbCommands, "migrate");
    expect(r.code).toBe(0);
    expect(r.data).toEqual({ backend: "postgres", governance: expect.stringMatching(/^\d{4}_/), stores: [], pgStores: [] });
    expect(r.human).toContain("and 0 PostgreSQL store(s) (what the API and MCP serve)");
  });

  it("audit verify walks the PostgreSQL chain and the local one, and exits 1 at a tampered entry", async () => {
    const { db, pool } = await getPg()!;
    for (const action of ["token.create", "store.create", "task.create"]) await appendAuditPg({ db, entry: { actor: "user:ann", action } });
    const ok = await run(storeCommands, "audit verify");
    expect(ok).toMatchObject({ code: 0, human: "PostgreSQL (ledger, users): audit chain ok (3 entries)\nlocal governance.db (stores): audit chain ok (0 entries)" });
    await pool.query("update audit_log set reason = 'rewritten' where id = 2");
    const broken = await run(storeCommands, "audit verify");
    expect(broken.code).toBe(1);
    expect(broken.human).toContain("BROKEN at entry 2");
  });

  it("export ledger writes the PostgreSQL ledger's tasks, oldest first, with their runs — not the empty local governance.db", async () => {
    const { db } = await getPg()!;
    const hash = "a".repeat(64);
    await createTaskPg({ db, input: { task_id: "t-first", intent: "first", spec: {} }, requestedBy: "agent:a" });
    await createTaskPg({ db, input: { task_id: "t-second", intent: "second", spec: {} }, requestedBy: "agent:a" });
    await recordRunStartPg({ db, taskId: "t-second", input: { run_id: "r-1", skill: "s", input_hash: hash, runner_version: "1" }, caller: { agentId: "agent:a", isAdmin: false, stores: null } });
    const file = path.join(env.dataDir, "ledger.json");
    const r = await run(agentsCommands, "export ledger", { out: file });
    expect(r).toMatchObject({ code: 0, human: `wrote 2 task(s) to ${file}` });
    const snapshot = JSON.parse(fs.readFileSync(file, "utf8"));
    expect(snapshot.format).toBe("dualmind.ledger.v1");
    expect(snapshot.tasks.map((t: { task: { taskId: string } }) => t.task.taskId)).toEqual(["t-first", "t-second"]);
    expect(snapshot.tasks[1].runs.map((run: { runId: string }) => run.runId)).toEqual(["r-1"]);
  });
});
