import { and, asc, count as countAll, desc, eq, inArray, isNull, ne, or, sql, type AnyColumn, type SQL } from "drizzle-orm";
import { z } from "zod";
import { getGovernance, type GovernanceHandle } from "../db/connection";
import { agentLock, count, engineStep, insert, insertOrIgnore, readLedger, row, rows, select, sqlRows, update, writeLedger, type LedgerHandle, type Op, type OnLedger } from "../db/port";
import type { DialecticAnnotationRow, DialecticMessageRow, DialecticSessionRow } from "../db/schema/governance";
import { AppError } from "../errors";
import { auditStep } from "./audit";
import { cacheSession, invalidateSession, readCachedSession } from "./dialectic-cache";
import { OWNED_CHOICES_MAX, ownedKey, pickOwned, splitKey, type OwnedChoice, type OwnedRow } from "./owned-ids";
import { ledgerTables } from "./tables";
import { assertAgentCount, assertFieldSize, assertLedgerRoom, assertShareKept, nextOffsetOf } from "./limits";
import { getConfig } from "../config";
import { agentIdSchema, assertSameRetry, canonicalJson, clientIdSchema, limitSchema, likeContains, newId, offsetSchema, parseJsonColumnStrict, sha256Hex, snakeCased, type SnakeCased } from "../common";

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
    limit: limitSchema,
    offset: offsetSchema,
  })
  .strict();

/** `id` is the id its writer chose (unique per session); the row's key (`session~id`, or the id itself on messages from before ids were namespaced) stays inside, under the signature. */
export type DialecticMessage = Omit<SnakeCased<DialecticMessageRow>, "client_id" | "proposed_conditions_json" | "observed_metrics_json" | "concerns_json"> & {
  proposed_conditions: string[] | null;
  observed_metrics: Record<string, unknown> | null;
  concerns: string[] | null;
};
export type Resolution = { conditions: string[]; agreed_by: string[]; message_id: string; seq: number };
export type ExpectedNext = { phase: Phase; message_type: MessageType | null; agent_ids: string[]; note: string };
/** `sessionId` is the id the paused agent chose; `key` the session's unambiguous address (lib/governance/owned-ids.ts). */
export type DialecticSession = Omit<SnakeCased<DialecticSessionRow>, "client_id" | "resolution_json"> & { key: string; resolution: Resolution | null; message_count: number; synthesis_rounds: number; expected: ExpectedNext };
/** `transcriptOmitted`: a list left this session's transcript out, as it alone is past the list's byte budget (read the session itself). */
export type SessionView = DialecticSession & { messages?: DialecticMessage[]; transcript_omitted?: true };
/** `nextOffset`: where the next page starts when rows remain; null at the end. */
export type SessionList = { sessions: SessionView[]; total: number; next_offset: number | null };

export function toMessage(row: DialecticMessageRow): DialecticMessage {
  const { id: _key, clientId, proposedConditionsJson, observedMetricsJson, concernsJson, ...facts } = row;
  return {
    id: clientId,
    ...snakeCased(facts),
    proposed_conditions: parseJsonColumnStrict<string[]>(proposedConditionsJson),
    observed_metrics: parseJsonColumnStrict<Record<string, unknown>>(observedMetricsJson),
    concerns: parseJsonColumnStrict<string[]>(concernsJson),
  };
}

export type Tail = { last: Pick<DialecticMessageRow, "agentId" | "messageType" | "seq" | "signature"> | null; count: number; synthesisRounds: number };

/** Who may post what next: the phase machine in one place, used to check posts and to tell a 409'd caller. */
export function expectedNext({ session, last }: { session: Pick<DialecticSessionRow, "phase" | "pausedAgentId" | "reviewerAgentId">; last: Tail["last"] }): ExpectedNext {
  const both = [session.pausedAgentId, ...(session.reviewerAgentId ? [session.reviewerAgentId] : [])];
  switch (session.phase) {
    case "thesis":
      return { phase: "thesis", message_type: "thesis", agent_ids: [session.pausedAgentId], note: "the paused agent posts the thesis" };
    case "antithesis":
      return session.reviewerAgentId
        ? { phase: "antithesis", message_type: "antithesis", agent_ids: [session.reviewerAgentId], note: "the reviewer posts the antithesis" }
        : { phase: "antithesis", message_type: "antithesis", agent_ids: [], note: "no reviewer yet: a reviewer must claim the session first" };
    case "synthesis":
      if (!last || last.messageType !== "synthesis") return { phase: "synthesis", message_type: "synthesis", agent_ids: both, note: "either agent opens the synthesis" };
      return { phase: "synthesis", message_type: "synthesis", agent_ids: both.filter((a) => a !== last.agentId), note: "synthesis alternates between the agents" };
    default:
      return { phase: session.phase, message_type: null, agent_ids: [], note: `the session is ${session.phase}; nothing more may be posted` };
  }
}

/**
 * When an active session last moved and when it fails for idleness unless
 * someone posts (overdue: past that, waiting for the next sweep or post to
 * fail it); null once it is finished.
 */
export function sessionIdleClock({ session: s, now = Date.now() }: { session: Pick<DialecticSession, "status" | "updated_at" | "idle_timeout_ms">; now?: number }): { idleSince: number; timesOutAt: number; overdue: boolean } | null {
  if (s.status !== "active") return null;
  const timesOutAt = s.updated_at + s.idle_timeout_ms;
  return { idleSince: s.updated_at, timesOutAt, overdue: timesOutAt < now };
}

