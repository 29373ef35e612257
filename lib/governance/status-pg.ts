import { count, isNull } from "drizzle-orm";
import type { PgGovernanceExecutor } from "../db/pg";
import { apiTokens, auditLog, users } from "../db/schema/pg/governance";
import type { GovernanceCounts } from "./status";

/** The counts of ./status.ts's countGovernanceRows, on PostgreSQL. */
export async function countGovernanceRowsPg({ db }: { db: PgGovernanceExecutor }): Promise<GovernanceCounts> {
  const [[u], [t], [a]] = await Promise.all([
    db.select({ n: count() }).from(users),
    db.select({ n: count() }).from(apiTokens).where(isNull(apiTokens.revokedAt)),
    db.select({ n: count() }).from(auditLog),
  ]);
  return { users: u.n, tokens: t.n, auditEntries: a.n };
}
