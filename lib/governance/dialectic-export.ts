import { asc, eq, inArray } from "drizzle-orm";
import { z } from "zod";
import { getGovernance, type GovernanceHandle } from "../db/connection";
import { PG_LOCK } from "../db/pg";
import { insert, insertMany, isUniqueViolation, ledgerLock, readLedger, rows, writeLedger, type LedgerHandle, type Op, type OnLedger } from "../db/port";
import type { DialecticMessageRow, DialecticSessionRow } from "../db/schema/governance";
import { AppError } from "../errors";
import { auditStep } from "./audit";
import { ledgerTables } from "./tables";
import { invalidateAllSessions } from "./dialectic-cache";
import { MESSAGE_TYPES, PHASES, STATUSES, verifyMessageChain } from "./dialectic";
import { canonicalJson, clientIdSchema, countSchema } from "../common";
import { ownedKey } from "./owned-ids";

export const SNAPSHOT_FORMAT = "dualmind.dialectic-sessions.v1" as const;

/*
 * Export and restore of dialectic sessions, one repository over
 * governance.db and PostgreSQL (lib/db/port.ts). The export reads in one
 * transaction, so it is one point in time; restores take the restore lock,
 * so two restores of one snapshot on two replicas insert each session once
 * and the second finds it unchanged.
 */
const { dialecticSessions, dialecticMessages } = ledgerTables;
type Handle<H> = { handle?: H };

/**
 * Snapshots carry the rows verbatim (JSON columns stay text) so a restore
 * reproduces the database exactly and the signatures still verify.
 */
export type SessionSnapshot = DialecticSessionRow & { messages: DialecticMessageRow[] };
export type DialecticSnapshot = { format: typeof SNAPSHOT_FORMAT; exportedAt: number; sessions: SessionSnapshot[] };

/** The snapshot of the sessions read (one asked for, or all), with their messages in seq order. Shared by both dialects. */
export function toDialecticSnapshot({ sessionId, sessions, messages, now }: { sessionId?: string; sessions: DialecticSessionRow[]; messages: DialecticMessageRow[]; now: number }): DialecticSnapshot {
  if (sessionId && sessions.length === 0) throw new AppError("not_found", `no dialectic session ${sessionId}`);
  const bySession = new Map<string, DialecticMessageRow[]>(sessions.map((s) => [s.sessionId, []]));
  for (const m of messages) bySession.get(m.sessionId)?.push(m);
  return { format: SNAPSHOT_FORMAT, exportedAt: now, sessions: sessions.map((s) => ({ ...s, messages: bySession.get(s.sessionId) ?? [] })) };
}

export function exportDialecticSessions<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, sessionId, now = Date.now() }: Handle<H> & { sessionId?: string; now?: number } = {}): OnLedger<H, DialecticSnapshot> {
  return readLedger(handle, function* () {
    const sessions = yield* rows(dialecticSessions, sessionId ? { where: (t) => eq(t.sessionId, sessionId) } : { orderBy: (t) => [asc(t.createdAt), asc(t.sessionId)] });
    const messages = yield* rows(dialecticMessages, sessionId ? { where: (t) => eq(t.sessionId, sessionId), orderBy: (t) => [asc(t.seq)] } : { orderBy: (t) => [asc(t.sessionId), asc(t.seq)] });
    return toDialecticSnapshot({ sessionId, sessions, messages, now });
  }, { snapshot: true });
}