/** A session's stored resolution: written snake_case, read in either spelling (rows from before were written camelCase). */
export function readResolution(json: string | null): Resolution | null {
  const r = parseJsonColumnStrict<Resolution & { agreedBy?: string[]; messageId?: string }>(json);
  if (r === null) return null;
  return { conditions: r.conditions, agreed_by: r.agreed_by ?? r.agreedBy ?? [], message_id: r.message_id ?? r.messageId ?? "", seq: r.seq };
}

export function toSession({ row, tail }: { row: DialecticSessionRow; tail: Tail }): DialecticSession {
  const { sessionId, clientId, resolutionJson, ...facts } = row;
  return {
    session_id: clientId,
    key: sessionId,
    ...snakeCased(facts),
    resolution: readResolution(resolutionJson),
    message_count: tail.count,
    synthesis_rounds: tail.synthesisRounds,
    expected: expectedNext({ session: row, last: tail.last }),
  };
}

export function conflict({ message, session, last }: { message: string; session: DialecticSessionRow; last: Tail["last"] }): AppError {
  const e = expectedNext({ session, last });
  return new AppError("conflict", message, [
    { path: "phase", message: e.note, expected_phase: e.phase, expected_message_type: e.message_type, expected_agent_ids: e.agent_ids },
  ]);
}

/** The hash chaining a message to the one before it in its session. */
export function signMessage({ prevSignature, message: m }: { prevSignature: string; message: Omit<DialecticMessageRow, "signature" | "clientId"> }): string {
  const content = canonicalJson([m.sessionId, m.seq, m.id, m.agentId, m.messageType, m.timestamp, m.reasoning, m.rootCause, m.proposedConditionsJson, m.observedMetricsJson, m.concernsJson, m.agrees]);
  return sha256Hex(`${prevSignature}\n${content}`);
}

export function isIdle({ row, now }: { row: DialecticSessionRow; now: number }): boolean {
  return row.status === "active" && row.updatedAt + row.idleTimeoutMs < now;
}

/** The columns a new session is created with. */
export function sessionFacts({ parsed, agentId }: { parsed: z.output<typeof createSessionSchema>; agentId: string }) {
  if (parsed.reviewer_agent_id === agentId) throw new AppError("unprocessable", "an agent cannot review its own session");
  return { pausedAgentId: agentId, reviewerAgentId: parsed.reviewer_agent_id ?? null, topic: parsed.topic, sessionType: parsed.session_type, maxRounds: parsed.max_rounds, idleTimeoutMs: parsed.idle_timeout_ms };
}

/** A create retried with the same session id must say the same; a claim may have filled the reviewer since. */
export function assertSameSessionRetry({ existing, parsed, facts }: { existing: DialecticSessionRow; parsed: z.output<typeof createSessionSchema>; facts: ReturnType<typeof sessionFacts> }): void {
  const { pausedAgentId, topic, sessionType, maxRounds, idleTimeoutMs } = existing;
  const reviewerAgentId = parsed.reviewer_agent_id ? existing.reviewerAgentId : null;
  assertSameRetry({ kind: "session", id: existing.clientId, stored: { pausedAgentId, reviewerAgentId, topic, sessionType, maxRounds, idleTimeoutMs }, incoming: facts });
}

type ParsedMessage = z.output<typeof postMessageSchema>;

/** What a message says, as a retry is compared with the stored one (a field a post left out is null, as stored). */
function messageFacts(m: Pick<DialecticMessage, "agent_id" | "message_type" | "reasoning"> & Partial<Pick<DialecticMessage, "root_cause" | "proposed_conditions" | "observed_metrics" | "concerns" | "agrees">>) {
  const { root_cause = null, proposed_conditions = null, observed_metrics = null, concerns = null, agrees = null } = m;
  return { agent_id: m.agent_id, message_type: m.message_type, reasoning: m.reasoning, root_cause, proposed_conditions, observed_metrics, concerns, agrees };
}

/**
 * The phase rules for a new message: whose turn, which type,
 * then the row with its seq and signature chained to the tail. The caller
 * holds the session serialized (an IMMEDIATE transaction, a row lock).
 */
