import { count as countAll, sql, type SQL } from "drizzle-orm";
import { alias as pgAlias, type PgColumn, type PgTable } from "drizzle-orm/pg-core";
import { alias as sqliteAlias, type SQLiteColumn, type SQLiteTable } from "drizzle-orm/sqlite-core";
import type { GovernanceHandle, StoreHandle } from "./connection";
import type { PgGovernanceExecutor } from "./pg";
import { runWithinBudget, runWithinBudgetPg, type QueryBudget } from "./query-budget";
import { bytewise, withStoreTx, type PgStoreHandle, type PgStoreTx } from "./pg-store";
import { dbErrorCode } from "../errors";

/**
 * The transaction port (docs/ARCHITECTURE.md, "Two backends and the twins"):
 * a repository operation is a generator of steps. On SQLite the driver
 * answers every step at once, so the operation runs synchronously inside one
 * better-sqlite3 transaction (nothing can interleave on the shared
 * connection, as it could across `await`s); on PostgreSQL it awaits each step
 * inside withStoreTx. Rows are typed as the SQLite schema's: the two schemas
 * declare the same columns and JS types.
 */
export type AnyStoreHandle = StoreHandle | PgStoreHandle;

/** One database step: how each engine answers it. */
export type Step = { sqlite: (handle: StoreHandle) => unknown; pg: (tx: PgStoreTx, handle: PgStoreHandle) => Promise<unknown> };

/** A repository operation: yields steps, returns T. */
export type Op<T> = Generator<Step, T, unknown>;
/** An operation, or the generator function that starts it (`write(handle, function* () { … })`). */
export type OpOf<T> = Op<T> | (() => Op<T>);
const started = <T>(op: OpOf<T>): Op<T> => (typeof op === "function" ? op() : op);

/** T on SQLite, Promise<T> on PostgreSQL. */
export type On<H extends AnyStoreHandle, T> = H extends PgStoreHandle ? Promise<T> : T;

export type TablePair<S extends SQLiteTable = SQLiteTable, P extends PgTable = PgTable> = { sqlite: S; pg: P };
export type RowOf<T extends TablePair> = T["sqlite"]["$inferSelect"];
type InsertOf<T extends TablePair> = T["sqlite"]["$inferInsert"];
/** Columns to set: values, or SQL over the row (`feedback_count + 1`). */
type SetOf<T extends TablePair> = { [K in keyof InsertOf<T>]?: InsertOf<T>[K] | SQL };
/** The table a condition or an ordering is built from: the engine's own. */
type Either<T extends TablePair> = T["sqlite"] | T["pg"];
type Where<T extends TablePair> = (t: Either<T>) => SQL | undefined;

/** Dialect helpers for orderings (text sorts byte by byte on both engines). */
export type OrderHelpers = { bytewise: (column: SQLiteColumn | PgColumn | SQL.Aliased) => SQL };
const SQLITE_ORDER: OrderHelpers = { bytewise: (c) => sql`${c}` };
const PG_ORDER: OrderHelpers = { bytewise: (c) => bytewise(sql`${c}`) };

export function tablePair<S extends SQLiteTable, P extends PgTable>(sqlite: S, pg: P): TablePair<S, P> {
  return { sqlite, pg };
}

/** Row locks a PostgreSQL read can take; SQLite's write transaction already holds the store's one write lock. */
export type RowLock = "update" | "share";

function* step<T>(s: { sqlite: (handle: StoreHandle) => T; pg: (tx: PgStoreTx, handle: PgStoreHandle) => Promise<T> }): Op<T> {
  return (yield s) as T;
}

/** Work only one engine can say (full-text, vectors, audit, advisory locks): both halves in one place. */
export const engineStep = step;

/**
 * A lock on one named thing in the store for the rest of the write, for
 * rules that read before they write (a limit on how many rows there are):
 * a transaction advisory lock on PostgreSQL, so writers on every replica
 * take turns; nothing on SQLite, whose write transaction already holds the
 * store's one write lock. The key is the name, the store's schema and `parts`.
 */
