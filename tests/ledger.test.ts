import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { explainVerdict } from "@/lib/governance/ledger";
import * as tasksRoute from "@/app/api/v1/tasks/route";
import * as taskRoute from "@/app/api/v1/tasks/[id]/route";
import * as runsRoute from "@/app/api/v1/tasks/[id]/runs/route";
import * as finishRoute from "@/app/api/v1/tasks/[id]/runs/[runId]/finish/route";
import * as validationsRoute from "@/app/api/v1/tasks/[id]/validations/route";
import * as provenanceRoute from "@/app/api/v1/provenance/route";
import * as overridesRoute from "@/app/api/v1/overrides/route";
import { seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

const H = (c: string) => c.repeat(64);
let env: TestEnv;
let writer: string;
let reader: string;

beforeEach(async () => {
  env = await useTestBackend();
  writer = await seedToken({ label: "builder", agent_id: "builder-1", scopes: ["write"] });
  // A read-only token of the same agent: an agent reads its own tasks (another agent's answer 404, see ledger-authz.test.ts).
  reader = await seedToken({ label: "viewer", agent_id: "builder-1", scopes: ["read"] });
});
afterEach(() => env.cleanup());

async function createTask(body: Record<string, unknown>, token = writer) {
  return callRoute(tasksRoute.POST, { token, body });
}
async function startRun(taskId: string, body: Record<string, unknown>) {
  return callRoute(runsRoute.POST, { token: writer, body, params: { id: taskId } });
}
async function validate(taskId: string, body: Record<string, unknown>) {
  return callRoute(validationsRoute.POST, { token: writer, body, params: { id: taskId } });
}
async function status(taskId: string) {
  return callRoute(taskRoute.GET, { token: reader, params: { id: taskId } });
}

describe("tasks", () => {
  it("creates a task owned by the calling token's agent and returns it on a retry without duplicating", async () => {
    const first = await createTask({ task_id: "t-1", intent: "summarize the photo notes", spec: { files: ["a.md"] } });
    expect(first.status).toBe(201);
    expect(first.json.task).toMatchObject({ task_id: "t-1", requested_by: "builder-1", verdict: "pending", required_checks: ["critic", "runner"] });
    const retry = await createTask({ task_id: "t-1", intent: "summarize the photo notes", spec: { files: ["a.md"] } });
    expect(retry.status).toBe(200);
    expect(retry.json.created).toBe(false);
    const list = await callRoute(tasksRoute.GET, { token: reader, url: "http://x/api/v1/tasks" });
    expect(list.json.total).toBe(1);
  });

  it("refuses to reuse a task id for different contents (409) and a read token cannot write (403)", async () => {
    await createTask({ task_id: "t-2", intent: "one", spec: {} });
    const clash = await createTask({ task_id: "t-2", intent: "two", spec: {} });
    expect(clash.status).toBe(409);
    expect(clash.json.error.code).toBe("conflict");
    expect((await createTask({ intent: "x", spec: {} }, reader)).status).toBe(403);
  });

  it("rejects bad ids, unknown fields and non-hex hashes with 400, unknown tasks with 404", async () => {
    expect((await createTask({ task_id: "has space", intent: "x", spec: {} })).status).toBe(400);
    expect((await createTask({ intent: "x", spec: {}, requested_by: "someone-else" })).status).toBe(400);
    await createTask({ task_id: "t-3", intent: "x", spec: {} });
    const bad = await startRun("t-3", { skill: "s", input_hash: "not-a-hash", runner_version: "1" });
    expect(bad.status).toBe(400);
    expect(bad.json.error.details[0].path).toBe("body.input_hash");
    expect((await startRun("t-3", { skill: "s", input_hash: H("g"), runner_version: "1" })).status).toBe(400);
    expect((await startRun("nope", { skill: "s", input_hash: H("a"), runner_version: "1" })).status).toBe(404);
    expect((await status("nope")).status).toBe(404);
  });
});

describe("runs, validations and the verdict", () => {
  it("passes only when every run finished and the latest validation passed every required check", async () => {
    await createTask({ task_id: "t-v", intent: "build", spec: {} });
    const run = await startRun("t-v", { run_id: "r-1", skill: "compile", input_hash: H("A"), runner_version: "2.1" });
    expect(run.status).toBe(201);
    expect(run.json.run).toMatchObject({ status: "running", input_hash: H("a") });

    await validate("t-v", { validation_id: "v-1", run_id: "r-1", critic_passed: true, runner_passed: true });
    let s = await status("t-v");
    expect(s.json.verdict.verdict).toBe("pending");
    expect(s.json.verdict.reasons[0]).toContain("r-1 has not finished");

    const fin = await callRoute(finishRoute.POST, { token: writer, params: { id: "t-v", runId: "r-1" }, body: { output_hash: H("b"), exit_code: 0 } });
    expect(fin.status).toBe(200);
    expect(fin.json.run.status).toBe("succeeded");
    s = await status("t-v");
    expect(s.json.verdict.verdict).toBe("passed");

    await validate("t-v", { validation_id: "v-2", run_id: "r-1", critic_passed: false, runner_passed: true, details: { note: "missed a file" } });
    s = await status("t-v");
    expect(s.json.verdict).toMatchObject({ verdict: "failed", reasons: ["critic check failed in validation v-2"] });
    expect(s.json.validations.map((v: { validation_id: string }) => v.validation_id)).toEqual(["v-1", "v-2"]);

    const failedOnly = await callRoute(tasksRoute.GET, { token: reader, url: "http://x/api/v1/tasks?outcome=failed" });
    expect(failedOnly.json.tasks.map((t: { task_id: string }) => t.task_id)).toEqual(["t-v"]);
  });

  it("awaits a required check no validation has run yet (pending, not failed), and ignores checks the task does not require", () => {
    const runs = [{ run_id: "r", finished_at: 1 }];
    expect(explainVerdict({ requiredChecks: ["critic", "runner"], runs, validations: [{ validation_id: "v", critic_passed: true, runner_passed: null }] })).toEqual({
      verdict: "pending",
      reasons: ["awaiting the runner check (no validation has run it yet)", "critic passed in validation v"],
    });
    expect(explainVerdict({ requiredChecks: ["critic"], runs, validations: [{ validation_id: "v", critic_passed: true, runner_passed: null }] }).verdict).toBe("passed");
    expect(explainVerdict({ requiredChecks: ["critic"], runs, validations: [] }).verdict).toBe("pending");
  });

  it("combines a critic's and a runner's separate validations: both passing is passed, and a later result for a check supersedes an earlier one", () => {
    const runs = [{ run_id: "r", finished_at: 1 }];
    const critic = { validation_id: "by-critic", critic_passed: true, runner_passed: null };
    const runner = { validation_id: "by-runner", critic_passed: null, runner_passed: true };
    expect(explainVerdict({ requiredChecks: ["critic", "runner"], runs, validations: [critic, runner] })).toEqual({ verdict: "passed", reasons: ["critic passed in validation by-critic", "runner passed in validation by-runner"] });
    const rerunFailed = { validation_id: "rerun", critic_passed: null, runner_passed: false };
    expect(explainVerdict({ requiredChecks: ["critic", "runner"], runs, validations: [critic, runner, rerunFailed] })).toEqual({ verdict: "failed", reasons: ["runner check failed in validation rerun"] });
    const fixed = { validation_id: "fixed", critic_passed: null, runner_passed: true };
    expect(explainVerdict({ requiredChecks: ["critic", "runner"], runs, validations: [critic, runner, rerunFailed, fixed] }).verdict).toBe("passed");
  });

  it("keeps the stored verdict (what ?outcome= filters on) equal to the explained one as separate checks arrive, fail, are fixed and a run opens", async () => {
    await createTask({ task_id: "t-s", intent: "x", spec: {} });
    await startRun("t-s", { run_id: "r-s1", skill: "s", input_hash: H("e"), runner_version: "1", output_hash: H("f"), exit_code: 0 });
    const stored = async () => {
      for (const outcome of ["pending", "passed", "failed"]) {
        const list = await callRoute(tasksRoute.GET, { token: reader, url: `http://x/api/v1/tasks?outcome=${outcome}` });
        if (list.json.tasks.some((t: { task_id: string }) => t.task_id === "t-s")) return outcome;
      }
    };
    const steps: [Record<string, boolean | null>, string][] = [
      [{ critic_passed: null, runner_passed: null }, "pending"],
      [{ critic_passed: true, runner_passed: null }, "pending"],
      [{ critic_passed: null, runner_passed: false }, "failed"],
      [{ critic_passed: null, runner_passed: true }, "passed"],
      [{ critic_passed: false, runner_passed: null }, "failed"],
      [{ critic_passed: true, runner_passed: null }, "passed"],
    ];
    for (const [body, verdict] of steps) {
      await validate("t-s", body);
      expect((await status("t-s")).json.verdict.verdict).toBe(verdict);
      expect(await stored()).toBe(verdict);
    }
    await startRun("t-s", { run_id: "r-s2", skill: "s", input_hash: H("e"), runner_version: "1" });
    expect(await stored()).toBe("pending");
  });

  it("makes run and validation retries idempotent, and conflicts when a retry changes the facts", async () => {
    await createTask({ task_id: "t-i", intent: "x", spec: {} });
    const body = { run_id: "r-i", skill: "lint", input_hash: H("c"), runner_version: "1", output_hash: H("d"), exit_code: 1 };
    expect((await startRun("t-i", body)).status).toBe(201);
    const again = await startRun("t-i", body);
    expect(again.status).toBe(200);
    expect(again.json.run.status).toBe("failed");
    expect((await startRun("t-i", { ...body, exit_code: 0 })).status).toBe(409);
    const finishAgain = await callRoute(finishRoute.POST, { token: writer, params: { id: "t-i", runId: "r-i" }, body: { output_hash: H("e"), exit_code: 1 } });
    expect(finishAgain.status).toBe(409);

    expect((await validate("t-i", { validation_id: "v-i", critic_passed: true, runner_passed: false })).status).toBe(201);
    expect((await validate("t-i", { validation_id: "v-i", critic_passed: true, runner_passed: false })).status).toBe(200);
    expect((await validate("t-i", { validation_id: "v-i", critic_passed: true, runner_passed: true })).status).toBe(409);
    expect((await validate("t-i", { run_id: "r-other", critic_passed: true, runner_passed: true })).status).toBe(422);
    const s = await status("t-i");
    expect(s.json.runs).toHaveLength(1);
    expect(s.json.validations).toHaveLength(1);
  });

  it("filters the task list by requester, skill and time", async () => {
    await createTask({ task_id: "t-a", intent: "a", spec: {} });
    const other = await seedToken({ label: "o", agent_id: "other-agent", scopes: ["write"] });
    await createTask({ task_id: "t-b", intent: "b", spec: {} }, other);
    await startRun("t-a", { skill: "embed", input_hash: H("1"), runner_version: "1" });
    // Only an admin lists other agents' tasks.
    const admin = await seedToken({ label: "ops", agent_id: "ops", scopes: ["admin"] });
    const by = await callRoute(tasksRoute.GET, { token: admin, url: "http://x/api/v1/tasks?requested_by=other-agent" });
    expect(by.json.tasks.map((t: { task_id: string }) => t.task_id)).toEqual(["t-b"]);
    const bySkill = await callRoute(tasksRoute.GET, { token: reader, url: "http://x/api/v1/tasks?skill=embed" });
    expect(bySkill.json.tasks.map((t: { task_id: string; run_count: number }) => [t.task_id, t.run_count])).toEqual([["t-a", 1]]);
    const future = await callRoute(tasksRoute.GET, { token: reader, url: `http://x/api/v1/tasks?from=${Date.now() + 60_000}` });
    expect(future.json.total).toBe(0);
    expect((await callRoute(tasksRoute.GET, { token: reader, url: "http://x/api/v1/tasks?outcome=maybe" })).status).toBe(400);
  });
});

describe("per-task run counts", () => {
  it("each task shows its own run count (a task without runs shows 0), in the API and the list the Ledger page renders", async () => {
    for (const id of ["t-none", "t-two", "t-one"]) await createTask({ task_id: id, intent: id, spec: {} });
    await startRun("t-two", { skill: "lint", input_hash: H("a"), runner_version: "1" });
    await startRun("t-two", { skill: "test", input_hash: H("b"), runner_version: "1" });
    await startRun("t-one", { skill: "lint", input_hash: H("c"), runner_version: "1" });
    const admin = await seedToken({ label: "ops", agent_id: "ops", scopes: ["admin"] });
    const list = await callRoute(tasksRoute.GET, { token: admin, url: "http://x/api/v1/tasks" });
    const counts = Object.fromEntries(list.json.tasks.map((t: { task_id: string; run_count: number }) => [t.task_id, t.run_count]));
    expect(counts).toEqual({ "t-none": 0, "t-two": 2, "t-one": 1 });
    // A later page counts its own tasks' runs, not the page's or the ledger's.
    const page = await governance().listTasks({ input: { limit: 2, offset: 1 }, caller: { agentId: "ops", isAdmin: true, stores: null } });
    expect(page.tasks).toHaveLength(2);
    for (const t of page.tasks) expect(t.run_count).toBe(counts[t.task_id]);
  });
});

describe("provenance and overrides", () => {
  it("records a provenance batch once, however often it is retried, and answers where an artifact came from", async () => {
    await createTask({ task_id: "t-p", intent: "embed notes", spec: {} });
    await startRun("t-p", { run_id: "r-p", skill: "embed", input_hash: H("5"), runner_version: "1", output_hash: H("6"), exit_code: 0, artifacts: [{ artifact_type: "summary", artifact_id: "doc-9", store: "default" }] });
    await validate("t-p", { critic_passed: true, runner_passed: true });
    const records = [
      { artifact_type: "chunk_vector", artifact_id: "42", store: "default", model_name: "builtin", model_version: "1", chunking_version: "c1", input_hash: H("7"), run_id: "r-p" },
      { artifact_type: "chunk_vector", artifact_id: "43", store: "default", model_name: "builtin", model_version: "1", input_hash: H("8") },
    ];
    const first = await callRoute(provenanceRoute.POST, { token: writer, body: { records } });
    expect(first.json).toEqual({ inserted: 2, existing: 0 });
    const retry = await callRoute(provenanceRoute.POST, { token: writer, body: { records } });
    expect(retry.json).toEqual({ inserted: 0, existing: 2 });

    const proofs = await callRoute(provenanceRoute.GET, { token: reader, url: "http://x/api/v1/provenance?artifact_type=chunk_vector&artifact_id=42" });
    expect(proofs.json.provenance).toHaveLength(1);
    expect(proofs.json.provenance[0]).toMatchObject({ model_name: "builtin", task_id: "t-p", run_id: "r-p" });
    expect(proofs.json.tasks).toEqual([expect.objectContaining({ verdict: "passed" })]);

    const summary = await callRoute(provenanceRoute.GET, { token: reader, url: "http://x/api/v1/provenance?artifact_type=summary&artifact_id=doc-9" });
    expect(summary.json.runs.map((r: { run_id: string }) => r.run_id)).toEqual(["r-p"]);
    const page = await status("t-p");
    expect(page.json.artifacts.map((a: { artifact_id: string }) => a.artifact_id).sort()).toEqual(["42", "doc-9"]);
  });

  it("rejects a whole batch when one record points at an unknown run", async () => {
    const res = await callRoute(provenanceRoute.POST, {
      token: writer,
      body: { records: [{ artifact_type: "x", artifact_id: "1", store: "default", input_hash: H("1") }, { artifact_type: "x", artifact_id: "2", store: "default", input_hash: H("2"), run_id: "ghost" }] },
    });
    expect(res.status).toBe(422);
    const lookup = await callRoute(provenanceRoute.GET, { token: reader, url: "http://x/api/v1/provenance?artifact_type=x&artifact_id=1" });
    expect(lookup.json.provenance).toEqual([]);
  });

  it("records an override with actor and token label, in the ledger and in the audit chain", async () => {
    await createTask({ task_id: "t-o", intent: "deploy", spec: {} });
    const res = await callRoute(overridesRoute.POST, { token: writer, body: { override_id: "o-1", task_id: "t-o", note: "shipping despite flaky runner" } });
    expect(res.status).toBe(201);
    expect(res.json.override).toMatchObject({ actor: "agent:builder-1", token_label: "builder", note: "shipping despite flaky runner" });
    expect((await callRoute(overridesRoute.POST, { token: writer, body: { override_id: "o-1", task_id: "t-o", note: "shipping despite flaky runner" } })).status).toBe(200);
    const audit = (await governance().listAuditTail({ limit: 5 })).filter((a) => a.action === "ledger.override");
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor: "agent:builder-1", target: "task:builder-1~t-o", reason: "shipping despite flaky runner" });
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
    expect((await status("t-o")).json.overrides).toHaveLength(1);
  });
});