export function nextMessageRow({ session, tail, agentId, parsed, messageId, now }: { session: DialecticSessionRow; tail: Tail; agentId: string; parsed: ParsedMessage; messageId: string; now: number }): DialecticMessageRow {
  const expected = expectedNext({ session, last: tail.last });
  const participants = [session.pausedAgentId, session.reviewerAgentId];
  if (expected.message_type === null) throw conflict({ message: `session is ${session.phase}`, session, last: tail.last });
  if (!participants.includes(agentId)) throw conflict({ message: `agent ${agentId} is not a participant of this session`, session, last: tail.last });
  if (!expected.agent_ids.includes(agentId)) throw conflict({ message: `not ${agentId}'s turn: ${expected.note}`, session, last: tail.last });
  if (parsed.message_type !== expected.message_type) throw conflict({ message: `expected a ${expected.message_type}, got a ${parsed.message_type}`, session, last: tail.last });
  if (parsed.agrees !== undefined && parsed.message_type !== "synthesis") throw new AppError("unprocessable", "agrees belongs to synthesis messages only");
  const base = {
    id: ownedKey({ owner: session.sessionId, clientId: messageId }),
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
  return { ...base, clientId: messageId, signature: signMessage({ prevSignature: tail.last?.signature ?? SIGNATURE_GENESIS, message: base }) };
}

/**
 * After a synthesis: resolved when it agrees with the other agent's
 * agreeing synthesis just before it (same conditions, or none restated);
 * failed when the rounds run out first.
 */
export function nextSessionState({ session, row, tail, prev }: { session: DialecticSessionRow; row: DialecticMessageRow; tail: Tail; prev: DialecticMessageRow | undefined }): Partial<DialecticSessionRow> {
  if (row.messageType === "thesis") return { phase: "antithesis" };
  if (row.messageType === "antithesis") return { phase: "synthesis" };
  const sameConditions = row.proposedConditionsJson === null || (prev !== undefined && canonicalJson(parseJsonColumnStrict(row.proposedConditionsJson)) === canonicalJson(parseJsonColumnStrict(prev.proposedConditionsJson)));
  if (prev && prev.agentId !== row.agentId && prev.agrees === true && row.agrees === true && sameConditions) {
    const resolution: Resolution = { conditions: parseJsonColumnStrict<string[]>(prev.proposedConditionsJson) ?? [], agreed_by: [prev.agentId, row.agentId], message_id: row.clientId, seq: row.seq };
    return { phase: "resolved", status: "resolved", resolutionJson: JSON.stringify(resolution) };
  }
  if (tail.synthesisRounds + 1 >= session.maxRounds) return { phase: "failed", status: "failed", failureReason: `no agreement after ${session.maxRounds} synthesis rounds` };
  return {};
}

/** Whether a claim changes anything (false: the agent is already the reviewer, a retry); throws when it may not claim. */
export function mayClaimSession({ row, tail, agentId, now }: { row: DialecticSessionRow; tail: Tail; agentId: string; now: number }): boolean {
  if (row.reviewerAgentId === agentId) return false;
  if (row.pausedAgentId === agentId) throw new AppError("unprocessable", "an agent cannot review its own session");
  if (row.reviewerAgentId) throw conflict({ message: `session already has reviewer ${row.reviewerAgentId}`, session: row, last: tail.last });
  if (row.status !== "active" || isIdle({ row, now })) throw conflict({ message: `session is ${isIdle({ row, now }) ? "idle past its timeout" : row.status}`, session: row, last: tail.last });
  return true;
}

export type Abandoner = { agentId: string; isAdmin: boolean } | { person: string };

/**
 * A failure reason split into the system's words and the words an agent
 * wrote (its abandon reason), so operator-facing places (the alert webhook,
 * Health, the session page) show the agent's text quoted as the agent's,
 * never as the system's own. The inverse of the text abandonedState writes.
 */
export function splitFailureReason(failureReason: string): { system: string; agentId: string | null; agentText: string | null } {
  // An id holds no whitespace (but may hold `:`), so the first ": " after it ends it.
  const m = /^abandoned by (\S+?)( \(admin\))?(?:: ([\s\S]*))?$/.exec(failureReason);
  if (!m) return { system: failureReason, agentId: null, agentText: null };
  // A person's (an admin's) reason is an operator's own words, not an agent's: shown whole, as before.
  if (m[2] !== undefined) return { system: failureReason, agentId: null, agentText: null };
  return { system: `abandoned by ${m[1]}`, agentId: m[1], agentText: m[3] ?? null };
}

/**
 * The agent a failed session's alert counts against (DUALMIND_ALERTS_PER_AGENT_PER_HOUR):
 * the agent that abandoned it, or for an idle timeout or too many rounds the
 * agent that opened it; none when a person abandoned it. Taken from the
 * session's own participant fields, never from text alone.
 */
export function failureAgentOf(session: Pick<DialecticSessionRow, "failureReason" | "pausedAgentId" | "reviewerAgentId">): string | null {
  const { agentId, system } = splitFailureReason(session.failureReason ?? "");
  if (agentId !== null) return agentId === session.reviewerAgentId ? session.reviewerAgentId : session.pausedAgentId;
  return system.startsWith("abandoned by ") ? null : session.pausedAgentId;
}

/**
 * The failed state an abandon writes, or null when the session already
 * failed (a retry); throws when the agent is no participant or it resolved.
 */
export function abandonedState({ row, tail, by, reason, now }: { row: DialecticSessionRow; tail: Tail; by: Abandoner; reason: string | undefined; now: number }): Partial<DialecticSessionRow> | null {
  if ("agentId" in by && row.pausedAgentId !== by.agentId && row.reviewerAgentId !== by.agentId) throw conflict({ message: `agent ${by.agentId} is not a participant of this session`, session: row, last: tail.last });
  if (row.status === "failed") return null;
  if (row.status === "resolved") throw conflict({ message: "session is already resolved", session: row, last: tail.last });
  const who = "person" in by ? `${by.person} (admin)` : by.agentId;
  return { phase: "failed", status: "failed", failureReason: `abandoned by ${who}${reason ? `: ${reason}` : ""}`, updatedAt: now };
}

// ---- annotations: notes people leave beside a transcript -------------------

export const ANNOTATION_MAX_CHARS = 2000;
/** Notes per session: beyond this a session is a chat room, and the page would grow without bound. */
export const ANNOTATIONS_PER_SESSION_MAX = 200;

export const annotateSessionSchema = z.object({ body: z.string().trim().min(1, "write a note first").max(ANNOTATION_MAX_CHARS) }).strict();

export type DialecticAnnotation = DialecticAnnotationRow;

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
export function sessionListWhere({ columns: s, input }: { columns: SessionColumns; input: ListSessionsInput }): SQL | undefined {
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

export type SignatureCheck = { ok: true; messages: number } | { ok: false; messages: number; broken_at_seq: number; reason: string };

export function verifyMessageChain(rows: DialecticMessageRow[]): SignatureCheck {
  let prev = SIGNATURE_GENESIS;
  for (let i = 0; i < rows.length; i++) {
    const { signature, ...content } = rows[i];
    if (content.seq !== i + 1) return { ok: false, messages: i, broken_at_seq: content.seq, reason: `message ${i + 1} is missing` };
    if (signMessage({ prevSignature: prev, message: content }) !== signature) return { ok: false, messages: i, broken_at_seq: content.seq, reason: "signature does not match the message and its predecessor" };
    prev = signature;
  }
  return { ok: true, messages: rows.length };
}

export type DialecticActivity = {
  active_sessions: number;
  failed_per_hour: { hour_start: number; failed: number }[];
  messages_last_hour: number;
  messages_per_minute_last_hour: number;
};


/*
 * Dialectic sessions, one repository over governance.db and PostgreSQL
 * (lib/db/port.ts). Every write runs in one transaction and reads its
 * session's row first: SQLite serializes writers (an immediate transaction);
 * on PostgreSQL the row is locked (FOR UPDATE), so posts to one session from
 * any replica queue one behind the other, each seeing the previous message,
 * taking seq + 1 and chaining its signature to it, while posts to different
 * sessions proceed in parallel. The unique (session_id, seq) index is the
 * backstop. On governance.db, active sessions' views are also kept in a
 * read-through cache (./dialectic-cache.ts) that every write here drops; on
 * PostgreSQL there is none, as several replicas would serve each other's stale turns.
 */
const { dialecticSessions, dialecticMessages, dialecticAnnotations } = ledgerTables;
type SessionTable = typeof dialecticSessions.sqlite | typeof dialecticSessions.pg;
type Handle<H> = { handle?: H };
/** An agent on the API or MCP; none: an operator (dashboard, CLI), who may see every session. */
export type SessionViewer = { agentId: string; isAdmin: boolean };

const sessionView = (r: DialecticSessionRow): OwnedRow => ({ key: r.sessionId, clientId: r.clientId, owner: r.pausedAgentId });
/** The view for one viewer: involved where it is the session's reviewer (an open session anyone may claim is only seen). */
const sessionViewFor =
  (viewer: SessionViewer | undefined) =>
  (r: DialecticSessionRow): OwnedRow => ({ ...sessionView(r), involved: viewer !== undefined && r.reviewerAgentId === viewer.agentId });

/** The sessions an agent may see: participants, admins, and any agent looking at an open session it might claim. */
function seeableBy(s: SessionTable, viewer: SessionViewer | undefined): SQL | undefined {
  if (!viewer || viewer.isAdmin) return undefined;
  return or(eq(s.pausedAgentId, viewer.agentId), eq(s.reviewerAgentId, viewer.agentId), and(isNull(s.reviewerAgentId), eq(s.status, "active")));
}

/** The sessions whose key or id is `ref`. */
export function sessionNamedBy({ table: s, ref }: { table: SessionTable; ref: string }): SQL {
  const split = splitKey(ref);
  // A key spelled out as owner~id also names a session from before ids were namespaced (its key is the bare id).
  return (split ? or(eq(s.sessionId, ref), and(eq(s.pausedAgentId, split.owner), eq(s.clientId, split.clientId))) : or(eq(s.sessionId, ref), eq(s.clientId, ref))) as SQL;
}

/**
 * The session a reference names for a viewer (lib/governance/owned-ids.ts):
 * its own id first, else one it may see. A session the agent may not see
 * answers like one that does not exist, for writes as for reads, before any
 * 409 could name its participants. `lock` locks it for a write on PostgreSQL.
 */
function* requireSession(ref: string, viewer: SessionViewer | undefined, { lock }: { lock?: "update" } = {}): Op<DialecticSessionRow> {
  const own = viewer ? yield* row(dialecticSessions, (s) => and(eq(s.pausedAgentId, viewer.agentId), eq(s.clientId, ref)), { lock }) : undefined;
  // The key's row first, then the sessions the viewer reviews: two rows are enough to tell one from several at the best rank.
  const reviews = (s: SessionTable) => (viewer ? [sql`case when ${s.reviewerAgentId} = ${viewer.agentId} then 0 else 1 end`] : []);
  const found = own
    ? [own]
    : yield* rows(dialecticSessions, { where: (s) => and(sessionNamedBy({ table: s, ref }), seeableBy(s, viewer)), orderBy: (s) => [sql`case when ${s.sessionId} = ${ref} then 0 else 1 end`, ...reviews(s), asc(s.sessionId)], limit: 2, lock });
  const session = pickOwned({ visible: found, ref, ownerId: viewer?.agentId, view: sessionViewFor(viewer), kind: "session" });
  if (!session) throw new AppError("not_found", `no dialectic session ${ref}`);
  return session;
}

/** A message as its session's participants know it: under the id the paused agent chose. */
function inSession(session: Pick<DialecticSessionRow, "sessionId" | "clientId">): (m: DialecticMessage) => DialecticMessage {
  return (m) => (m.session_id === session.sessionId ? { ...m, session_id: session.clientId } : m);
}

/** The transcript's last message, length and synthesis rounds. */
function* readTail(key: string): Op<Tail> {
  const [last] = yield* rows(dialecticMessages, { where: (m) => eq(m.sessionId, key), orderBy: (m) => [desc(m.seq)], limit: 1 });
  const [counts] = yield* select({ m: dialecticMessages }, (db, t) =>
    db
      .select({ n: countAll(), s: sql<number | string>`coalesce(sum(case when ${t.m.messageType} = 'synthesis' then 1 else 0 end), 0)` })
      .from(t.m)
      .where(eq(t.m.sessionId, key)),
  );
  return { last: last ? { agentId: last.agentId, messageType: last.messageType, seq: last.seq, signature: last.signature } : null, count: Number(counts.n), synthesisRounds: Number(counts.s) };
}

/** Drop a session's cached view (governance.db; PostgreSQL keeps none). Inside the write: nothing in this process can read between the drop and the commit. */
function dropCached(keys: string[]): Op<void> {
  return engineStep({
    sqlite: (h) => {
      for (const key of keys) invalidateSession({ dbFile: (h as unknown as GovernanceHandle).file, sessionId: key });
    },
    pg: async () => undefined,
  });
}

function cacheFile(handle: LedgerHandle): string | null {
  return handle.kind === "pg" ? null : (handle as GovernanceHandle).file;
}

/** Fail every active session idle past its timeout. Returns the keys of the sessions it failed. */
function* sweepIdle(now: number): Op<string[]> {
  const failed = yield* update(dialecticSessions, { phase: "failed", status: "failed", failureReason: "idle timeout", updatedAt: now }, (s) => and(eq(s.status, "active"), sql`${s.updatedAt} + ${s.idleTimeoutMs} < ${now}`));
  const keys = failed.map((r) => r.sessionId);
  yield* dropCached(keys);
  return keys;
}

export function sweepIdleSessions<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, now = Date.now() }: Handle<H> & { now?: number } = {}): OnLedger<H, string[]> {
  return writeLedger(handle, sweepIdle(now));
}