export function storeLock(name: string, ...parts: string[]): Op<void> {
  return step({
    sqlite: () => undefined,
    pg: async (tx, handle) => void (await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${[`dualmind:${name}`, handle.schema, ...parts].join(":")}, 0))`)),
  });
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the two builders are driven with each engine's own table; the pair's types meet at the row type */
type AnySqliteDb = StoreHandle["db"] & any;
type AnyPgTx = PgStoreTx & any;

/** Rows matching `where`, ordered and paged; `lock` locks them on PostgreSQL. */
export function rows<T extends TablePair>(table: T, { where, orderBy, limit, offset, lock }: { where?: Where<T>; orderBy?: (t: Either<T>, o: OrderHelpers) => (SQL | SQLiteColumn | PgColumn)[]; limit?: number; offset?: number; lock?: RowLock } = {}): Op<RowOf<T>[]> {
  return step({
    sqlite: (h) => {
      let q = (h.db as AnySqliteDb).select().from(table.sqlite).where(where?.(table.sqlite)).$dynamic();
      if (orderBy) q = q.orderBy(...orderBy(table.sqlite, SQLITE_ORDER));
      if (limit !== undefined) q = q.limit(limit);
      if (offset !== undefined) q = q.offset(offset);
      return q.all() as RowOf<T>[];
    },
    pg: async (tx) => {
      let q = (tx as AnyPgTx).select().from(table.pg).where(where?.(table.pg)).$dynamic();
      if (orderBy) q = q.orderBy(...orderBy(table.pg, PG_ORDER));
      if (limit !== undefined) q = q.limit(limit);
      if (offset !== undefined) q = q.offset(offset);
      if (lock) q = q.for(lock);
      return (await q) as RowOf<T>[];
    },
  });
}

/** The first row matching `where`, or undefined; `lock` locks it on PostgreSQL (see RowLock). */
export function* row<T extends TablePair>(table: T, where: Where<T>, { lock }: { lock?: RowLock } = {}): Op<RowOf<T> | undefined> {
  const [first] = yield* rows(table, { where, limit: 1, lock });
  return first;
}

export function count<T extends TablePair>(table: T, where?: Where<T>): Op<number> {
  return step({
    sqlite: (h) => (h.db as AnySqliteDb).select({ n: countAll() }).from(table.sqlite).where(where?.(table.sqlite)).get().n as number,
    pg: async (tx) => Number((await (tx as AnyPgTx).select({ n: countAll() }).from(table.pg).where(where?.(table.pg)))[0].n),
  });
}

export function insert<T extends TablePair>(table: T, values: InsertOf<T>): Op<RowOf<T>> {
  return step({
    sqlite: (h) => (h.db as AnySqliteDb).insert(table.sqlite).values(values).returning().get() as RowOf<T>,
    pg: async (tx) => (await (tx as AnyPgTx).insert(table.pg).values(values).returning())[0] as RowOf<T>,
  });
}

/**
 * Insert unless a row with the same `target` key exists: the new row, or
 * undefined. On PostgreSQL a concurrent insert of the same key on another
 * replica is waited for by the unique index, then ignored.
 */
export function insertOrIgnore<T extends TablePair>(table: T, values: InsertOf<T>, target: (t: Either<T>) => (SQLiteColumn | PgColumn)[]): Op<RowOf<T> | undefined> {
  return step({
    sqlite: (h) => (h.db as AnySqliteDb).insert(table.sqlite).values(values).onConflictDoNothing({ target: target(table.sqlite) }).returning().get() as RowOf<T> | undefined,
    pg: async (tx) => (await (tx as AnyPgTx).insert(table.pg).values(values).onConflictDoNothing({ target: target(table.pg) }).returning())[0] as RowOf<T> | undefined,
  });
}

/** Insert many rows in one statement; the rows inserted. */
export function insertMany<T extends TablePair>(table: T, values: InsertOf<T>[]): Op<RowOf<T>[]> {
  if (values.length === 0) return step({ sqlite: () => [], pg: async () => [] });
  return step({
    sqlite: (h) => (h.db as AnySqliteDb).insert(table.sqlite).values(values).returning().all() as RowOf<T>[],
    pg: async (tx) => (await (tx as AnyPgTx).insert(table.pg).values(values).returning()) as RowOf<T>[],
  });
}

/** Insert many rows in one statement, skipping any whose `target` key exists (or repeats in the batch); the rows inserted. */
export function insertManyOrIgnore<T extends TablePair>(table: T, values: InsertOf<T>[], target: (t: Either<T>) => (SQLiteColumn | PgColumn)[]): Op<RowOf<T>[]> {
  if (values.length === 0) return step({ sqlite: () => [], pg: async () => [] });
  return step({
    sqlite: (h) => (h.db as AnySqliteDb).insert(table.sqlite).values(values).onConflictDoNothing({ target: target(table.sqlite) }).returning().all() as RowOf<T>[],
    pg: async (tx) => (await (tx as AnyPgTx).insert(table.pg).values(values).onConflictDoNothing({ target: target(table.pg) }).returning()) as RowOf<T>[],
  });
}

/** Insert, or on a `target` key conflict update the existing row with `set`; the row as written. */
export function upsert<T extends TablePair>(table: T, values: InsertOf<T>, target: (t: Either<T>) => SQLiteColumn | PgColumn, set: SetOf<T>): Op<RowOf<T>> {
  return step({
    sqlite: (h) => (h.db as AnySqliteDb).insert(table.sqlite).values(values).onConflictDoUpdate({ target: target(table.sqlite), set }).returning().get() as RowOf<T>,
    pg: async (tx) => (await (tx as AnyPgTx).insert(table.pg).values(values).onConflictDoUpdate({ target: target(table.pg), set }).returning())[0] as RowOf<T>,
  });
}

/** Update the rows matching `where`; the rows as written. */
export function update<T extends TablePair>(table: T, set: SetOf<T>, where: Where<T>): Op<RowOf<T>[]> {
  return step({
    sqlite: (h) => (h.db as AnySqliteDb).update(table.sqlite).set(set).where(where(table.sqlite)).returning().all() as RowOf<T>[],
    pg: async (tx) => (await (tx as AnyPgTx).update(table.pg).set(set).where(where(table.pg)).returning()) as RowOf<T>[],
  });
}

/** Delete the rows matching `where`; the rows deleted. */
export function remove<T extends TablePair>(table: T, where: Where<T>): Op<RowOf<T>[]> {
  return step({
    sqlite: (h) => (h.db as AnySqliteDb).delete(table.sqlite).where(where(table.sqlite)).returning().all() as RowOf<T>[],
    pg: async (tx) => (await (tx as AnyPgTx).delete(table.pg).where(where(table.pg)).returning()) as RowOf<T>[],
  });
}
/** Helpers for a free-form select: orderings, and a second reference to one table in a join. */
export type QueryHelpers = OrderHelpers & { alias: <T extends SQLiteTable>(table: T, name: string) => T };
const SQLITE_QUERY: QueryHelpers = { ...SQLITE_ORDER, alias: sqliteAlias as QueryHelpers["alias"] };
const PG_QUERY: QueryHelpers = { ...PG_ORDER, alias: pgAlias as unknown as QueryHelpers["alias"] };

type SqliteTablesOf<P extends Record<string, TablePair>> = { [K in keyof P]: P[K]["sqlite"] };

/**
 * A select the row helpers above do not cover (joins, window functions,
 * partial columns), written once with Drizzle's select builder. It is typed
 * against the SQLite builder and tables; on PostgreSQL the same calls run on
 * the transaction with the PostgreSQL tables (the two builders share this
 * part of their API: select, from, join, where, orderBy, limit, offset, as).
 */
export function select<P extends Record<string, TablePair>, R>(pairs: P, build: (db: StoreHandle["db"], t: SqliteTablesOf<P>, q: QueryHelpers) => { all(): R[] }): Op<R[]> {
  const pick = (side: "sqlite" | "pg") => Object.fromEntries(Object.entries(pairs).map(([k, v]) => [k, v[side]])) as SqliteTablesOf<P>;
  return step({
    sqlite: (h) => build(h.db, pick("sqlite"), SQLITE_QUERY).all(),
    pg: async (tx) => (await (build(tx as AnySqliteDb, pick("pg"), PG_QUERY) as unknown as Promise<R[]>)) as R[],
  });
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/** Run `op` under a query budget (lib/db/query-budget.ts): its statements together may take the budget's time, no more. */
export function withinBudget<T>(budget: QueryBudget, of: OpOf<T>): Op<T> {
  const op = started(of);
  return step({
    sqlite: (h) => runWithinBudget({ sqlite: h.sqlite, budget, fn: () => driveSync(h, op) }),
    pg: (tx, h) => runWithinBudgetPg({ tx, budget, fn: () => driveAsync(tx, h, op) }),
  });
}

const PG_UNIQUE_VIOLATION = "23505";

/** Whether a step failed on a unique index (either engine; Drizzle may wrap the driver's error). */
export function isUniqueViolation(e: unknown): boolean {
  const code = dbErrorCode(e);
  return code === PG_UNIQUE_VIOLATION || code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}

function driveSync<T>(handle: StoreHandle, op: Op<T>): T {
  let next = op.next();
  while (!next.done) {
    let answer: unknown;
    try {
      answer = next.value.sqlite(handle);
    } catch (e) {
      next = op.throw(e);
      continue;
    }
    next = op.next(answer);
  }
  return next.value;
}

async function driveAsync<T>(tx: PgStoreTx, handle: PgStoreHandle, op: Op<T>): Promise<T> {
  let next = op.next();
  while (!next.done) {
    let answer: unknown;
    try {
      answer = await next.value.pg(tx, handle);
    } catch (e) {
      next = op.throw(e);
      continue;
    }
    next = op.next(answer);
  }
  return next.value;
}

function isPg(handle: AnyStoreHandle): handle is PgStoreHandle {
  return handle.kind === "pg";
}

/**
 * Run a read. SQLite: straight on the connection, synchronously (one
 * statement sees one state; several are read outside a transaction, as the
 * store's other readers do). PostgreSQL: one read-only transaction, repeatable
 * read when `snapshot` asks that several statements see one state.
 */
export function read<H extends AnyStoreHandle, T>(handle: H, of: OpOf<T>, { snapshot = false }: { snapshot?: boolean } = {}): On<H, T> {
  const op = started(of);
  if (isPg(handle)) return withStoreTx({ handle, readOnly: true, snapshot, work: (tx) => driveAsync(tx, handle, op) }) as On<H, T>;
  return driveSync(handle as StoreHandle, op) as On<H, T>;
}

/**
 * Run a write in one transaction: SQLite's immediate transaction (the store's
 * write lock from the first statement, synchronously to the end), or a
 * PostgreSQL transaction on the store's schema (row locks as steps ask).
 */
export function write<H extends AnyStoreHandle, T>(handle: H, of: OpOf<T>): On<H, T> {
  const op = started(of);
  if (isPg(handle)) return withStoreTx({ handle, work: (tx) => driveAsync(tx, handle, op) }) as On<H, T>;
  const sqlite = handle as StoreHandle;
  return sqlite.sqlite.transaction(() => driveSync(sqlite, op)).immediate() as On<H, T>;
}

/**
 * The governance ledger through the port: governance.db, or the PostgreSQL
 * database's ledger tables (schema public). Its repositories (tokens, users,
 * the sign-in throttle, the ledger, dialectic reviews) take either handle;
 * the steps above run on it unchanged (a ledger table pair, the same drivers).
 */
export type LedgerHandle = GovernanceHandle | PgLedgerHandle;

/**
 * The PostgreSQL ledger: the process's handle (lib/db/pg.ts PgHandle is
 * one), or `{ kind: "pg", db: tx }` to run inside a caller's transaction
 * (a write then nests as a savepoint).
 */
export type PgLedgerHandle = { kind: "pg"; db: PgGovernanceExecutor };

/** T on governance.db, Promise<T> on PostgreSQL. */
export type OnLedger<H extends LedgerHandle, T> = H extends PgLedgerHandle ? Promise<T> : T;

/** The PostgreSQL ledger seen as a store handle on `public`, for the steps' second argument (ledger steps use the transaction they are given). */
function ledgerAsStore(pg: PgLedgerHandle): PgStoreHandle {
  return { kind: "pg", store: "", schema: "public", db: pg.db as PgStoreHandle["db"], readOnly: false };
}

/**
 * Run a ledger read. Each statement on its own (as a lookup by key needs),
 * or with `snapshot` in one read transaction, so several statements see one
 * state: governance.db's deferred transaction, PostgreSQL's read-only repeatable read.
 */
export function readLedger<H extends LedgerHandle, T>(handle: H, of: OpOf<T>, { snapshot = false }: { snapshot?: boolean } = {}): OnLedger<H, T> {
  const op = started(of);
  if (handle.kind === "pg") {
    const pg = handle as PgLedgerHandle;
    if (!snapshot) return driveAsync(pg.db, ledgerAsStore(pg), op) as OnLedger<H, T>;
    return pg.db.transaction((tx) => driveAsync(tx, ledgerAsStore(pg), op), { isolationLevel: "repeatable read", accessMode: "read only" }) as OnLedger<H, T>;
  }
  const gov = handle as GovernanceHandle;
  if (snapshot) return gov.sqlite.transaction(() => driveSync(gov as unknown as StoreHandle, op)).deferred() as OnLedger<H, T>;
  return driveSync(gov as unknown as StoreHandle, op) as OnLedger<H, T>;
}

/** Run a ledger write in one transaction: governance.db's immediate transaction, or a PostgreSQL transaction (locks as steps ask). */
export function writeLedger<H extends LedgerHandle, T>(handle: H, of: OpOf<T>): OnLedger<H, T> {
  const op = started(of);
  if (handle.kind === "pg") {
    const pg = handle as PgLedgerHandle;
    return pg.db.transaction((tx) => driveAsync(tx, ledgerAsStore(pg), op)) as OnLedger<H, T>;
  }
  const gov = handle as GovernanceHandle;
  return gov.sqlite.transaction(() => driveSync(gov as unknown as StoreHandle, op)).immediate() as OnLedger<H, T>;
}

/**
 * A ledger-wide lock for the rest of the write, for rules that read before
 * they write (a free label, the admins left): a transaction advisory lock on
 * PostgreSQL (`key` from PG_LOCK), so writers on every replica take turns;
 * nothing on SQLite, whose write transaction already holds the one write lock.
 */
export function ledgerLock(key: bigint): Op<void> {
  return step({
    sqlite: () => undefined,
    pg: async (tx) => void (await tx.execute(sql`select pg_advisory_xact_lock(${key})`)),
  });
}

/**
 * One agent's lock for the rest of the write, for its count-then-insert rules
 * (open tasks, open reviews, its ledger share): on PostgreSQL a transaction
 * advisory lock keyed by the agent, so one agent's concurrent writes on any
 * replica are counted one after another while other agents' run on; nothing
 * on SQLite, whose write transaction already holds the one write lock.
 */
export function agentLock(agentId: string): Op<void> {
  return step({
    sqlite: () => undefined,
    pg: async (tx) => void (await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`dualmind:agent-ledger:${agentId}`}, 0))`)),
  });
}

