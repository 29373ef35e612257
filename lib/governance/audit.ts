import type Database from "better-sqlite3";
import type { Statement } from "better-sqlite3";
import { and, desc, eq, inArray } from "drizzle-orm";
import { getGovernance } from "../db/connection";
import { engineStep, type Op } from "../db/port";
import { auditLog, type AuditRow } from "../db/schema/governance";
import { appendAuditPg } from "./audit-pg";
import { AUDIT_GENESIS, auditChainFields, AuditChainVerifier, hashAuditEntry, type AuditChainEntry, type AuditVerification } from "./audit-chain";

export { AUDIT_GENESIS, type AuditVerification };

export type AuditEntry = AuditChainEntry;

type Hashable = Pick<AuditRow, "ts" | "actor" | "action" | "target" | "reason" | "details" | "prevHash">;

type AuditStatements = { lastHash: Statement<[], string | undefined>; insert: Statement<unknown[], AuditRow> };
const statements = new WeakMap<Database.Database, AuditStatements>();

/**
 * Prepared once per connection: every audited write runs these two inside
 * its own transaction, so they are kept off the query builder (building the
 * SQL cost several times the statements themselves).
 */
function auditStatements(sqlite: Database.Database): AuditStatements {
  let found = statements.get(sqlite);
  if (!found) {
    found = {
      lastHash: sqlite.prepare("select hash from audit_log order by id desc limit 1").pluck() as Statement<[], string | undefined>,
      insert: sqlite.prepare(
        `insert into audit_log (ts, actor, action, target, reason, details, prev_hash, hash) values (?, ?, ?, ?, ?, ?, ?, ?)
         returning id, ts, actor, action, target, reason, details, prev_hash as prevHash, hash`,
      ) as Statement<unknown[], AuditRow>,
    };
    statements.set(sqlite, found);
  }
  return found;
}

/**
 * Append one entry to the hash-chained audit log. Runs inside the caller's
 * transaction when there is one (better-sqlite3 nests as a savepoint), so an
 * audited change and its audit row commit together.
 */
export function appendAudit(entry: AuditEntry): AuditRow {
  const { sqlite } = getGovernance();
  const { lastHash, insert } = auditStatements(sqlite);
  return sqlite
    .transaction(() => {
      const row: Hashable = auditChainFields(entry, lastHash.get());
      return insert.get(row.ts, row.actor, row.action, row.target, row.reason, row.details, row.prevHash, hashAuditEntry(row))!;
    })
    .immediate();
}

/**
 * An audit row as a step of a ledger or store write (lib/db/port.ts): the
 * chain's locking is the one part that differs per engine (governance.db's
 * write lock; PostgreSQL's advisory lock, see appendAuditPg), so the row
 * commits with the change on both. Append it as the last write of the operation.
 */
export function auditStep(entry: AuditEntry): Op<void> {
  return engineStep({
    sqlite: () => void appendAudit(entry),
    pg: async (tx) => void (await appendAuditPg({ db: tx, entry })),
  });
}

/** Walk the chain from the start; the first row whose link or hash is wrong is reported. */
export function verifyAuditChain(): AuditVerification {
  const { sqlite } = getGovernance();
  const verifier = new AuditChainVerifier();
  // Streamed, so a long log is verified without loading it whole.
  const rows = sqlite
    .prepare("select id, ts, actor, action, target, reason, details, prev_hash as prevHash, hash from audit_log order by id")
    .iterate() as IterableIterator<AuditRow>;
  for (const row of rows) if (!verifier.feed(row)) break;
  return verifier.result();
}

export function listAuditTail({ limit = 50 }: { limit?: number } = {}): AuditRow[] {
  const { db } = getGovernance();
  return db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(limit).all();
}

/** Whether any audit row ever recorded `action` on `target` (uses the target index). */
export function hasAuditEntry({ action, target }: { action: string; target: string }): boolean {
  const { db } = getGovernance();
  return db.select({ id: auditLog.id }).from(auditLog).where(and(eq(auditLog.target, target), eq(auditLog.action, action))).limit(1).get() !== undefined;
}

/** The newest audit rows about any of `targets`, newest first (uses the target index). */
export function listAuditByTargets({ targets, limit = 50 }: { targets: string[]; limit?: number }): AuditRow[] {
  if (targets.length === 0) return [];
  const { db } = getGovernance();
  return db.select().from(auditLog).where(inArray(auditLog.target, targets)).orderBy(desc(auditLog.id)).limit(limit).all();
}