const SWEEP_INTERVAL_MS = 10_000;
const sweepClock = globalThis as unknown as { __dualmindLastSweep?: number };

// Session creation sweeps as a side effect, at most every few seconds per process, so a busy API does not rescan active sessions on every create.
function* sweepIdleNowAndThen(now: number): Op<void> {
  if (now - (sweepClock.__dualmindLastSweep ?? 0) < SWEEP_INTERVAL_MS) return;
  sweepClock.__dualmindLastSweep = now;
  yield* sweepIdle(now);
}

/** The admin-triggered sweep (API, CLI): same as the automatic one, plus an audit row in the same transaction. */
export function sweepIdleSessionsAudited<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, actor, now = Date.now() }: Handle<H> & { actor: string; now?: number }): OnLedger<H, { failed: string[] }> {
  return writeLedger(handle, function* () {
    const failed = yield* sweepIdle(now);
    yield* auditStep({ actor, action: "dialectic.sweep", target: "dialectic_sessions", details: { failed } });
    return { failed };
  });
}

/**
 * Open a session. Ids are namespaced per paused agent: another agent's
 * session with this id is another session. A create retried with the same
 * id is answered with the stored session (409 if it says something else);
 * one racing its first attempt on another replica waits for it on the unique key.
 */
export function createDialecticSession<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, input, agentId, now = Date.now() }: Handle<H> & { input: z.input<typeof createSessionSchema>; agentId: string; now?: number }): OnLedger<H, { session: DialecticSession; created: boolean }> {
  const parsed = createSessionSchema.parse(input);
  const facts = sessionFacts({ parsed, agentId });
  const clientId = parsed.session_id ?? newId();
  const mine = (s: SessionTable) => and(eq(s.pausedAgentId, agentId), eq(s.clientId, clientId));
  return writeLedger(handle, function* () {
    yield* sweepIdleNowAndThen(now);
    const retry = function* (existing: DialecticSessionRow) {
      assertSameSessionRetry({ existing, parsed, facts });
      return { session: toSession({ row: existing, tail: yield* readTail(existing.sessionId) }), created: false };
    };
    const existing = yield* row(dialecticSessions, mine);
    if (existing) return yield* retry(existing);
    yield* agentLock(agentId);
    yield* assertLedgerRoom({ agentId: agentId });
    const open = yield* count(dialecticSessions, (s) => and(eq(s.pausedAgentId, agentId), eq(s.status, "active")));
    assertAgentCount({ limit: "DUALMIND_MAX_OPEN_REVIEWS_PER_AGENT", what: "active reviews", agentId, open, max: getConfig().limits.maxOpenReviewsPerAgent });
    const created = yield* insertOrIgnore(dialecticSessions, { sessionId: ownedKey({ owner: agentId, clientId }), clientId, ...facts, phase: "thesis", status: "active", createdAt: now, updatedAt: now }, (s) => [s.pausedAgentId, s.clientId]);
    if (created) {
      yield* assertShareKept({ agentId });
      return { session: toSession({ row: created, tail: { last: null, count: 0, synthesisRounds: 0 } }), created: true };
    }
    const raced = yield* row(dialecticSessions, mine);
    if (!raced) throw new AppError("conflict", "a concurrent write took this id; retry");
    return yield* retry(raced);
  });
}

