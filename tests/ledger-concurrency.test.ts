import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { runTogether } from "./fixtures/start-together";
import { governanceSql, useTestBackend, type TestEnv } from "./backend";

type Outcome = { sessionId: string; messageId?: string; seq?: number; error?: string };
type RacerReport = { racer: string; posted: Outcome[]; refused: Outcome[] };

// The racers inherit this process's env: DATA_DIR, and on PostgreSQL DATABASE_URL.
const RACER = path.join(process.cwd(), "tests", "fixtures", "dialectic-racer.ts");
const race = (envs: Record<string, string>[]) => runTogether<RacerReport>(RACER, envs);

let env: TestEnv;
beforeEach(async () => {
  env = await useTestBackend();
});
afterEach(() => env.cleanup());

const SESSIONS = Array.from({ length: 30 }, (_, i) => `race-${i}`);

/** Stored under the session's key: alice opens every session. */
async function messagesOf(sessionId: string) {
  return governanceSql<{ id: string; seq: number; agentId: string; messageType: string }>(
    'select client_id as id, seq, agent_id as "agentId", message_type as "messageType" from dialectic_messages where session_id = ? order by seq',
    [`alice~${sessionId}`],
  );
}

describe("two processes posting to the same sessions", () => {
  it("never produce two theses or a lost message", async () => {
    const ledger = governance();
    for (const id of SESSIONS) await ledger.createDialecticSession({ input: { session_id: id, topic: `race ${id}`, reviewer_agent_id: "bob" }, agentId: "alice" });
    const common = { SESSIONS: JSON.stringify(SESSIONS) };
    // Same agent, two processes: each session must end up with exactly one thesis.
    const [a, b] = await race([
      { ...common, RACER: "p1", AGENT: "alice", MODE: "thesis" },
      { ...common, RACER: "p2", AGENT: "alice", MODE: "thesis" },
    ]);
    expect(a.posted.length + b.posted.length).toBe(SESSIONS.length);
    expect([...a.refused, ...b.refused].every((r) => r.error === "conflict")).toBe(true);
    const winners = new Map([...a.posted, ...b.posted].map((p) => [p.sessionId, p.messageId]));
    for (const id of SESSIONS) {
      const msgs = await messagesOf(id);
      expect(msgs.map((m) => m.messageType)).toEqual(["thesis"]);
      expect(msgs[0].id).toBe(winners.get(id));
      await ledger.postDialecticMessage({ sessionId: id, agentId: "bob", input: { message_type: "antithesis", reasoning: "counterpoint" } });
    }

    // Both agents race to open the synthesis and then alternate until they agree.
    const [alice, bob] = await race([
      { ...common, RACER: "alice", AGENT: "alice", MODE: "synthesis" },
      { ...common, RACER: "bob", AGENT: "bob", MODE: "synthesis" },
    ]);
    expect([...alice.refused, ...bob.refused]).toEqual([]);
    const posted = [...alice.posted, ...bob.posted];
    for (const id of SESSIONS) {
      const msgs = await messagesOf(id);
      const mine = posted.filter((p) => p.sessionId === id);
      const syntheses = msgs.filter((m) => m.messageType === "synthesis");
      // Every acknowledged post is in the transcript, and nothing else is.
      expect(syntheses.map((m) => m.id).sort()).toEqual(mine.map((p) => p.messageId).sort());
      expect(syntheses).toHaveLength(2);
      expect(new Set(syntheses.map((m) => m.agentId)).size).toBe(2);
      expect(msgs.map((m) => Number(m.seq))).toEqual([1, 2, 3, 4]);
      expect((await ledger.verifyDialecticSession({ sessionId: id })).ok).toBe(true);
    }
    const [resolved] = await governanceSql<{ n: number }>("select count(*) as n from dialectic_sessions where status = 'resolved'");
    expect(Number(resolved.n)).toBe(SESSIONS.length);
    expect(await ledger.verifyAuditChain({})).toMatchObject({ ok: true });
  });

  it("audited ledger writes from two processes at once all land once, in one audit chain that verifies", async () => {
    const names = Array.from({ length: 40 }, (_, i) => `o-${i}`);
    const before = (await governance().verifyAuditChain({})).entries;
    const common = { SESSIONS: JSON.stringify(names), MODE: "overrides" };
    const [a, b] = await race([
      { ...common, RACER: "p1", AGENT: "alice" },
      { ...common, RACER: "p2", AGENT: "bob" },
    ]);
    expect([...a.refused, ...b.refused]).toEqual([]);
    const acknowledged = [...a.posted, ...b.posted].map((p) => p.messageId).sort();
    expect(acknowledged).toHaveLength(2 * names.length);
    const rows = await governanceSql<{ id: string }>("select client_id as id from overrides order by client_id");
    expect(rows.map((r) => r.id)).toEqual(acknowledged);
    // One audit entry per override, chained without a fork: the chain's writers were serialized across processes.
    const chain = await governance().verifyAuditChain({});
    expect(chain).toMatchObject({ ok: true });
    expect(chain.entries - before).toBe(2 * names.length);
  });
});