const text = z.string().max(100_000);
const messageRowSchema = z
  .object({
    /** The key (`session~id`; the id itself for messages from before ids were namespaced). */
    id: z.string().min(1).max(300),
    /** The id its writer chose; snapshots from before ids were namespaced have none (it is the key). */
    clientId: z.string().min(1).max(64).optional(),
    sessionId: z.string().min(1).max(200),
    seq: z.number().int().min(1),
    agentId: z.string().min(1).max(100),
    messageType: z.enum(MESSAGE_TYPES),
    timestamp: z.number().int(),
    reasoning: text,
    rootCause: text.nullable(),
    proposedConditionsJson: text.nullable(),
    observedMetricsJson: text.nullable(),
    concernsJson: text.nullable(),
    agrees: z.boolean().nullable(),
    signature: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict()
  // Like a session's key: `session~id` of its own session, or the bare id from before ids were namespaced.
  .refine((m) => clientIdSchema.safeParse(m.clientId ?? m.id).success && (m.id === ownedKey({ owner: m.sessionId, clientId: m.clientId ?? m.id }) || m.id === (m.clientId ?? m.id)), {
    message: "id must be its session's key for its clientId (session~id), or the id itself for a message from before ids were namespaced",
    path: ["id"],
  })
  .transform(({ clientId, ...m }) => ({ ...m, clientId: clientId ?? m.id }));

const sessionRowSchema = z
  .object({
    /** The key (`owner~id`; the id itself for sessions from before ids were namespaced). */
    sessionId: z.string().min(1).max(200),
    /** The id the paused agent chose; snapshots from before ids were namespaced have none (it is the key). */
    clientId: z.string().min(1).max(64).optional(),
    pausedAgentId: z.string().min(1).max(100),
    reviewerAgentId: z.string().min(1).max(100).nullable(),
    phase: z.enum(PHASES),
    status: z.enum(STATUSES),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
    topic: text,
    sessionType: z.string().min(1).max(64),
    resolutionJson: text.nullable(),
    failureReason: text.nullable(),
    maxRounds: countSchema,
    idleTimeoutMs: z.number().int().min(1),
    messages: z.array(messageRowSchema),
  })
  .strict()
  // A key names its owner's id and nothing else: `owner~id` of this session's paused agent and id, or (from before ids were
  // namespaced) the bare id itself. A snapshot cannot plant a session under another agent's key.
  .refine((s) => clientIdSchema.safeParse(s.clientId ?? s.sessionId).success && (s.sessionId === ownedKey({ owner: s.pausedAgentId, clientId: s.clientId ?? s.sessionId }) || s.sessionId === (s.clientId ?? s.sessionId)), {
    message: "sessionId must be the paused agent's key for its clientId (owner~id), or the id itself for a session from before ids were namespaced",
    path: ["sessionId"],
  })
  .transform(({ clientId, ...s }) => ({ ...s, clientId: clientId ?? s.sessionId }));

export const dialecticSnapshotSchema = z
  .object({ format: z.literal(SNAPSHOT_FORMAT), exportedAt: z.number().int(), sessions: z.array(sessionRowSchema).max(100_000) })
  .strict();

/**
 * Admin restore from a snapshot: every chain is verified first, sessions that
 * already exist identically are skipped, a differing one is a conflict (a
 * restore never overwrites). All or nothing, audited.
 */
/** A restored message whose id (an old-style bare id) another session's message already holds: a restore never overwrites. */
function messageIdTaken({ id, sessionId, by }: { id: string; sessionId: string; by: string }): AppError {
  return new AppError("conflict", `message id ${id} of session ${sessionId} is already a message of ${by}; a restore never overwrites (give one of them a namespaced id, session~id)`);
}

export type RestoreResult = { restored: number; unchanged: number; messages: number };

/** Parse a snapshot and verify every session's signature chain, before any transaction (both dialects). */
export function parseVerifiedSnapshot(snapshot: unknown): z.output<typeof dialecticSnapshotSchema> {
  const parsed = dialecticSnapshotSchema.parse(snapshot);
  // A message's id is its key across sessions; two old-style messages (bare ids) in two sessions may share one.
  const sessionOfMessage = new Map<string, string>();
  for (const s of parsed.sessions) {
    for (const m of s.messages) {
      const other = sessionOfMessage.get(m.id);
      if (other !== undefined && other !== s.sessionId) throw messageIdTaken({ id: m.id, sessionId: s.sessionId, by: `session ${other} of this snapshot` });
      sessionOfMessage.set(m.id, s.sessionId);
    }
  }
  for (const s of parsed.sessions) {
    if (s.messages.some((m) => m.sessionId !== s.sessionId)) throw new AppError("unprocessable", `session ${s.sessionId} holds messages of another session`);
    const check = verifyMessageChain(s.messages);
    if (!check.ok) throw new AppError("unprocessable", `session ${s.sessionId} fails its signature check at message ${check.broken_at_seq}: ${check.reason}`);
  }
  return parsed;
}

/** What to insert: sessions not there yet; one already there must be identical (a restore never overwrites). Shared by both dialects. */
export function planRestore({ sessions, existing }: { sessions: SessionSnapshot[]; existing: Map<string, SessionSnapshot> }): { insert: SessionSnapshot[]; unchanged: number } {
  const insert: SessionSnapshot[] = [];
  let unchanged = 0;
  for (const s of sessions) {
    const current = existing.get(s.sessionId);
    if (!current) {
      insert.push(s);
      continue;
    }
    if (canonicalJson(current) !== canonicalJson(s)) throw new AppError("conflict", `session ${s.sessionId} already exists with different contents; a restore never overwrites`);
    unchanged++;
  }
  return { insert, unchanged };
}

/** Messages per insert: 13 parameters each, far below either engine's limit on bind parameters. */
const MESSAGE_INSERT_BATCH = 1_000;

function* existingSessions(ids: string[]): Op<Map<string, SessionSnapshot>> {
  const existing = new Map<string, SessionSnapshot>();
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    for (const r of yield* rows(dialecticSessions, { where: (t) => inArray(t.sessionId, chunk) })) {
      existing.set(r.sessionId, { ...r, messages: yield* rows(dialecticMessages, { where: (t) => eq(t.sessionId, r.sessionId), orderBy: (t) => [asc(t.seq)] }) });
    }
  }
  return existing;
}

export async function restoreDialecticSessions({ handle = getGovernance(), snapshot, actor }: Handle<LedgerHandle> & { snapshot: unknown; actor: string }): Promise<RestoreResult> {
  const parsed = parseVerifiedSnapshot(snapshot);
  const result = await writeLedger(handle, function* () {
    yield* ledgerLock(PG_LOCK.dialecticRestore);
    const { insert: toInsert, unchanged } = planRestore({ sessions: parsed.sessions, existing: yield* existingSessions(parsed.sessions.map((s) => s.sessionId)) });
    let messages = 0;
    for (const { messages: msgs, ...session } of toInsert) {
      try {
        yield* insert(dialecticSessions, session);
      } catch (e) {
        // Another session of this agent already has this id (under another key): a restore never overwrites.
        if (isUniqueViolation(e)) throw new AppError("conflict", `session ${session.sessionId} already exists with different contents; a restore never overwrites`);
        throw e;
      }
      for (let at = 0; at < msgs.length; at += MESSAGE_INSERT_BATCH) {
        const batch = msgs.slice(at, at + MESSAGE_INSERT_BATCH);
        const taken = yield* rows(dialecticMessages, { where: (t) => inArray(t.id, batch.map((m) => m.id)), limit: 1 });
        if (taken[0]) throw messageIdTaken({ id: taken[0].id, sessionId: session.sessionId, by: `session ${taken[0].sessionId}` });
        yield* insertMany(dialecticMessages, batch);
      }
      messages += msgs.length;
    }
    const restored = { restored: toInsert.length, unchanged, messages };
    yield* auditStep({ actor, action: "dialectic.restore", target: "dialectic_sessions", details: { ...restored, snapshot_exported_at: parsed.exportedAt } });
    return restored;
  });
  invalidateAllSessions();
  return result;
}
