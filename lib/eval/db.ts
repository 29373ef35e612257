import type { SQL } from "drizzle-orm";
import { getGovernance } from "../db/connection";
import { getPg } from "../db/pg";
import { appendAudit, type AuditEntry } from "../governance/audit";
import { appendAuditPg } from "../governance/audit";

/**
 * Self-recall's rows live beside the ledger (governance.db, or PostgreSQL's
 * public schema with DATABASE_URL). Its queries are written once in SQL both
 * databases read alike; this runs one on whichever serves this process.
 */
export async function govRows<T>(query: SQL): Promise<T[]> {
  const pg = getPg();
  if (pg) return (await (await pg).db.execute(query)).rows as T[];
  return getGovernance().db.all(query) as T[];
}

export async function govRow<T>(query: SQL): Promise<T | null> {
  return (await govRows<T>(query))[0] ?? null;
}

/** An audit row in the hash chain of this process's ledger. */
export async function auditSelfRecall(entry: AuditEntry): Promise<void> {
  const pg = getPg();
  if (pg) await appendAuditPg({ db: (await pg).db, entry });
  else appendAudit(entry);
}

/** PostgreSQL answers bigint as text and SQLite as a number: every count and time read here goes through this. */
export const num = (v: unknown): number => (v === null || v === undefined ? NaN : Number(v));
export const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** A statement that returns no rows (SQLite refuses to read rows from one). */
export async function govRun(query: SQL): Promise<void> {
  const pg = getPg();
  if (pg) await (await pg).db.execute(query);
  else getGovernance().db.run(query);
}
