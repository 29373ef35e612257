import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { POST as createTask } from "@/app/api/v1/tasks/route";
import { POST as validate } from "@/app/api/v1/tasks/[id]/validations/route";
import { POST as createSession } from "@/app/api/v1/dialectic/sessions/route";
import { POST as postMessage } from "@/app/api/v1/dialectic/sessions/[id]/messages/route";
import { POST as provenance } from "@/app/api/v1/provenance/route";
import { governanceSql, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

vi.mock("server-only", () => ({}));

/** The ledger's and the reviews' limits: field sizes, open items per agent, the ledger's size. */
let env: TestEnv;
let token = "";
const HASH = "a".repeat(64);
const LIMITS = { DUALMIND_GOVERNANCE_FIELD_MAX_BYTES: "4096", DUALMIND_MAX_OPEN_TASKS_PER_AGENT: "3", DUALMIND_MAX_OPEN_REVIEWS_PER_AGENT: "2" };

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

  it("past DUALMIND_GOVERNANCE_MAX_BYTES agents' ledger writes answer 507 naming it instead of growing the ledger", async () => {
    const small = await useTestBackend({ ...LIMITS, DUALMIND_GOVERNANCE_MAX_BYTES: String(1024 * 1024) });
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
    } finally {
      await small.cleanup();
    }
  });
});