type Posted = { message: DialecticMessage; session: DialecticSession; created: boolean };
type PostOutcome = { ok: Posted } | { failedIdle: AppError };

/**
 * Append one message, in one transaction holding the session (see above), so
 * the phase check, the seq and the signature see the latest message.
 */
export function postDialecticMessage<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, sessionId, agentId, isAdmin = false, input, now = Date.now() }: Handle<H> & { sessionId: string; agentId: string; isAdmin?: boolean; input: z.input<typeof postMessageSchema>; now?: number }): OnLedger<H, Posted> {
  const parsed = postMessageSchema.parse(input);
  const messageId = parsed.message_id ?? newId();
  const { message_id: _id, ...text } = parsed;
  assertFieldSize({ field: "the message", value: text });
  const attempt = () =>
    writeLedger(handle, function* (): Op<PostOutcome> {
      const session = yield* requireSession(sessionId, { agentId, isAdmin }, { lock: "update" });
      const key = session.sessionId;
      const shown = inSession(session);
      yield* dropCached([key]);
      const incoming = messageFacts({ agent_id: agentId, ...parsed });
      // Message ids are unique per session: another session's message with this id is another message.
      const already = yield* row(dialecticMessages, (m) => and(eq(m.sessionId, key), eq(m.clientId, messageId)));
      if (already) {
        const stored = toMessage(already);
        assertSameRetry({ kind: "message", id: messageId, stored: messageFacts(stored), incoming });
        return { ok: { message: shown(stored), session: toSession({ row: session, tail: yield* readTail(key) }), created: false } };
      }
      const tail = yield* readTail(key);
      if (isIdle({ row: session, now })) {
        yield* update(dialecticSessions, { phase: "failed", status: "failed", failureReason: "idle timeout", updatedAt: now }, (s) => eq(s.sessionId, key));
        return { failedIdle: conflict({ message: "the session was idle past its timeout and has failed", session: { ...session, phase: "failed" }, last: tail.last }) };
      }
      yield* assertLedgerRoom({ agentId: agentId });
      const inserted = yield* insert(dialecticMessages, nextMessageRow({ session, tail, agentId, parsed, messageId, now }));
      const lastSeq = tail.last?.messageType === "synthesis" ? tail.last.seq : null;
      const prev = lastSeq === null ? undefined : yield* row(dialecticMessages, (m) => and(eq(m.sessionId, key), eq(m.seq, lastSeq)));
      const [updated] = yield* update(dialecticSessions, { ...nextSessionState({ session, row: inserted, tail, prev }), updatedAt: now }, (s) => eq(s.sessionId, key));
      yield* assertShareKept({ agentId });
      // The tail after the message, counted from the one before.
      const after = { last: inserted, count: tail.count + 1, synthesisRounds: tail.synthesisRounds + (inserted.messageType === "synthesis" ? 1 : 0) };
      return { ok: { message: shown(toMessage(inserted)), session: toSession({ row: updated, tail: after }), created: true } };
    });
  const settle = (outcome: PostOutcome) => {
    if ("failedIdle" in outcome) throw outcome.failedIdle;
    return outcome.ok;
  };
  // Posts to one session queue on its lock and message ids are unique per session, so no two posts race for one key.
  if (handle.kind !== "pg") return settle(attempt() as PostOutcome) as OnLedger<H, Posted>;
  return (attempt() as Promise<PostOutcome>).then(settle) as OnLedger<H, Posted>;
}

