import Database from "better-sqlite3";
import { drizzle, type BetterSQLite3Database } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import fs from "node:fs";
import path from "node:path";
import * as sqliteVec from "sqlite-vec";
import { STORE_NAME_RE } from "../common";
import { getConfig } from "../config";
import { log } from "../log";
import { loadQueryBudget } from "./query-budget";
import { chmodPrivate, mkdirPrivate } from "../private-fs";
import * as governanceSchema from "./schema/governance";
import * as indexBaseSchema from "./schema/index";
import * as embedSchema from "./schema/embed";
import * as graphSchema from "./schema/graph";
import * as recallSchema from "./schema/recall";

const indexSchema = { ...indexBaseSchema, ...embedSchema, ...graphSchema, ...recallSchema };

export type VectorStatus =
  | { available: true; version: string }
  | { available: false; reason: string };

export type GovernanceDb = BetterSQLite3Database<typeof governanceSchema>;
export type IndexDb = BetterSQLite3Database<typeof indexSchema>;

export type GovernanceHandle = { kind: "governance"; file: string; sqlite: Database.Database; db: GovernanceDb };
export type StoreHandle = {
  kind: "index";
  store: string;
  file: string;
  sqlite: Database.Database;
  db: IndexDb;
  vectors: VectorStatus;
};

type Registry = { governance?: GovernanceHandle; stores: Map<string, StoreHandle>; dataDir?: string };

// Kept on globalThis so Next dev reloads reuse handles instead of leaking them.
const g = globalThis as unknown as { __dualmindDb?: Registry };
function registry(): Registry {
  g.__dualmindDb ??= { stores: new Map() };
  const reg = g.__dualmindDb;
  const dataDir = getConfig().dataDir;
  if (reg.dataDir && reg.dataDir !== dataDir) closeAllDatabases();
  reg.dataDir = dataDir;
  return reg;
}

const MIGRATIONS_ROOT = path.join(process.cwd(), "drizzle");

export function applyPragmas(sqlite: Database.Database): void {
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
}

/** Load sqlite-vec; failure is reported, never fatal (lexical search keeps working). */
export function loadVectorExtension(sqlite: Database.Database): VectorStatus {
  if (getConfig().disableVectors) return { available: false, reason: "disabled by DUALMIND_DISABLE_VECTORS" };
  try {
    sqliteVec.load(sqlite);
    const row = sqlite.prepare("select vec_version() as v").get() as { v: string };
    return { available: true, version: row.v };
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    log("warn", "sqlite-vec failed to load; vector search unavailable", { reason });
    return { available: false, reason };
  }
}

function lastMigrationTag(folder: string): string {
  const journal = JSON.parse(fs.readFileSync(path.join(folder, "meta", "_journal.json"), "utf8")) as {
    entries: { tag: string }[];
  };
  return journal.entries.at(-1)?.tag ?? "none";
}

function runMigrations(sqlite: Database.Database, db: BetterSQLite3Database<Record<string, unknown>>, which: "governance" | "index") {
  const folder = path.join(MIGRATIONS_ROOT, which);
  migrate(db, { migrationsFolder: folder });
  const now = Date.now();
  const upsert = sqlite.prepare(
    "insert into meta(key, value) values (?, ?) on conflict(key) do update set value = excluded.value",
  );
  sqlite.transaction(() => {
    upsert.run("schema_version", lastMigrationTag(folder));
    sqlite.prepare("insert or ignore into meta(key, value) values ('created_at', ?)").run(String(now));
  })();
}

export function governancePath(): string {
  return path.join(getConfig().dataDir, "governance.db");
}

export function getGovernance(): GovernanceHandle {
  const reg = registry();
  if (reg.governance) return reg.governance;
  const file = governancePath();
  mkdirPrivate(path.dirname(file));
  const sqlite = new Database(file);
  chmodPrivate(file, `${file}-wal`, `${file}-shm`);
  applyPragmas(sqlite);
  const db = drizzle(sqlite, { schema: governanceSchema });
  runMigrations(sqlite, db as never, "governance");
  reg.governance = { kind: "governance", file, sqlite, db };
  return reg.governance;
}

/** Store names are validated before they ever reach a path (defined in the base layer, so the proxy can use it too). */
export { STORE_NAME_RE };

export function storeDir(store: string): string {
  if (!STORE_NAME_RE.test(store)) throw new Error(`invalid store name: ${JSON.stringify(store)}`);
  return path.join(getConfig().dataDir, "stores", store);
}

