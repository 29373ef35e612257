import { CATEGORY_FILE } from "../index/memories";
import fs from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { z } from "zod";
import { sqlRows, writeLedger, type Op } from "../db/port";
import { closeStoreDb, closeStoreDbWhenIdle, getGovernance, getStoreDb, isStoreDbOpen, retireStoreDb, storeDir, storeIndexPath, type StoreHandle } from "../db/connection";
import { CORE_STORE, DEFAULT_STORE, listStoreNames, storeExists, storeNameSchema } from "../db/store-names";
import { meta } from "../db/schema/index";
import { preparedOnce } from "../db/statements";
import { limitReached, notFound } from "../common";
import { getConfig } from "../config";
import { AppError, isAppError } from "../errors";
import { appendAudit, hasAuditEntry } from "../governance/audit";
import { ensureIndexBuilt, markIndexBuilt } from "../index/reindex";
import { mkdirPrivate, PRIVATE_DIR_MODE } from "../private-fs";
import { log } from "../log";
import { forgetDeletedStoreOp, isStoreArchived } from "../db/store-lifecycle";
import { notServedOnPostgres, storesOnPostgres } from "./on-postgres";

export const createStoreSchema = z
  .object({ name: storeNameSchema, description: z.string().max(500).optional() })
  .strict();

export type StoreSummary = {
  name: string;
  description: string | null;
  /** Read-only until an admin unarchives it; background work leaves it closed. */
  archived: boolean;
  created_at: number | null;
  schema_version: string | null;
  vectors: { available: boolean; version: string | null; reason: string | null };
  counts: Record<string, number>;
  files: { index_bytes: number; wal_bytes: number; memory_files: number | null };
};

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** Memory files on disk: markdown files that are memories (a category's description file is not one, as the memories count says). */
function countMarkdownFiles(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  let n = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(".md") && entry.name !== CATEGORY_FILE) n++;
  }
  return n;
}

type TableRow = { name: string; sql: string };
type CountRow = { n: number };

/** Row counts of every ordinary table; virtual tables and their shadow tables are left out. */
function tableCounts({ handle }: { handle: StoreHandle }): Record<string, number> {
  const { sqlite } = handle;
  // sqlite_master is not in the Drizzle schema, and the counted tables are whatever the migrations made.
  const tables = preparedOnce({ sqlite, sql: "select name, sql from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like '__drizzle%' and name != 'meta' order by name" }).all() as TableRow[];
  const virtual = tables.filter((t) => /^CREATE VIRTUAL/i.test(t.sql)).map((t) => t.name);
  const counts: Record<string, number> = {};
  for (const { name: t } of tables) {
    if (virtual.some((v) => t === v || t.startsWith(v + "_"))) continue;
    // Table names come from sqlite_master, never from the request (so the statements kept are the schema's tables).
    counts[t] = (preparedOnce({ sqlite, sql: `select count(*) as n from "${t.replaceAll('"', '""')}"` }).get() as CountRow).n;
  }
  return counts;
}

/** A store's database file and its WAL, in bytes, read without opening it (a scrape of every store must not keep every store open). */
export function storeFileBytes({ store }: { store: string }): { index_bytes: number; wal_bytes: number } {
  const file = storeIndexPath(store);
  return { index_bytes: fileSize(file), wal_bytes: fileSize(file + "-wal") };
}

function readMeta({ handle }: { handle: StoreHandle }): Record<string, string> {
  return Object.fromEntries(handle.db.select().from(meta).all().map((r) => [r.key, r.value]));
}

/** `memoryFiles: false` (a list over the API or MCP): the memory folder is not walked, and `memory_files` is null (GET /stores/{store} counts it). */
export function describeStore({ handle, memoryFiles = true }: { handle: StoreHandle; memoryFiles?: boolean }): StoreSummary {
  const values = readMeta({ handle });
  return {
    name: handle.store,
    description: values.description ?? null,
    archived: isStoreArchived(handle.store),
    created_at: values.created_at ? Number(values.created_at) : null,
    schema_version: values.schema_version ?? null,
    vectors: handle.vectors.available
      ? { available: true, version: handle.vectors.version, reason: null }
      : { available: false, version: null, reason: handle.vectors.reason },
    counts: tableCounts({ handle }),
    files: {
      index_bytes: fileSize(handle.file),
      wal_bytes: fileSize(handle.file + "-wal"),
      memory_files: memoryFiles ? countMarkdownFiles(path.join(storeDir(handle.store), "memory")) : null,
    },
  };
}

