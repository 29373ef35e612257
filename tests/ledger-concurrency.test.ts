import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getGovernance } from "@/lib/db/connection";
import { createDialecticSession, postDialecticMessage, verifyDialecticSession } from "@/lib/governance/dialectic";
import { runTogether } from "./fixtures/start-together";
import { useTempDataDir } from "./helpers";

type Outcome = { sessionId: string; messageId?: string; seq?: number; error?: string };
type RacerReport = { racer: string; posted: Outcome[]; refused: Outcome[] };

const RACER = path.join(process.cwd(), "tests", "fixtures", "dialectic-racer.ts");
const race = (envs: Record<string, string>[]) => runTogether<RacerReport>(RACER, envs);

let env: ReturnType<typeof useTempDataDir>;
beforeEach(() => {
  env = useTempDataDir();
});
afterEach(() => env.cleanup());

const SESSIONS = Array.from({ length: 30 }, (_, i) => `race-${i}`);

function messagesOf(sessionId: string) {
  return getGovernance().sqlite.prepare("select id, seq, agent_id as agentId, message_type as messageType from dialectic_messages where session_id = ? order by seq").all(sessionId) as { id: string; seq: number; agentId: string; messageType: string }[];
}

describe("two processes posting to the same sessions", () => {
  it("never produce two theses or a lost message", async () => {
    for (const id of SESSIONS) createDialecticSession({ input: { session_id: id, topic: `race ${id}`, reviewer_agent_id: "bob" }, agentId: "alice" });
    const common = { DATA_DIR: env.dataDir, SESSIONS: JSON.stringify(SESSIONS) };
    // Same agent, two processes: each session must end up with exactly one thesis.
    const [a, b] = await race([
      { ...common, RACER: "p1", AGENT: "alice", MODE: "thesis" },
      { ...common, RACER: "p2", AGENT: "alice", MODE: "thesis" },
    ]);
    expect(a.posted.length + b.posted.length).toBe(SESSIONS.length);
    expect([...a.refused, ...b.refused].every((r) => r.error === "conflict")).toBe(true);
    const winners = new Map([...a.posted, ...b.posted].map((p) => [p.sessionId, p.messageId]));
    for (const id of SESSIONS) {
      const msgs = messagesOf(id);
      expect(msgs.map((m) => m.messageType)).toEqual(["thesis"]);
      expect(msgs[0].id).toBe(winners.get(id));
      postDialecticMessage({ sessionId: id, agentId: "bob", input: { message_type: "antithesis", reasoning: "counterpoint" } });
    }

    // Both agents race to open the synthesis and then alternate until they agree.
    const [alice, bob] = await race([
      { ...common, RACER: "alice", AGENT: "alice", MODE: "synthesis" },
      { ...common, RACER: "bob", AGENT: "bob", MODE: "synthesis" },
    ]);
    expect([...alice.refused, ...bob.refused]).toEqual([]);
    const posted = [...alice.posted, ...bob.posted];
    for (const id of SESSIONS) {
      const msgs = messagesOf(id);
      const mine = posted.filter((p) => p.sessionId === id);
      const syntheses = msgs.filter((m) => m.messageType === "synthesis");
      // Every acknowledged post is in the transcript, and nothing else is.
      expect(syntheses.map((m) => m.id).sort()).toEqual(mine.map((p) => p.messageId).sort());
      expect(syntheses).toHaveLength(2);
      expect(new Set(syntheses.map((m) => m.agentId)).size).toBe(2);
      expect(msgs.map((m) => m.seq)).toEqual([1, 2, 3, 4]);
      expect(verifyDialecticSession({ sessionId: id }).ok).toBe(true);
    }
    const resolved = getGovernance().sqlite.prepare("select count(*) as n from dialectic_sessions where status = 'resolved'").get() as { n: number };
    expect(resolved.n).toBe(SESSIONS.length);
  });
});
