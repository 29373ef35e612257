import { and, asc, count, desc, eq, inArray, sql } from "drizzle-orm";
import type { z } from "zod";
import { newId, assertSameRetry } from "../common";
import { answerUniqueRaceAsRetry, isPgUniqueViolation, type PgGovernanceExecutor } from "../db/pg";
import { dialecticAnnotations, dialecticMessages, dialecticSessions, type DialecticMessageRow, type DialecticSessionRow } from "../db/schema/pg/governance";
import { AppError } from "../errors";
import { appendAuditPg } from "./audit";
import {
  abandonAuditEntry,
  annotateSessionSchema,
  annotationAuditEntry,
  ANNOTATIONS_PER_SESSION_MAX,
  tooManyAnnotations,
  type DialecticActivity,
  type DialecticAnnotation,
  abandonedState,
  abandonSessionSchema,
  assertSameSessionRetry,
  canAgentSeeSession,
  conflict,
  createSessionSchema,
  incomingMessageFacts,
  isIdle,
  mayClaimSession,
  messageFacts,
  nextMessageRow,
  nextSessionState,
  postMessageSchema,
  sessionFacts,
  sessionListWhere,
  tailAfter,
  toMessage,
  toSession,
  verifyMessageChain,
  type Abandoner,
  type DialecticMessage,
  type DialecticSession,
  type ListSessionsInput,
  type SessionView,
  type SignatureCheck,
  type Tail,
} from "./dialectic";

/**
 * Dialectic sessions on PostgreSQL: the SQLite twin is ./dialectic.ts, whose
 * schemas, phase machine, signatures and retry rules this reuses. SQLite
 * serializes every writer (BEGIN IMMEDIATE); here a write locks its session's
 * row (SELECT … FOR UPDATE) before reading the transcript's tail, so posts to
 * one session from any connection of any replica queue one behind the other:
 * each sees the previous message, takes seq + 1 and chains its signature to
 * it. The unique (session_id, seq) index is the backstop. Posts to
 * different sessions proceed in parallel. There is no read-through cache
 * here: with several replicas it would serve another replica's stale turn.
 */

async function readTailPg(db: PgGovernanceExecutor, sessionId: string): Promise<Tail> {
  const [last] = await db
    .select({ agentId: dialecticMessages.agentId, messageType: dialecticMessages.messageType, seq: dialecticMessages.seq, signature: dialecticMessages.signature })
    .from(dialecticMessages)
    .where(eq(dialecticMessages.sessionId, sessionId))
    .orderBy(desc(dialecticMessages.seq))
    .limit(1);
  const [counts] = await db
    .select({ n: count(), s: sql<number>`count(*) filter (where ${dialecticMessages.messageType} = 'synthesis')`.mapWith(Number) })
    .from(dialecticMessages)
    .where(eq(dialecticMessages.sessionId, sessionId));
  return { last: last ?? null, count: counts.n, synthesisRounds: counts.s };
}

async function requireSessionRowPg(db: PgGovernanceExecutor, sessionId: string, { lock }: { lock: boolean }): Promise<DialecticSessionRow> {
  const q = db.select().from(dialecticSessions).where(eq(dialecticSessions.sessionId, sessionId));
  const [row] = lock ? await q.for("update") : await q;
  if (!row) throw new AppError("not_found", `no dialectic session ${sessionId}`);
  return row;
}

/** Locked for the transaction; a session the agent may not see answers like one that does not exist. */
async function lockSessionVisibleTo(tx: PgGovernanceExecutor, sessionId: string, agentId: string, isAdmin: boolean): Promise<DialecticSessionRow> {
  const row = await requireSessionRowPg(tx, sessionId, { lock: true });
  if (!canAgentSeeSession(row, agentId, isAdmin)) throw new AppError("not_found", `no dialectic session ${sessionId}`);
  return row;
}

