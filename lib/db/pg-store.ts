import { INSTALL_ROOT } from "../install-root";
import fs from "node:fs";
import path from "node:path";
import { sql, type AnyColumn, type SQL } from "drizzle-orm";
import { sha256Hex, STORE_NAME_RE } from "../common";
import { AppError, dbErrorCode } from "../errors";
import type { PgGovernanceExecutor, PgHandle } from "./pg";
import { CORE_STORE } from "./store-names";
import { installStoreUsagePg } from "./store-usage";
import { getConfig } from "../config";

/**
 * Stores on PostgreSQL (DATABASE_URL): one schema per store, `store_<name>`,
 * the way each SQLite store has its own index.db (lib/db/connection.ts).
 * - A store's work runs in a transaction whose search_path is its schema, then
 *   public (the governance ledger, so an audit row commits with the change);
 *   store tables never share a name with a governance table.
 * - Names reach SQL only validated (STORE_NAME_RE) and quoted as identifiers.
 * - core, read beside another store (include_core), gets a handle marked
 *   read-only: every transaction on it is `READ ONLY`, which PostgreSQL
 *   enforces — an insert, update, delete or DDL through it fails (25006).
 */
export type PgStoreHandle = {
  kind: "pg";
  store: string;
  /** The store's schema name (unquoted). */
  schema: string;
  db: PgHandle["db"];
  /** Every transaction on this handle is READ ONLY (core read beside another store). */
  readOnly: boolean;
};

/** A transaction on one store's schema (see withStoreTx). */
export type PgStoreTx = PgGovernanceExecutor;

/**
 * The least a store's SQL needs: run a statement, get its rows. A Drizzle
 * database or transaction on node-postgres (PgStoreTx) is one, and so is one
 * on PGlite (tests of the pgvector SQL, which the Debian server here lacks).
 */
export type SqlRunner = { execute(query: SQL): PromiseLike<{ rows: unknown[] }> };

/** PostgreSQL truncates identifiers to 63 bytes: longer schema names get a hash suffix so two stores never share one. */
const MAX_IDENTIFIER = 63;

/** The schema of a store: `store_<name>`, or for names that would not fit, `store_<first 40>_<16 hex of sha256(name)>`. */
export function storeSchemaName(store: string): string {
  if (!STORE_NAME_RE.test(store)) throw new AppError("invalid_request", `invalid store name: ${JSON.stringify(store.slice(0, 80))}`);
  const plain = `store_${store}`;
  return plain.length <= MAX_IDENTIFIER ? plain : `store_${store.slice(0, 40)}_${sha256Hex(store).slice(0, 16)}`;
}

/** An identifier quoted for SQL (inner quotes doubled). Only ever applied to validated names. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

const MIGRATIONS_FOLDER = path.join(INSTALL_ROOT, "drizzle", "pg", "store");

type StoreMigration = { tag: string; hash: string; statements: string[] };

let migrationsCache: StoreMigration[] | null = null;

/** drizzle/pg/store in journal order, split at drizzle-kit's statement breakpoints. */
function storeMigrations(): StoreMigration[] {
  if (migrationsCache) return migrationsCache;
  const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_FOLDER, "meta", "_journal.json"), "utf8")) as { entries: { tag: string }[] };
  migrationsCache = journal.entries.map(({ tag }) => {
    const text = fs.readFileSync(path.join(MIGRATIONS_FOLDER, `${tag}.sql`), "utf8");
    const statements = text
      .split("--> statement-breakpoint")
      .map((s) => s.trim())
      .filter((s) => s.replace(/^--.*$/gm, "").trim() !== "");
    return { tag, hash: sha256Hex(text), statements };
  });
  return migrationsCache;
}

/** The newest store migration's tag: a store at this version needs nothing applied. */
export function storeSchemaVersion(): string {
  return storeMigrations().at(-1)?.tag ?? "none";
}

/**
 * Point this transaction's unqualified names at the store's schema (then
 * public: governance, extensions), and tell the store's usage triggers this
 * process's DUALMIND_MAX_STORE_BYTES (lib/db/store-usage.ts).
 */
export async function useStoreSchema({ tx, schema }: { tx: SqlRunner; schema: string }): Promise<void> {
  // set_config takes the value as a parameter; the schema name was validated and is quoted.
  await tx.execute(sql`select set_config('search_path', ${`${quoteIdent(schema)}, public`}, true), set_config('dualmind.max_store_bytes', ${String(getConfig().limits.maxStoreBytes)}, true)`);
}

/**
 * Run `work` in one transaction on the store's schema. Read-only when asked,
 * and always for a read-only handle (core beside another store). A read of
 * several statements that must see one state (one snapshot, as one SQLite
 * read does) asks for repeatable read.
 */
