import type { SQL } from "drizzle-orm";
import { processLedger as ledger } from "../db/engine";
import { readLedger, sqlRows, sqlRun, writeLedger } from "../db/port";
import { auditStep, type AuditEntry } from "../governance/audit";

/**
 * Self-recall's rows live beside the ledger (governance.db, or PostgreSQL's
 * public schema with DATABASE_URL), its queries written once in SQL both
 * databases read alike, run on the ledger of this process.
 */
export async function govRows<T>(query: SQL): Promise<T[]> {
  return readLedger(await ledger(), sqlRows<T>(query));
}

export async function govRow<T>(query: SQL): Promise<T | null> {
  return (await govRows<T>(query))[0] ?? null;
}

/** An audit row in the hash chain of this process's ledger. */
export async function auditSelfRecall(entry: AuditEntry): Promise<void> {
  await writeLedger(await ledger(), auditStep(entry));
}

/** PostgreSQL answers bigint as text and SQLite as a number: every count and time read here goes through this. */
export const num = (v: unknown): number => (v === null || v === undefined ? NaN : Number(v));
export const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** A statement that returns no rows (SQLite refuses to read rows from one). */
export async function govRun(query: SQL): Promise<void> {
  await writeLedger(await ledger(), sqlRun(query));
}