/** Fail every active session idle past its timeout. Returns the ids it failed. */
export async function sweepIdleSessionsPg({ db, now = Date.now() }: { db: PgGovernanceExecutor; now?: number }): Promise<string[]> {
  const s = dialecticSessions;
  const rows = await db
    .update(s)
    .set({ phase: "failed", status: "failed", failureReason: "idle timeout", updatedAt: now })
    .where(and(eq(s.status, "active"), sql`${s.updatedAt} + ${s.idleTimeoutMs} < ${now}`))
    .returning({ id: s.sessionId });
  return rows.map((r) => r.id);
}

/** The admin-triggered sweep: same as the automatic one, plus an audit row in the same transaction. */
export async function sweepIdleSessionsAuditedPg({ db, actor, now = Date.now() }: { db: PgGovernanceExecutor; actor: string; now?: number }): Promise<{ failed: string[] }> {
  return db.transaction(async (tx) => {
    const failed = await sweepIdleSessionsPg({ db: tx, now });
    await appendAuditPg({ db: tx, entry: { actor, action: "dialectic.sweep", target: "dialectic_sessions", details: { failed } } });
    return { failed };
  });
}

const SWEEP_INTERVAL_MS = 10_000;
const sweepClock = globalThis as unknown as { __dualmindLastPgSweep?: number };

export async function createDialecticSessionPg({
  db,
  input,
  agentId,
  now = Date.now(),
}: {
  db: PgGovernanceExecutor;
  input: z.input<typeof createSessionSchema>;
  agentId: string;
  now?: number;
}): Promise<{ session: DialecticSession; created: boolean }> {
  const parsed = createSessionSchema.parse(input);
  const facts = sessionFacts(parsed, agentId);
  const sessionId = parsed.session_id ?? newId();
  // As on SQLite, creating a session sweeps idle ones now and then (per process).
  if (now - (sweepClock.__dualmindLastPgSweep ?? 0) >= SWEEP_INTERVAL_MS) {
    sweepClock.__dualmindLastPgSweep = now;
    await sweepIdleSessionsPg({ db, now });
  }
  const answerRetry = async () => {
    const [existing] = await db.select().from(dialecticSessions).where(eq(dialecticSessions.sessionId, sessionId));
    if (!existing) return null;
    assertSameSessionRetry(existing, parsed, facts);
    return { session: toSession(existing, await readTailPg(db, sessionId)), created: false };
  };
  const retried = await answerRetry();
  if (retried) return retried;
  try {
    const [row] = await db
      .insert(dialecticSessions)
      .values({ sessionId, ...facts, phase: "thesis", status: "active", createdAt: now, updatedAt: now })
      .returning();
    return { session: toSession(row, { last: null, count: 0, synthesisRounds: 0 }), created: true };
  } catch (e) {
    return answerUniqueRaceAsRetry(e, () => answerRetry());
  }
}

type PostOutcome = { ok: { message: DialecticMessage; session: DialecticSession; created: boolean } } | { failedIdle: AppError };

