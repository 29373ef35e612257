import { describe, expect, it } from "vitest";
import { SIGNATURE_GENESIS, signMessage, verifyDialecticSession } from "@/lib/governance/dialectic";
import { exportDialecticSessions, restoreDialecticSessions, toDialecticSnapshot } from "@/lib/governance/dialectic-export";
import type { DialecticMessageRow, DialecticSessionRow } from "@/lib/db/schema/pg/governance";
import { useTwoReplicas } from "./helpers";

const replicas = useTwoReplicas({ max: 2 });

/** A long review: `n` signed messages in one session (more than one insert statement can bind). */
function longSession(n: number): { session: DialecticSessionRow; messages: DialecticMessageRow[] } {
  const t0 = 1_790_000_000_000;
  const session: DialecticSessionRow = {
    sessionId: "long-review",
    clientId: "long-review",
    pausedAgentId: "agent:paused",
    reviewerAgentId: "agent:reviewer",
    phase: "synthesis",
    status: "active",
    createdAt: t0,
    updatedAt: t0 + n,
    topic: "a very long review",
    sessionType: "code_review",
    resolutionJson: null,
    failureReason: null,
    maxRounds: 10_000,
    idleTimeoutMs: 3_600_000,
  };
  const messages: DialecticMessageRow[] = [];
  let prev = SIGNATURE_GENESIS;
  for (let seq = 1; seq <= n; seq++) {
    const content = {
      id: `m-${seq}`,
      sessionId: session.sessionId,
      seq,
      agentId: seq % 2 ? "agent:paused" : "agent:reviewer",
      messageType: (seq === 1 ? "thesis" : seq % 2 ? "synthesis" : "antithesis") as DialecticMessageRow["messageType"],
      timestamp: t0 + seq,
      reasoning: `point ${seq}`,
      rootCause: null,
      proposedConditionsJson: null,
      observedMetricsJson: null,
      concernsJson: null,
      agrees: null,
    };
    prev = signMessage({ prevSignature: prev, message: content });
    messages.push({ ...content, clientId: content.id, signature: prev });
  }
  return { session, messages };
}

describe("dialectic restore on PostgreSQL", () => {
  it("restores a session of 7,000 messages (past the bind-parameter limit of one insert), chain intact, once", async () => {
    const { session, messages } = longSession(7_000);
    const snapshot = toDialecticSnapshot({ sessions: [session], messages, now: Date.now() });
    const r = await restoreDialecticSessions({ handle: replicas.a(), snapshot, actor: "user:admin" });
    expect(r).toEqual({ restored: 1, unchanged: 0, messages: 7_000 });
    expect(await verifyDialecticSession({ handle: replicas.b(), sessionId: session.sessionId })).toEqual({ ok: true, messages: 7_000 });
    // The export of the restored session is the snapshot again, and restoring it on the other replica changes nothing.
    const again = await exportDialecticSessions({ handle: replicas.b() });
    expect(again.sessions[0].messages).toHaveLength(7_000);
    expect(await restoreDialecticSessions({ handle: replicas.b(), snapshot: again, actor: "user:admin" })).toEqual({ restored: 0, unchanged: 1, messages: 0 });
  });
});
