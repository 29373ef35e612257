import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as listTasks, POST as createTask } from "@/app/api/v1/tasks/route";
import { getGovernance } from "@/lib/db/connection";
import { getPg } from "@/lib/db/pg";
import * as sqliteSchema from "@/lib/db/schema/governance";
import * as pgSchema from "@/lib/db/schema/pg/governance";
import { assignedTo, listTasksQuerySchema, taskListWhere } from "@/lib/governance/ledger";
import { governanceSql, onPg, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/** An agent's task list looks its tasks up by index (task_assignees), not by reading every task's assignees. */
let env: TestEnv;
let alice = "";
let bob = "";

beforeAll(async () => {
  env = await useTestBackend();
  alice = await seedToken({ label: "a", agent_id: "alice", scopes: ["write"] });
  bob = await seedToken({ label: "b", agent_id: "bob", scopes: ["write"] });
});
afterAll(async () => env?.cleanup());

describe("an agent's task list", () => {
  it("lists the tasks it requested or is assigned to, from the assignee table the triggers keep", async () => {
    expect((await callRoute(createTask, { token: alice, body: { task_id: "t-mine", intent: "mine", spec: {} } })).status).toBe(201);
    expect((await callRoute(createTask, { token: alice, body: { task_id: "t-for-bob", intent: "for bob", spec: {}, assignees: ["bob", "carol"] } })).status).toBe(201);
    expect((await callRoute(createTask, { token: bob, body: { task_id: "t-bob", intent: "bob's", spec: {} } })).status).toBe(201);
    const rows = await governanceSql<{ agent_id: string }>("select agent_id from task_assignees order by agent_id");
    expect(rows.map((r) => r.agent_id)).toEqual(["bob", "carol"]);
    const listed = await callRoute(listTasks, { token: bob, url: "http://127.0.0.1/api/v1/tasks" });
    expect(listed.status).toBe(200);
    const ids = (listed.json.tasks as { taskId?: string; task_id?: string }[]).map((t) => t.task_id ?? t.taskId).sort();
    expect(ids).toEqual(["t-bob", "t-for-bob"]);
  });

  it("uses the assignee index and the requester index, never a scan of every task", async () => {
    const q = listTasksQuerySchema.parse({});
    const caller = { agentId: "bob", isAdmin: false, stores: null };
    if (onPg) {
      const t = pgSchema.tasks;
      const where = taskListWhere({ tables: { tasks: t, skillRuns: pgSchema.skillRuns, assignedTo: assignedTo(t) }, q, caller });
      const db = (await getPg())!.db;
      // A planner with few rows prefers a scan; the plan must be able to avoid one.
      await db.execute(sql`set enable_seqscan = off`);
      const query = db.select({ id: t.taskId }).from(t).where(where).orderBy(sql`${t.createdAt} desc`).limit(50).toSQL();
      const plan = (await db.execute(sql.raw(`explain ${inline(query.sql, query.params)}`))).rows.map((r) => String((r as Record<string, unknown>)["QUERY PLAN"])).join("\n");
      await db.execute(sql`reset enable_seqscan`);
      expect(plan).toMatch(/task_assignees_pkey/);
      expect(plan).not.toMatch(/Seq Scan on tasks/);
    } else {
      const t = sqliteSchema.tasks;
      const where = taskListWhere({ tables: { tasks: t, skillRuns: sqliteSchema.skillRuns, assignedTo: assignedTo(t) }, q, caller });
      const gov = getGovernance();
      const query = gov.db.select({ id: t.taskId }).from(t).where(where).orderBy(sql`${t.createdAt} desc`).limit(50).toSQL();
      const plan = (gov.sqlite.prepare(`explain query plan ${query.sql}`).all(...query.params) as { detail: string }[]).map((r) => r.detail).join("\n");
      expect(plan).toMatch(/task_assignees/);
      expect(plan).not.toMatch(/json_each/);
      expect(plan).not.toMatch(/SCAN (tasks|t)\b/);
    }
  });
});

/** PostgreSQL's EXPLAIN takes no bind parameters: the test's own values, quoted. */
function inline(text: string, params: unknown[]): string {
  return text.replace(/\$(\d+)/g, (_, i) => {
    const v = params[Number(i) - 1];
    return typeof v === "number" ? String(v) : `'${String(v).replaceAll("'", "''")}'`;
  });
}
