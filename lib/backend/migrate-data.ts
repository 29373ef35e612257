import { asc, count, getTableColumns, getTableName, sql, type Column } from "drizzle-orm";
import { getTableConfig as pgTableConfig, type PgTable } from "drizzle-orm/pg-core";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { sha256Hasher } from "../common";
import { getGovernance } from "../db/connection";
import type { PgGovernanceExecutor } from "../db/pg";
import * as sqliteSchema from "../db/schema/governance";
import * as pgSchema from "../db/schema/pg/governance";
import { AppError } from "../errors";
import { verifyAuditChain } from "../governance/audit";
import { verifyAuditChainPg } from "../governance/audit-pg";
import type { AuditVerification } from "../governance/audit-chain";

/**
 * `dualmind migrate-data`: copy the governance database between embedded
 * SQLite (governance.db in DATA_DIR) and PostgreSQL (DATABASE_URL), either
 * way, in one transaction on the target: every table of the ledger, dialectic
 * sessions, API tokens, users, the login throttle, the audit chain, metrics
 * and health events — all but `meta`, which each database keeps for itself.
 *
 * Verified, not trusted: per table the rows are counted and hashed on the
 * source before the copy and read back from the target inside the same
 * transaction after it; any difference rolls the whole copy back. The hash is
 * sha256 over the rows in primary-key order, each row the JSON of its columns
 * by name (the twin schemas read the same JS values: epoch ms as numbers,
 * booleans as booleans), so a table hashes the same on both dialects. After
 * commit the audit chain is verified on the target.
 *
 * A target with any row in these tables is refused unless `replace` is set,
 * which empties them first, in the same transaction.
 */

