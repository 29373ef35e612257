import { asc, eq, inArray } from "drizzle-orm";
import { z } from "zod";
import { getGovernance } from "../db/connection";
import { dialecticMessages, dialecticSessions, type DialecticMessageRow, type DialecticSessionRow } from "../db/schema/governance";
import { AppError } from "../errors";
import { appendAudit, type AuditEntry } from "./audit";
import { invalidateAllSessions } from "./dialectic-cache";
import { MESSAGE_TYPES, PHASES, STATUSES, verifyMessageChain } from "./dialectic";
import { canonicalJson } from "../common";

export const SNAPSHOT_FORMAT = "dualmind.dialectic-sessions.v1" as const;

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

export function exportDialecticSessions({ sessionId, now = Date.now() }: { sessionId?: string; now?: number } = {}): DialecticSnapshot {
  const { sqlite, db } = getGovernance();
  // One read transaction: the snapshot is a consistent point in time.
  return sqlite.transaction(() => {
    const sessions = sessionId
      ? db.select().from(dialecticSessions).where(eq(dialecticSessions.sessionId, sessionId)).all()
      : db.select().from(dialecticSessions).orderBy(asc(dialecticSessions.createdAt), asc(dialecticSessions.sessionId)).all();
    const messages = sessionId
      ? db.select().from(dialecticMessages).where(eq(dialecticMessages.sessionId, sessionId)).orderBy(asc(dialecticMessages.seq)).all()
      : db.select().from(dialecticMessages).orderBy(asc(dialecticMessages.sessionId), asc(dialecticMessages.seq)).all();
    return toDialecticSnapshot({ sessionId, sessions, messages, now });
  })();
}

const text = z.string().max(100_000);
const messageRowSchema = z
  .object({
    id: z.string().min(1).max(64),
    sessionId: z.string().min(1).max(64),
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
  .strict();

const sessionRowSchema = z
  .object({
    sessionId: z.string().min(1).max(64),
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
    maxRounds: z.number().int().min(1),
    idleTimeoutMs: z.number().int().min(1),
    messages: z.array(messageRowSchema),
  })
  .strict();

export const dialecticSnapshotSchema = z
  .object({ format: z.literal(SNAPSHOT_FORMAT), exportedAt: z.number().int(), sessions: z.array(sessionRowSchema).max(100_000) })
  .strict();

/**
 * Admin restore from a snapshot: every chain is verified first, sessions that
 * already exist identically are skipped, a differing one is a conflict (a
 * restore never overwrites). All or nothing, audited.
 */
export type RestoreResult = { restored: number; unchanged: number; messages: number };

/** Parse a snapshot and verify every session's signature chain, before any transaction (both dialects). */
export function parseVerifiedSnapshot(snapshot: unknown): z.output<typeof dialecticSnapshotSchema> {
  const parsed = dialecticSnapshotSchema.parse(snapshot);
  for (const s of parsed.sessions) {
    if (s.messages.some((m) => m.sessionId !== s.sessionId)) throw new AppError("unprocessable", `session ${s.sessionId} holds messages of another session`);
    const check = verifyMessageChain(s.messages);
    if (!check.ok) throw new AppError("unprocessable", `session ${s.sessionId} fails its signature check at message ${check.brokenAtSeq}: ${check.reason}`);
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

export function restoredAudit({ actor, result, exportedAt }: { actor: string; result: RestoreResult; exportedAt: number }): AuditEntry {
  return { actor, action: "dialectic.restore", target: "dialectic_sessions", details: { ...result, snapshot_exported_at: exportedAt } };
}

export function restoreDialecticSessions({ snapshot, actor }: { snapshot: unknown; actor: string }): RestoreResult {
  const parsed = parseVerifiedSnapshot(snapshot);
  const { sqlite, db } = getGovernance();
  const result = sqlite
    .transaction(() => {
      const ids = parsed.sessions.map((s) => s.sessionId);
      const existing = new Map<string, SessionSnapshot>();
      for (let i = 0; i < ids.length; i += 500) {
        const chunk = ids.slice(i, i + 500);
        const rows = db.select().from(dialecticSessions).where(inArray(dialecticSessions.sessionId, chunk)).all();
        for (const r of rows) existing.set(r.sessionId, { ...r, messages: db.select().from(dialecticMessages).where(eq(dialecticMessages.sessionId, r.sessionId)).orderBy(asc(dialecticMessages.seq)).all() });
      }
      const { insert, unchanged } = planRestore({ sessions: parsed.sessions, existing });
      let messages = 0;
      for (const { messages: msgs, ...row } of insert) {
        db.insert(dialecticSessions).values(row).run();
        for (const m of msgs) db.insert(dialecticMessages).values(m).run();
        messages += msgs.length;
      }
      const result = { restored: insert.length, unchanged, messages };
      appendAudit(restoredAudit({ actor, result, exportedAt: parsed.exportedAt }));
      return result;
    })
    .immediate();
  invalidateAllSessions();
  return result;
}