/** A reviewer takes an open session (one without an assigned reviewer). */
export function claimDialecticSession<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, sessionId, agentId, isAdmin = false, now = Date.now() }: Handle<H> & { sessionId: string; agentId: string; isAdmin?: boolean; now?: number }): OnLedger<H, DialecticSession> {
  return writeLedger(handle, function* () {
    const session = yield* requireSession(sessionId, { agentId, isAdmin }, { lock: "update" });
    const tail = yield* readTail(session.sessionId);
    if (!mayClaimSession({ row: session, tail, agentId, now })) return toSession({ row: session, tail });
    yield* dropCached([session.sessionId]);
    const [updated] = yield* update(dialecticSessions, { reviewerAgentId: agentId, updatedAt: now }, (s) => eq(s.sessionId, session.sessionId));
    return toSession({ row: updated, tail });
  });
}

function abandonSession<H extends LedgerHandle>({ handle, sessionId, by, reason, now }: { handle: H; sessionId: string; by: Abandoner; reason?: string; now: number }): OnLedger<H, DialecticSession> {
  return writeLedger(handle, function* () {
    const session = yield* requireSession(sessionId, "person" in by ? undefined : by, { lock: "update" });
    const tail = yield* readTail(session.sessionId);
    const state = abandonedState({ row: session, tail, by, reason, now });
    if (!state) return toSession({ row: session, tail });
    yield* dropCached([session.sessionId]);
    const [updated] = yield* update(dialecticSessions, state, (s) => eq(s.sessionId, session.sessionId));
    if ("person" in by) yield* auditStep({ actor: by.person, action: "dialectic.abandon", target: `dialectic_session:${session.sessionId}`, reason: reason ?? null, details: { phase: session.phase } });
    return toSession({ row: updated, tail });
  });
}

