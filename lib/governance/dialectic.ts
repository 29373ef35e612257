import { and, asc, desc, eq, inArray, isNull, ne, or, sql, type AnyColumn, type SQL } from "drizzle-orm";
import { z } from "zod";
import { getGovernance } from "../db/connection";
import { dialecticAnnotations, dialecticMessages, dialecticSessions, type DialecticAnnotationRow, type DialecticMessageRow, type DialecticSessionRow } from "../db/schema/governance";
import { AppError } from "../errors";
import { appendAudit, type AuditEntry } from "./audit";
import { cacheSession, invalidateSession, readCachedSession } from "./dialectic-cache";
import { agentIdSchema, assertSameRetry, canonicalJson, clientIdSchema, likeContains, newId, parseJsonColumnStrict, sha256Hex } from "../common";

export const PHASES = ["thesis", "antithesis", "synthesis", "resolved", "failed"] as const;
export type Phase = (typeof PHASES)[number];
export const STATUSES = ["active", "resolved", "failed"] as const;
export const MESSAGE_TYPES = ["thesis", "antithesis", "synthesis"] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];
export const ROLES = ["requestor", "reviewer", "any", "open"] as const;

export const DEFAULT_MAX_ROUNDS = 6;
export const DEFAULT_IDLE_TIMEOUT_MS = 24 * 60 * 60 * 1000;
export const SIGNATURE_GENESIS = "0".repeat(64);

export const createSessionSchema = z
  .object({
    session_id: clientIdSchema.optional(),
    topic: z.string().trim().min(1).max(500),
    session_type: z.string().trim().min(1).max(64).regex(/^[a-z0-9_-]+$/, "lowercase letters, digits, _ or -").default("review"),
    reviewer_agent_id: agentIdSchema.optional(),
    /** Synthesis messages allowed before the session fails for lack of agreement. */
    max_rounds: z.number().int().min(1).max(100).default(DEFAULT_MAX_ROUNDS),
    idle_timeout_ms: z.number().int().min(1000).max(30 * 24 * 60 * 60 * 1000).default(DEFAULT_IDLE_TIMEOUT_MS),
  })
  .strict();

const textList = z.array(z.string().trim().min(1).max(2000)).max(50);

export const postMessageSchema = z
  .object({
    message_id: clientIdSchema.optional(),
    message_type: z.enum(MESSAGE_TYPES),
    reasoning: z.string().trim().min(1).max(20_000),
    root_cause: z.string().trim().min(1).max(5000).optional(),
    proposed_conditions: textList.optional(),
    observed_metrics: z.record(z.string().min(1).max(200), z.union([z.number(), z.string().max(2000), z.boolean(), z.null()])).optional(),
    concerns: textList.optional(),
    agrees: z.boolean().optional(),
  })
  .strict();

export const abandonSessionSchema = z.object({ reason: z.string().trim().min(1).max(2000).optional() }).strict();