/** Parents before children (foreign keys are checked as rows go in). */
const TABLES = [
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

type Row = Record<string, unknown>;
export type TableCheck = { table: string; rows: number; sha256: string };
export type MigrateDataResult = { from: "sqlite" | "postgres"; to: "sqlite" | "postgres"; tables: TableCheck[]; audit: AuditVerification };

const PAGE = 1000;
const INSERT_BATCH = 100;

/** One dialect's side of the copy: read a table in key order, count, empty, write, finish. */
type Side = {
  kind: "sqlite" | "postgres";
  readPage(name: (typeof TABLES)[number], offset: number): Promise<Row[]>;
  count(name: (typeof TABLES)[number]): Promise<number>;
  clear(name: (typeof TABLES)[number]): Promise<void>;
  insert(name: (typeof TABLES)[number], rows: Row[]): Promise<void>;
  /** After the copy: identity sequences past the copied ids (PostgreSQL; SQLite's AUTOINCREMENT follows by itself). */
  finish(name: (typeof TABLES)[number]): Promise<void>;
};

/** The primary key: its property name in the schema and its column. */
function keyOf(table: SQLiteTable | PgTable): { prop: string; column: Column } {
  const key = Object.entries(getTableColumns(table)).find(([, c]) => c.primary);
  if (!key) throw new Error(`${getTableName(table)} has no single-column primary key`);
  return { prop: key[0], column: key[1] };
}

function keyColumn(table: SQLiteTable | PgTable): Column {
  return keyOf(table).column;
}

/**
 * PostgreSQL columns that stand in for SQLite's rowid (see schema/pg/governance.ts):
 * read from the rowid on SQLite and written back to it, so recording order survives both ways.
 */
const ROWID_STAND_INS: Partial<Record<(typeof TABLES)[number], string>> = { validations: "recordedSeq" };

/** Both schemas must name the same columns, or the copy would drop or invent values. */
function assertTwinColumns(name: (typeof TABLES)[number]): string[] {
  const rowid = ROWID_STAND_INS[name];
  const a = [...Object.keys(getTableColumns(sqliteSchema[name])), ...(rowid ? [rowid] : [])].sort();
  const b = Object.keys(getTableColumns(pgSchema[name])).sort();
  if (a.join() !== b.join()) throw new Error(`${name}: the SQLite and PostgreSQL schemas differ (${a.join()} vs ${b.join()})`);
  return a;
}

export function sqliteSide(): Side {
  const { db, sqlite } = getGovernance();
  const rowids = new Map<(typeof TABLES)[number], [key: unknown, rowid: number][]>();
  return {
    kind: "sqlite",
    readPage: async (name, offset) => {
      const t = sqliteSchema[name];
      const rowid = ROWID_STAND_INS[name];
      const columns = rowid ? { ...getTableColumns(t), [rowid]: sql<number>`rowid` } : getTableColumns(t);
      return db.select(columns).from(t).orderBy(asc(keyColumn(t))).limit(PAGE).offset(offset).all() as Row[];
    },
    count: async (name) => db.select({ n: count() }).from(sqliteSchema[name]).get()!.n,
    clear: async (name) => {
      db.delete(sqliteSchema[name]).run();
    },
    insert: async (name, rows) => {
      // Drizzle's value types are per table; the rows were read through the twin schema (same column names).
      db.insert(sqliteSchema[name]).values(rows as never).run();
      const rowid = ROWID_STAND_INS[name];
      const key = keyOf(sqliteSchema[name]).prop;
      if (rowid) rowids.set(name, [...(rowids.get(name) ?? []), ...rows.map((r): [unknown, number] => [r[key], r[rowid] as number])]);
    },
    finish: async (name) => {
      const pairs = rowids.get(name);
      if (!pairs) return;
      // Give each copied row its recorded rowid: through negatives, so no two rows ever hold one rowid at once.
      const table = getTableName(sqliteSchema[name]);
      const key = keyColumn(sqliteSchema[name]).name;
      const set = sqlite.prepare(`update "${table}" set rowid = ? where "${key}" = ?`);
      for (const [k, r] of pairs) set.run(-r, k);
      sqlite.prepare(`update "${table}" set rowid = -rowid where rowid < 0`).run();
    },
  };
}

export function pgSide(tx: PgGovernanceExecutor): Side {
  return {
    kind: "postgres",
    readPage: async (name, offset) => {
      const t = pgSchema[name];
      return (await tx.select().from(t).orderBy(asc(keyColumn(t))).limit(PAGE).offset(offset)) as Row[];
    },
    count: async (name) => (await tx.select({ n: count() }).from(pgSchema[name]))[0].n,
    clear: async (name) => {
      await tx.delete(pgSchema[name]);
    },
    insert: async (name, rows) => {
      await tx.insert(pgSchema[name]).values(rows as never);
    },
    finish: async (name) => {
      const t = pgSchema[name];
      const key = keyColumn(t);
      if (!pgTableConfig(t).columns.some((c) => c.name === key.name && c.generatedIdentity)) return;
      // Names come from the schema (constants), never from input.
      const table = sql.identifier(getTableName(t));
      await tx.execute(sql`select setval(pg_get_serial_sequence(${getTableName(t)}, ${key.name}), coalesce((select max(${sql.identifier(key.name)}) from ${table}), 0) + 1, false)`);
    },
  };
}

/** Count and hash one table on one side, a page at a time. */
async function checkTable(side: Side, name: (typeof TABLES)[number], columns: string[]): Promise<TableCheck> {
  const hash = sha256Hasher();
  let rows = 0;
  for (let offset = 0; ; offset += PAGE) {
    const page = await side.readPage(name, offset);
    for (const row of page) hash.update(JSON.stringify(columns.map((c) => row[c] ?? null)) + "\n");
    rows += page.length;
    if (page.length < PAGE) break;
  }
  return { table: getTableName(sqliteSchema[name]), rows, sha256: hash.hex() };
}

/** Row counts and content hashes of every copied table (also the verification `migrate-data --check` prints). */
export async function checkTables(side: Side): Promise<TableCheck[]> {
  const out: TableCheck[] = [];
  for (const name of TABLES) out.push(await checkTable(side, name, assertTwinColumns(name)));
  return out;
}

/**
 * Copy every table from `source` to `target` (the caller runs this inside
 * the target's transaction), then read the target back and compare.
 */
export async function copyTables({ source, target, replace }: { source: Side; target: Side; replace: boolean }): Promise<TableCheck[]> {
  const nonEmpty: string[] = [];
  for (const name of TABLES) if ((await target.count(name)) > 0) nonEmpty.push(getTableName(sqliteSchema[name]));
  if (nonEmpty.length > 0 && !replace) {
    throw new AppError("conflict", `the ${target.kind} target already holds rows (${nonEmpty.join(", ")}); pass --replace to empty those tables first`);
  }
  // Children first when emptying, parents first when filling.
  if (replace) for (const name of [...TABLES].reverse()) await target.clear(name);
  const checks: TableCheck[] = [];
  for (const name of TABLES) {
    const columns = assertTwinColumns(name);
    const before = await checkTable(source, name, columns);
    for (let offset = 0; ; offset += PAGE) {
      const page = await source.readPage(name, offset);
      // Only the twin's columns, by name: what the target's schema maps to its own column names.
      const rows = page.map((r) => Object.fromEntries(columns.map((c) => [c, r[c] ?? null])));
      // Inserted 100 at a time: well under either dialect's limit on bound parameters for the widest table.
      for (let i = 0; i < rows.length; i += INSERT_BATCH) await target.insert(name, rows.slice(i, i + INSERT_BATCH));
      if (page.length < PAGE) break;
    }
    await target.finish(name);
    const after = await checkTable(target, name, columns);
    if (after.rows !== before.rows || after.sha256 !== before.sha256) {
      throw new Error(`${before.table}: the copy does not match the source (${before.rows} rows ${before.sha256.slice(0, 12)} → ${after.rows} rows ${after.sha256.slice(0, 12)}); nothing was written`);
    }
    checks.push(after);
  }
  return checks;
}

/** SQLite governance.db (DATA_DIR) → PostgreSQL, one transaction on PostgreSQL. */
export async function migrateSqliteToPg({ db, replace = false }: { db: PgGovernanceExecutor; replace?: boolean }): Promise<MigrateDataResult> {
  const { sqlite } = getGovernance();
  // One read transaction on governance.db: every page comes from the same snapshot (WAL).
  sqlite.exec("begin");
  let tables: TableCheck[];
  try {
    tables = await db.transaction((tx) => copyTables({ source: sqliteSide(), target: pgSide(tx), replace }));
  } finally {
    sqlite.exec("commit");
  }
  return { from: "sqlite", to: "postgres", tables, audit: await verifyAuditChainPg({ db }) };
}

/** PostgreSQL → SQLite governance.db (DATA_DIR), one transaction on SQLite; PostgreSQL is read in one repeatable-read snapshot. */
export async function migratePgToSqlite({ db, replace = false }: { db: PgGovernanceExecutor; replace?: boolean }): Promise<MigrateDataResult> {
  const { sqlite } = getGovernance();
  const tables = await db.transaction(
    async (tx) => {
      sqlite.exec("begin immediate");
      try {
        const checks = await copyTables({ source: pgSide(tx), target: sqliteSide(), replace });
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