/** Whether a store holds anything a person would come to read (an index with only its schema is empty): one indexed probe per table. */
export function* storeHasContentOp(): Op<boolean> {
  const probe = sql.join(["documents", "memories", "reasoning_traces", "learnings", "thoughts"].map((t) => sql`exists (select 1 from ${sql.identifier(t)})`), sql` or `);
  const [row] = yield* sqlRows<{ has: number | boolean }>(sql`select (${probe}) as has`);
  return row.has === 1 || row.has === true;
}

/**
 * The one way to get a store handle: an unknown store is a 404 (never created
 * on the fly), a missing or never-built index is rebuilt from its files, and
 * the handle returned is what every domain function takes.
 *
 * `buildIndex: false` is for the reindex entry points only: the audited job
 * they start is the build, and a silent rebuild first would leave it nothing
 * to count.
 */
export function openStore({ store, buildIndex = true, use = true }: { store: string; buildIndex?: boolean; use?: boolean }): StoreHandle {
  // With DATABASE_URL the stores agents write are in PostgreSQL: a local index.db would answer from data they never see.
  if (storesOnPostgres()) throw notServedOnPostgres(`The local SQLite store ${store}`);
  if (!storeExists(store)) throw notFound({ what: "store", id: store });
  const opening = !isStoreDbOpen(store);
  const handle = getStoreDb({ store, create: false, use });
  // An archived store is opened for the read that asks, and closed again once idle.
  if (opening && isStoreArchived(store)) closeStoreDbWhenIdle(handle);
  if (buildIndex) ensureIndexBuilt({ handle });
  return handle;
}

/**
 * Core's handle for a read that includes core (`include_core`), or null when
 * not asked or the store is core itself. Entry points call it once beside
 * openStore; the token's right to read core was checked with the request.
 */
export function openCoreFor({ handle, includeCore }: { handle: StoreHandle; includeCore: boolean }): StoreHandle | null {
  return includeCore && handle.store !== CORE_STORE ? openStore({ store: CORE_STORE }) : null;
}

/**
 * The store quotas (both backends): DUALMIND_MAX_STORES stores in all, and
 * DUALMIND_MAX_STORES_PER_TOKEN that an agent created and that still exist
 * (counted from the audit log's store.create rows, so no token code keeps a
 * counter). People and the operator are held to the instance limit only.
 */
export function assertStoreQuota({ existing, createdByActor, actor }: { existing: string[]; createdByActor: string[]; actor: string }): void {
  const { maxStores, maxStoresPerToken } = getConfig().limits;
  if (existing.length >= maxStores) throw limitReached({ limit: "DUALMIND_MAX_STORES", message: `this instance holds ${existing.length} stores, its most` });
  if (!actor.startsWith("agent:")) return;
  const live = new Set(existing);
  const mine = new Set(createdByActor.filter((s) => live.has(s))).size;
  if (mine >= maxStoresPerToken) throw limitReached({ limit: "DUALMIND_MAX_STORES_PER_TOKEN", message: `agent ${actor.slice("agent:".length)} created ${mine} stores, its most` });
}

/**
 * Store names `actor` created, as the audit log records them (both backends read the same rows). The lifecycle
 * actions' condition, written as the partial index audit_log_store_lifecycle_idx states it, lets a read of that small
 * index (store creates, deletes and archives: bounded by the store quotas) answer, instead of every audit row the
 * agent ever caused; SQLite is told to (its planner prefers the actor index), PostgreSQL's planner chooses it.
 */
