import type Database from "better-sqlite3";
import type { Statement } from "better-sqlite3";
import { and, asc, desc, eq, gt, inArray, sql } from "drizzle-orm";
import { getGovernance, type GovernanceHandle } from "../db/connection";
import { PG_LOCK, type PgGovernanceExecutor } from "../db/pg";
import { engineStep, readLedger, row, rows, type LedgerHandle, type OnLedger, type Op, type PgLedgerHandle } from "../db/port";
import type { AuditRow } from "../db/schema/governance";
import { auditLog as pgAuditLog } from "../db/schema/pg/governance";
import { AUDIT_GENESIS, auditChainFields, AuditChainVerifier, hashAuditEntry, type AuditChainEntry, type AuditChainFields, type AuditChainRow, type AuditVerification } from "./audit-chain";
import { assertAuditRoomPg, assertAuditRoomSqlite } from "./limits";
import { ledgerTables } from "./tables";

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
 * audited change and its audit row commit together. An agent's row is refused
 * while the ledger is full or the agent past its share (lib/governance/limits.ts),
 * whichever path appends it.
 */
export function appendAudit(entry: AuditEntry): AuditRow {
  assertAuditRoomSqlite({ actor: entry.actor });
  const { sqlite } = getGovernance();
  const { lastHash, insert } = auditStatements(sqlite);
  return sqlite
    .transaction(() => {
      const row: Hashable = auditChainFields({ entry, prevHash: lastHash.get() });
      return insert.get(row.ts, row.actor, row.action, row.target, row.reason, row.details, row.prevHash, hashAuditEntry(row))!;
    })
    .immediate();
}

/**
 * The chain's append on PostgreSQL. Every append takes one transaction-scoped
 * advisory lock, so appends from any connection of any replica form one
 * chain: read the tail, link to it, insert id = tail + 1. The lock is held
 * until the caller's transaction commits, so an audited change and its audit
 * row commit together and a rolled-back one leaves no gap. The price: audited
 * writes are serialized database-wide, as they are on SQLite. Append it as the
 * last write of a transaction, so the lock is held briefly and never taken
 * before a row lock (no lock-order deadlock).
 */
export async function appendAuditPg({ db, entry }: { db: PgGovernanceExecutor; entry: AuditEntry }): Promise<AuditChainRow> {
  return db.transaction(async (tx) => {
    // The share is read under the chain's lock: concurrent appends by one agent see each other's rows.
    await tx.execute(sql`select pg_advisory_xact_lock(${PG_LOCK.auditChain})`);
    await assertAuditRoomPg({ tx, actor: entry.actor });
    const [tail] = await tx.select({ id: pgAuditLog.id, hash: pgAuditLog.hash }).from(pgAuditLog).orderBy(desc(pgAuditLog.id)).limit(1);
    const fields: AuditChainFields = auditChainFields({ entry, prevHash: tail?.hash });
    const [inserted] = await tx
      .insert(pgAuditLog)
      .values({ id: (tail?.id ?? 0) + 1, ...fields, hash: hashAuditEntry(fields) })
      .returning();
    return inserted;
  });
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

const VERIFY_PAGE = 1000;

function* verifyChain(): Op<AuditVerification> {
  const verifier = new AuditChainVerifier();
  // Keyset pages on id, so a long log is verified without loading it whole.
  for (let after = 0; ; ) {
    const page = yield* rows(ledgerTables.auditLog, { where: (t) => gt(t.id, after), orderBy: (t) => [asc(t.id)], limit: VERIFY_PAGE });
    for (const row of page) if (!verifier.feed(row)) return verifier.result();
    if (page.length < VERIFY_PAGE) return verifier.result();
    after = page[page.length - 1].id;
  }
}

type OnLedgerArg<H extends LedgerHandle> = { handle?: H };

/** Walk the chain from the start; the first row whose link or hash is wrong is reported. */
export function verifyAuditChain<H extends LedgerHandle = GovernanceHandle>({ handle }: OnLedgerArg<H> = {}): OnLedger<H, AuditVerification> {
  return readLedger(handle ?? (getGovernance() as H), verifyChain());
}

export function listAuditTail<H extends LedgerHandle = GovernanceHandle>({ handle, limit = 50 }: OnLedgerArg<H> & { limit?: number } = {}): OnLedger<H, AuditRow[]> {
  return readLedger(handle ?? (getGovernance() as H), rows(ledgerTables.auditLog, { orderBy: (t) => [desc(t.id)], limit }));
}

/** Whether any audit row ever recorded `action` on `target` (uses the target index). */
export function hasAuditEntry<H extends LedgerHandle = GovernanceHandle>({ handle, action, target }: OnLedgerArg<H> & { action: string; target: string }): OnLedger<H, boolean> {
  return readLedger(handle ?? (getGovernance() as H), function* () {
    return (yield* row(ledgerTables.auditLog, (t) => and(eq(t.target, target), eq(t.action, action)))) !== undefined;
  });
}

/** The newest audit rows about any of `targets`, newest first (uses the target index). */
export function listAuditByTargets<H extends LedgerHandle = GovernanceHandle>({ handle, targets, limit = 50 }: OnLedgerArg<H> & { targets: string[]; limit?: number }): OnLedger<H, AuditRow[]> {
  return readLedger(handle ?? (getGovernance() as H), rows(ledgerTables.auditLog, { where: (t) => (targets.length === 0 ? sql`false` : inArray(t.target, targets)), orderBy: (t) => [desc(t.id)], limit }));
}

/** The PostgreSQL ledger under `db` (a pool or a caller's transaction), for listAuditTail and the other readers above. */
export const pgLedger = (db: PgGovernanceExecutor): PgLedgerHandle => ({ kind: "pg", db });
