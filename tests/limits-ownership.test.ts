import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { GET as getTask } from "@/app/api/v1/tasks/[id]/route";
import { POST as startRun } from "@/app/api/v1/tasks/[id]/runs/route";
import { POST as finishRun } from "@/app/api/v1/tasks/[id]/runs/[runId]/finish/route";
import { POST as validate } from "@/app/api/v1/tasks/[id]/validations/route";
import { POST as override } from "@/app/api/v1/overrides/route";
import { POST as provenance } from "@/app/api/v1/provenance/route";
import { POST as createTask } from "@/app/api/v1/tasks/route";
import { POST as createSession } from "@/app/api/v1/dialectic/sessions/route";
import { GET as getSession } from "@/app/api/v1/dialectic/sessions/[id]/route";
import { POST as postMessage } from "@/app/api/v1/dialectic/sessions/[id]/messages/route";
import { POST as claimSession } from "@/app/api/v1/dialectic/sessions/[id]/claim/route";
import { POST as abandonSession } from "@/app/api/v1/dialectic/sessions/[id]/abandon/route";
import { GET as verifySession } from "@/app/api/v1/dialectic/sessions/[id]/verify/route";
import { GET as exportSession } from "@/app/api/v1/dialectic/sessions/[id]/export/route";
import { handleMcpPost } from "@/lib/mcp/http";
import { governance } from "@/lib/backend/governance";
import { findByClientId } from "@/app/_server/pages";
import { OwnedIdChoices } from "@/components/owned-id-choices";
import { GET as dashboardExport } from "@/app/(dashboard)/sessions/[id]/export/route";
import type { OwnedChoice } from "@/lib/governance/owned-ids";
import { seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

vi.mock("server-only", () => ({}));
// The dashboard's sign-in is not what these tests are about: every dashboard handler here runs as a signed-in viewer.
vi.mock("@/app/_server/session", () => ({ requireRoleForAction: async () => ({ id: 1, username: "viewer", role: "viewer" }) }));

/** One MCP tools/call, answered as { status, json }: the tool's error (or result) as the agent reads it. */
async function mcpTool(token: string, name: string, args: Record<string, unknown>): Promise<{ status: number; json: unknown }> {
  const res = await handleMcpPost(
    new Request("http://127.0.0.1/api/mcp", {
      method: "POST",
      headers: { accept: "application/json, text/event-stream", "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
    }),
  );
  const body = (await res.json()) as { result?: { isError?: boolean; structuredContent?: unknown; content?: unknown }; error?: unknown };
  return { status: body.result?.isError || body.error ? 400 : res.status, json: body.error ?? body.result };
}

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
  ["POST /tasks/{owner~id}/runs", (id) => callRoute(startRun, { token: tokens.other, params: { id: `owner-agent~${id}` }, body: { skill: "s", input_hash: HASH, runner_version: "1" } })],
  ["MCP task_status", (id) => mcpTool(tokens.other, "task_status", { task_id: id })],
  ["MCP record_run", (id) => mcpTool(tokens.other, "record_run", { task_id: id, skill: "s", input_hash: HASH, runner_version: "1" })],
  ["MCP record_validation", (id) => mcpTool(tokens.other, "record_validation", { task_id: id, critic_passed: true, runner_passed: true })],
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

/** Reviews: another agent's session (assigned to its own reviewer, so not open to claims) answers like an unknown one. */
describe("another agent's review answers like an unknown one", () => {
  const review = { owner: "", other: "" };
  beforeAll(async () => {
    review.owner = await seedToken({ label: "ro", agent_id: "review-owner", scopes: ["write"] });
    review.other = await seedToken({ label: "rx", agent_id: "review-other", scopes: ["write"] });
    const created = await callRoute(createSession, { token: review.owner, body: { session_id: "private-review", topic: "the owner's review", reviewer_agent_id: "review-critic" } });
    expect(created.status).toBe(201);
    expect((await callRoute(postMessage, { token: review.owner, params: { id: "private-review" }, body: { message_type: "thesis", reasoning: "mine" } })).status).toBe(201);
  });

  const sessionProbes: [string, (id: string) => Promise<{ status: number; json: unknown }>][] = [
    ["GET /dialectic/sessions/{id}", (id) => callRoute(getSession, { token: review.other, params: { id } })],
    ["POST /dialectic/sessions/{id}/messages", (id) => callRoute(postMessage, { token: review.other, params: { id }, body: { message_type: "antithesis", reasoning: "r" } })],
    ["POST /dialectic/sessions/{id}/claim", (id) => callRoute(claimSession, { token: review.other, params: { id } })],
    ["POST /dialectic/sessions/{id}/abandon", (id) => callRoute(abandonSession, { token: review.other, params: { id }, body: {} })],
    ["GET /dialectic/sessions/{id}/verify", (id) => callRoute(verifySession, { token: review.other, params: { id } })],
    ["GET /dialectic/sessions/{id}/export", (id) => callRoute(exportSession, { token: review.other, params: { id } })],
    ["MCP dialectic_get", (id) => mcpTool(review.other, "dialectic_get", { session_id: id })],
    ["MCP dialectic_post", (id) => mcpTool(review.other, "dialectic_post", { session_id: id, message_type: "antithesis", reasoning: "r" })],
    ["GET /dialectic/sessions/{owner~id}", (id) => callRoute(getSession, { token: review.other, params: { id: `review-owner~${id}` } })],
  ];

  it.each(sessionProbes)("%s", async (_name, probe) => {
    const theirs = await probe("private-review");
    const unknown = await probe("nosuch-revie");
    expect(theirs.status).toBe(unknown.status);
    expect(theirs.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(theirs.json).replaceAll("private-review", "ID")).toBe(JSON.stringify(unknown.json).replaceAll("nosuch-revie", "ID"));
  });

  it("another agent may open a review with the same id: its own, answered 201, and neither sees the other's", async () => {
    const mine = await callRoute(createSession, { token: review.other, body: { session_id: "private-review", topic: "the other's review" } });
    expect(mine.status).toBe(201);
    expect(mine.json).toMatchObject({ created: true, session: { session_id: "private-review", key: "review-other~private-review", paused_agent_id: "review-other", topic: "the other's review" } });
    expect((await callRoute(getSession, { token: review.other, params: { id: "private-review" } })).json).toMatchObject({ topic: "the other's review", message_count: 0 });
    expect((await callRoute(getSession, { token: review.owner, params: { id: "private-review" } })).json).toMatchObject({ topic: "the owner's review", message_count: 1 });
    // The owner's retry is still a retry; the same id with other facts is still a conflict.
    expect((await callRoute(createSession, { token: review.owner, body: { session_id: "private-review", topic: "the owner's review", reviewer_agent_id: "review-critic" } })).status).toBe(200);
    expect((await callRoute(createSession, { token: review.owner, body: { session_id: "private-review", topic: "something else", reviewer_agent_id: "review-critic" } })).status).toBe(409);
  });
});

describe("task ids are namespaced per requester", () => {
  it("another agent may create a task with the same id: its own, answered 201; retries by the owner stay retries", async () => {
    const owner = await seedToken({ label: "no", agent_id: "ns-owner", scopes: ["write"] });
    const other = await seedToken({ label: "nx", agent_id: "ns-other", scopes: ["write"] });
    expect((await callRoute(createTask, { token: owner, body: { task_id: "t1", intent: "owner's", spec: { a: 1 } } })).status).toBe(201);
    const theirs = await callRoute(createTask, { token: other, body: { task_id: "t1", intent: "other's", spec: { b: 2 } } });
    expect(theirs.status).toBe(201);
    expect(theirs.json).toMatchObject({ created: true, task: { task_id: "t1", key: "ns-other~t1", requested_by: "ns-other", intent: "other's" } });
    expect((await callRoute(getTask, { token: owner, params: { id: "t1" } })).json).toMatchObject({ task: { task_id: "t1", intent: "owner's" } });
    expect((await callRoute(getTask, { token: other, params: { id: "t1" } })).json).toMatchObject({ task: { task_id: "t1", intent: "other's" } });
    // A run on each: under each agent's own task, named by its id.
    const run = await callRoute(startRun, { token: other, params: { id: "t1" }, body: { skill: "s", input_hash: HASH, runner_version: "1" } });
    expect(run.json).toMatchObject({ run: { task_id: "t1" } });
    expect((await callRoute(getTask, { token: owner, params: { id: "t1" } })).json).toMatchObject({ runs: [] });
    expect((await callRoute(createTask, { token: owner, body: { task_id: "t1", intent: "owner's", spec: { a: 1 } } })).status).toBe(200);
    expect((await callRoute(createTask, { token: owner, body: { task_id: "t1", intent: "changed", spec: { a: 1 } } })).status).toBe(409);
  });

  it("an assignee of two agents' tasks with one id is told the id is ambiguous and names each by its key", async () => {
    const a = await seedToken({ label: "aa", agent_id: "amb-a", scopes: ["write"] });
    const b = await seedToken({ label: "ab", agent_id: "amb-b", scopes: ["write"] });
    const helper = await seedToken({ label: "ah", agent_id: "amb-helper", scopes: ["write"] });
    for (const [token, intent] of [[a, "a's"], [b, "b's"]]) {
      expect((await callRoute(createTask, { token, body: { task_id: "shared", intent, spec: {}, assignees: ["amb-helper"] } })).status).toBe(201);
    }
    const ambiguous = await callRoute(getTask, { token: helper, params: { id: "shared" } });
    expect(ambiguous.status).toBe(409);
    expect(JSON.stringify(ambiguous.json)).toContain("amb-a~shared");
    expect(JSON.stringify(ambiguous.json)).toContain("amb-b~shared");
    expect((await callRoute(getTask, { token: helper, params: { id: "amb-b~shared" } })).json).toMatchObject({ task: { task_id: "shared", key: "amb-b~shared", intent: "b's" } });
    // Either owner still names its own by the bare id.
    expect((await callRoute(getTask, { token: a, params: { id: "shared" } })).json).toMatchObject({ task: { intent: "a's" } });
  });
});

/**
 * Run, validation, override and message ids are unique per parent (a task, an actor, a session): an id another
 * agent used under its own task or review is free under the caller's, answered exactly as an id nobody used.
 */
describe("another agent's run, validation, override and message ids answer like unused ones", () => {
  const child = { owner: "", other: "" };
  const T0 = 1_700_000_000_000;
  beforeAll(async () => {
    child.owner = await seedToken({ label: "co", agent_id: "child-owner", scopes: ["write"] });
    child.other = await seedToken({ label: "cx", agent_id: "child-other", scopes: ["write"] });
    for (const token of [child.owner, child.other]) {
      expect((await callRoute(createTask, { token, body: { task_id: "work", intent: "each agent's own work", spec: {} } })).status).toBe(201);
    }
    const own = { token: child.owner, params: { id: "work" } };
    expect((await callRoute(startRun, { ...own, body: { run_id: "their-run", skill: "owner-skill", input_hash: HASH, runner_version: "1", started_at: T0 } })).status).toBe(201);
    expect((await callRoute(validate, { ...own, body: { validation_id: "their-val", critic_passed: true, runner_passed: true } })).status).toBe(201);
    expect((await callRoute(override, { token: child.owner, body: { override_id: "their-ovr", note: "the owner's" } })).status).toBe(201);
    expect((await callRoute(createSession, { token: child.owner, body: { session_id: "their-review", topic: "t" } })).status).toBe(201);
    expect((await callRoute(postMessage, { token: child.owner, params: { id: "their-review" }, body: { message_id: "their-msg", message_type: "thesis", reasoning: "the owner's thesis" } })).status).toBe(201);
  });

  // Each probe works under a fresh task or review of the caller's own, so what one probe wrote never answers another.
  let parents = 0;
  const ownTask = async () => {
    const id = `work-${++parents}`;
    expect((await callRoute(createTask, { token: child.other, body: { task_id: id, intent: "the other's work", spec: {} } })).status).toBe(201);
    return id;
  };
  const ownReview = async () => {
    const id = `review-${++parents}`;
    expect((await callRoute(createSession, { token: child.other, body: { session_id: id, topic: "t" } })).status).toBe(201);
    return id;
  };
  type Answer = { status: number; json: unknown; parent: string };
  const runBody = { skill: "s", input_hash: HASH, runner_version: "1", started_at: T0 };
  const under = async (parent: Promise<string>, call: (p: string) => Promise<{ status: number; json: unknown }>): Promise<Answer> => {
    const p = await parent;
    return { ...(await call(p)), parent: p };
  };
  const childProbes: [string, string, (id: string) => Promise<Answer>][] = [
    ["POST /tasks/{id}/runs (run_id)", "their-run", (id) => under(ownTask(), (task) => callRoute(startRun, { token: child.other, params: { id: task }, body: { run_id: id, ...runBody } }))],
    ["POST /tasks/{id}/runs/{runId}/finish", "their-run", (id) => under(ownTask(), (task) => callRoute(finishRun, { token: child.other, params: { id: task, runId: id }, body: { output_hash: HASH, exit_code: 0, finished_at: T0 + 1 } }))],
    ["POST /tasks/{id}/validations (validation_id)", "their-val", (id) => under(ownTask(), (task) => callRoute(validate, { token: child.other, params: { id: task }, body: { validation_id: id, critic_passed: false, runner_passed: null } }))],
    ["POST /tasks/{id}/validations (run_id)", "their-run", (id) => under(ownTask(), (task) => callRoute(validate, { token: child.other, params: { id: task }, body: { run_id: id, critic_passed: false, runner_passed: null } }))],
    ["POST /overrides (override_id)", "their-ovr", (id) => under(ownTask(), (task) => callRoute(override, { token: child.other, body: { override_id: id, task_id: task, note: "the other's" } }))],
    ["POST /dialectic/sessions/{id}/messages (message_id)", "their-msg", (id) => under(ownReview(), (review) => callRoute(postMessage, { token: child.other, params: { id: review }, body: { message_id: id, message_type: "thesis", reasoning: "r" } }))],
    ["MCP record_run (run_id)", "their-run", (id) => under(ownTask(), (task) => mcpTool(child.other, "record_run", { task_id: task, run_id: id, ...runBody }))],
    ["MCP finish_run", "their-run", (id) => under(ownTask(), (task) => mcpTool(child.other, "finish_run", { task_id: task, run_id: id, output_hash: HASH, exit_code: 0, finished_at: T0 + 1 }))],
    ["MCP record_validation (validation_id)", "their-val", (id) => under(ownTask(), (task) => mcpTool(child.other, "record_validation", { task_id: task, validation_id: id, critic_passed: false, runner_passed: null }))],
    ["MCP dialectic_post (message_id)", "their-msg", (id) => under(ownReview(), (review) => mcpTool(child.other, "dialectic_post", { session_id: review, message_id: id, message_type: "thesis", reasoning: "r" }))],
  ];

  /** The answer with the id and its parent named, and every recording time and hash masked: what is left must be the same bytes. */
  const shown = (a: Answer, id: string) =>
    JSON.stringify(a.json)
      .replaceAll(a.parent, "PARENT")
      .replaceAll(id, "ID")
      .replace(/\b1\d{12}\b/g, "T")
      .replace(/[0-9a-f]{64}/g, "H");

  it.each(childProbes)("%s", async (_name, theirs, probe) => {
    const unused = `${theirs.slice(0, 6)}unused-${Math.random().toString(36).slice(2, 8)}`;
    const usedByOther = await probe(theirs);
    const neverUsed = await probe(unused);
    expect(usedByOther.status).toBe(neverUsed.status);
    expect(shown(usedByOther, theirs)).toBe(shown(neverUsed, unused));
  });

  it("a provenance record's run_id names the run of its task_id; without one, the one run of that id among the caller's tasks", async () => {
    const token = await seedToken({ label: "pr", agent_id: "prov-agent", scopes: ["write"] });
    for (const task of ["prov-1", "prov-2"]) {
      expect((await callRoute(createTask, { token, body: { task_id: task, intent: task, spec: {} } })).status).toBe(201);
      expect((await callRoute(startRun, { token, params: { id: task }, body: { run_id: "same-run", ...runBody } })).status).toBe(201);
    }
    const record = (extra: object) => ({ records: [{ artifact_type: "chunk", artifact_id: `c-${JSON.stringify(extra)}`, store: "default", input_hash: HASH, run_id: "same-run", ...extra }] });
    const ambiguous = await callRoute(provenance, { token, body: record({}) });
    expect(ambiguous.status).toBe(422);
    expect(JSON.stringify(ambiguous.json)).toContain("give its task_id");
    expect((await callRoute(provenance, { token, body: record({ task_id: "prov-2" }) })).json).toEqual({ inserted: 1, existing: 0 });
    const status = await callRoute(getTask, { token, params: { id: "prov-2" } });
    expect((status.json as { artifacts: { run_id: string; task_id: string }[] }).artifacts).toEqual([expect.objectContaining({ run_id: "same-run", task_id: "prov-2" })]);
    expect((await callRoute(getTask, { token, params: { id: "prov-1" } })).json).toMatchObject({ artifacts: [] });
  });

  it("both agents keep their own rows under the same ids", async () => {
    const mine = await callRoute(getTask, { token: child.owner, params: { id: "work" } });
    expect(mine.json).toMatchObject({ runs: [{ run_id: "their-run", skill: "owner-skill" }], validations: [{ validation_id: "their-val", critic_passed: true }] });
    // The other agent's own "work" takes the same ids as rows of its own.
    const own = { token: child.other, params: { id: "work" } };
    expect((await callRoute(startRun, { ...own, body: { run_id: "their-run", skill: "other-skill", input_hash: HASH, runner_version: "1" } })).status).toBe(201);
    expect((await callRoute(validate, { ...own, body: { validation_id: "their-val", run_id: "their-run", critic_passed: false, runner_passed: null } })).status).toBe(201);
    expect((await callRoute(getTask, own)).json).toMatchObject({ runs: [{ run_id: "their-run", skill: "other-skill" }], validations: [{ validation_id: "their-val", run_id: "their-run", critic_passed: false }] });
    expect((await callRoute(getTask, { token: child.owner, params: { id: "work" } })).json).toMatchObject({ runs: [{ run_id: "their-run", skill: "owner-skill" }] });
    const thread = await callRoute(getSession, { token: child.owner, params: { id: "their-review" } });
    expect(thread.json).toMatchObject({ messages: [{ id: "their-msg", reasoning: "the owner's thesis" }] });
  });
});

/** The operator's pages (/ledger/tasks/<id>, /sessions/<id>): a bare id several owners chose is a choice between them, by key. */
describe("an operator page opened with an id several agents chose", () => {
  beforeAll(async () => {
    for (const agent of ["page-a", "page-b"]) {
      const token = await seedToken({ label: agent, agent_id: agent, scopes: ["write"] });
      expect((await callRoute(createTask, { token, body: { task_id: "shared-page", intent: `${agent}'s task`, spec: {} } })).status).toBe(201);
      expect((await callRoute(createSession, { token, body: { session_id: "shared-page", topic: `${agent}'s review` } })).status).toBe(201);
    }
  });

  const pages: { kind: string; basePath: string; load: (id: string) => Promise<unknown>; choices: (id: string) => Promise<OwnedChoice[]>; title: (r: unknown) => string }[] = [
    { kind: "task", basePath: "/ledger/tasks", load: (taskId: string) => governance().getTaskStatus({ taskId }), choices: (clientId: string) => governance().listTasksByClientId({ clientId }), title: (r: unknown) => (r as { task: { intent: string } }).task.intent },
    { kind: "review", basePath: "/sessions", load: (sessionId: string) => governance().getDialecticSession({ sessionId }), choices: (clientId: string) => governance().listDialecticSessionsByClientId({ clientId }), title: (r: unknown) => (r as { topic: string }).topic },
  ];

  it.each(pages)("$basePath/<id>: a choice of each owner's $kind, linked by key; a key opens one; an unknown id is a 404", async ({ kind, basePath, load, choices, title }) => {
    const shared = await findByClientId({ id: "shared-page", load, choices });
    expect(shared && "choices" in shared ? shared.choices.map((c) => [c.key, c.owner]).sort() : shared).toEqual([
      ["page-a~shared-page", "page-a"],
      ["page-b~shared-page", "page-b"],
    ]);
    if (!shared || !("choices" in shared)) return;
    const html = renderToStaticMarkup(createElement(OwnedIdChoices, { kind, id: "shared-page", basePath, backHref: basePath, backLabel: "back", choices: shared.choices }));
    expect(html).toContain(`href="${basePath}/page-a~shared-page"`);
    expect(html).toContain(`href="${basePath}/page-b~shared-page"`);
    expect(html).toContain(`page-b&#x27;s ${kind}`);

    const one = await findByClientId({ id: "page-b~shared-page", load, choices });
    expect(one && "found" in one ? title(one.found) : one).toBe(`page-b's ${kind}`);
    expect(await findByClientId({ id: "nosuch-page", load, choices })).toBeNull();
    expect(await findByClientId({ id: "not an id!", load, choices })).toBeNull();
  });

  it("the review's download with such an id sends the reader to the choice; by key it downloads that review", async () => {
    const download = (id: string) => dashboardExport(new Request(`http://127.0.0.1/sessions/${id}/export`), { params: Promise.resolve({ id }) });
    const shared = await download("shared-page");
    expect(shared.status).toBe(303);
    expect(shared.headers.get("location")).toBe("/sessions/shared-page");
    const one = await download("page-a~shared-page");
    expect(one.status).toBe(200);
    expect((await one.json()).sessions.map((x: { topic: string }) => x.topic)).toEqual(["page-a's review"]);
    expect((await download("nosuch-page")).status).toBe(404);
  });
});