const storesCreatedBy = (from: string) => `select distinct substr(target, 7) as store from ${from} where action in ('store.create', 'store.delete', 'store.archive', 'store.unarchive') and action = 'store.create' and actor = ?`;
export const STORES_CREATED_BY_SQL = storesCreatedBy("audit_log");
export const STORES_CREATED_BY_SQLITE = storesCreatedBy("audit_log indexed by audit_log_store_lifecycle_idx");

/** Refuse core and default: every install and every snippet counts on them. */
export function assertStoreRemovable({ name, what = "deleted" }: { name: string; what?: "deleted" | "archived" }): void {
  if (name === CORE_STORE || name === DEFAULT_STORE) throw new AppError("unprocessable", `store ${name} cannot be ${what}`);
}

/**
 * A delete names its store twice (the API's `confirm` query parameter, the CLI's
 * --confirm, the dashboard's typed name), so a stray or replayed DELETE cannot
 * drop a store.
 */
export function assertDeleteConfirmed({ name, confirm }: { name: string; confirm: string | undefined }): void {
  if (confirm === name) return;
  const message = `deleting store ${name} removes everything in it for good: repeat its name to confirm (confirm=${name})`;
  throw new AppError("unprocessable", message, [{ path: "confirm", message }]);
}

const DELETED_PREFIX = ".deleted-";

/** Folders a store delete renamed but could not remove (a busy or failing disk): they still take space. */
export function deletedStoreLeftovers(): string[] {
  const root = path.join(getConfig().dataDir, "stores");
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root).filter((n) => n.startsWith(DELETED_PREFIX)).sort();
}

/** Remove what earlier deletes left behind (start-up and every delete); what still cannot be removed is logged and reported by verify. */
export function removeDeletedStoreLeftovers(): { removed: string[]; left: string[] } {
  const root = path.join(getConfig().dataDir, "stores");
  const removed: string[] = [];
  const left: string[] = [];
  for (const name of deletedStoreLeftovers()) {
    try {
      fs.rmSync(path.join(root, name), { recursive: true, force: true });
      removed.push(name);
    } catch (e) {
      left.push(name);
      log("warn", "a deleted store's folder could not be removed; it is retried at the next start and delete", { folder: name, error: (e as Error).message });
    }
  }
  return { removed, left };
}

/**
 * Archive a store: read-only (writes answer 409 store_archived), its
 * connection closed, and left closed by background work; reads still work.
 * Unarchived, it is writable again and background work picks it up. Admin
 * only, audited (the audit row is the archive: see lib/db/store-lifecycle.ts).
 */
export function setStoreArchived({ name, actor, archive }: { name: string; actor: string; archive: boolean }): { store: string; archived: boolean } {
  if (storesOnPostgres()) throw notServedOnPostgres(`The local SQLite store ${name}`);
  if (!storeExists(name)) throw notFound({ what: "store", id: name });
  if (archive) assertStoreRemovable({ name, what: "archived" });
  if (isStoreArchived(name) === archive) throw new AppError("conflict", `store ${name} is ${archive ? "already" : "not"} archived`);
  appendAudit({ actor, action: archive ? "store.archive" : "store.unarchive", target: `store:${name}`, details: null });
  // Unarchived: a handle a read opened meanwhile was marked to close when idle, and a fresh one is kept like any other.
  retireStoreDb(name);
  return { store: name, archived: archive };
}

/**
 * Delete a store for good: its connection closed, index.db and memory/
 * removed, an audit row written (admin only; the route checks the scope).
 */
