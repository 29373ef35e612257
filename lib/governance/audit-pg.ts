import { and, asc, desc, eq, gt, inArray, sql } from "drizzle-orm";
import { PG_LOCK, type PgGovernanceExecutor } from "../db/pg";
import { auditLog } from "../db/schema/pg/governance";
import { auditChainFields, AuditChainVerifier, hashAuditEntry, type AuditChainFields, type AuditChainRow, type AuditVerification } from "./audit-chain";
import type { AuditEntry } from "./audit";

/**
 * The hash-chained audit log on PostgreSQL (the SQLite twin is ./audit.ts).
 * Every append takes one transaction-scoped advisory lock, so appends from any
 * connection of any replica form one chain: read the tail, link to it, insert
 * id = tail + 1. The lock is held until the caller's transaction commits, so
 * an audited change and its audit row commit together and a rolled-back one
 * leaves no gap. The price: audited writes are serialized database-wide, as
 * they are on SQLite. Append it as the last write of a transaction, so the
 * lock is held briefly and never taken before a row lock (no lock-order deadlock).
 */
export async function appendAuditPg({ db, entry }: { db: PgGovernanceExecutor; entry: AuditEntry }): Promise<AuditChainRow> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${PG_LOCK.auditChain})`);
    const [tail] = await tx.select({ id: auditLog.id, hash: auditLog.hash }).from(auditLog).orderBy(desc(auditLog.id)).limit(1);
    const fields: AuditChainFields = auditChainFields(entry, tail?.hash);
    const [row] = await tx
      .insert(auditLog)
      .values({ id: (tail?.id ?? 0) + 1, ...fields, hash: hashAuditEntry(fields) })
      .returning();
    return row;
  });
}

const VERIFY_PAGE = 1000;

/** Walk the chain from the start in pages of 1,000 (keyset on id), so a long log is never loaded whole. */
export async function verifyAuditChainPg({ db }: { db: PgGovernanceExecutor }): Promise<AuditVerification> {
  const verifier = new AuditChainVerifier();
  let after = 0;
  for (;;) {
    const page = await db.select().from(auditLog).where(gt(auditLog.id, after)).orderBy(asc(auditLog.id)).limit(VERIFY_PAGE);
    for (const row of page) if (!verifier.feed(row)) return verifier.result();
    if (page.length < VERIFY_PAGE) return verifier.result();
    after = page[page.length - 1].id;
  }
}

export async function listAuditTailPg({ db, limit = 50 }: { db: PgGovernanceExecutor; limit?: number }): Promise<AuditChainRow[]> {
  return db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(limit);
}

/** The newest audit rows about any of `targets`, newest first (uses the target index). */
export async function listAuditByTargetsPg({ db, targets, limit = 50 }: { db: PgGovernanceExecutor; targets: string[]; limit?: number }): Promise<AuditChainRow[]> {
  if (targets.length === 0) return [];
  return db.select().from(auditLog).where(inArray(auditLog.target, targets)).orderBy(desc(auditLog.id)).limit(limit);
}

/** Whether any audit row ever recorded `action` on `target`. */
export async function hasAuditEntryPg({ db, action, target }: { db: PgGovernanceExecutor; action: string; target: string }): Promise<boolean> {
  const [row] = await db.select({ id: auditLog.id }).from(auditLog).where(and(eq(auditLog.target, target), eq(auditLog.action, action))).limit(1);
  return row !== undefined;
}