/** Append one message: the session row is locked, so the phase check, seq and signature see the latest message. */
export async function postDialecticMessagePg({
  db,
  sessionId,
  agentId,
  isAdmin = false,
  input,
  now = Date.now(),
}: {
  db: PgGovernanceExecutor;
  sessionId: string;
  agentId: string;
  isAdmin?: boolean;
  input: z.input<typeof postMessageSchema>;
  now?: number;
}): Promise<{ message: DialecticMessage; session: DialecticSession; created: boolean }> {
  const parsed = postMessageSchema.parse(input);
  const messageId = parsed.message_id ?? newId();
  const attempt = () =>
    db.transaction(async (tx): Promise<PostOutcome> => {
      const session = await lockSessionVisibleTo(tx, sessionId, agentId, isAdmin);
      const incoming = incomingMessageFacts(agentId, parsed);
      const [already] = await tx.select().from(dialecticMessages).where(eq(dialecticMessages.id, messageId));
      if (already) {
        if (already.sessionId !== sessionId) throw new AppError("conflict", `message ${messageId} belongs to another session`);
        const stored = toMessage(already);
        assertSameRetry("message", messageId, messageFacts(stored), incoming);
        return { ok: { message: stored, session: toSession(session, await readTailPg(tx, sessionId)), created: false } };
      }
      const tail = await readTailPg(tx, sessionId);
      if (isIdle(session, now)) {
        await tx.update(dialecticSessions).set({ phase: "failed", status: "failed", failureReason: "idle timeout", updatedAt: now }).where(eq(dialecticSessions.sessionId, sessionId));
        return { failedIdle: conflict("the session was idle past its timeout and has failed", { ...session, phase: "failed" }, tail.last) };
      }
      const [row] = await tx.insert(dialecticMessages).values(nextMessageRow({ session, tail, agentId, parsed, messageId, now })).returning();
      const prev =
        tail.last?.messageType === "synthesis"
          ? (await tx.select().from(dialecticMessages).where(and(eq(dialecticMessages.sessionId, sessionId), eq(dialecticMessages.seq, tail.last.seq))))[0]
          : undefined;
      const [updated] = await tx
        .update(dialecticSessions)
        .set({ ...nextSessionState(session, row, tail, prev), updatedAt: now })
        .where(eq(dialecticSessions.sessionId, sessionId))
        .returning();
      return { ok: { message: toMessage(row), session: toSession(updated, tailAfter(tail, row)), created: true } };
    });
  let outcome: PostOutcome;
  try {
    outcome = await attempt();
  } catch (e) {
    // Only a message id reused on another session at the same moment gets here (same-session posts queue on the lock):
    // asked again, it is answered like any later retry.
    if (!isPgUniqueViolation(e)) throw e;
    outcome = await attempt();
  }
  if ("failedIdle" in outcome) throw outcome.failedIdle;
  return outcome.ok;
}

/** A reviewer takes an open session (one without an assigned reviewer). */
export async function claimDialecticSessionPg({
  db,
  sessionId,
  agentId,
  isAdmin = false,
  now = Date.now(),
}: {
  db: PgGovernanceExecutor;
  sessionId: string;
  agentId: string;
  isAdmin?: boolean;
  now?: number;
}): Promise<DialecticSession> {
  return db.transaction(async (tx) => {
    const row = await lockSessionVisibleTo(tx, sessionId, agentId, isAdmin);
    const tail = await readTailPg(tx, sessionId);
    if (!mayClaimSession(row, tail, agentId, now)) return toSession(row, tail);
    const [updated] = await tx.update(dialecticSessions).set({ reviewerAgentId: agentId, updatedAt: now }).where(eq(dialecticSessions.sessionId, sessionId)).returning();
    return toSession(updated, tail);
  });
}

async function abandonSessionPg({ db, sessionId, by, reason, now }: { db: PgGovernanceExecutor; sessionId: string; by: Abandoner; reason?: string; now: number }): Promise<DialecticSession> {
  return db.transaction(async (tx) => {
    const row = "person" in by ? await requireSessionRowPg(tx, sessionId, { lock: true }) : await lockSessionVisibleTo(tx, sessionId, by.agentId, by.isAdmin);
    const tail = await readTailPg(tx, sessionId);
    const state = abandonedState(row, tail, by, reason, now);
    if (!state) return toSession(row, tail);
    const [updated] = await tx.update(dialecticSessions).set(state).where(eq(dialecticSessions.sessionId, sessionId)).returning();
    if ("person" in by) await appendAuditPg({ db: tx, entry: abandonAuditEntry(by.person, row, reason) });
    return toSession(updated, tail);
  });
}

/** Either participant may end a session without agreement. */
export async function abandonDialecticSessionPg({
  db,
  sessionId,
  agentId,
  isAdmin = false,
  reason,
  now = Date.now(),
}: {
  db: PgGovernanceExecutor;
  sessionId: string;
  agentId: string;
  isAdmin?: boolean;
  reason?: string;
  now?: number;
}): Promise<DialecticSession> {
  return abandonSessionPg({ db, sessionId, by: { agentId, isAdmin }, reason, now });
}

