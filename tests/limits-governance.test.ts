import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GET as listTasks, POST as createTask } from "@/app/api/v1/tasks/route";
import { GET as taskStatus } from "@/app/api/v1/tasks/[id]/route";
import { POST as startRun } from "@/app/api/v1/tasks/[id]/runs/route";
import { POST as validate } from "@/app/api/v1/tasks/[id]/validations/route";
import { GET as listSessions, POST as createSession } from "@/app/api/v1/dialectic/sessions/route";
import { POST as postMessage } from "@/app/api/v1/dialectic/sessions/[id]/messages/route";
import { GET as proofs, POST as provenance } from "@/app/api/v1/provenance/route";
import { PUT as putDocuments } from "@/app/api/v1/stores/[store]/documents/route";
import { POST as createMemory } from "@/app/api/v1/stores/[store]/memories/route";
import { governanceSql, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";
import { handleMcpPost } from "@/lib/mcp/http";
import TaskPage from "@/app/(dashboard)/ledger/tasks/[id]/page";
import SessionPage from "@/app/(dashboard)/sessions/[id]/page";
import { governance } from "@/lib/backend/governance";
import { renderToStaticMarkup } from "react-dom/server";
import { SIGNATURE_GENESIS, signMessage } from "@/lib/governance/dialectic";

vi.mock("server-only", () => ({}));
vi.mock("@/app/_server/session", () => ({ requireUser: async () => ({ id: 1, username: "viewer", role: "viewer" }) }));

/** The ledger's and the reviews' limits: field sizes, open items per agent, the ledger's size. */
let env: TestEnv;
let token = "";
const HASH = "a".repeat(64);
const LIMITS = { DUALMIND_GOVERNANCE_FIELD_MAX_BYTES: "4096", DUALMIND_MAX_OPEN_TASKS_PER_AGENT: "3", DUALMIND_MAX_OPEN_REVIEWS_PER_AGENT: "2", DUALMIND_LIST_MAX_BYTES: "16384" };

beforeAll(async () => {
  env = await useTestBackend(LIMITS);
  token = await seedToken({ label: "w", agent_id: "limit-agent", scopes: ["write"] });
});
afterAll(async () => env?.cleanup());

const limitOf = (json: { error?: { details?: { limit?: string }[] } }) => json.error?.details?.[0]?.limit;

describe("governance limits", () => {
  it("a task spec, validation details or review message past DUALMIND_GOVERNANCE_FIELD_MAX_BYTES answers 422 naming it, and nothing is stored", async () => {
    const big = { text: "x".repeat(5000) };
    const task = await callRoute(createTask, { token, body: { task_id: "big-spec", intent: "i", spec: big } });
    expect(task.status).toBe(422);
    expect(limitOf(task.json)).toBe("DUALMIND_GOVERNANCE_FIELD_MAX_BYTES");
    expect(Number((await governanceSql<{ n: number | string }>("select count(*) as n from tasks where client_id = ?", ["big-spec"]))[0].n)).toBe(0);

    const ok = await callRoute(createTask, { token, body: { task_id: "small-spec", intent: "i", spec: { text: "fine" } } });
    expect(ok.status).toBe(201);
    const details = await callRoute(validate, { token, params: { id: "small-spec" }, body: { critic_passed: true, runner_passed: true, details: big } });
    expect(details.status).toBe(422);
    expect(limitOf(details.json)).toBe("DUALMIND_GOVERNANCE_FIELD_MAX_BYTES");

    const session = await callRoute(createSession, { token, body: { session_id: "big-thesis", topic: "t" } });
    expect(session.status).toBe(201);
    // Every field under its own maximum, together past the limit.
    const thesis = { message_type: "thesis", reasoning: "r".repeat(3000), concerns: ["c".repeat(1500)] };
    const message = await callRoute(postMessage, { token, params: { id: "big-thesis" }, body: thesis });
    expect(message.status).toBe(422);
    expect(limitOf(message.json)).toBe("DUALMIND_GOVERNANCE_FIELD_MAX_BYTES");
    expect(Number((await governanceSql<{ n: number | string }>("select count(*) as n from dialectic_messages where client_id is not null and reasoning like ?", ["rrrr%"]))[0].n)).toBe(0);
  });

  it("pending tasks and active reviews per agent stop at their limits with 422 naming them; a retry of an existing one still answers", async () => {
    const other = await seedToken({ label: "o", agent_id: "count-agent", scopes: ["write"] });
    for (let i = 0; i < 3; i++) expect((await callRoute(createTask, { token: other, body: { task_id: `t${i}`, intent: "i", spec: {} } })).status).toBe(201);
    const fourth = await callRoute(createTask, { token: other, body: { task_id: "t3", intent: "i", spec: {} } });
    expect(fourth.status).toBe(422);
    expect(limitOf(fourth.json)).toBe("DUALMIND_MAX_OPEN_TASKS_PER_AGENT");
    expect((await callRoute(createTask, { token: other, body: { task_id: "t0", intent: "i", spec: {} } })).status).toBe(200);

    for (let i = 0; i < 2; i++) expect((await callRoute(createSession, { token: other, body: { session_id: `s${i}`, topic: "t" } })).status).toBe(201);
    const third = await callRoute(createSession, { token: other, body: { session_id: "s2", topic: "t" } });
    expect(third.status).toBe(422);
    expect(limitOf(third.json)).toBe("DUALMIND_MAX_OPEN_REVIEWS_PER_AGENT");
  });

  it("one agent's tasks and reviews sent at the same moment stop exactly at its limits (counted one after another on every engine)", async () => {
    const racer = await seedToken({ label: "r", agent_id: "race-agent", scopes: ["write"] });
    const tasks = await Promise.all(Array.from({ length: 8 }, (_, i) => callRoute(createTask, { token: racer, body: { task_id: `race-t${i}`, intent: "i", spec: {} } })));
    expect(tasks.map((r) => r.status).sort()).toEqual([201, 201, 201, 422, 422, 422, 422, 422]);
    const sessions = await Promise.all(Array.from({ length: 6 }, (_, i) => callRoute(createSession, { token: racer, body: { session_id: `race-s${i}`, topic: "t" } })));
    expect(sessions.map((r) => r.status).sort()).toEqual([201, 201, 422, 422, 422, 422]);
  });

  it("task and review lists stop at DUALMIND_LIST_MAX_BYTES and say where the next page starts; paging reaches every row", async () => {
    const lister = await seedToken({ label: "l", agent_id: "lister", scopes: ["read"] });
    for (const owner of ["o1", "o2", "o3", "o4"]) {
      const t = await seedToken({ label: owner, agent_id: owner, scopes: ["write"] });
      for (let i = 0; i < 3; i++) expect((await callRoute(createTask, { token: t, body: { task_id: `${owner}-t${i}`, intent: "i", spec: { text: "s".repeat(3500) }, assignees: ["lister"] } })).status).toBe(201);
      for (let i = 0; i < 2; i++) {
        expect((await callRoute(createSession, { token: t, body: { session_id: `${owner}-s${i}`, topic: "t", reviewer_agent_id: "lister" } })).status).toBe(201);
        expect((await callRoute(postMessage, { token: t, params: { id: `${owner}-s${i}` }, body: { message_type: "thesis", reasoning: "r".repeat(3500) } })).status).toBe(201);
      }
    }
    const seen: string[] = [];
    for (let offset: number | null = 0, pages = 0; offset !== null; pages++) {
      expect(pages).toBeLessThan(12);
      const page = await callRoute(listTasks, { token: lister, url: `http://127.0.0.1/api/v1/tasks?limit=200&offset=${offset}` });
      expect(page.status).toBe(200);
      expect(page.json.total).toBe(12);
      expect(JSON.stringify(page.json).length).toBeLessThan(16384 + 4096);
      seen.push(...page.json.tasks.map((t: { task_id: string }) => t.task_id));
      offset = page.json.next_offset;
    }
    expect(new Set(seen).size).toBe(12);

    const sessions = await callRoute(listSessions, { token: lister, url: "http://127.0.0.1/api/v1/dialectic/sessions?limit=200&transcript=true" });
    expect(sessions.status).toBe(200);
    expect(sessions.json.total).toBe(8);
    expect(sessions.json.sessions.length).toBeLessThan(8);
    expect(sessions.json.next_offset).toBe(sessions.json.sessions.length);
    expect(JSON.stringify(sessions.json).length).toBeLessThan(16384 + 4096);
  });

  it("a task's status carries the newest runs within DUALMIND_LIST_MAX_BYTES and counts the runs it left out", async () => {
    const t = await seedToken({ label: "r", agent_id: "run-agent", scopes: ["write"] });
    expect((await callRoute(createTask, { token: t, body: { task_id: "many-runs", intent: "i", spec: {} } })).status).toBe(201);
    for (let i = 0; i < 10; i++) {
      const artifacts = Array.from({ length: 40 }, (_, j) => ({ artifact_type: "doc", artifact_id: `r${i}-${j}-${"a".repeat(150)}`, store: "default" }));
      expect((await callRoute(startRun, { token: t, params: { id: "many-runs" }, body: { run_id: `run${i}`, skill: "s", input_hash: HASH, runner_version: "1", output_hash: HASH, exit_code: 0, artifacts } })).status).toBe(201);
    }
    const status = await callRoute(taskStatus, { token: t, params: { id: "many-runs" } });
    expect(status.status).toBe(200);
    expect(status.json.omitted.runs).toBeGreaterThan(0);
    expect(status.json.runs.length + status.json.omitted.runs).toBe(10);
    expect(status.json.runs.at(-1).run_id).toBe("run9");
    expect(status.json.omitted.artifacts).toBeGreaterThan(0);
    expect(JSON.stringify(status.json).length).toBeLessThan(16384 + 4096);
    // The task page says that older runs are left out.
    const html = renderToStaticMarkup(await TaskPage({ params: Promise.resolve({ id: "run-agent~many-runs" }) }));
    expect(html).toContain(`${status.json.omitted.runs} older runs not shown`);
  });

  it("a task's artifacts are read through an index on the task, not by scanning every fact in the ledger", async () => {
    const plan = env.backend === "pg"
      ? await governanceSql<Record<string, unknown>>("select indexname as detail from pg_indexes where tablename = 'provenance' and indexdef like '%(task_id, id)%'")
      : await governanceSql<Record<string, unknown>>("explain query plan select * from provenance where task_id = 'x' order by id desc limit 1000");
    expect(JSON.stringify(plan)).toContain("provenance_task_idx");
  });

  it("GET /provenance on an artifact with more facts than one answer reads counts every fact the token may see, and no more", async () => {
    const writer = await seedToken({ label: "hw", agent_id: "hot-agent", scopes: ["write"] });
    const limited = await seedToken({ label: "hl", agent_id: "hot-agent", scopes: ["read"], stores: ["default"] });
    const facts = (n: number, store: string, from: number) => Array.from({ length: n }, (_, i) => ({ artifact_type: "doc", artifact_id: "hot", store, input_hash: (from + i).toString(16).padStart(64, "0") }));
    for (const [n, store, from] of [[1000, "default", 0], [200, "default", 1000], [5, "other", 5000]] as const) {
      expect((await callRoute(provenance, { token: writer, body: { records: facts(n, store, from) } })).json.inserted).toBe(n);
    }
    const all = await callRoute(proofs, { token: writer, url: "http://127.0.0.1/api/v1/provenance?artifact_type=doc&artifact_id=hot" });
    expect(all.status).toBe(200);
    expect(all.json.provenance.length + all.json.omitted.provenance).toBe(1205);
    expect(JSON.stringify(all.json).length).toBeLessThan(16384 + 4096);
    const mine = await callRoute(proofs, { token: limited, url: "http://127.0.0.1/api/v1/provenance?artifact_type=doc&artifact_id=hot" });
    expect(mine.json.provenance.length + mine.json.omitted.provenance).toBe(1200);
    expect(mine.json.provenance.every((f: { store: string }) => f.store === "default")).toBe(true);
  });

  it("GET /provenance leaves out a run's artifacts in stores the token may not read, as GET /tasks/:id does", async () => {
    const writer = await seedToken({ label: "pw", agent_id: "prov-agent", scopes: ["write"] });
    const limited = await seedToken({ label: "pl", agent_id: "prov-agent", scopes: ["read"], stores: ["default"] });
    expect((await callRoute(createTask, { token: writer, body: { task_id: "prov-task", intent: "i", spec: {} } })).status).toBe(201);
    const artifacts = [{ artifact_type: "doc", artifact_id: "pub-x", store: "default" }, { artifact_type: "doc", artifact_id: "SECRET-in-other", store: "other" }];
    expect((await callRoute(startRun, { token: writer, params: { id: "prov-task" }, body: { run_id: "xs1", skill: "s", input_hash: HASH, runner_version: "1", output_hash: HASH, exit_code: 0, artifacts } })).status).toBe(201);
    const answer = await callRoute(proofs, { token: limited, url: "http://127.0.0.1/api/v1/provenance?artifact_type=doc&artifact_id=pub-x&store=default" });
    expect(answer.status).toBe(200);
    expect(answer.json.runs.map((r: { run_id: string }) => r.run_id)).toEqual(["xs1"]);
    expect(JSON.stringify(answer.json)).not.toContain("SECRET-in-other");
    const status = await callRoute(taskStatus, { token: limited, params: { id: "prov-task" } });
    expect(JSON.stringify(status.json)).not.toContain("SECRET-in-other");
  });

  it("past DUALMIND_GOVERNANCE_MAX_BYTES agents' ledger writes answer 507 naming it instead of growing the ledger", async () => {
    // A share larger than the ledger, so this one agent fills the whole ledger (tests/limits-ledger-share*.test.ts hold it to its share).
    const small = await useTestBackend({ ...LIMITS, DUALMIND_GOVERNANCE_MAX_BYTES: String(1024 * 1024), DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT: String(64 * 1024 * 1024) });
    try {
      const t = await seedToken({ label: "f", agent_id: "fill-agent", scopes: ["write"] });
      let last: Awaited<ReturnType<typeof callRoute>> = { status: 0, json: {} };
      for (let i = 0; i < 400 && last.status !== 507; i++) {
        last = await callRoute(provenance, { token: t, body: { records: Array.from({ length: 50 }, (_, j) => ({ artifact_type: "doc", artifact_id: `a${i}-${j}-${"p".repeat(200)}`, store: "default", input_hash: HASH })) } });
        expect([200, 201, 507]).toContain(last.status);
      }
      expect(last.status).toBe(507);
      expect(limitOf(last.json)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES");
      const task = await callRoute(createTask, { token: t, body: { task_id: "after-full", intent: "i", spec: {} } });
      expect(task.status).toBe(507);
      // A store write adds an audit row to the same ledger: an agent's is refused too, at once (its check reads the same measure of the ledger).
      const refused = await callRoute(putDocuments, { token: t, params: { store: "default" }, body: { documents: [{ path: "full/0.md", content: "# after the ledger filled" }] } });
      expect(refused.status).toBe(507);
      expect(limitOf(refused.json)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES");
      // Memory writes too (each audit row carries the change's diff), and nothing is written.
      const memory = await callRoute(createMemory, { token: t, params: { store: "default" }, body: { path: "full/after", body: "after the ledger filled" } });
      expect(memory.status).toBe(507);
      expect(limitOf(memory.json)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES");
      expect(await governanceSql("select id from audit_log where target like ?", ["%memory:full/after"])).toEqual([]);
    } finally {
      await small.cleanup();
    }
  });

  it("an id holding a bare % is a 404 on the task and review pages and an invalid-params error from MCP resources/read, never a 500", async () => {
    for (const page of [TaskPage, SessionPage]) {
      const rendered = page({ params: Promise.resolve({ id: "%" }) });
      // notFound() throws Next's 404 signal; the old double decode threw URIError (a bare 500).
      await expect(rendered).rejects.toMatchObject({ digest: expect.stringContaining("404") });
    }
    const res = await handleMcpPost(
      new Request("http://127.0.0.1/api/mcp", {
        method: "POST",
        headers: { accept: "application/json, text/event-stream", "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "resources/read", params: { uri: "dualmind://dialectic/sessions/%" } }),
      }),
    );
    const body = (await res.json()) as { error?: { code: number; message: string } };
    expect(body.error?.code).toBe(-32602);
    expect(body.error?.message).toContain("%-escape");
  });

  it("a restore whose old-style messages in two sessions share one id answers 409 naming the id, not a 500, and restores nothing", async () => {
    const now = Date.now();
    const session = (sid: string, agent: string, mid: string) => {
      const base = { id: mid, sessionId: sid, seq: 1, agentId: agent, messageType: "thesis" as const, timestamp: now, reasoning: "old", rootCause: null, proposedConditionsJson: null, observedMetricsJson: null, concernsJson: null, agrees: null };
      const signature = signMessage({ prevSignature: SIGNATURE_GENESIS, message: base as never });
      return { sessionId: sid, pausedAgentId: agent, reviewerAgentId: null, phase: "antithesis", status: "active", createdAt: now, updatedAt: now, topic: "t", sessionType: "review", resolutionJson: null, failureReason: null, maxRounds: 6, idleTimeoutMs: 86400000, messages: [{ ...base, signature }] };
    };
    const snapshot = (sessions: unknown[]) => ({ format: "dualmind.dialectic-sessions.v1", exportedAt: now, sessions });
    await expect(governance().restoreDialecticSessions({ snapshot: snapshot([session("rx1", "B", "dupmsg"), session("rx2", "C", "dupmsg")]), actor: "admin" })).rejects.toMatchObject({ status: 409, message: expect.stringContaining("message id dupmsg") });
    expect((await governance().restoreDialecticSessions({ snapshot: snapshot([session("rx1", "B", "dupmsg")]), actor: "admin" })).restored).toBe(1);
    // The id taken by a session already restored: the second restore is refused the same way.
    await expect(governance().restoreDialecticSessions({ snapshot: snapshot([session("rx2", "C", "dupmsg")]), actor: "admin" })).rejects.toMatchObject({ status: 409, message: expect.stringContaining("message id dupmsg") });
    expect(Number((await governanceSql<{ n: number | string }>("select count(*) as n from dialectic_sessions where session_id = ?", ["rx2"]))[0].n)).toBe(0);
    // A session's round limit past what PostgreSQL stores (32 bits) is refused as bad input, not a 500.
    await expect(governance().restoreDialecticSessions({ snapshot: snapshot([{ ...session("rx3", "D", "m3"), maxRounds: 2 ** 31 }]), actor: "admin" })).rejects.toMatchObject({ name: "ZodError" });
  });

  it("a provenance fact is each recorder's own: a second agent recording the same fact is told it inserted one, and its task lists it", async () => {
    const first = await seedToken({ label: "f1", agent_id: "fact-first", scopes: ["write"] });
    const second = await seedToken({ label: "f2", agent_id: "fact-second", scopes: ["write"] });
    const fact = { artifact_type: "doc", artifact_id: "d9", store: "default", input_hash: "b".repeat(64) };
    expect((await callRoute(provenance, { token: first, body: { records: [fact] } })).json).toEqual({ inserted: 1, existing: 0 });
    expect((await callRoute(createTask, { token: second, body: { task_id: "fact-task", intent: "i", spec: {} } })).status).toBe(201);
    expect((await callRoute(provenance, { token: second, body: { records: [{ ...fact, task_id: "fact-task" }] } })).json).toEqual({ inserted: 1, existing: 0 });
    const status = await callRoute(taskStatus, { token: second, params: { id: "fact-task" } });
    expect(status.json.artifacts.map((a: { artifact_id: string }) => a.artifact_id)).toEqual(["d9"]);
    // A retry of one's own fact is still a no-op.
    expect((await callRoute(provenance, { token: second, body: { records: [{ ...fact, task_id: "fact-task" }] } })).json).toEqual({ inserted: 0, existing: 1 });
  });
});