export async function withStoreTx<T>({
  handle,
  readOnly = false,
  snapshot = false,
  work,
}: {
  handle: PgStoreHandle;
  readOnly?: boolean;
  snapshot?: boolean;
  work: (tx: PgStoreTx) => Promise<T>;
}): Promise<T> {
  const ro = readOnly || handle.readOnly;
  const config = { ...(ro ? { accessMode: "read only" as const } : {}), ...(snapshot ? { isolationLevel: "repeatable read" as const } : {}) };
  return handle.db.transaction(
    async (tx) => {
      await useStoreSchema({ tx, schema: handle.schema });
      return work(tx);
    },
    ro || snapshot ? config : undefined,
  );
}

/**
 * Apply the store migrations not yet applied to `schema`, inside the caller's
 * transaction (search_path already on the schema). Replicas opening one store
 * at once queue on a per-store advisory lock; exactly one applies each.
 */
export async function migrateStoreSchema({ tx, schema }: { tx: SqlRunner; schema: string }): Promise<string> {
  // For this transaction only: wait behind another replica's migration, and let a long one (an index build) finish.
  await tx.execute(sql`select set_config('statement_timeout', '0', true), set_config('lock_timeout', '0', true)`);
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`dualmind:store-migrate:${schema}`}, 0))`);
  await tx.execute(sql`create table if not exists store_migrations (tag text primary key, hash text not null, applied_at bigint not null)`);
  const applied = new Set(((await tx.execute(sql`select tag from store_migrations`)).rows as { tag: string }[]).map((r) => r.tag));
  for (const m of storeMigrations()) {
    if (applied.has(m.tag)) continue;
    for (const statement of m.statements) await tx.execute(sql.raw(statement));
    await tx.execute(sql`insert into store_migrations (tag, hash, applied_at) values (${m.tag}, ${m.hash}, ${Date.now()})`);
  }
  await installStoreUsagePg({ tx, schema });
  const version = storeSchemaVersion();
  await tx.execute(sql`insert into store_meta (key, value) values ('schema_version', ${version}) on conflict (key) do update set value = excluded.value`);
  return version;
}

/** `select … from <table>` rows as plain objects (the driver's int8 arrive as strings: callers convert). */
export async function rowsOf<T>({ tx, query }: { tx: SqlRunner; query: SQL }): Promise<T[]> {
  return (await tx.execute(query)).rows as T[];
}

/**
 * Every store in the database (schemas with a store_meta table naming their
 * store), core first, then by name. On any executor, so the governance side
 * (token allow-lists) checks names against the stores agents actually use.
 */
export async function storeNamesInPg(db: SqlRunner): Promise<string[]> {
  // A store dropped between the catalog read and its name's read (a delete on any replica) fails that read:
  // the listing is read again, in a savepoint inside a caller's transaction (or one of its own), so it can be.
  const nested = (db as Partial<{ transaction: (f: (tx: SqlRunner) => Promise<string[]>) => Promise<string[]> }>).transaction;
  for (let attempt = 1; ; attempt++) {
    try {
      return nested ? await nested.call(db, (tx) => readStoreNamesInPg(tx)) : await readStoreNamesInPg(db);
    } catch (e) {
      if (attempt >= 5 || !isVanishedStore(e)) throw e;
    }
  }
}

/** A store schema dropped under a read (a delete on any replica): no such table (42P01) or schema (3F000). */
export function isVanishedStore(e: unknown): boolean {
  const code = dbErrorCode(e);
  return code === "42P01" || code === "3F000";
}

async function readStoreNamesInPg(db: SqlRunner): Promise<string[]> {
  const schemas = ((await db.execute(sql`select n.nspname as schema from pg_namespace n join pg_class c on c.relnamespace = n.oid and c.relname = 'store_meta' and c.relkind = 'r' where n.nspname like 'store\_%' order by 1`)).rows as { schema: string }[]).map((r) => r.schema);
  const names: string[] = [];
  for (const schema of schemas) {
    // The schema name comes from the catalog and is quoted; the table name is fixed.
    const [row] = (await db.execute(sql`select value from ${sql.identifier(schema)}.store_meta where key = 'name'`)).rows as { value: string }[];
    if (row && STORE_NAME_RE.test(row.value) && storeSchemaName(row.value) === schema) names.push(row.value);
  }
  names.sort();
  return [...names.filter((n) => n === CORE_STORE), ...names.filter((n) => n !== CORE_STORE)];
}

/**
 * A text column ordered byte by byte, as SQLite orders text: the database's
 * collation (en_US, say) would sort `a-b`, `a.c`, `a_b` and uuids otherwise,
 * and a listing would page differently on the two backends.
 */
export function bytewise(column: SQL | AnyColumn): SQL {
  return sql`${column} collate "C"`;
}