/** A person with the admin role ends a session (the caller checked the role); audited. */
export async function abandonDialecticSessionAsAdminPg({ db, sessionId, actor, reason, now = Date.now() }: { db: PgGovernanceExecutor; sessionId: string; actor: string; reason?: string; now?: number }): Promise<DialecticSession> {
  return abandonSessionPg({ db, sessionId, by: { person: actor }, reason: abandonSessionSchema.parse({ reason }).reason, now });
}

async function messagesBySessionIdsPg(db: PgGovernanceExecutor, sessionIds: string[]): Promise<Map<string, DialecticMessage[]>> {
  const out = new Map<string, DialecticMessage[]>(sessionIds.map((id) => [id, []]));
  if (sessionIds.length === 0) return out;
  const rows = await db.select().from(dialecticMessages).where(inArray(dialecticMessages.sessionId, sessionIds)).orderBy(asc(dialecticMessages.sessionId), asc(dialecticMessages.seq));
  for (const r of rows) out.get(r.sessionId)?.push(toMessage(r));
  return out;
}

/** Count, synthesis rounds and last message per session, in one query (the listing without transcripts). */
async function tailsBySessionIdsPg(db: PgGovernanceExecutor, sessionIds: string[]): Promise<Map<string, Tail>> {
  const out = new Map<string, Tail>();
  if (sessionIds.length === 0) return out;
  const m = dialecticMessages;
  const rows = await db
    .select({
      sessionId: m.sessionId,
      agentId: sql<string>`(array_agg(${m.agentId} order by ${m.seq} desc))[1]`,
      messageType: sql<DialecticMessageRow["messageType"]>`(array_agg(${m.messageType} order by ${m.seq} desc))[1]`,
      seq: sql<number>`max(${m.seq})`.mapWith(Number),
      signature: sql<string>`(array_agg(${m.signature} order by ${m.seq} desc))[1]`,
      n: count(),
      s: sql<number>`count(*) filter (where ${m.messageType} = 'synthesis')`.mapWith(Number),
    })
    .from(m)
    .where(inArray(m.sessionId, sessionIds))
    .groupBy(m.sessionId);
  for (const { sessionId, n, s, ...last } of rows) out.set(sessionId, { last, count: n, synthesisRounds: s });
  return out;
}

function withTranscript(row: DialecticSessionRow, messages: DialecticMessage[]): SessionView {
  return { ...toSession(row, { last: messages.at(-1) ?? null, count: messages.length, synthesisRounds: messages.filter((x) => x.messageType === "synthesis").length }), messages };
}

/** Session with its transcript (read from the database every time: no cache across replicas). */
export async function getDialecticSessionByIdPg({ db, sessionId }: { db: PgGovernanceExecutor; sessionId: string }): Promise<SessionView> {
  const row = await requireSessionRowPg(db, sessionId, { lock: false });
  return withTranscript(row, (await messagesBySessionIdsPg(db, [sessionId])).get(sessionId) ?? []);
}

/** Detail for an agent: sessions it may not see answer like sessions that do not exist. */
export async function getDialecticSessionForAgentPg({ db, sessionId, agentId, isAdmin }: { db: PgGovernanceExecutor; sessionId: string; agentId: string; isAdmin: boolean }): Promise<SessionView> {
  const view = await getDialecticSessionByIdPg({ db, sessionId });
  if (!canAgentSeeSession(view, agentId, isAdmin)) throw new AppError("not_found", `no dialectic session ${sessionId}`);
  return view;
}

