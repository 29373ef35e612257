import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { ANNOTATION_MAX_CHARS, ANNOTATIONS_PER_SESSION_MAX, sessionIdleClock } from "@/lib/governance/dialectic";
import { governanceSql, useTestBackend, type TestEnv } from "./backend";

let env: TestEnv;
beforeEach(async () => {
  env = await useTestBackend();
});
afterEach(() => env.cleanup());

// The ledger of this backend (tests/backend.ts): SQLite, or PostgreSQL under DM_TEST_BACKEND=pg.
const g = () => governance();
const getDialecticSessionById = (a: { sessionId: string }) => g().getDialecticSession(a);
const annotateDialecticSession = (a: Parameters<ReturnType<typeof g>["annotateDialecticSession"]>[0]) => g().annotateDialecticSession(a);
const listDialecticAnnotations = (a: { sessionId: string }) => g().listDialecticAnnotations(a);
const abandonDialecticSessionAsAdmin = (a: Parameters<ReturnType<typeof g>["abandonDialecticSessionAsAdmin"]>[0]) => g().abandonDialecticSessionAsAdmin(a);
const listAuditTail = (a: { limit: number }) => g().listAuditTail(a);

async function openSession(id: string, now = 1_000_000) {
  await g().createDialecticSession({ input: { session_id: id, topic: `topic ${id}`, reviewer_agent_id: "critic", idle_timeout_ms: 60_000 }, agentId: "builder", now });
  await g().postDialecticMessage({ sessionId: id, input: { message_type: "thesis", reasoning: "because" }, agentId: "builder", now: now + 10 });
}

describe("annotations", async () => {
  it("a note sits beside the transcript: listed in order, audited, and it changes neither the phase, the turn nor the signed chain", async () => {
    await openSession("s1");
    const before = await getDialecticSessionById({ sessionId: "s1" });
    await annotateDialecticSession({ sessionId: "s1", input: { body: "  Looks risky, ask for a rollback plan.  " }, actor: "user:erin", now: 2_000_000 });
    await annotateDialecticSession({ sessionId: "s1", input: { body: "Agreed." }, actor: "user:admin", now: 2_000_001 });
    const notes = await listDialecticAnnotations({ sessionId: "s1" });
    expect(notes.map((n) => [n.author, n.body])).toEqual([
      ["user:erin", "Looks risky, ask for a rollback plan."],
      ["user:admin", "Agreed."],
    ]);
    const after = await getDialecticSessionById({ sessionId: "s1" });
    expect(after.phase).toBe(before.phase);
    expect(after.expected).toEqual(before.expected);
    expect(after.message_count).toBe(1);
    expect(after.updated_at).toBe(before.updated_at);
    expect(await g().verifyDialecticSession({ sessionId: "s1" })).toEqual({ ok: true, messages: 1 });
    const audit = (await listAuditTail({ limit: 1 }))[0];
    expect(audit).toMatchObject({ actor: "user:admin", action: "dialectic.annotate", target: "dialectic_session:builder~s1" });
    expect((await g().verifyAuditChain({})).ok).toBe(true);
  });

  it("refuses an empty or too long note, an unknown session, and notes past the per-session cap", async () => {
    await openSession("s2");
    await expect(annotateDialecticSession({ sessionId: "s2", input: { body: "   " }, actor: "user:erin" })).rejects.toThrow(/write a note first/);
    await expect(annotateDialecticSession({ sessionId: "s2", input: { body: "x".repeat(ANNOTATION_MAX_CHARS + 1) }, actor: "user:erin" })).rejects.toThrow();
    await expect(annotateDialecticSession({ sessionId: "nope", input: { body: "hi" }, actor: "user:erin" })).rejects.toThrow(/no dialectic session/);
    // Fill to the cap directly, then the next note through the domain function is refused.
    const times = Array.from({ length: ANNOTATIONS_PER_SESSION_MAX }, (_, i) => i);
    await governanceSql(`insert into dialectic_annotations(session_id, author, body, created_at) values ${times.map(() => "('builder~s2', 'user:x', 'n', ?)").join(", ")}`, times);
    await expect(annotateDialecticSession({ sessionId: "s2", input: { body: "one more" }, actor: "user:erin" })).rejects.toThrow(/most it keeps/);
    expect(await listDialecticAnnotations({ sessionId: "s2" })).toHaveLength(ANNOTATIONS_PER_SESSION_MAX);
  });
});

describe("an admin abandons a session from the dashboard", async () => {
  it("fails the session with who and why, audited; a resolved session cannot be abandoned; abandoning twice is a no-op", async () => {
    await openSession("s3");
    const s = await abandonDialecticSessionAsAdmin({ sessionId: "s3", actor: "user:admin", reason: "stale", now: 3_000_000 });
    expect(s).toMatchObject({ status: "failed", phase: "failed", failure_reason: "abandoned by user:admin (admin): stale" });
    expect((await listAuditTail({ limit: 1 }))[0]).toMatchObject({ actor: "user:admin", action: "dialectic.abandon", target: "dialectic_session:builder~s3", reason: "stale" });
    const audits = (await listAuditTail({ limit: 100 })).length;
    expect((await abandonDialecticSessionAsAdmin({ sessionId: "s3", actor: "user:admin" })).failure_reason).toBe("abandoned by user:admin (admin): stale");
    expect((await listAuditTail({ limit: 100 })).length).toBe(audits);
    await expect(abandonDialecticSessionAsAdmin({ sessionId: "ghost", actor: "user:admin" })).rejects.toThrow(/no dialectic session/);
  });
});

describe("idle clock", async () => {
  it("an active session says since when it waits and when it times out; a finished one has no clock", async () => {
    await openSession("s4", 5_000_000);
    const s = await getDialecticSessionById({ sessionId: "s4" });
    expect(sessionIdleClock({ session: s, now: 5_000_020 })).toEqual({ idleSince: 5_000_010, timesOutAt: 5_060_010, overdue: false });
    expect(sessionIdleClock({ session: s, now: 5_060_011 })?.overdue).toBe(true);
    expect(s.expected.agent_ids).toEqual(["critic"]);
    expect(sessionIdleClock({ session: await abandonDialecticSessionAsAdmin({ sessionId: "s4", actor: "user:admin" }) })).toBeNull();
  });
});
