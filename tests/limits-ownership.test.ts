import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as getTask } from "@/app/api/v1/tasks/[id]/route";
import { POST as startRun } from "@/app/api/v1/tasks/[id]/runs/route";
import { POST as validate } from "@/app/api/v1/tasks/[id]/validations/route";
import { POST as override } from "@/app/api/v1/overrides/route";
import { POST as provenance } from "@/app/api/v1/provenance/route";
import { POST as createTask } from "@/app/api/v1/tasks/route";
import { seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/** One "owned by someone else" answer: another agent's task id answers exactly like an unknown one, on every route. */
let env: TestEnv;
const tokens = { owner: "", other: "" };
const HASH = "a".repeat(64);

beforeAll(async () => {
  env = await useTestBackend();
  tokens.owner = await seedToken({ label: "o", agent_id: "owner-agent", scopes: ["write"] });
  tokens.other = await seedToken({ label: "x", agent_id: "other-agent", scopes: ["write"] });
  const created = await callRoute(createTask, { token: tokens.owner, body: { task_id: "private-task", intent: "the owner's work", spec: {} } });
  expect(created.status).toBe(201);
  const run = await callRoute(startRun, { token: tokens.owner, params: { id: "private-task" }, body: { run_id: "private-run", skill: "s", input_hash: HASH, runner_version: "1" } });
  expect(run.status).toBe(201);
});
afterAll(async () => env?.cleanup());

/** Each probe with the id it names, so an answer can be compared with the id swapped. */
const probes: [string, (id: string) => Promise<{ status: number; json: unknown }>][] = [
  ["GET /tasks/{id}", (id) => callRoute(getTask, { token: tokens.other, params: { id } })],
  ["POST /tasks/{id}/runs", (id) => callRoute(startRun, { token: tokens.other, params: { id }, body: { skill: "s", input_hash: HASH, runner_version: "1" } })],
  ["POST /tasks/{id}/validations", (id) => callRoute(validate, { token: tokens.other, params: { id }, body: { critic_passed: true, runner_passed: true } })],
  ["POST /overrides", (id) => callRoute(override, { token: tokens.other, body: { task_id: id, note: "n" } })],
  ["POST /provenance (task)", (id) => callRoute(provenance, { token: tokens.other, body: { records: [{ artifact_type: "chunk", artifact_id: "c1", store: "default", input_hash: HASH, task_id: id }] } })],
];

describe("another agent's task answers like an unknown one", () => {
  it.each(probes)("%s", async (_name, probe) => {
    const theirs = await probe("private-task");
    const unknown = await probe("nosuch-task1");
    expect(theirs.status).toBe(unknown.status);
    expect(theirs.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(theirs.json).replaceAll("private-task", "ID")).toBe(JSON.stringify(unknown.json).replaceAll("nosuch-task1", "ID"));
  });

  it("POST /provenance naming another agent's run answers like an unknown run", async () => {
    const body = (run: string) => ({ records: [{ artifact_type: "chunk", artifact_id: "c1", store: "default", input_hash: HASH, run_id: run }] });
    const theirs = await callRoute(provenance, { token: tokens.other, body: body("private-run") });
    const unknown = await callRoute(provenance, { token: tokens.other, body: body("nosuch-run12") });
    expect(theirs.status).toBe(unknown.status);
    expect(JSON.stringify(theirs.json).replaceAll("private-run", "ID")).toBe(JSON.stringify(unknown.json).replaceAll("nosuch-run12", "ID"));
  });
});
