import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAuditTail, verifyAuditChain } from "@/lib/governance/audit";
import {
  abandonDialecticSessionAsAdmin,
  annotateDialecticSession,
  ANNOTATION_MAX_CHARS,
  ANNOTATIONS_PER_SESSION_MAX,
  createDialecticSession,
  getDialecticSessionById,
  listDialecticAnnotations,
  postDialecticMessage,
  sessionIdleClock,
  verifyDialecticSession,
} from "@/lib/governance/dialectic";
import { getGovernance } from "@/lib/db/connection";
import { useTempDataDir } from "./helpers";

let env: ReturnType<typeof useTempDataDir>;
beforeEach(() => {
  env = useTempDataDir();
});
afterEach(() => env.cleanup());

function openSession(id: string, now = 1_000_000) {
  createDialecticSession({ input: { session_id: id, topic: `topic ${id}`, reviewer_agent_id: "critic", idle_timeout_ms: 60_000 }, agentId: "builder", now });
  postDialecticMessage({ sessionId: id, input: { message_type: "thesis", reasoning: "because" }, agentId: "builder", now: now + 10 });
}

describe("annotations", () => {
  it("a note sits beside the transcript: listed in order, audited, and it changes neither the phase, the turn nor the signed chain", () => {
    openSession("s1");
    const before = getDialecticSessionById({ sessionId: "s1" });
    annotateDialecticSession({ sessionId: "s1", input: { body: "  Looks risky, ask for a rollback plan.  " }, actor: "user:erin", now: 2_000_000 });
    annotateDialecticSession({ sessionId: "s1", input: { body: "Agreed." }, actor: "user:admin", now: 2_000_001 });
    const notes = listDialecticAnnotations({ sessionId: "s1" });
    expect(notes.map((n) => [n.author, n.body])).toEqual([
      ["user:erin", "Looks risky, ask for a rollback plan."],
      ["user:admin", "Agreed."],
    ]);
    const after = getDialecticSessionById({ sessionId: "s1" });
    expect(after.phase).toBe(before.phase);
    expect(after.expected).toEqual(before.expected);
    expect(after.messageCount).toBe(1);
    expect(after.updatedAt).toBe(before.updatedAt);
    expect(verifyDialecticSession({ sessionId: "s1" })).toEqual({ ok: true, messages: 1 });
    const audit = listAuditTail({ limit: 1 })[0];
    expect(audit).toMatchObject({ actor: "user:admin", action: "dialectic.annotate", target: "dialectic_session:s1" });
    expect(verifyAuditChain().ok).toBe(true);
  });

  it("refuses an empty or too long note, an unknown session, and notes past the per-session cap", () => {
    openSession("s2");
    expect(() => annotateDialecticSession({ sessionId: "s2", input: { body: "   " }, actor: "user:erin" })).toThrow(/write a note first/);
    expect(() => annotateDialecticSession({ sessionId: "s2", input: { body: "x".repeat(ANNOTATION_MAX_CHARS + 1) }, actor: "user:erin" })).toThrow();
    expect(() => annotateDialecticSession({ sessionId: "nope", input: { body: "hi" }, actor: "user:erin" })).toThrow(/no dialectic session/);
    // Fill to the cap directly, then the next note through the domain function is refused.
    const { sqlite } = getGovernance();
    const insert = sqlite.prepare("insert into dialectic_annotations(session_id, author, body, created_at) values ('s2', 'user:x', 'n', ?)");
    sqlite.transaction(() => {
      for (let i = 0; i < ANNOTATIONS_PER_SESSION_MAX; i++) insert.run(i);
    })();
    expect(() => annotateDialecticSession({ sessionId: "s2", input: { body: "one more" }, actor: "user:erin" })).toThrow(/most it keeps/);
    expect(listDialecticAnnotations({ sessionId: "s2" })).toHaveLength(ANNOTATIONS_PER_SESSION_MAX);
  });
});

describe("an admin abandons a session from the dashboard", () => {
  it("fails the session with who and why, audited; a resolved session cannot be abandoned; abandoning twice is a no-op", () => {
    openSession("s3");
    const s = abandonDialecticSessionAsAdmin({ sessionId: "s3", actor: "user:admin", reason: "stale", now: 3_000_000 });
    expect(s).toMatchObject({ status: "failed", phase: "failed", failureReason: "abandoned by user:admin (admin): stale" });
    expect(listAuditTail({ limit: 1 })[0]).toMatchObject({ actor: "user:admin", action: "dialectic.abandon", target: "dialectic_session:s3", reason: "stale" });
    const audits = listAuditTail({ limit: 100 }).length;
    expect(abandonDialecticSessionAsAdmin({ sessionId: "s3", actor: "user:admin" }).failureReason).toBe("abandoned by user:admin (admin): stale");
    expect(listAuditTail({ limit: 100 }).length).toBe(audits);
    expect(() => abandonDialecticSessionAsAdmin({ sessionId: "ghost", actor: "user:admin" })).toThrow(/no dialectic session/);
  });
});

describe("idle clock", () => {
  it("an active session says since when it waits and when it times out; a finished one has no clock", () => {
    openSession("s4", 5_000_000);
    const s = getDialecticSessionById({ sessionId: "s4" });
    expect(sessionIdleClock(s, 5_000_020)).toEqual({ idleSince: 5_000_010, timesOutAt: 5_060_010, overdue: false });
    expect(sessionIdleClock(s, 5_060_011)?.overdue).toBe(true);
    expect(s.expected.agentIds).toEqual(["critic"]);
    expect(sessionIdleClock(abandonDialecticSessionAsAdmin({ sessionId: "s4", actor: "user:admin" }))).toBeNull();
  });
});
