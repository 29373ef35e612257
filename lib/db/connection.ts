import { INSTALL_ROOT } from "../install-root";
import Database from "better-sqlite3";
import { drizzle, type BetterSQLite3Database } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import fs from "node:fs";
import path from "node:path";
import * as sqliteVec from "sqlite-vec";
import { STORE_NAME_RE } from "../common";
import { getConfig } from "../config";
import { AppError } from "../errors";
import { log } from "../log";
import { loadQueryBudget } from "./query-budget";
import { withinWorkScope, workScope, type Holds } from "./work-scope";
import { installStoreUsage } from "./store-usage";
import { closeNotingStamps } from "./file-stamp";
import { assertSqliteDataDir } from "./deployment-marker";
import { chmodPrivate, mkdirPrivate, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../private-fs";
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

/** `readOnly`: why this database could only be opened for reading (writes fail as SQLITE_READONLY, answered 503); absent when writable. */
export type GovernanceHandle = { kind: "governance"; file: string; sqlite: Database.Database; db: GovernanceDb; readOnly?: string };
export type StoreHandle = {
  kind: "index";
  store: string;
  file: string;
  sqlite: Database.Database;
  db: IndexDb;
  vectors: VectorStatus;
  readOnly?: string;
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

const MIGRATIONS_ROOT = path.join(INSTALL_ROOT, "drizzle");

export function applyPragmas(sqlite: Database.Database): void {
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  // A checkpointed WAL is cut back to this size, not kept at its largest (a burst of rewrites left tens of MB on disk).
  sqlite.pragma("journal_size_limit = 4194304");
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

type Kind = "governance" | "index";

/**
 * The first database of each kind this process migrates from nothing, as it stood after the migrations (before any
 * row of the app's own): a later new file of that kind starts as a copy of it, the same schema for a fraction of
 * the work of migrating again (a test run makes many). The migrations still run on the copy and find
 * themselves applied. Kept per process, so an upgrade's new migrations make a new image.
 */
const migratedImages = new Map<Kind, Buffer>();

/**
 * Before a new database file is opened: write the kind's migrated image there, when this process has one. Written
 * beside it and linked into place (never over a file another process made meanwhile, never half-written); on any
 * failure (a full disk, a read-only folder) the file is left absent and the open makes and migrates it as before.
 */
function startFromImage(file: string, which: Kind): boolean {
  const image = migratedImages.get(which);
  if (!image || fs.existsSync(file)) return false;
  const tmp = `${file}.image-${process.pid}`;
  try {
    fs.writeFileSync(tmp, image, { mode: PRIVATE_FILE_MODE });
    fs.linkSync(tmp, file);
    return true;
  } catch {
    return false;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

function runMigrations(sqlite: Database.Database, db: BetterSQLite3Database<Record<string, unknown>>, which: Kind, { fresh, copied }: { fresh: boolean; copied: boolean }) {
  const folder = path.join(MIGRATIONS_ROOT, which);
  migrate(db, { migrationsFolder: folder });
  if (fresh && !copied && !migratedImages.has(which)) migratedImages.set(which, sqlite.serialize());
  // Each index database has its own ann_db_id (migration 0011: an ANN file is served only to its own database).
  if (copied && which === "index") sqlite.prepare("update meta set value = lower(hex(randomblob(16))) where key = 'ann_db_id'").run();
  const now = Date.now();
  const upsert = sqlite.prepare(
    "insert into meta(key, value) values (?, ?) on conflict(key) do update set value = excluded.value",
  );
  sqlite.transaction(() => {
    upsert.run("schema_version", lastMigrationTag(folder));
    sqlite.prepare("insert or ignore into meta(key, value) values ('created_at', ?)").run(String(now));
  })();
}

// URI file names let a read-only open ask for `immutable` (below); set before better-sqlite3 loads its addon. Plain paths are unaffected.
process.env.SQLITE_USE_URI ??= "1";

/** The first reason a write could fail here (`what`: a file or folder; EROFS is a read-only mount), without the path; null when writable or absent. */
function cannotWrite(what: string): string | null {
  try {
    fs.accessSync(what, fs.constants.W_OK);
    return null;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    return code === "EROFS" ? "on a read-only file system" : `cannot be written (${code})`;
  }
}

/** Why an existing database file can only be read (the file or its folder cannot be written), or null. */
export function readOnlyReason(file: string): string | null {
  if (!fs.existsSync(file)) return null;
  const fileReason = cannotWrite(file);
  if (fileReason) return `the file is ${fileReason}`;
  const dirReason = cannotWrite(path.dirname(file));
  return dirReason ? `its folder is ${dirReason}` : null;
}

/**
 * What of DATA_DIR cannot be written here. For the public /health: the
 * folder, governance.db, and how many stores (never their names nor paths);
 * `names` adds each store's name, for the server log.
 */
export function readOnlyParts({ names = false }: { names?: boolean } = {}): { part: string; reason: string }[] {
  const dataDir = getConfig().dataDir;
  const parts: { part: string; reason: string }[] = [];
  const dirReason = cannotWrite(dataDir);
  if (dirReason) parts.push({ part: "DATA_DIR", reason: `the folder is ${dirReason}` });
  const gov = readOnlyReason(governancePath());
  if (gov) parts.push({ part: "governance.db", reason: gov });
  const storesRoot = path.join(dataDir, "stores");
  const stores = fs.existsSync(storesRoot) ? fs.readdirSync(storesRoot).filter((n) => STORE_NAME_RE.test(n)).sort() : [];
  const readOnlyStores = stores.flatMap((store) => {
    const reason = readOnlyReason(path.join(storesRoot, store, "index.db"));
    return reason ? [{ part: `store:${store}`, reason }] : [];
  });
  if (names) parts.push(...readOnlyStores);
  else if (readOnlyStores.length > 0) parts.push({ part: "stores", reason: `${readOnlyStores.length} of ${stores.length} store(s) cannot be written: their reads are served, their writes answer 503` });
  return parts;
}

function lastMigrationMillis(folder: string): number {
  const journal = JSON.parse(fs.readFileSync(path.join(folder, "meta", "_journal.json"), "utf8")) as { entries: { when: number }[] };
  return Math.max(0, ...journal.entries.map((e) => e.when));
}

/**
 * Open a database that cannot be written, for reading only. Migrations
 * cannot run, so the file must already be at this version's schema; else it
 * is refused (503) with the reason. Without a writable folder SQLite cannot
 * create the WAL index (-shm) beside the file, so the file is then read as
 * immutable: as it is on disk, which nothing can change while it is read-only.
 */
function openReadOnly(file: string, which: "governance" | "index", reason: string): Database.Database {
  const label = which === "governance" ? "governance.db" : `store ${path.basename(path.dirname(file))}`;
  let sqlite = new Database(file, { readonly: true, fileMustExist: true });
  try {
    sqlite.prepare("select count(*) from sqlite_master").get();
  } catch {
    sqlite.close();
    try {
      sqlite = new Database(`file:${encodeURI(file).replace(/\?/g, "%3f").replace(/#/g, "%23")}?immutable=1`, { readonly: true, fileMustExist: true });
    } catch (e) {
      throw new AppError("unavailable", `${label} is read-only (${reason}) and could not be opened for reading: ${(e as Error).message}`);
    }
  }
  try {
    sqlite.pragma("busy_timeout = 5000");
    const applied = (() => {
      try {
        return (sqlite.prepare("select max(created_at) from __drizzle_migrations").pluck().get() as number | null) ?? 0;
      } catch {
        return 0;
      }
    })();
    if (applied < lastMigrationMillis(path.join(MIGRATIONS_ROOT, which))) {
      throw new AppError("unavailable", `${label} is read-only (${reason}) and needs migrations this version of dualmind applies; make it writable and restart`);
    }
    log("warn", `${label} opened read-only: reads are served, writes answer 503`, { file, reason });
    return sqlite;
  } catch (e) {
    sqlite.close();
    throw e;
  }
}

export function governancePath(): string {
  return path.join(getConfig().dataDir, "governance.db");
}

export function getGovernance(): GovernanceHandle {
  const reg = registry();
  if (reg.governance) return reg.governance;
  assertSqliteDataDir();
  const file = governancePath();
  const readOnly = readOnlyReason(file);
  if (readOnly) {
    const sqlite = openReadOnly(file, "governance", readOnly);
    loadQueryBudget({ sqlite });
    reg.governance = { kind: "governance", file, sqlite, db: drizzle(sqlite, { schema: governanceSchema }), readOnly };
    return reg.governance;
  }
  mkdirPrivate(path.dirname(file));
  const fresh = !fs.existsSync(file);
  const copied = fresh && startFromImage(file, "governance");
  const sqlite = new Database(file);
  chmodPrivate(file, `${file}-wal`, `${file}-shm`);
  applyPragmas(sqlite);
  // The activity explorer's reads of the audit log run within the query budget.
  loadQueryBudget({ sqlite });
  const db = drizzle(sqlite, { schema: governanceSchema });
  runMigrations(sqlite, db as never, "governance", { fresh, copied });
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

/** The memory folder of a store whose folder must already be there: a store deleted meanwhile is a not_found, never made again. */
function mkdirInsideExistingStore(store: string, memory: string): void {
  try {
    fs.mkdirSync(memory, { mode: PRIVATE_DIR_MODE });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return;
    if (code === "ENOENT") throw new AppError("not_found", `store ${store} does not exist`);
    throw e;
  }
}

/**
 * Open (creating if needed) a store's index.db with migrations applied, sqlite-vec and the query budget loaded.
 * `create: false` is for everything that opens a store by a name it read earlier (a request's openStore, the
 * embed worker, the memory folder watch, a resumed job): a store deleted meanwhile answers not_found and is
 * never brought back as an empty folder.
 *
 * `use: false` is a background look (lookAtStore in store-looks.ts: the embed worker's round, the status watch, the
 * memory scan): it does not count as a use, so it keeps no store open past DUALMIND_MAX_OPEN_STORES.
 */
export function getStoreDb({ store, create = true, use = true }: { store: string; create?: boolean; use?: boolean }): StoreHandle {
  const reg = registry();
  const existing = reg.stores.get(store);
  if (existing) {
    if (use) touchStoreHandle(reg, store, existing);
    holdStoreHandle(existing);
    closeIdleStoreHandles(reg);
    return existing;
  }
  assertSqliteDataDir();
  const dir = storeDir(store);
  const file = path.join(dir, "index.db");
  const readOnly = readOnlyReason(file);
  if (!readOnly) {
    if (create) mkdirPrivate(path.join(dir, "memory"));
    else mkdirInsideExistingStore(store, path.join(dir, "memory"));
  }
  const fresh = !readOnly && !fs.existsSync(file);
  const copied = fresh && startFromImage(file, "index");
  const sqlite = readOnly ? openReadOnly(file, "index", readOnly) : new Database(file);
  let handle: StoreHandle;
  try {
    if (!readOnly) {
      chmodPrivate(file, `${file}-wal`, `${file}-shm`);
      applyPragmas(sqlite);
    }
    const vectors = loadVectorExtension(sqlite);
    loadQueryBudget({ sqlite });
    const db = drizzle(sqlite, { schema: indexSchema });
    if (!readOnly) {
      runMigrations(sqlite, db as never, "index", { fresh, copied });
      installStoreUsage(sqlite);
    }
    handle = { kind: "index", store, file, sqlite, db, vectors, ...(readOnly ? { readOnly } : {}) };
  } catch (e) {
    // e.g. a full disk during the first migration: no half-open connection is kept.
    sqlite.close();
    throw e;
  }
  reg.stores.set(store, handle);
  storeOpens.count++;
  storeHandleUsedAt.set(handle, use ? Date.now() : 0);
  holdStoreHandle(handle);
  closeIdleStoreHandles(reg, handle);
  return handle;
}

/**
 * Open store connections are bounded (DUALMIND_MAX_OPEN_STORES), whatever the
 * number of stores: the registry's Map keeps handles in order of last use
 * (a use moves a handle to the end), and beyond the limit the least recently
 * used are closed (the next getStoreDb reopens one). A handle used in the last
 * STORE_HANDLE_GRACE_MS is never closed, and neither is one held by work
 * still running (holdingStoreHandles: a request, an embed batch, a job), however
 * long it waits across an await (a slow embedding provider): closing it under
 * that work would fail it. So the open count is the limit plus what running work holds.
 */
const STORE_HANDLE_GRACE_MS = 30_000;
// On globalThis like the registry: the build bundles this module more than once, and a handle's last use, like the
// handle itself, is one per process (a use seen by one copy must not look idle to another).
const handleState = ((globalThis as unknown as { __dualmindStoreHandleState?: HandleState }).__dualmindStoreHandleState ??= {
  usedAt: new WeakMap(),
  transient: new WeakSet(),
  transientOpen: 0,
  retired: new WeakSet(),
});
const storeHandleUsedAt = handleState.usedAt;
// On globalThis like the registry: the work scope is one per process (work-scope.ts), so the counts its holds keep are too.
const storeHandleHolds = ((globalThis as unknown as { __dualmindStoreHandleHolds?: WeakMap<StoreHandle, number> }).__dualmindStoreHandleHolds ??= new WeakMap<StoreHandle, number>());

/** Run `work` holding every store handle it opens (and `handles`, opened before): none of them is closed as idle until it settles. */
export async function holdingStoreHandles<T>({ work, handles = [] }: { work: () => T | Promise<T>; handles?: StoreHandle[] }): Promise<T> {
  const holds: Holds = { handles: new Set(), ended: false };
  for (const h of handles) holdIn(holds, h);
  try {
    // `ended`: a task the work left running (e.g. a timer) holds nothing more through it.
    return await withinWorkScope({ part: { holds }, fn: work });
  } finally {
    holds.ended = true;
    for (const h of holds.handles) {
      const left = (storeHandleHolds.get(h) ?? 1) - 1;
      storeHandleHolds.set(h, left);
      // Retired while this work held it (its store archived or deleted): closed now that nothing holds it.
      if (left === 0 && retiredStoreHandles.has(h) && h.sqlite.open) h.sqlite.close();
    }
    // Handles this work held past the limit are closed once idle, not at some later open.
    closeIdleStoreDbs();
  }
}

function holdStoreHandle(handle: StoreHandle): void {
  const holds = workScope.getStore()?.holds;
  if (holds) holdIn(holds, handle);
}

function holdIn(holds: Holds, handle: StoreHandle): void {
  if (holds.ended || holds.handles.has(handle)) return;
  holds.handles.add(handle);
  storeHandleHolds.set(handle, (storeHandleHolds.get(handle) ?? 0) + 1);
}

function touchStoreHandle(reg: Registry, store: string, handle: StoreHandle): void {
  storeHandleUsedAt.set(handle, Date.now());
  reg.stores.delete(store);
  reg.stores.set(store, handle);
}

/**
 * Closes per call: closing the last connection checkpoints the store's log (a write and an fsync), so a burst of
 * stores passing the grace together is closed a few at a time by the opens and looks that follow, and no one call
 * holds the event loop for all of them.
 */
export const STORE_CLOSES_PER_CALL = 4;

/** `opened`: the handle just opened for the caller, never closed under it (a look's, not counted as a use, looks idle). */
function closeIdleStoreHandles(reg: Registry, opened?: StoreHandle): number {
  const max = getConfig().limits.maxOpenStores;
  if (reg.stores.size <= max && handleState.transientOpen === 0) return 0;
  const idleBefore = Date.now() - STORE_HANDLE_GRACE_MS;
  let closed = 0;
  for (const [name, h] of reg.stores) {
    if (closed >= STORE_CLOSES_PER_CALL) break;
    if (h === opened) continue;
    const transient = transientStoreHandles.has(h);
    if (reg.stores.size <= max && !transient) continue;
    if ((storeHandleUsedAt.get(h) ?? 0) > idleBefore || (storeHandleHolds.get(h) ?? 0) > 0) continue;
    closeNotingStamps({ store: name, file: h.file, close: () => h.sqlite.close() });
    reg.stores.delete(name);
    if (transient) handleState.transientOpen--;
    closed++;
  }
  return closed;
}

/**
 * Handles of archived stores: a read may open one, but it is closed once idle
 * (past the grace period, unheld) whatever the limit, so archived stores cost
 * no open files between reads.
 */
const transientStoreHandles = handleState.transient;
/** Handles taken out of the registry while work still held them: closed when the last hold ends. */
const retiredStoreHandles = handleState.retired;

/** A handle's last use; handles closed once idle (archived stores) and how many are open; handles retired while held. */
type HandleState = { usedAt: WeakMap<StoreHandle, number>; transient: WeakSet<StoreHandle>; transientOpen: number; retired: WeakSet<StoreHandle> };

/** Mark a store's open handle (a handle, or a store's name: none open is a no-op) to be closed as soon as it is idle (see transientStoreHandles). */
export function closeStoreDbWhenIdle(which: StoreHandle | string): void {
  const handle = typeof which === "string" ? g.__dualmindDb?.stores.get(which) : which;
  if (!handle || transientStoreHandles.has(handle)) return;
  transientStoreHandles.add(handle);
  handleState.transientOpen++;
}

/** Whether this process has the store's connection open. */
export function isStoreDbOpen(store: string): boolean {
  return g.__dualmindDb?.stores.has(store) ?? false;
}

/**
 * Take a store's connection out of use: the next getStoreDb opens a new one;
 * this one is closed now, or when the last work holding it settles (closing
 * it under a running request would fail that request).
 */
export function retireStoreDb(store: string): void {
  const reg = g.__dualmindDb;
  const h = reg?.stores.get(store);
  if (!reg || !h) return;
  reg.stores.delete(store);
  if (transientStoreHandles.has(h)) handleState.transientOpen--;
  if ((storeHandleHolds.get(h) ?? 0) > 0) retiredStoreHandles.add(h);
  else h.sqlite.close();
}

/**
 * Close idle store connections beyond DUALMIND_MAX_OPEN_STORES now. Every open does this; the background loops call it
 * too, since a loop that finds every store unchanged opens none, and connections used by a burst of requests must
 * still close once idle. Returns how many it closed (at most STORE_CLOSES_PER_CALL).
 */
export function closeIdleStoreDbs(): number {
  return g.__dualmindDb ? closeIdleStoreHandles(g.__dualmindDb) : 0;
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
  loadQueryBudget({ sqlite: reader });
  reader.prepare("attach database ? as core").run(core.file);
  return reader;
}

const storeOpens = ((globalThis as unknown as { __dualmindStoreOpens?: { count: number } }).__dualmindStoreOpens ??= { count: 0 });

/** Store connections open now, and opened since the process started (a count that climbs while nothing new is used means connections churn). */
export function storeConnectionCounts(): { open: number; opened: number } {
  return { open: g.__dualmindDb?.stores.size ?? 0, opened: storeOpens.count };
}

/** The store connections this process has open (background upkeep walks them). */
export function openStoreHandles(): StoreHandle[] {
  return [...(g.__dualmindDb?.stores.values() ?? [])];
}

/** Close one store's connection (the next getStoreDb opens it again). */
export function closeStoreDb(store: string): void {
  const reg = g.__dualmindDb;
  const h = reg?.stores.get(store);
  if (!reg || !h) return;
  h.sqlite.close();
  reg.stores.delete(store);
  if (transientStoreHandles.has(h)) handleState.transientOpen--;
}

export function closeAllDatabases(): void {
  const reg = g.__dualmindDb;
  if (!reg) return;
  reg.governance?.sqlite.close();
  reg.governance = undefined;
  for (const h of reg.stores.values()) h.sqlite.close();
  reg.stores.clear();
  handleState.transientOpen = 0;
}
