import { asc, eq, inArray, sql } from "drizzle-orm";
import { PG_LOCK, type PgGovernanceExecutor } from "../db/pg";
import { dialecticMessages, dialecticSessions } from "../db/schema/pg/governance";
import { appendAuditPg } from "./audit-pg";
import { parseVerifiedSnapshot, planRestore, restoredAudit, toDialecticSnapshot, type DialecticSnapshot, type RestoreResult, type SessionSnapshot } from "./dialectic-export";

/**
 * Dialectic snapshots on PostgreSQL (the SQLite twin, the format, the checks
 * and the restore rule are in ./dialectic-export.ts). The export reads in one
 * repeatable-read transaction, so it is one point in time; restores take one
 * advisory lock, so two restores of one snapshot on two replicas insert each
 * session once and the second finds it unchanged.
 */
export async function exportDialecticSessionsPg({ db, sessionId, now = Date.now() }: { db: PgGovernanceExecutor; sessionId?: string; now?: number }): Promise<DialecticSnapshot> {
  return db.transaction(
    async (tx) => {
      const sessions = sessionId
        ? await tx.select().from(dialecticSessions).where(eq(dialecticSessions.sessionId, sessionId))
        : await tx.select().from(dialecticSessions).orderBy(asc(dialecticSessions.createdAt), asc(dialecticSessions.sessionId));
      const messages = sessionId
        ? await tx.select().from(dialecticMessages).where(eq(dialecticMessages.sessionId, sessionId)).orderBy(asc(dialecticMessages.seq))
        : await tx.select().from(dialecticMessages).orderBy(asc(dialecticMessages.sessionId), asc(dialecticMessages.seq));
      return toDialecticSnapshot({ sessionId, sessions, messages, now });
    },
    { isolationLevel: "repeatable read", accessMode: "read only" },
  );
}

/** Messages per insert: 13 parameters each, so a long transcript stays far below PostgreSQL's 65,535 bind parameters. */
const MESSAGE_INSERT_BATCH = 1_000;

export async function restoreDialecticSessionsPg({ db, snapshot, actor }: { db: PgGovernanceExecutor; snapshot: unknown; actor: string }): Promise<RestoreResult> {
  const parsed = parseVerifiedSnapshot(snapshot);
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${PG_LOCK.dialecticRestore})`);
    const ids = parsed.sessions.map((s) => s.sessionId);
    const existing = new Map<string, SessionSnapshot>();
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const rows = await tx.select().from(dialecticSessions).where(inArray(dialecticSessions.sessionId, chunk));
      for (const r of rows) existing.set(r.sessionId, { ...r, messages: await tx.select().from(dialecticMessages).where(eq(dialecticMessages.sessionId, r.sessionId)).orderBy(asc(dialecticMessages.seq)) });
    }
    const { insert, unchanged } = planRestore({ sessions: parsed.sessions, existing });
    let messages = 0;
    for (const { messages: msgs, ...row } of insert) {
      await tx.insert(dialecticSessions).values(row);
      for (let at = 0; at < msgs.length; at += MESSAGE_INSERT_BATCH) await tx.insert(dialecticMessages).values(msgs.slice(at, at + MESSAGE_INSERT_BATCH));
      messages += msgs.length;
    }
    const result = { restored: insert.length, unchanged, messages };
    await appendAuditPg({ db: tx, entry: restoredAudit({ actor, result, exportedAt: parsed.exportedAt }) });
    return result;
  });
}