/** Either participant may end a session without agreement. */
export function abandonDialecticSession<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, sessionId, agentId, isAdmin = false, reason, now = Date.now() }: Handle<H> & { sessionId: string; agentId: string; isAdmin?: boolean; reason?: string; now?: number }): OnLedger<H, DialecticSession> {
  return abandonSession({ handle, sessionId, by: { agentId, isAdmin }, reason, now });
}

/**
 * A person with the admin role ends a session from the dashboard (the
 * caller checked the role): same transition as an agent's abandon, and an
 * audit row says who and why.
 */
export function abandonDialecticSessionAsAdmin<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, sessionId, actor, reason, now = Date.now() }: Handle<H> & { sessionId: string; actor: string; reason?: string; now?: number }): OnLedger<H, DialecticSession> {
  return abandonSession({ handle, sessionId, by: { person: actor }, reason: abandonSessionSchema.parse({ reason }).reason, now });
}

/**
 * A person's note beside a review's transcript. It is not a phase message:
 * it never changes the phase, the turn or the signed chain, so it may be
 * left on a finished session too. Audited with the note's size; the session
 * row is held, so the cap holds across replicas.
 */
export function annotateDialecticSession<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, sessionId, input, actor, now = Date.now() }: Handle<H> & { sessionId: string; input: z.input<typeof annotateSessionSchema>; actor: string; now?: number }): OnLedger<H, DialecticAnnotation> {
  const { body } = annotateSessionSchema.parse(input);
  return writeLedger(handle, function* () {
    const session = yield* requireSession(sessionId, undefined, { lock: "update" });
    const n = yield* count(dialecticAnnotations, (a) => eq(a.sessionId, session.sessionId));
    if (n >= ANNOTATIONS_PER_SESSION_MAX) throw new AppError("unprocessable", `session ${sessionId} already has ${ANNOTATIONS_PER_SESSION_MAX} notes, the most it keeps`);
    const created = yield* insert(dialecticAnnotations, { sessionId: session.sessionId, author: actor, body, createdAt: now });
    yield* auditStep({ actor, action: "dialectic.annotate", target: `dialectic_session:${created.sessionId}`, details: { annotationId: created.id, chars: created.body.length } });
    return created;
  });
}

/** A session's notes, oldest first (at most ANNOTATIONS_PER_SESSION_MAX exist). */
export function listDialecticAnnotations<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, sessionId }: Handle<H> & { sessionId: string }): OnLedger<H, DialecticAnnotation[]> {
  return readLedger(handle, function* () {
    const session = yield* requireSession(sessionId, undefined);
    return yield* rows(dialecticAnnotations, { where: (a) => eq(a.sessionId, session.sessionId), orderBy: (a) => [asc(a.createdAt), asc(a.id)], limit: ANNOTATIONS_PER_SESSION_MAX });
  });
}

/** Count, synthesis rounds and last message per session, in one query both engines run (the listing without transcripts). */
function* tailsBySessionKeys(keys: string[]): Op<Map<string, Tail>> {
  const out = new Map<string, Tail>();
  if (keys.length === 0) return out;
  const m = dialecticMessages.sqlite;
  const found = yield* sqlRows<NonNullable<Tail["last"]> & { sessionId: string; n: number | string; s: number | string }>(sql`
    select m.session_id as "sessionId", m.agent_id as "agentId", m.message_type as "messageType", m.seq as "seq", m.signature as "signature", c.n as "n", c.s as "s"
    from ${m} m
    join (select session_id, count(*) as n, coalesce(sum(case when message_type = 'synthesis' then 1 else 0 end), 0) as s, max(seq) as last_seq
          from ${m} where session_id in (${sql.join(keys.map((k) => sql`${k}`), sql`, `)}) group by session_id) c
      on c.session_id = m.session_id and m.seq = c.last_seq`);
  for (const { sessionId, n, s, ...last } of found) out.set(sessionId, { last: { ...last, seq: Number(last.seq) }, count: Number(n), synthesisRounds: Number(s) });
  return out;
}

function* messagesBySessionKeys(keys: string[]): Op<Map<string, DialecticMessage[]>> {
  const out = new Map<string, DialecticMessage[]>(keys.map((k) => [k, []]));
  if (keys.length === 0) return out;
  const found = yield* rows(dialecticMessages, { where: (m) => inArray(m.sessionId, keys), orderBy: (m) => [asc(m.sessionId), asc(m.seq)] });
  for (const r of found) out.get(r.sessionId)?.push(toMessage(r));
  return out;
}

function withTranscript(session: DialecticSessionRow, messages: DialecticMessage[]): SessionView {
  const last = messages.at(-1);
  const tail = { last: last ? { agentId: last.agent_id, messageType: last.message_type, seq: last.seq, signature: last.signature } : null, count: messages.length, synthesisRounds: messages.filter((x) => x.message_type === "synthesis").length };
  return { ...toSession({ row: session, tail }), messages: messages.map(inSession(session)) };
}

/** Session with its transcript; on governance.db an active session's view is served from the read-through cache. */
function* sessionViewOf(session: DialecticSessionRow, file: string | null): Op<SessionView> {
  const cached = file === null ? undefined : readCachedSession<SessionView>({ dbFile: file, sessionId: session.sessionId });
  if (cached) return cached;
  const view = withTranscript(session, (yield* messagesBySessionKeys([session.sessionId])).get(session.sessionId) ?? []);
  if (file !== null && session.status === "active") cacheSession({ dbFile: file, sessionId: session.sessionId, value: view });
  return view;
}

