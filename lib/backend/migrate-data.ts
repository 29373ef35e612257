import { getGovernance } from "../db/connection";
import type { PgGovernanceExecutor } from "../db/pg";
import * as sqliteSchema from "../db/schema/governance";
import * as pgSchema from "../db/schema/pg/governance";
import { checkTable, copyTables, pgSide, sqliteSide as sqliteTwinSide, type Side, type TableCheck, type TwinTable } from "../db/twin-copy";
import { verifyAuditChain, pgLedger } from "../governance/audit";
import type { AuditVerification } from "../governance/audit-chain";

/**
 * `dualmind migrate-data` (docs/postgresql.md): copy the governance database
 * between SQLite and PostgreSQL, either way, in one transaction on the target;
 * every table but `meta`. Verified, not trusted: per table, rows counted and
 * hashed on the source and read back from the target in the same transaction
 * (any difference rolls back); the twin schemas read the same JS values, so a
 * table hashes the same on both dialects. A non-empty target is refused
 * unless `replace` empties it first, in the same transaction.
 */

/** Parents before children (foreign keys are checked as rows go in). */
const TABLE_NAMES = [
  "users",
  "loginThrottle",
  "apiTokens",
  "auditLog",
  "tasks",
  "skillRuns",
  "validations",
  "provenance",
  "overrides",
  "dialecticSessions",
  "dialecticMessages",
  "dialecticAnnotations",
  "metricRollups",
  "metricSnapshots",
  "adminJobs",
  "storeStatusCurrent",
  "healthEvents",
  "embedWorkers",
  "providerState",
] as const satisfies readonly (keyof typeof sqliteSchema & keyof typeof pgSchema)[];

/**
 * PostgreSQL columns that stand in for SQLite's rowid (see schema/pg/governance.ts):
 * read from the rowid on SQLite and written back to it, so recording order survives both ways.
 */
const ROWID_STAND_INS: Partial<Record<(typeof TABLE_NAMES)[number], string>> = { validations: "recordedSeq" };

const TABLES: readonly TwinTable[] = TABLE_NAMES.map((name) => ({ sqlite: sqliteSchema[name], pg: pgSchema[name], rowidStandIn: ROWID_STAND_INS[name] }));

export type { TableCheck };
export type MigrateDataResult = { from: "sqlite" | "postgres"; to: "sqlite" | "postgres"; tables: TableCheck[]; audit: AuditVerification };

/** governance.db's side of the copy. */
export function sqliteSide(): Side {
  return sqliteTwinSide(getGovernance());
}

/** Row counts and content hashes of every copied table (also the verification `migrate-data --check` prints). */
export async function checkTables(side: Side): Promise<TableCheck[]> {
  const out: TableCheck[] = [];
  for (const t of TABLES) out.push(await checkTable({ side, table: t }));
  return out;
}

function copyGovernance({ source, target, replace }: { source: Side; target: Side; replace: boolean }): Promise<TableCheck[]> {
  return copyTables({ source, target, tables: TABLES, replace });
}

/** SQLite governance.db (DATA_DIR) → PostgreSQL, one transaction on PostgreSQL. */
export async function migrateSqliteToPg({ db, replace = false }: { db: PgGovernanceExecutor; replace?: boolean }): Promise<MigrateDataResult> {
  const { sqlite } = getGovernance();
  // One read transaction on governance.db: every page comes from the same snapshot (WAL).
  sqlite.exec("begin");
  let tables: TableCheck[];
  try {
    tables = await db.transaction((tx) => copyGovernance({ source: sqliteSide(), target: pgSide(tx), replace }));
  } finally {
    sqlite.exec("commit");
  }
  return { from: "sqlite", to: "postgres", tables, audit: await verifyAuditChain({ handle: pgLedger(db) }) };
}

/** PostgreSQL → SQLite governance.db (DATA_DIR), one transaction on SQLite; PostgreSQL is read in one repeatable-read snapshot. */
export async function migratePgToSqlite({ db, replace = false }: { db: PgGovernanceExecutor; replace?: boolean }): Promise<MigrateDataResult> {
  const { sqlite } = getGovernance();
  const tables = await db.transaction(
    async (tx) => {
      sqlite.exec("begin immediate");
      try {
        const checks = await copyGovernance({ source: pgSide(tx), target: sqliteSide(), replace });
        sqlite.exec("commit");
        return checks;
      } catch (e) {
        sqlite.exec("rollback");
        throw e;
      }
    },
    { isolationLevel: "repeatable read", accessMode: "read only" },
  );
  return { from: "postgres", to: "sqlite", tables, audit: verifyAuditChain() };
}