export function deleteStore({ name, actor, confirm }: { name: string; actor: string; confirm: string | undefined }): { deleted: string } {
  if (storesOnPostgres()) throw notServedOnPostgres(`The local SQLite store ${name}`);
  if (!storeExists(name)) throw notFound({ what: "store", id: name });
  assertStoreRemovable({ name });
  assertDeleteConfirmed({ name, confirm });
  removeDeletedStoreLeftovers();
  // Out of its name first, in one rename: from here on nothing (a request, the embed worker, the memory folder
  // watch) can open the store again, and nothing makes its folder anew. The rename runs inside the governance
  // transaction that takes the name out of token allow-lists and audits the delete: all three or none.
  const doomed = path.join(path.dirname(storeDir(name)), `${DELETED_PREFIX}${name}-${randomBytes(6).toString("hex")}`);
  getGovernance().sqlite.transaction(() => {
    const allowLists = writeLedger(getGovernance(), forgetDeletedStoreOp(name));
    appendAudit({ actor, action: "store.delete", target: `store:${name}`, details: allowLists > 0 ? { allow_lists_changed: allowLists } : null });
    fs.renameSync(storeDir(name), doomed);
  }).immediate();
  retireStoreDb(name);
  try {
    fs.rmSync(doomed, { recursive: true, force: true });
  } catch (e) {
    // The store is gone (renamed away, audited); its bytes are removed at the next start or delete, and verify names the folder.
    log("warn", "a deleted store's folder could not be removed yet", { store: name, error: (e as Error).message });
  }
  return { deleted: name };
}

/** Create a store (index.db + memory/). Creating one that exists is a conflict. */
export function createStore({ input, actor }: { input: z.input<typeof createStoreSchema>; actor: string }): StoreSummary {
  const { name, description } = createStoreSchema.parse(input);
  if (storeExists(name)) throw new AppError("conflict", `store ${name} already exists`);
  const root = path.dirname(storeDir(name));
  // Store names differ by more than case: `Notes` beside `notes` would be one folder on a case-insensitive file system.
  const collides = (fs.existsSync(root) ? fs.readdirSync(root) : []).find((n) => n !== name && n.toLowerCase() === name.toLowerCase());
  if (collides) throw new AppError("conflict", `store ${name} would share a folder with ${collides} on a case-insensitive file system`);
  assertStoreQuota({ existing: listStoreNames(), createdByActor: (getGovernance().sqlite.prepare(STORES_CREATED_BY_SQLITE).pluck().all(actor) as string[]), actor });
  // Claim the name with a non-recursive mkdir: of two processes creating it at once, one gets EEXIST.
  mkdirPrivate(path.dirname(storeDir(name)));
  try {
    fs.mkdirSync(storeDir(name), { mode: PRIVATE_DIR_MODE });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") throw new AppError("conflict", `store ${name} already exists`);
    throw e;
  }
  let handle: StoreHandle;
  try {
    handle = getStoreDb({ store: name });
    // A new store's index is built: it and the memory folder are both empty. Without this mark, the first
    // open after files arrive would rebuild the whole index synchronously, inside whatever request opened it.
    markIndexBuilt({ handle });
    if (description) handle.db.insert(meta).values({ key: "description", value: description }).onConflictDoUpdate({ target: meta.key, set: { value: description } }).run();
    appendAudit({ actor, action: "store.create", target: `store:${name}`, details: description ? { description } : null });
  } catch (e) {
    // All or nothing: a store that could not be created whole (a full disk, say) leaves no folder behind
    // to conflict with the retry. The folder is ours: the mkdir above created it.
    closeStoreDb(name);
    fs.rmSync(storeDir(name), { recursive: true, force: true });
    throw e;
  }
  return describeStore({ handle });
}

/** The core store exists from the first run. */
export function ensureCoreStore(): void {
  getStoreDb({ store: CORE_STORE });
}

/**
 * A fresh data dir gets a ready `default` store, the one the README and the
 * MCP snippet use. It is made once per data dir: when the audit log shows it
 * was ever created (here, by the API or by the CLI), a missing `default`
 * means an operator removed it, and it stays removed. A data dir from before
 * this rule (no such audit row) gets it on its next start. Returns whether it
 * was created now.
 */
export function ensureDefaultStore(): boolean {
  if (storeExists(DEFAULT_STORE) || hasAuditEntry({ action: "store.create", target: `store:${DEFAULT_STORE}` })) return false;
  try {
    createStore({ input: { name: DEFAULT_STORE, description: "The store agents write to unless told otherwise." }, actor: "system:bootstrap" });
    return true;
  } catch (e) {
    // Another process starting on the same data dir made it first.
    if (isAppError(e) && e.code === "conflict") return false;
    throw e;
  }
}
