import { pgEngine } from "@/lib/db/engine";
import { describe, expect, it } from "vitest";
import { governanceOn } from "@/lib/backend/governance";
import { isAppError } from "@/lib/errors";
import { useTwoReplicas } from "./helpers";

const replicas = useTwoReplicas({ max: 4 });
const HASH = "c".repeat(64);

/** 201-or-409: a post either lands or is refused for being out of turn; anything else fails the test. */
async function landed(p: Promise<unknown>): Promise<boolean> {
  try {
    await p;
    return true;
  } catch (e) {
    if (isAppError(e) && e.code === "conflict") return false;
    throw e;
  }
}

describe("dialectic and ledger on two replicas of one PostgreSQL database", () => {
  it("keeps seq unique and gap-free, turns alternating and signatures chained when both agents post at once from both replicas", async () => {
    const [a, b] = [governanceOn(pgEngine(replicas.a())), governanceOn(pgEngine(replicas.b()))];
    await a.createDialecticSession({ input: { session_id: "race", topic: "race", reviewer_agent_id: "bob", max_rounds: 100 }, agentId: "alice" });
    await b.postDialecticMessage({ sessionId: "race", agentId: "alice", input: { message_type: "thesis", reasoning: "t" } });
    await a.postDialecticMessage({ sessionId: "race", agentId: "bob", input: { message_type: "antithesis", reasoning: "a" } });

    // 4 waves of 10 concurrent synthesis posts, alternating agents and replicas: each wave lands at least one.
    let acknowledged = 2;
    for (let wave = 0; wave < 4; wave++) {
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          landed((i % 2 ? a : b).postDialecticMessage({ sessionId: "race", agentId: i % 4 < 2 ? "alice" : "bob", input: { message_type: "synthesis", reasoning: `w${wave}-${i}`, agrees: false } })),
        ),
      );
      const n = results.filter(Boolean).length;
      expect(n).toBeGreaterThan(0);
      acknowledged += n;
    }

    const view = await b.getDialecticSessionForAgent({ sessionId: "race", agentId: "alice", isAdmin: false });
    expect(view.messages!.map((m) => m.seq)).toEqual(Array.from({ length: acknowledged }, (_, i) => i + 1));
    const synth = view.messages!.filter((m) => m.message_type === "synthesis");
    for (let i = 1; i < synth.length; i++) expect(synth[i].agent_id).not.toBe(synth[i - 1].agent_id);
    expect(view.message_count).toBe(acknowledged);
    expect(await a.verifyDialecticSession({ sessionId: "race" })).toEqual({ ok: true, messages: acknowledged });
  });

  it("keeps one audit chain when overrides, token changes and validations land on both replicas at once", async () => {
    const [a, b] = [governanceOn(pgEngine(replicas.a())), governanceOn(pgEngine(replicas.b()))];
    await a.createTask({ input: { task_id: "chain", intent: "i", spec: {} }, requestedBy: "alice" });
    const caller = { agentId: "alice", isAdmin: false, stores: null };
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => {
        const on = i % 2 ? a : b;
        if (i % 3 === 0) return on.createApiToken({ input: { label: "racer", agent_id: `agent-${i}`, scopes: ["read"] }, actor: "test" });
        if (i % 3 === 1) return on.recordOverride({ input: { override_id: `o-${i}`, task_id: "chain", note: "n" }, actor: "agent:alice", tokenLabel: "alice", caller });
        return on.recordValidation({ taskId: "chain", input: { critic_passed: true, runner_passed: i % 4 === 0 }, caller });
      }),
    );
    // 4 tokens + 4 overrides + 4 validations audited (a validation is its reviewer's audit row, as on SQLite).
    expect(await b.verifyAuditChain({})).toEqual({ ok: true, entries: 12 });
    const labels = (await a.listApiTokens({})).map((t) => t.label).sort();
    expect(labels).toEqual(["racer", "racer (2)", "racer (3)", "racer (4)"]);
    const status = await b.getTaskStatus({ taskId: "chain" });
    expect(status.validations).toHaveLength(4);
    expect(status.overrides).toHaveLength(4);
  });

  it("answers a retried message racing its first attempt on the other replica as the same message", async () => {
    const [a, b] = [governanceOn(pgEngine(replicas.a())), governanceOn(pgEngine(replicas.b()))];
    await a.createDialecticSession({ input: { session_id: "retry", topic: "r", reviewer_agent_id: "bob" }, agentId: "alice" });
    const input = { message_id: "m-retry", message_type: "thesis" as const, reasoning: "same" };
    const answers = await Promise.all([a, b, a, b].map((on) => on.postDialecticMessage({ sessionId: "retry", agentId: "alice", input })));
    expect(answers.filter((x) => x.created)).toHaveLength(1);
    expect(new Set(answers.map((x) => x.message.seq))).toEqual(new Set([1]));
    const task = await Promise.all([a, b].map((on) => on.recordRunStart({ taskId: "nope", input: { skill: "s", input_hash: HASH, runner_version: "1" }, caller: { agentId: "x", isAdmin: false, stores: null } }).catch((e: unknown) => e)));
    expect(task.every((e) => isAppError(e) && e.code === "not_found")).toBe(true);
  });
});
