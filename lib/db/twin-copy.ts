import type Database from "better-sqlite3";
import { asc, count, getTableColumns, getTableName, sql, type Column } from "drizzle-orm";
import type { BetterSQLite3Database } from "drizzle-orm/better-sqlite3";
import { getTableConfig as pgTableConfig, type PgTable } from "drizzle-orm/pg-core";
import { getTableConfig as sqliteTableConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { canonicalJson, sha256Hasher } from "../common";
import { pushTo } from "../collections";
import { AppError } from "../errors";
import type { PgGovernanceExecutor } from "./pg";

/**
 * Copying twin tables (one table declared in both schemas with the same
 * property names) between SQLite and PostgreSQL, verified: the engine of
 * `dualmind migrate-data` (lib/backend/migrate-data.ts,
 * lib/stores/migrate-stores.ts). Per table, rows are counted and hashed
 * (sha256 over canonical JSON in primary-key order, as both sides read them:
 * a column that is JSON text on SQLite but json on PostgreSQL as the parsed
 * value) before the copy and read back after it; a difference throws, so the
 * caller's transaction rolls back.
 */
export type TwinTable = {
  sqlite: SQLiteTable;
  pg: PgTable;
  /**
   * A PostgreSQL column standing in for SQLite's rowid (its property name):
   * read from the rowid on SQLite and written back to it, so recording order survives both ways.
   */
  rowidStandIn?: string;
};

type Row = Record<string, unknown>;
export type TableCheck = { table: string; rows: number; sha256: string };

const PAGE = 1000;
const INSERT_BATCH = 100;

/** One dialect's side of the copy: read a table in key order, count, empty, write, finish. */
export type Side = {
  kind: "sqlite" | "postgres";
  readPage(t: TwinTable, offset: number): Promise<Row[]>;
  count(t: TwinTable): Promise<number>;
  clear(t: TwinTable): Promise<void>;
  insert(t: TwinTable, rows: Row[]): Promise<void>;
  /** After the copy: identity sequences past the copied ids (PostgreSQL; SQLite's AUTOINCREMENT follows by itself). */
  finish(t: TwinTable): Promise<void>;
};

/** The primary key's columns, in order: the single key column, or a composite key's. */
function keyColumns(table: SQLiteTable | PgTable, dialect: "sqlite" | "pg"): Column[] {
  const single = Object.values(getTableColumns(table)).find((c) => c.primary);
  if (single) return [single];
  const keys = dialect === "sqlite" ? sqliteTableConfig(table as SQLiteTable).primaryKeys : pgTableConfig(table as PgTable).primaryKeys;
  if (keys.length !== 1) throw new Error(`${getTableName(table)} has no primary key to page by`);
  return keys[0].columns;
}

type Twin = { props: string[]; jsonProps: string[] };
const twins = new WeakMap<TwinTable, Twin>();

/**
 * Both schemas must name the same columns, or the copy would drop or invent values.
 * Also finds the columns kept as JSON text on SQLite and as an array or json on PostgreSQL.
 */
function twinOf(t: TwinTable): Twin {
  const known = twins.get(t);
  if (known) return known;
  const s = getTableColumns(t.sqlite);
  const p = getTableColumns(t.pg);
  const a = [...Object.keys(s), ...(t.rowidStandIn ? [t.rowidStandIn] : [])].sort();
  const b = Object.keys(p).sort();
  if (a.join() !== b.join()) throw new Error(`${getTableName(t.sqlite)}: the SQLite and PostgreSQL schemas differ (${a.join()} vs ${b.join()})`);
  const jsonProps = Object.keys(s).filter((k) => s[k].columnType === "SQLiteText" && ["PgArray", "PgJson", "PgJsonb"].includes(p[k].columnType));
  const twin = { props: b, jsonProps };
  twins.set(t, twin);
  return twin;
}

export function tableName(t: TwinTable): string {
  return getTableName(t.sqlite);
}


/** A SQLite database's side (governance.db, or a store's index.db): the caller holds its transaction. */
export function sqliteSide<S extends Record<string, unknown>>({ db, sqlite }: { db: BetterSQLite3Database<S>; sqlite: Database.Database }): Side {
  const rowids = new Map<TwinTable, [key: unknown, rowid: number][]>();
  return {
    kind: "sqlite",
    readPage: async (t, offset) => {
      const rowid = t.rowidStandIn;
      const columns = rowid ? { ...getTableColumns(t.sqlite), [rowid]: sql<number>`rowid` } : getTableColumns(t.sqlite);
      const rows = db.select(columns).from(t.sqlite).orderBy(...keyColumns(t.sqlite, "sqlite").map((c) => asc(c))).limit(PAGE).offset(offset).all() as Row[];
      const { jsonProps } = twinOf(t);
      for (const row of rows) for (const k of jsonProps) if (typeof row[k] === "string") row[k] = JSON.parse(row[k]);
      return rows;
    },
    count: async (t) => db.select({ n: count() }).from(t.sqlite).get()!.n,
    clear: async (t) => {
      db.delete(t.sqlite).run();
    },
    insert: async (t, rows) => {
      const { jsonProps } = twinOf(t);
      const values = rows.map((r) => ({ ...r, ...Object.fromEntries(jsonProps.map((k) => [k, r[k] == null ? r[k] : JSON.stringify(r[k])])) }));
      // Drizzle's value types are per table; the rows were read through the twin schema (same property names).
      db.insert(t.sqlite).values(values as never).run();
      const rowid = t.rowidStandIn;
      if (rowid) {
        const [key] = keyColumns(t.sqlite, "sqlite");
        const prop = Object.entries(getTableColumns(t.sqlite)).find(([, c]) => c === key)![0];
        pushTo(rowids, t, ...rows.map((r): [unknown, number] => [r[prop], r[rowid] as number]));
      }
    },
    finish: async (t) => {
      const pairs = rowids.get(t);
      if (!pairs) return;
      // Give each copied row its recorded rowid: through negatives, so no two rows ever hold one rowid at once.
      const table = getTableName(t.sqlite);
      const [key] = keyColumns(t.sqlite, "sqlite");
      const set = sqlite.prepare(`update "${table}" set rowid = ? where "${key.name}" = ?`);
      for (const [k, r] of pairs) set.run(-r, k);
      sqlite.prepare(`update "${table}" set rowid = -rowid where rowid < 0`).run();
    },
  };
}

/** A PostgreSQL side: the governance tables, or one store's schema (a store transaction, whose search_path is the store). */
export function pgSide(tx: PgGovernanceExecutor): Side {
  return {
    kind: "postgres",
    readPage: async (t, offset) =>
      (await tx
        .select()
        .from(t.pg)
        .orderBy(...keyColumns(t.pg, "pg").map((c) => asc(c)))
        .limit(PAGE)
        .offset(offset)) as Row[],
    count: async (t) => (await tx.select({ n: count() }).from(t.pg))[0].n,
    clear: async (t) => {
      await tx.delete(t.pg);
    },
    insert: async (t, rows) => {
      await tx.insert(t.pg).values(rows as never);
    },
    finish: async (t) => {
      const identity = pgTableConfig(t.pg).columns.find((c) => c.generatedIdentity);
      if (!identity) return;
      // Names come from the schema (constants), never from input.
      const name = getTableName(t.pg);
      await tx.execute(sql`select setval(pg_get_serial_sequence(${name}, ${identity.name}), coalesce((select max(${sql.identifier(identity.name)}) from ${sql.identifier(name)}), 0) + 1, false)`);
    },
  };
}

/** Count and hash one table on one side, a page at a time. */
export async function checkTable({ side, table: t }: { side: Side; table: TwinTable }): Promise<TableCheck> {
  const { props } = twinOf(t);
  const hash = sha256Hasher();
  let rows = 0;
  for (let offset = 0; ; offset += PAGE) {
    const page = await side.readPage(t, offset);
    for (const row of page) hash.update(canonicalJson(props.map((c) => row[c] ?? null)) + "\n");
    rows += page.length;
    if (page.length < PAGE) break;
  }
  return { table: tableName(t), rows, sha256: hash.hex() };
}

/** The tables of `tables` that hold rows on this side. */
export async function nonEmptyTables({ side, tables }: { side: Side; tables: readonly TwinTable[] }): Promise<{ table: string; rows: number }[]> {
  const out: { table: string; rows: number }[] = [];
  for (const t of tables) {
    const rows = await side.count(t);
    if (rows > 0) out.push({ table: tableName(t), rows });
  }
  return out;
}

/**
 * Copy `tables` (parents before children) from `source` to `target` (the
 * caller runs this inside the target's transaction), then read the target
 * back and compare. A target holding rows in them is refused unless
 * `replace`, which empties them first (children first).
 */
export async function copyTables({ source, target, tables, replace, where = `the ${target.kind} target` }: { source: Side; target: Side; tables: readonly TwinTable[]; replace: boolean; where?: string }): Promise<TableCheck[]> {
  const held = await nonEmptyTables({ side: target, tables });
  if (held.length > 0 && !replace) {
    throw new AppError("conflict", `${where} already holds rows (${held.map((h) => h.table).join(", ")}); pass --replace to empty those tables first`);
  }
  if (replace) for (const t of [...tables].reverse()) await target.clear(t);
  const checks: TableCheck[] = [];
  for (const t of tables) {
    const { props } = twinOf(t);
    const before = await checkTable({ side: source, table: t });
    for (let offset = 0; ; offset += PAGE) {
      const page = await source.readPage(t, offset);
      // Only the twin's columns, by name: what the target's schema maps to its own column names.
      const rows = page.map((r) => Object.fromEntries(props.map((c) => [c, r[c] ?? null])));
      // Inserted 100 at a time: well under either dialect's limit on bound parameters for the widest table.
      for (let i = 0; i < rows.length; i += INSERT_BATCH) await target.insert(t, rows.slice(i, i + INSERT_BATCH));
      if (page.length < PAGE) break;
    }
    await target.finish(t);
    const after = await checkTable({ side: target, table: t });
    if (after.rows !== before.rows || after.sha256 !== before.sha256) {
      throw new AppError("conflict", `${before.table}: the copy does not match the source (${before.rows} rows ${before.sha256.slice(0, 12)} → ${after.rows} rows ${after.sha256.slice(0, 12)}); nothing was written`);
    }
    checks.push(after);
  }
  return checks;
}