/** The operator's view (dashboard, CLI): any session, by key (or by id where it names one). */
export function getDialecticSessionById<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, sessionId }: Handle<H> & { sessionId: string }): OnLedger<H, SessionView> {
  return readLedger(handle, function* () {
    return yield* sessionViewOf(yield* requireSession(sessionId, undefined), cacheFile(handle));
  });
}

/** The operator's choice where agents share a review id: every session with that id (or that key), newest first. */
export function listDialecticSessionsByClientId<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, clientId }: Handle<H> & { clientId: string }): OnLedger<H, OwnedChoice[]> {
  return readLedger(handle, function* () {
    const found = yield* rows(dialecticSessions, { where: (s) => or(eq(s.clientId, clientId), eq(s.sessionId, clientId)), orderBy: (s) => [desc(s.createdAt), asc(s.sessionId)], limit: OWNED_CHOICES_MAX });
    return found.map((s) => ({ key: s.sessionId, owner: s.pausedAgentId, title: s.topic, createdAt: s.createdAt }));
  });
}

/** Detail for an agent: sessions it may not see answer like sessions that do not exist. */
export function getDialecticSessionForAgent<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, sessionId, agentId, isAdmin }: Handle<H> & SessionViewer & { sessionId: string }): OnLedger<H, SessionView> {
  return readLedger(handle, function* () {
    return yield* sessionViewOf(yield* requireSession(sessionId, { agentId, isAdmin }), cacheFile(handle));
  });
}

/** Listing by agent and role, newest first; the role filters use the agent / reviewer indexes. */
export function listDialecticSessionsByAgent<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, ...input }: Handle<H> & ListSessionsInput): OnLedger<H, SessionList> {
  const where = (s: SessionTable) => sessionListWhere({ columns: s, input });
  const offset = input.offset ?? 0;
  return readLedger(handle, function* () {
    const page = yield* rows(dialecticSessions, { where, orderBy: (s) => [desc(s.createdAt), desc(s.sessionId)], limit: input.limit ?? 50, offset });
    const total = yield* count(dialecticSessions, where);
    const keys = page.map((r) => r.sessionId);
    const tails = yield* tailsBySessionKeys(keys);
    const views = page.map((r) => toSession({ row: r, tail: tails.get(r.sessionId) ?? { last: null, count: 0, synthesisRounds: 0 } }));
    // Without transcripts a row is a few KB at most (topic, failure reason), so a page of them stays small.
    if (!input.includeTranscript) return { sessions: views, total, next_offset: nextOffsetOf({ offset, shown: views.length, total }) };
    // Transcripts are read one session at a time and stop at the list's byte budget; a transcript larger than the whole budget is left out and marked.
    const budget = getConfig().limits.listMaxBytes;
    const out: SessionView[] = [];
    let used = 0;
    for (const [i, r] of page.entries()) {
      const view = withTranscript(r, (yield* messagesBySessionKeys([r.sessionId])).get(r.sessionId) ?? []);
      const bytes = Buffer.byteLength(JSON.stringify(view), "utf8");
      const shown: SessionView = bytes > budget ? { ...views[i], transcript_omitted: true } : view;
      used += bytes > budget ? Buffer.byteLength(JSON.stringify(shown), "utf8") : bytes;
      if (out.length > 0 && used > budget) break;
      out.push(shown);
    }
    return { sessions: out, total, next_offset: nextOffsetOf({ offset, shown: out.length, total }) };
  });
}

/** Recompute the chain; any edited, reordered or removed message breaks it from that point. */
export function verifyDialecticSession<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, sessionId }: Handle<H> & { sessionId: string }): OnLedger<H, SignatureCheck> {
  return readLedger(handle, function* () {
    const session = yield* requireSession(sessionId, undefined);
    return verifyMessageChain(yield* rows(dialecticMessages, { where: (m) => eq(m.sessionId, session.sessionId), orderBy: (m) => [asc(m.seq)] }));
  });
}

/** Active sessions, failures per hour over a day and messages in the last hour (lib/metrics/dialectic.ts adds this process's latency). */
export function getDialecticActivity<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, now = Date.now() }: Handle<H> & { now?: number } = {}): OnLedger<H, DialecticActivity> {
  const hour = 3_600_000;
  const s = dialecticSessions.sqlite;
  return readLedger(handle, function* () {
    const failed = yield* sqlRows<{ hourStart: number | string; failed: number | string }>(
      sql`select (updated_at / ${hour}) * ${hour} as "hourStart", count(*) as "failed" from ${s} where status = 'failed' and updated_at >= ${now - 24 * hour} group by 1 order by 1`,
    );
    const activeSessions = yield* count(dialecticSessions, (t) => eq(t.status, "active"));
    const messagesLastHour = yield* count(dialecticMessages, (m) => sql`${m.timestamp} >= ${now - hour}`);
    return { active_sessions: activeSessions, failed_per_hour: failed.map((r) => ({ hour_start: Number(r.hourStart), failed: Number(r.failed) })), messages_last_hour: messagesLastHour, messages_per_minute_last_hour: messagesLastHour / 60 };
  });
}
