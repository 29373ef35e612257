import { describe, expect, it } from "vitest";
import { tasks, validations } from "@/lib/db/schema/pg/governance";
import { createTask, getTaskStatusById, recordRunFinish, recordRunStart, type LedgerCaller } from "@/lib/governance/ledger";
import { eq } from "drizzle-orm";
import { useTempDataDir } from "../helpers";
import { useTwoReplicas } from "./helpers";

const replicas = useTwoReplicas();
const HASH = "a".repeat(64);
const agent = (agentId: string): LedgerCaller => ({ agentId, isAdmin: false, stores: null });


describe("ledger tasks and runs on PostgreSQL", () => {
  it("answers a retried create racing its first attempt as the same task, on any replica", async () => {
    const input = { task_id: "race-1", intent: "summarize", spec: { doc: "x" }, required_checks: ["critic" as const] };
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => createTask({ handle: i % 2 ? replicas.a() : replicas.b(), input, requestedBy: "agent:a" })),
    );
    expect(answers.filter((a) => a.created)).toHaveLength(1);
    expect(new Set(answers.map((a) => JSON.stringify(a.task)))).toHaveProperty("size", 1);
    await expect(createTask({ handle: replicas.a(), input: { ...input, intent: "something else" }, requestedBy: "agent:a" })).rejects.toMatchObject({ code: "conflict" });
  });

  it("keeps the verdict true when runs of one task finish at once on two replicas", async () => {
    await createTask({ handle: replicas.a(), input: { task_id: "busy", intent: "fan out", spec: {}, required_checks: ["critic"] }, requestedBy: "agent:a" });
    const runIds = Array.from({ length: 10 }, (_, i) => `run-${i}`);
    for (const runId of runIds) {
      await recordRunStart({ handle: replicas.a(), taskId: "busy", input: { run_id: runId, skill: "s", input_hash: HASH, runner_version: "1" }, caller: agent("agent:a") });
    }
    // A passing critic is on record, but runs are open: pending until the last one finishes.
    await replicas.a().db.insert(validations).values({ validationId: "v1", clientId: "v1", taskId: "agent:a~busy", criticPassed: true, runnerPassed: null, detailsJson: "null", ts: Date.now(), agentId: "agent:a" });
    await Promise.all(
      runIds.map((runId, i) =>
        recordRunFinish({ handle: i % 2 ? replicas.a() : replicas.b(), taskId: "busy", runId, input: { output_hash: HASH, exit_code: 0 }, caller: agent("agent:a") }),
      ),
    );
    const [row] = await replicas.a().db.select().from(tasks).where(eq(tasks.taskId, "agent:a~busy"));
    expect(row.verdict).toBe("passed");
    const status = await getTaskStatusById({ handle: replicas.b(), taskId: "busy" });
    expect(status.runs.map((r) => r.status)).toEqual(Array(10).fill("succeeded"));
    expect(status.verdict.verdict).toBe("passed");
  });

  it("refuses runs from agents that do not work on the task, and hides the task from them", async () => {
    await createTask({ handle: replicas.a(), input: { task_id: "private", intent: "mine", spec: {}, assignees: ["agent:b"] }, requestedBy: "agent:a" });
    const start = { run_id: "r-private", skill: "s", input_hash: HASH, runner_version: "1" };
    await expect(recordRunStart({ handle: replicas.a(), taskId: "private", input: start, caller: agent("agent:c") })).rejects.toMatchObject({ code: "not_found", message: "no task private" });
    await expect(getTaskStatusById({ handle: replicas.a(), taskId: "private", caller: agent("agent:c") })).rejects.toMatchObject({ code: "not_found" });
    const byAssignee = await recordRunStart({ handle: replicas.b(), taskId: "private", input: start, caller: agent("agent:b") });
    expect(byAssignee.created).toBe(true);
    expect((await recordRunStart({ handle: replicas.a(), taskId: "private", input: start, caller: agent("agent:b") })).created).toBe(false);
    await expect(recordRunStart({ handle: replicas.a(), taskId: "nope", input: start, caller: agent("agent:a") })).rejects.toMatchObject({ code: "not_found" });
  });

  it("answers like the SQLite ledger for the same requests", async () => {
    const input = { task_id: "same", intent: "compare", spec: { a: [1, 2] }, assignees: ["agent:z", "agent:y"] };
    const run = { run_id: "same-run", skill: "lint", input_hash: HASH, runner_version: "2", output_hash: HASH, exit_code: 1, artifacts: [{ artifact_type: "doc", artifact_id: "d1", store: "default" }] };
    const { cleanup } = useTempDataDir();
    try {
      createTask({ input, requestedBy: "agent:a" });
      recordRunStart({ taskId: "same", input: run, caller: agent("agent:a") });
      const onSqlite = getTaskStatusById({ taskId: "same" });
      await createTask({ handle: replicas.a(), input, requestedBy: "agent:a" });
      await recordRunStart({ handle: replicas.a(), taskId: "same", input: run, caller: agent("agent:a") });
      const onPg = await getTaskStatusById({ handle: replicas.a(), taskId: "same" });
      const times = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([k]) => !/_at$/.test(k)));
      expect(times(onPg.task)).toEqual(times(onSqlite.task));
      expect(onPg.runs.map(times)).toEqual(onSqlite.runs.map(times));
      expect(onPg.verdict).toEqual(onSqlite.verdict);
    } finally {
      cleanup();
    }
  });
});
