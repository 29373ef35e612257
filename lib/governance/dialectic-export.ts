import { asc, eq, inArray } from "drizzle-orm";
import { assertGovernanceNotOnPostgres } from "../db/pg";
import { z } from "zod";
import { getGovernance } from "../db/connection";
import { dialecticMessages, dialecticSessions, type DialecticMessageRow, type DialecticSessionRow } from "../db/schema/governance";
import { AppError } from "../errors";
import { appendAudit } from "./audit";
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

export function exportDialecticSessions({ sessionId, now = Date.now() }: { sessionId?: string; now?: number } = {}): DialecticSnapshot {
  assertGovernanceNotOnPostgres("dialectic export");
  const { sqlite, db } = getGovernance();
  // One read transaction: the snapshot is a consistent point in time.
  return sqlite.transaction(() => {
    const sessions = sessionId
      ? db.select().from(dialecticSessions).where(eq(dialecticSessions.sessionId, sessionId)).all()
      : db.select().from(dialecticSessions).orderBy(asc(dialecticSessions.createdAt), asc(dialecticSessions.sessionId)).all();
    if (sessionId && sessions.length === 0) throw new AppError("not_found", `no dialectic session ${sessionId}`);
    const bySession = new Map<string, DialecticMessageRow[]>(sessions.map((s) => [s.sessionId, []]));
    const messages = sessionId
      ? db.select().from(dialecticMessages).where(eq(dialecticMessages.sessionId, sessionId)).orderBy(asc(dialecticMessages.seq)).all()
      : db.select().from(dialecticMessages).orderBy(asc(dialecticMessages.sessionId), asc(dialecticMessages.seq)).all();
    for (const m of messages) bySession.get(m.sessionId)?.push(m);
    return { format: SNAPSHOT_FORMAT, exportedAt: now, sessions: sessions.map((s) => ({ ...s, messages: bySession.get(s.sessionId) ?? [] })) };
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
export function restoreDialecticSessions({ snapshot, actor }: { snapshot: unknown; actor: string }): { restored: number; unchanged: number; messages: number } {
  assertGovernanceNotOnPostgres("dialectic restore");
  const parsed = dialecticSnapshotSchema.parse(snapshot);
  for (const s of parsed.sessions) {
    if (s.messages.some((m) => m.sessionId !== s.sessionId)) throw new AppError("unprocessable", `session ${s.sessionId} holds messages of another session`);
    const check = verifyMessageChain(s.messages);
    if (!check.ok) throw new AppError("unprocessable", `session ${s.sessionId} fails its signature check at message ${check.brokenAtSeq}: ${check.reason}`);
  }
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
      let restored = 0;
      let unchanged = 0;
      let messages = 0;
      for (const s of parsed.sessions) {
        const current = existing.get(s.sessionId);
        if (current) {
          if (canonicalJson(current) !== canonicalJson(s)) throw new AppError("conflict", `session ${s.sessionId} already exists with different contents; a restore never overwrites`);
          unchanged++;
          continue;
        }
        const { messages: msgs, ...row } = s;
        db.insert(dialecticSessions).values(row).run();
        for (const m of msgs) db.insert(dialecticMessages).values(m).run();
        restored++;
        messages += msgs.length;
      }
      appendAudit({ actor, action: "dialectic.restore", target: "dialectic_sessions", details: { restored, unchanged, messages, snapshot_exported_at: parsed.exportedAt } });
      return { restored, unchanged, messages };
    })
    .immediate();
  invalidateAllSessions();
  return result;
}