export const listSessionsQuerySchema = z
  .object({
    role: z.enum(ROLES).default("any"),
    status: z.enum(STATUSES).optional(),
    phase: z.enum(PHASES).optional(),
    topic: z.string().trim().min(1).max(200).optional(),
    transcript: z.enum(["true", "false"]).default("false").transform((v) => v === "true"),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();

export type DialecticMessage = Omit<DialecticMessageRow, "proposedConditionsJson" | "observedMetricsJson" | "concernsJson"> & {
  proposedConditions: string[] | null;
  observedMetrics: Record<string, unknown> | null;
  concerns: string[] | null;
};
export type Resolution = { conditions: string[]; agreedBy: string[]; messageId: string; seq: number };
export type ExpectedNext = { phase: Phase; messageType: MessageType | null; agentIds: string[]; note: string };
export type DialecticSession = Omit<DialecticSessionRow, "resolutionJson"> & {
  resolution: Resolution | null;
  messageCount: number;
  synthesisRounds: number;
  expected: ExpectedNext;
};
export type SessionView = DialecticSession & { messages?: DialecticMessage[] };

export function toMessage(row: DialecticMessageRow): DialecticMessage {
  const { proposedConditionsJson, observedMetricsJson, concernsJson, ...rest } = row;
  return {
    ...rest,
    proposedConditions: parseJsonColumnStrict<string[]>(proposedConditionsJson),
    observedMetrics: parseJsonColumnStrict<Record<string, unknown>>(observedMetricsJson),
    concerns: parseJsonColumnStrict<string[]>(concernsJson),
  };
}

export type Tail = { last: Pick<DialecticMessageRow, "agentId" | "messageType" | "seq" | "signature"> | null; count: number; synthesisRounds: number };

function readTail(sessionId: string): Tail {
  const { sqlite } = getGovernance();
  const last = sqlite
    .prepare("select agent_id as agentId, message_type as messageType, seq, signature from dialectic_messages where session_id = ? order by seq desc limit 1")
    .get(sessionId) as Tail["last"] | undefined;
  const counts = sqlite
    .prepare("select count(*) as n, coalesce(sum(message_type = 'synthesis'), 0) as s from dialectic_messages where session_id = ?")
    .get(sessionId) as { n: number; s: number };
  return { last: last ?? null, count: counts.n, synthesisRounds: counts.s };
}

/** Who may post what next: the phase machine in one place, used to check posts and to tell a 409'd caller. */
export function expectedNext(session: Pick<DialecticSessionRow, "phase" | "pausedAgentId" | "reviewerAgentId">, last: Tail["last"]): ExpectedNext {
  const both = [session.pausedAgentId, ...(session.reviewerAgentId ? [session.reviewerAgentId] : [])];
  switch (session.phase) {
    case "thesis":
      return { phase: "thesis", messageType: "thesis", agentIds: [session.pausedAgentId], note: "the paused agent posts the thesis" };
    case "antithesis":
      return session.reviewerAgentId
        ? { phase: "antithesis", messageType: "antithesis", agentIds: [session.reviewerAgentId], note: "the reviewer posts the antithesis" }
        : { phase: "antithesis", messageType: "antithesis", agentIds: [], note: "no reviewer yet: a reviewer must claim the session first" };
    case "synthesis":
      if (!last || last.messageType !== "synthesis") return { phase: "synthesis", messageType: "synthesis", agentIds: both, note: "either agent opens the synthesis" };
      return { phase: "synthesis", messageType: "synthesis", agentIds: both.filter((a) => a !== last.agentId), note: "synthesis alternates between the agents" };
    default:
      return { phase: session.phase, messageType: null, agentIds: [], note: `the session is ${session.phase}; nothing more may be posted` };
  }
}

/**
 * When an active session last moved and when it fails for idleness unless
 * someone posts (overdue: past that, waiting for the next sweep or post to
 * fail it); null once it is finished.
 */
export function sessionIdleClock(s: Pick<DialecticSessionRow, "status" | "updatedAt" | "idleTimeoutMs">, now = Date.now()): { idleSince: number; timesOutAt: number; overdue: boolean } | null {
  if (s.status !== "active") return null;
  const timesOutAt = s.updatedAt + s.idleTimeoutMs;
  return { idleSince: s.updatedAt, timesOutAt, overdue: timesOutAt < now };
}

export function toSession(row: DialecticSessionRow, tail: Tail): DialecticSession {
  const { resolutionJson, ...rest } = row;
  return { ...rest, resolution: parseJsonColumnStrict<Resolution>(resolutionJson), messageCount: tail.count, synthesisRounds: tail.synthesisRounds, expected: expectedNext(row, tail.last) };
}

export function conflict(message: string, session: DialecticSessionRow, last: Tail["last"]): AppError {
  const e = expectedNext(session, last);
  return new AppError("conflict", message, [
    { path: "phase", message: e.note, expected_phase: e.phase, expected_message_type: e.messageType, expected_agent_ids: e.agentIds },
  ]);
}

/** The hash chaining a message to the one before it in its session. */
export function signMessage(prevSignature: string, m: Omit<DialecticMessageRow, "signature">): string {
  const content = canonicalJson([m.sessionId, m.seq, m.id, m.agentId, m.messageType, m.timestamp, m.reasoning, m.rootCause, m.proposedConditionsJson, m.observedMetricsJson, m.concernsJson, m.agrees]);
  return sha256Hex(`${prevSignature}\n${content}`);
}

export function isIdle(row: DialecticSessionRow, now: number): boolean {
  return row.status === "active" && row.updatedAt + row.idleTimeoutMs < now;
}

function requireSessionRow(sessionId: string): DialecticSessionRow {
  const row = getGovernance().db.select().from(dialecticSessions).where(eq(dialecticSessions.sessionId, sessionId)).get();
  if (!row) throw new AppError("not_found", `no dialectic session ${sessionId}`);
  return row;
}

/**
 * For writes as for reads: a session the agent may not see answers like one
 * that does not exist, before any 409 could name its participants.
 */
function requireSessionVisibleTo(sessionId: string, agentId: string, isAdmin: boolean): DialecticSessionRow {
  const row = requireSessionRow(sessionId);
  if (!canAgentSeeSession(row, agentId, isAdmin)) throw new AppError("not_found", `no dialectic session ${sessionId}`);
  return row;
}

/** Fail every active session idle past its timeout. Returns the ids it failed. */
export function sweepIdleSessions({ now = Date.now() }: { now?: number } = {}): string[] {
  const { sqlite, file } = getGovernance();
  const ids = sqlite
    .transaction(
      () =>
        sqlite
          .prepare(
            "update dialectic_sessions set phase = 'failed', status = 'failed', failure_reason = 'idle timeout', updated_at = ? where status = 'active' and updated_at + idle_timeout_ms < ? returning session_id as id",
          )
          .all(now, now) as { id: string }[],
    )
    .immediate()
    .map((r) => r.id);
  for (const id of ids) invalidateSession(file, id);
  return ids;
}

const SWEEP_INTERVAL_MS = 10_000;
const sweepClock = globalThis as unknown as { __dualmindLastSweep?: number };

// Session creation sweeps as a side effect, at most every few seconds per process, so a busy API does not rescan active sessions on every create.
function sweepIdleSessionsNowAndThen(now: number): void {
  if (now - (sweepClock.__dualmindLastSweep ?? 0) < SWEEP_INTERVAL_MS) return;
  sweepClock.__dualmindLastSweep = now;
  sweepIdleSessions({ now });
}

/** The admin-triggered sweep (API, CLI): same as the automatic one, plus an audit row. */
export function sweepIdleSessionsAudited({ actor, now = Date.now() }: { actor: string; now?: number }): { failed: string[] } {
  const failed = sweepIdleSessions({ now });
  appendAudit({ actor, action: "dialectic.sweep", target: "dialectic_sessions", details: { failed } });
  return { failed };
}

/** The columns a new session is created with (both backends). */
export function sessionFacts(parsed: z.output<typeof createSessionSchema>, agentId: string) {
  if (parsed.reviewer_agent_id === agentId) throw new AppError("unprocessable", "an agent cannot review its own session");
  return { pausedAgentId: agentId, reviewerAgentId: parsed.reviewer_agent_id ?? null, topic: parsed.topic, sessionType: parsed.session_type, maxRounds: parsed.max_rounds, idleTimeoutMs: parsed.idle_timeout_ms };
}

/** A create retried with the same session id must say the same; a claim may have filled the reviewer since. */
export function assertSameSessionRetry(existing: DialecticSessionRow, parsed: z.output<typeof createSessionSchema>, facts: ReturnType<typeof sessionFacts>): void {
  const { pausedAgentId, topic, sessionType, maxRounds, idleTimeoutMs } = existing;
  const reviewerAgentId = parsed.reviewer_agent_id ? existing.reviewerAgentId : null;
  assertSameRetry("session", existing.sessionId, { pausedAgentId, reviewerAgentId, topic, sessionType, maxRounds, idleTimeoutMs }, facts);
}

export function createDialecticSession({ input, agentId, now = Date.now() }: { input: z.input<typeof createSessionSchema>; agentId: string; now?: number }): { session: DialecticSession; created: boolean } {
  const parsed = createSessionSchema.parse(input);
  sessionFacts(parsed, agentId);
  const { sqlite, db } = getGovernance();
  const sessionId = parsed.session_id ?? newId();
  return sqlite
    .transaction(() => {
      // Inside the same transaction (a savepoint), so the request stays one atomic write.
      sweepIdleSessionsNowAndThen(now);
      const facts = sessionFacts(parsed, agentId);
      const existing = db.select().from(dialecticSessions).where(eq(dialecticSessions.sessionId, sessionId)).get();
      if (existing) {
        assertSameSessionRetry(existing, parsed, facts);
        return { session: toSession(existing, readTail(sessionId)), created: false };
      }
      const row = db
        .insert(dialecticSessions)
        .values({ sessionId, ...facts, phase: "thesis", status: "active", createdAt: now, updatedAt: now })
        .returning()
        .get();
      return { session: toSession(row, { last: null, count: 0, synthesisRounds: 0 }), created: true };
    })
    .immediate();
}

export function messageFacts(m: Pick<DialecticMessage, "agentId" | "messageType" | "reasoning" | "rootCause" | "proposedConditions" | "observedMetrics" | "concerns" | "agrees">) {
  return { agentId: m.agentId, messageType: m.messageType, reasoning: m.reasoning, rootCause: m.rootCause, proposedConditions: m.proposedConditions, observedMetrics: m.observedMetrics, concerns: m.concerns, agrees: m.agrees };
}

export type ParsedMessage = z.output<typeof postMessageSchema>;

/** What a post says, in the shape a stored message is compared with on a retry. */
export function incomingMessageFacts(agentId: string, parsed: ParsedMessage) {
  return {
    agentId,
    messageType: parsed.message_type,
    reasoning: parsed.reasoning,
    rootCause: parsed.root_cause ?? null,
    proposedConditions: parsed.proposed_conditions ?? null,
    observedMetrics: parsed.observed_metrics ?? null,
    concerns: parsed.concerns ?? null,
    agrees: parsed.agrees ?? null,
  };
}

/**
 * The phase rules for a new message (both backends): whose turn, which type,
 * then the row with its seq and signature chained to the tail. The caller
 * holds the session serialized (an IMMEDIATE transaction, a row lock).
 */
export function nextMessageRow({ session, tail, agentId, parsed, messageId, now }: { session: DialecticSessionRow; tail: Tail; agentId: string; parsed: ParsedMessage; messageId: string; now: number }): DialecticMessageRow {
  const expected = expectedNext(session, tail.last);
  const participants = [session.pausedAgentId, session.reviewerAgentId];
  if (expected.messageType === null) throw conflict(`session is ${session.phase}`, session, tail.last);
  if (!participants.includes(agentId)) throw conflict(`agent ${agentId} is not a participant of this session`, session, tail.last);
  if (!expected.agentIds.includes(agentId)) throw conflict(`not ${agentId}'s turn: ${expected.note}`, session, tail.last);
  if (parsed.message_type !== expected.messageType) throw conflict(`expected a ${expected.messageType}, got a ${parsed.message_type}`, session, tail.last);
  if (parsed.agrees !== undefined && parsed.message_type !== "synthesis") throw new AppError("unprocessable", "agrees belongs to synthesis messages only");
  const base = {
    id: messageId,
    sessionId: session.sessionId,
    seq: (tail.last?.seq ?? 0) + 1,
    agentId,
    messageType: parsed.message_type,
    timestamp: now,
    reasoning: parsed.reasoning,
    rootCause: parsed.root_cause ?? null,
    proposedConditionsJson: parsed.proposed_conditions ? JSON.stringify(parsed.proposed_conditions) : null,
    observedMetricsJson: parsed.observed_metrics ? JSON.stringify(parsed.observed_metrics) : null,
    concernsJson: parsed.concerns ? JSON.stringify(parsed.concerns) : null,
    agrees: parsed.agrees ?? null,
  };
  return { ...base, signature: signMessage(tail.last?.signature ?? SIGNATURE_GENESIS, base) };
}

/** The session after a message was appended: its new tail, counted from the one before. */
export function tailAfter(tail: Tail, row: DialecticMessageRow): Tail {
  return { last: row, count: tail.count + 1, synthesisRounds: tail.synthesisRounds + (row.messageType === "synthesis" ? 1 : 0) };
}

function previousSynthesis(sessionId: string, tail: Tail): DialecticMessageRow | undefined {
  if (!tail.last || tail.last.messageType !== "synthesis") return undefined;
  return getGovernance().db.select().from(dialecticMessages).where(and(eq(dialecticMessages.sessionId, sessionId), eq(dialecticMessages.seq, tail.last.seq))).get();
}

type PostOutcome = { ok: { message: DialecticMessage; session: DialecticSession; created: boolean } } | { failedIdle: AppError };

/**
 * Append one message. Runs as one IMMEDIATE transaction, so the phase check
 * and the insert see the same state even with several processes writing;
 * the unique (session_id, seq) index is the backstop.
 */
export function postDialecticMessage({
  sessionId,
  agentId,
  isAdmin = false,
  input,
  now = Date.now(),
}: {
  sessionId: string;
  agentId: string;
  isAdmin?: boolean;
  input: z.input<typeof postMessageSchema>;
  now?: number;
}): { message: DialecticMessage; session: DialecticSession; created: boolean } {
  const parsed = postMessageSchema.parse(input);
  const { sqlite, db, file } = getGovernance();
  const messageId = parsed.message_id ?? newId();
  const outcome = sqlite
    .transaction((): PostOutcome => {
      const session = requireSessionVisibleTo(sessionId, agentId, isAdmin);
      const incoming = incomingMessageFacts(agentId, parsed);
      const already = db.select().from(dialecticMessages).where(eq(dialecticMessages.id, messageId)).get();
      if (already) {
        if (already.sessionId !== sessionId) throw new AppError("conflict", `message ${messageId} belongs to another session`);
        const stored = toMessage(already);
        assertSameRetry("message", messageId, messageFacts(stored), incoming);
        return { ok: { message: stored, session: toSession(session, readTail(sessionId)), created: false } };
      }
      const tail = readTail(sessionId);
      if (isIdle(session, now)) {
        db.update(dialecticSessions).set({ phase: "failed", status: "failed", failureReason: "idle timeout", updatedAt: now }).where(eq(dialecticSessions.sessionId, sessionId)).run();
        return { failedIdle: conflict("the session was idle past its timeout and has failed", { ...session, phase: "failed" }, tail.last) };
      }
      const row = db.insert(dialecticMessages).values(nextMessageRow({ session, tail, agentId, parsed, messageId, now })).returning().get();
      const next = nextSessionState(session, row, tail, previousSynthesis(sessionId, tail));
      const updated = db
        .update(dialecticSessions)
        .set({ ...next, updatedAt: now })
        .where(eq(dialecticSessions.sessionId, sessionId))
        .returning()
        .get();
      return { ok: { message: toMessage(row), session: toSession(updated, tailAfter(tail, row)), created: true } };
    })
    .immediate();
  invalidateSession(file, sessionId);
  if ("failedIdle" in outcome) throw outcome.failedIdle;
  return outcome.ok;
}

/**
 * After a synthesis: resolved when it agrees with the other agent's
 * agreeing synthesis just before it (same conditions, or none restated);
 * failed when the rounds run out first.
 */
export function nextSessionState(session: DialecticSessionRow, row: DialecticMessageRow, tail: Tail, prev: DialecticMessageRow | undefined): Partial<DialecticSessionRow> {
  if (row.messageType === "thesis") return { phase: "antithesis" };
  if (row.messageType === "antithesis") return { phase: "synthesis" };
  const sameConditions = row.proposedConditionsJson === null || (prev !== undefined && canonicalJson(parseJsonColumnStrict(row.proposedConditionsJson)) === canonicalJson(parseJsonColumnStrict(prev.proposedConditionsJson)));
  if (prev && prev.agentId !== row.agentId && prev.agrees === true && row.agrees === true && sameConditions) {
    const resolution: Resolution = { conditions: parseJsonColumnStrict<string[]>(prev.proposedConditionsJson) ?? [], agreedBy: [prev.agentId, row.agentId], messageId: row.id, seq: row.seq };
    return { phase: "resolved", status: "resolved", resolutionJson: JSON.stringify(resolution) };
  }
  if (tail.synthesisRounds + 1 >= session.maxRounds) return { phase: "failed", status: "failed", failureReason: `no agreement after ${session.maxRounds} synthesis rounds` };
  return {};
}

/** Whether a claim changes anything (false: the agent is already the reviewer, a retry); throws when it may not claim. Both backends. */
export function mayClaimSession(row: DialecticSessionRow, tail: Tail, agentId: string, now: number): boolean {
  if (row.reviewerAgentId === agentId) return false;
  if (row.pausedAgentId === agentId) throw new AppError("unprocessable", "an agent cannot review its own session");
  if (row.reviewerAgentId) throw conflict(`session already has reviewer ${row.reviewerAgentId}`, row, tail.last);
  if (row.status !== "active" || isIdle(row, now)) throw conflict(`session is ${isIdle(row, now) ? "idle past its timeout" : row.status}`, row, tail.last);
  return true;
}

/** A reviewer takes an open session (one without an assigned reviewer). */
export function claimDialecticSession({ sessionId, agentId, isAdmin = false, now = Date.now() }: { sessionId: string; agentId: string; isAdmin?: boolean; now?: number }): DialecticSession {
  const { sqlite, db, file } = getGovernance();
  const session = sqlite
    .transaction(() => {
      const row = requireSessionVisibleTo(sessionId, agentId, isAdmin);
      const tail = readTail(sessionId);
      if (!mayClaimSession(row, tail, agentId, now)) return toSession(row, tail);
      const updated = db.update(dialecticSessions).set({ reviewerAgentId: agentId, updatedAt: now }).where(eq(dialecticSessions.sessionId, sessionId)).returning().get();
      return toSession(updated, tail);
    })
    .immediate();
  invalidateSession(file, sessionId);
  return session;
}

export type Abandoner = { agentId: string; isAdmin: boolean } | { person: string };

/**
 * A failure reason split into the system's words and the words an agent
 * wrote (its abandon reason), so operator-facing places (the alert webhook,
 * Health, the session page) show the agent's text quoted as the agent's,
 * never as the system's own. The inverse of the text abandonedState writes.
 */
export function splitFailureReason(failureReason: string): { system: string; agentId: string | null; agentText: string | null } {
  const m = /^abandoned by ([^\s:]+)( \(admin\))?(?:: ([\s\S]*))?$/.exec(failureReason);
  if (!m) return { system: failureReason, agentId: null, agentText: null };
  const byPerson = m[2] !== undefined;
  return { system: `abandoned by ${m[1]}${m[2] ?? ""}`, agentId: byPerson ? null : m[1], agentText: m[3] ?? null };
}

/**
 * The failed state an abandon writes, or null when the session already
 * failed (a retry); throws when the agent is no participant or it resolved. Both backends.
 */
export function abandonedState(row: DialecticSessionRow, tail: Tail, by: Abandoner, reason: string | undefined, now: number): Partial<DialecticSessionRow> | null {
  if ("agentId" in by && row.pausedAgentId !== by.agentId && row.reviewerAgentId !== by.agentId) throw conflict(`agent ${by.agentId} is not a participant of this session`, row, tail.last);
  if (row.status === "failed") return null;
  if (row.status === "resolved") throw conflict("session is already resolved", row, tail.last);
  const who = "person" in by ? `${by.person} (admin)` : by.agentId;
  return { phase: "failed", status: "failed", failureReason: `abandoned by ${who}${reason ? `: ${reason}` : ""}`, updatedAt: now };
}

function abandonSession({ sessionId, by, reason, now }: { sessionId: string; by: Abandoner; reason?: string; now: number }): DialecticSession {
  const { sqlite, db, file } = getGovernance();
  const session = sqlite
    .transaction(() => {
      const row = "person" in by ? requireSessionRow(sessionId) : requireSessionVisibleTo(sessionId, by.agentId, by.isAdmin);
      const tail = readTail(sessionId);
      const state = abandonedState(row, tail, by, reason, now);
      if (!state) return toSession(row, tail);
      const updated = db.update(dialecticSessions).set(state).where(eq(dialecticSessions.sessionId, sessionId)).returning().get();
      if ("person" in by) appendAudit(abandonAuditEntry(by.person, row, reason));
      return toSession(updated, tail);
    })
    .immediate();
  invalidateSession(file, sessionId);
  return session;
}

/** Either participant may end a session without agreement. */
export function abandonDialecticSession({ sessionId, agentId, isAdmin = false, reason, now = Date.now() }: { sessionId: string; agentId: string; isAdmin?: boolean; reason?: string; now?: number }): DialecticSession {
  return abandonSession({ sessionId, by: { agentId, isAdmin }, reason, now });
}

/**
 * A person with the admin role ends a session from the dashboard (the
 * caller checked the role): same transition as an agent's abandon, and an
 * audit row says who and why.
 */
export function abandonDialecticSessionAsAdmin({ sessionId, actor, reason, now = Date.now() }: { sessionId: string; actor: string; reason?: string; now?: number }): DialecticSession {
  return abandonSession({ sessionId, by: { person: actor }, reason: abandonSessionSchema.parse({ reason }).reason, now });
}

// ---- annotations: notes people leave beside a transcript -------------------

export const ANNOTATION_MAX_CHARS = 2000;
/** Notes per session: beyond this a session is a chat room, and the page would grow without bound. */
export const ANNOTATIONS_PER_SESSION_MAX = 200;

export const annotateSessionSchema = z.object({ body: z.string().trim().min(1, "write a note first").max(ANNOTATION_MAX_CHARS) }).strict();

export type DialecticAnnotation = DialecticAnnotationRow;

/** The audit row of a person's abandon (both backends). */
export function abandonAuditEntry(person: string, row: DialecticSessionRow, reason: string | undefined): AuditEntry {
  return { actor: person, action: "dialectic.abandon", target: annotationTarget(row.sessionId), reason: reason ?? null, details: { phase: row.phase } };
}

/** The audit row of a person's note (both backends). */
export function annotationAuditEntry(actor: string, row: DialecticAnnotationRow): AuditEntry {
  return { actor, action: "dialectic.annotate", target: annotationTarget(row.sessionId), details: { annotationId: row.id, chars: row.body.length } };
}

export function tooManyAnnotations(sessionId: string): AppError {
  return new AppError("unprocessable", `session ${sessionId} already has ${ANNOTATIONS_PER_SESSION_MAX} notes, the most it keeps`);
}

function annotationTarget(sessionId: string): string {
  return `dialectic_session:${sessionId}`;
}

/**
 * A person's note beside a review's transcript. It is not a phase message:
 * it never changes the phase, the turn or the signed chain, so it may be
 * left on a finished session too. Audited with the note's size.
 */
export function annotateDialecticSession({ sessionId, input, actor, now = Date.now() }: { sessionId: string; input: z.input<typeof annotateSessionSchema>; actor: string; now?: number }): DialecticAnnotation {
  const { body } = annotateSessionSchema.parse(input);
  const { sqlite, db } = getGovernance();
  return sqlite
    .transaction(() => {
      requireSessionRow(sessionId);
      const n = db.select({ n: sql<number>`count(*)` }).from(dialecticAnnotations).where(eq(dialecticAnnotations.sessionId, sessionId)).get()?.n ?? 0;
      if (n >= ANNOTATIONS_PER_SESSION_MAX) throw tooManyAnnotations(sessionId);
      const row = db.insert(dialecticAnnotations).values({ sessionId, author: actor, body, createdAt: now }).returning().get();
      appendAudit(annotationAuditEntry(actor, row));
      return row;
    })
    .immediate();
}

/** A session's notes, oldest first (at most ANNOTATIONS_PER_SESSION_MAX exist). */
export function listDialecticAnnotations({ sessionId }: { sessionId: string }): DialecticAnnotation[] {
  return getGovernance()
    .db.select()
    .from(dialecticAnnotations)
    .where(eq(dialecticAnnotations.sessionId, sessionId))
    .orderBy(asc(dialecticAnnotations.createdAt), asc(dialecticAnnotations.id))
    .limit(ANNOTATIONS_PER_SESSION_MAX)
    .all();
}

/** Count, synthesis rounds and last message per session, in one grouped query (the listing without transcripts). */
function tailsBySessionIds(sessionIds: string[]): Map<string, Tail> {
  const out = new Map<string, Tail>();
  if (sessionIds.length === 0) return out;
  const rows = getGovernance()
    .sqlite.prepare(
      `select m.session_id as sessionId, m.agent_id as agentId, m.message_type as messageType, m.seq, m.signature, c.n, c.s
       from dialectic_messages m
       join (select session_id, count(*) as n, coalesce(sum(message_type = 'synthesis'), 0) as s, max(seq) as lastSeq
             from dialectic_messages where session_id in (${sessionIds.map(() => "?").join(",")}) group by session_id) c
         on c.session_id = m.session_id and m.seq = c.lastSeq`,
    )
    .all(...sessionIds) as (NonNullable<Tail["last"]> & { sessionId: string; n: number; s: number })[];
  for (const { sessionId, n, s, ...last } of rows) out.set(sessionId, { last, count: n, synthesisRounds: s });
  return out;
}

function messagesBySessionIds(sessionIds: string[]): Map<string, DialecticMessage[]> {
  const out = new Map<string, DialecticMessage[]>(sessionIds.map((id) => [id, []]));
  if (sessionIds.length === 0) return out;
  const rows = getGovernance().db.select().from(dialecticMessages).where(inArray(dialecticMessages.sessionId, sessionIds)).orderBy(asc(dialecticMessages.sessionId), asc(dialecticMessages.seq)).all();
  for (const r of rows) out.get(r.sessionId)?.push(toMessage(r));
  return out;
}

/** Session with its transcript. Active sessions are served from the read-through cache. */
export function getDialecticSessionById({ sessionId }: { sessionId: string }): SessionView {
  const { file } = getGovernance();
  const cached = readCachedSession<SessionView>(file, sessionId);
  if (cached) return cached;
  const row = requireSessionRow(sessionId);
  const messages = messagesBySessionIds([sessionId]).get(sessionId) ?? [];
  const last = messages.at(-1) ?? null;
  const view: SessionView = { ...toSession(row, { last, count: messages.length, synthesisRounds: messages.filter((m) => m.messageType === "synthesis").length }), messages };
  if (row.status === "active") cacheSession(file, sessionId, view);
  return view;
}

/** Participants, admins, and any agent looking at an open session it might claim. */
export function canAgentSeeSession(session: Pick<DialecticSessionRow, "pausedAgentId" | "reviewerAgentId" | "status">, agentId: string, isAdmin: boolean): boolean {
  return isAdmin || session.pausedAgentId === agentId || session.reviewerAgentId === agentId || (session.reviewerAgentId === null && session.status === "active");
}

export type ListSessionsInput = {
  agentId?: string;
  role?: (typeof ROLES)[number];
  status?: (typeof STATUSES)[number];
  phase?: Phase;
  topic?: string;
  includeTranscript?: boolean;
  limit?: number;
  offset?: number;
};

type SessionColumns = Record<"reviewerAgentId" | "pausedAgentId" | "status" | "phase" | "topic", AnyColumn>;

/** The listing's filter over either dialect's sessions table (the columns are passed in). */
export function sessionListWhere(s: SessionColumns, input: ListSessionsInput): SQL | undefined {
  const role = input.role ?? "any";
  const where: SQL[] = [];
  if (role === "open") {
    where.push(isNull(s.reviewerAgentId), eq(s.status, "active"));
    if (input.agentId) where.push(ne(s.pausedAgentId, input.agentId));
  } else if (input.agentId) {
    if (role === "requestor") where.push(eq(s.pausedAgentId, input.agentId));
    else if (role === "reviewer") where.push(eq(s.reviewerAgentId, input.agentId));
    else where.push(or(eq(s.pausedAgentId, input.agentId), eq(s.reviewerAgentId, input.agentId)) as SQL);
  }
  if (input.status) where.push(eq(s.status, input.status));
  if (input.phase) where.push(eq(s.phase, input.phase));
  if (input.topic) where.push(sql`${s.topic} like ${likeContains(input.topic)} escape '\\'`);
  return where.length ? and(...where) : undefined;
}

/** Listing by agent and role, newest first; the role filters use the agent / reviewer indexes. */
export function listDialecticSessionsByAgent(input: ListSessionsInput): { sessions: SessionView[]; total: number } {
  const { db } = getGovernance();
  const s = dialecticSessions;
  const cond = sessionListWhere(s, input);
  const rows = db.select().from(s).where(cond).orderBy(desc(s.createdAt), desc(s.sessionId)).limit(input.limit ?? 50).offset(input.offset ?? 0).all();
  const total = db.select({ n: sql<number>`count(*)` }).from(s).where(cond).get()?.n ?? 0;
  const ids = rows.map((r) => r.sessionId);
  const transcripts = input.includeTranscript ? messagesBySessionIds(ids) : null;
  const tails = transcripts ? new Map<string, Tail>() : tailsBySessionIds(ids);
  const sessions = rows.map((r): SessionView => {
    if (transcripts) {
      const messages = transcripts.get(r.sessionId) ?? [];
      return { ...toSession(r, { last: messages.at(-1) ?? null, count: messages.length, synthesisRounds: messages.filter((m) => m.messageType === "synthesis").length }), messages };
    }
    return toSession(r, tails.get(r.sessionId) ?? { last: null, count: 0, synthesisRounds: 0 });
  });
  return { sessions, total };
}

export type SignatureCheck = { ok: true; messages: number } | { ok: false; messages: number; brokenAtSeq: number; reason: string };

/** Recompute the chain; any edited, reordered or removed message breaks it from that point. */
export function verifyDialecticSession({ sessionId }: { sessionId: string }): SignatureCheck {
  requireSessionRow(sessionId);
  const rows = getGovernance().db.select().from(dialecticMessages).where(eq(dialecticMessages.sessionId, sessionId)).orderBy(asc(dialecticMessages.seq)).all();
  return verifyMessageChain(rows);
}

export function verifyMessageChain(rows: DialecticMessageRow[]): SignatureCheck {
  let prev = SIGNATURE_GENESIS;
  for (let i = 0; i < rows.length; i++) {
    const { signature, ...content } = rows[i];
    if (content.seq !== i + 1) return { ok: false, messages: i, brokenAtSeq: content.seq, reason: `message ${i + 1} is missing` };
    if (signMessage(prev, content) !== signature) return { ok: false, messages: i, brokenAtSeq: content.seq, reason: "signature does not match the message and its predecessor" };
    prev = signature;
  }
  return { ok: true, messages: rows.length };
}

export function countActiveSessions(): number {
  return getGovernance().db.select({ n: sql<number>`count(*)` }).from(dialecticSessions).where(eq(dialecticSessions.status, "active")).get()?.n ?? 0;
}

export type DialecticActivity = {
  activeSessions: number;
  failedPerHour: { hourStart: number; failed: number }[];
  messagesLastHour: number;
  messagesPerMinuteLastHour: number;
};

/** Counts straight from SQLite (lib/metrics/dialectic.ts adds this process's latency). */
export function getDialecticActivity({ now = Date.now() }: { now?: number } = {}): DialecticActivity {
  const { sqlite, db } = getGovernance();
  const hour = 3_600_000;
  const failedPerHour = sqlite
    .prepare("select (updated_at / ?) * ? as hourStart, count(*) as failed from dialectic_sessions where status = 'failed' and updated_at >= ? group by hourStart order by hourStart")
    .all(hour, hour, now - 24 * hour) as { hourStart: number; failed: number }[];
  const messagesLastHour = db.select({ n: sql<number>`count(*)` }).from(dialecticMessages).where(sql`${dialecticMessages.timestamp} >= ${now - hour}`).get()?.n ?? 0;
  return { activeSessions: countActiveSessions(), failedPerHour, messagesLastHour, messagesPerMinuteLastHour: messagesLastHour / 60 };
}

/** Detail for an agent: sessions it may not see answer like sessions that do not exist. */
export function getDialecticSessionForAgent({ sessionId, agentId, isAdmin }: { sessionId: string; agentId: string; isAdmin: boolean }): SessionView {
  const view = getDialecticSessionById({ sessionId });
  if (!canAgentSeeSession(view, agentId, isAdmin)) throw new AppError("not_found", `no dialectic session ${sessionId}`);
  return view;
}