/**
 * Which engine runs the operation, for the few values the two schemas store
 * differently (a list as JSON text on SQLite, an array on PostgreSQL) and the
 * few SQL functions named differently (`max(a, b)` / `greatest(a, b)`).
 */
export function dialect(): Op<"sqlite" | "pg"> {
  return step({ sqlite: () => "sqlite" as const, pg: async () => "pg" as const });
}

/** The rows of one SQL statement both engines run as written (window functions, `delete … returning`); PostgreSQL's bigints come back as text. */
export function sqlRows<R>(query: SQL): Op<R[]> {
  return step({ sqlite: (h) => h.db.all(query) as R[], pg: async (tx) => (await tx.execute(query)).rows as R[] });
}

/**
 * Run `op` inside a transaction the caller already holds: synchronously on a
 * SQLite handle, or step by step on a PostgreSQL transaction (`handle` is for
 * steps that name the store, such as storeLock; an op without them needs none).
 */
export function inCallerTx<T>(on: StoreHandle, op: Op<T>): T;
export function inCallerTx<T>(on: PgStoreTx, op: Op<T>, handle?: PgStoreHandle): Promise<T>;
export function inCallerTx<T>(on: StoreHandle | PgStoreTx, op: Op<T>, handle?: PgStoreHandle): T | Promise<T> {
  if ((on as Partial<StoreHandle>).kind === "index") return driveSync(on as StoreHandle, op);
  return driveAsync(on as PgStoreTx, handle as PgStoreHandle, op);
}

/** Run one SQL statement both engines run as written, for its effect (a bulk delete). */
export function sqlRun(query: SQL): Op<void> {
  return step({ sqlite: (h) => void h.db.run(query), pg: async (tx) => void (await tx.execute(query)) });
}