export function storeIndexPath(store: string): string {
  return path.join(storeDir(store), "index.db");
}

/** Open (creating if needed) a store's index.db with migrations applied, sqlite-vec and the query budget loaded. */
export function getStoreDb(store: string): StoreHandle {
  const reg = registry();
  const existing = reg.stores.get(store);
  if (existing) {
    touchStoreHandle(reg, store, existing);
    closeIdleStoreHandles(reg);
    return existing;
  }
  const dir = storeDir(store);
  mkdirPrivate(path.join(dir, "memory"));
  const file = path.join(dir, "index.db");
  const sqlite = new Database(file);
  let handle: StoreHandle;
  try {
    chmodPrivate(file, `${file}-wal`, `${file}-shm`);
    applyPragmas(sqlite);
    const vectors = loadVectorExtension(sqlite);
    loadQueryBudget(sqlite);
    const db = drizzle(sqlite, { schema: indexSchema });
    runMigrations(sqlite, db as never, "index");
    handle = { kind: "index", store, file, sqlite, db, vectors };
  } catch (e) {
    // e.g. a full disk during the first migration: no half-open connection is kept.
    sqlite.close();
    throw e;
  }
  reg.stores.set(store, handle);
  storeHandleUsedAt.set(handle, Date.now());
  closeIdleStoreHandles(reg);
  return handle;
}

/**
 * Open store connections are bounded (DUALMIND_MAX_OPEN_STORES), whatever the
 * number of stores: the registry's Map keeps handles in order of last use
 * (a use moves a handle to the end), and beyond the limit the least recently
 * used are closed (the next getStoreDb reopens one). A handle used in the last
 * STORE_HANDLE_GRACE_MS is never closed: a request may still hold it across
 * an await (an embedding call), and closing it under that request would fail it.
 */
const STORE_HANDLE_GRACE_MS = 30_000;
const storeHandleUsedAt = new WeakMap<StoreHandle, number>();

function touchStoreHandle(reg: Registry, store: string, handle: StoreHandle): void {
  storeHandleUsedAt.set(handle, Date.now());
  reg.stores.delete(store);
  reg.stores.set(store, handle);
}

function closeIdleStoreHandles(reg: Registry): void {
  const max = getConfig().limits.maxOpenStores;
  if (reg.stores.size <= max) return;
  const idleBefore = Date.now() - STORE_HANDLE_GRACE_MS;
  for (const [name, h] of reg.stores) {
    if (reg.stores.size <= max) break;
    if ((storeHandleUsedAt.get(h) ?? 0) > idleBefore) continue;
    h.sqlite.close();
    reg.stores.delete(name);
  }
}

/** Test seam: make every open store handle look idle, as if unused past the grace period. */
export function ageStoreHandlesForTests(): void {
  for (const h of g.__dualmindDb?.stores.values() ?? []) storeHandleUsedAt.set(h, 0);
}

/**
 * A read-only connection to a store with `core` attached as schema `core`.
 * Opened READONLY, so the attached database is read-only too: any write
 * through this connection fails with SQLITE_READONLY. Caller closes it.
 */
export function openStoreReaderWithCore({ handle, core }: { handle: StoreHandle; core: StoreHandle }): Database.Database {
  // Both handles are open, so both files exist with their migrations applied.
  const reader = new Database(handle.file, { readonly: true });
  reader.pragma("busy_timeout = 5000");
  loadVectorExtension(reader);
  loadQueryBudget(reader);
  reader.prepare("attach database ? as core").run(core.file);
  requestReaders.add(reader);
  return reader;
}

/** Connections opened for one request and closed after it: work queued for later (between requests) must not hold on to them. */
const requestReaders = new WeakSet<Database.Database>();
export function isRequestReader(db: Database.Database): boolean {
  return requestReaders.has(db);
}

/** The store connections this process has open (background upkeep walks them). */
export function openStoreHandles(): StoreHandle[] {
  return [...(g.__dualmindDb?.stores.values() ?? [])];
}

/** Close one store's connection (the next getStoreDb opens it again). */
export function closeStoreDb(store: string): void {
  const reg = g.__dualmindDb;
  reg?.stores.get(store)?.sqlite.close();
  reg?.stores.delete(store);
}

export function closeAllDatabases(): void {
  const reg = g.__dualmindDb;
  if (!reg) return;
  reg.governance?.sqlite.close();
  reg.governance = undefined;
  for (const h of reg.stores.values()) h.sqlite.close();
  reg.stores.clear();
}