/** Listing by agent and role, newest first (the same filters as listDialecticSessionsByAgent). */
export async function listDialecticSessionsByAgentPg({ db, ...input }: { db: PgGovernanceExecutor } & ListSessionsInput): Promise<{ sessions: SessionView[]; total: number }> {
  const s = dialecticSessions;
  const cond = sessionListWhere(s, input);
  const rows = await db.select().from(s).where(cond).orderBy(desc(s.createdAt), desc(s.sessionId)).limit(input.limit ?? 50).offset(input.offset ?? 0);
  const [{ n: total }] = await db.select({ n: count() }).from(s).where(cond);
  const ids = rows.map((r) => r.sessionId);
  if (input.includeTranscript) {
    const transcripts = await messagesBySessionIdsPg(db, ids);
    return { sessions: rows.map((r) => withTranscript(r, transcripts.get(r.sessionId) ?? [])), total };
  }
  const tails = await tailsBySessionIdsPg(db, ids);
  return { sessions: rows.map((r) => toSession(r, tails.get(r.sessionId) ?? { last: null, count: 0, synthesisRounds: 0 })), total };
}

/** Recompute the signature chain of one session. */
export async function verifyDialecticSessionPg({ db, sessionId }: { db: PgGovernanceExecutor; sessionId: string }): Promise<SignatureCheck> {
  await requireSessionRowPg(db, sessionId, { lock: false });
  const rows = await db.select().from(dialecticMessages).where(eq(dialecticMessages.sessionId, sessionId)).orderBy(asc(dialecticMessages.seq));
  return verifyMessageChain(rows);
}

/** A person's note beside a transcript (never a phase message); the session row is locked so the cap holds across replicas. */
export async function annotateDialecticSessionPg({
  db,
  sessionId,
  input,
  actor,
  now = Date.now(),
}: {
  db: PgGovernanceExecutor;
  sessionId: string;
  input: z.input<typeof annotateSessionSchema>;
  actor: string;
  now?: number;
}): Promise<DialecticAnnotation> {
  const { body } = annotateSessionSchema.parse(input);
  return db.transaction(async (tx) => {
    await requireSessionRowPg(tx, sessionId, { lock: true });
    const [{ n }] = await tx.select({ n: count() }).from(dialecticAnnotations).where(eq(dialecticAnnotations.sessionId, sessionId));
    if (n >= ANNOTATIONS_PER_SESSION_MAX) throw tooManyAnnotations(sessionId);
    const [row] = await tx.insert(dialecticAnnotations).values({ sessionId, author: actor, body, createdAt: now }).returning();
    await appendAuditPg({ db: tx, entry: annotationAuditEntry(actor, row) });
    return row;
  });
}

export async function listDialecticAnnotationsPg({ db, sessionId }: { db: PgGovernanceExecutor; sessionId: string }): Promise<DialecticAnnotation[]> {
  return db
    .select()
    .from(dialecticAnnotations)
    .where(eq(dialecticAnnotations.sessionId, sessionId))
    .orderBy(asc(dialecticAnnotations.createdAt), asc(dialecticAnnotations.id))
    .limit(ANNOTATIONS_PER_SESSION_MAX);
}

/** Active sessions, failures per hour over a day and messages in the last hour, from the shared database. */
export async function getDialecticActivityPg({ db, now = Date.now() }: { db: PgGovernanceExecutor; now?: number }): Promise<DialecticActivity> {
  const hour = 3_600_000;
  const s = dialecticSessions;
  const hourStart = sql<number>`(${s.updatedAt} / ${hour}) * ${hour}`.mapWith(Number);
  const failedPerHour = await db
    .select({ hourStart, failed: count() })
    .from(s)
    .where(and(eq(s.status, "failed"), sql`${s.updatedAt} >= ${now - 24 * hour}`))
    .groupBy(sql`1`)
    .orderBy(sql`1`);
  const [{ n: activeSessions }] = await db.select({ n: count() }).from(s).where(eq(s.status, "active"));
  const [{ n: messagesLastHour }] = await db.select({ n: count() }).from(dialecticMessages).where(sql`${dialecticMessages.timestamp} >= ${now - hour}`);
  return { activeSessions, failedPerHour, messagesLastHour, messagesPerMinuteLastHour: messagesLastHour / 60 };
}
