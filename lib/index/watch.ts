import fs from "node:fs";
import path from "node:path";
import { getConfig } from "../config";
import { getStoreDb, holdingStoreHandles, storeDir } from "../db/connection";
import { storeFilesStamp } from "../db/store-looks";
import { throughCloses } from "../db/file-stamp";
import { indexableFilesStamp } from "./files";
import { listStoreNames } from "../db/store-names";
import { activeStoreNames } from "../db/store-lifecycle";
import { isAppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { log } from "../log";
import { ensureIndexBuilt, reindexStoreAsync, type ReindexResult } from "./reindex";

/**
 * The memory folders are live (docs/memory-files.md): a watch on each folder of a store's memory/ (at most
 * DUALMIND_MAX_WATCHED_DIRS across stores; the rest is left to the periodic scan) marks the store dirty, and changes
 * are batched and reindexed once (incremental: only files whose stat changed are read), off the request path. A scan
 * every DUALMIND_MEMORY_SCAN_MS is the fallback for file systems without change events, and the first scan notices a
 * tree changed while the server was down. Audited as one `store.file_change` row per store and scan.
 * SQLite stores only: with DATABASE_URL the memories table is the truth.
 */

/** Changes seen within this long of each other are indexed together. */
export const WATCH_BATCH_MS = 300;

/**
 * `dirty`: a run is due; `changed`: a change event came (not only the periodic scan). `last`: the store's files and
 * database as they were before the last run: the scan does not open a closed store whose files are all as they were.
 */
type Watching = { watchers: Map<string, fs.FSWatcher>; scanOnly: boolean; dirty: boolean; changed: boolean; timer: NodeJS.Timeout | null; running: boolean; last: { files: string; db: string } | null };

type State = { stores: Map<string, Watching>; scan: NodeJS.Timeout | null; stopped: boolean; batchMs: number };

const g = globalThis as unknown as { __dualmindMemoryWatch?: State };

/** Start watching every store's memory folder (idempotent). Returns stopMemoryWatch. */
export function startMemoryWatch({ scanMs = getConfig().memoryWatch.scanMs, batchMs = WATCH_BATCH_MS }: { scanMs?: number; batchMs?: number } = {}): () => Promise<void> {
  const config = getConfig();
  if (!config.memoryWatch.enabled || config.databaseUrl) return stopMemoryWatch;
  if (g.__dualmindMemoryWatch && !g.__dualmindMemoryWatch.stopped) return stopMemoryWatch;
  const state: State = { stores: new Map(), scan: null, stopped: false, batchMs };
  g.__dualmindMemoryWatch = state;
  const scanAll = () => {
    if (state.stopped) return;
    const active = activeStoreNames(listStoreNames());
    // An archived (or deleted) store is not watched: its watcher is closed, and its index is left as it is.
    for (const [store, w] of state.stores) {
      if (!active.includes(store) && !w.running) forget(state, store, w);
    }
    for (const store of active) {
      const w = watching(state, store);
      attach(state, store, w);
      w.dirty = true;
      schedule(state, store, w, 0);
    }
  };
  scanAll();
  state.scan = setInterval(scanAll, scanMs);
  state.scan.unref();
  return stopMemoryWatch;
}

/** Close every watcher and timer; resolves when no reindex started by the watch is still running. */
export async function stopMemoryWatch(): Promise<void> {
  const state = g.__dualmindMemoryWatch;
  if (!state || state.stopped) return;
  state.stopped = true;
  if (state.scan) clearInterval(state.scan);
  for (const w of state.stores.values()) {
    closeAll(w);
    if (w.timer) clearTimeout(w.timer);
  }
  while ([...state.stores.values()].some((w) => w.running)) await new Promise((resolve) => setTimeout(resolve, 10));
}

function watching(state: State, store: string): Watching {
  let w = state.stores.get(store);
  if (!w) {
    w = { watchers: new Map(), scanOnly: false, dirty: false, changed: false, timer: null, running: false, last: null };
    state.stores.set(store, w);
  }
  return w;
}

/** Folders watched now across every store, and stores left to the periodic scan because theirs did not fit DUALMIND_MAX_WATCHED_DIRS. */
export function memoryWatchStatus(): { watched_dirs: number; max_watched_dirs: number; scan_only_stores: number } {
  const state = g.__dualmindMemoryWatch;
  const all = state && !state.stopped ? [...state.stores.values()] : [];
  return { watched_dirs: all.reduce((n, w) => n + w.watchers.size, 0), max_watched_dirs: getConfig().limits.maxWatchedDirs, scan_only_stores: all.filter((w) => w.scanOnly).length };
}

function closeAll(w: Watching): void {
  for (const watcher of w.watchers.values()) watcher.close();
  w.watchers.clear();
}

/** The folders of memory/ (itself first), hidden ones (the trash) and links left out as the scan leaves them; null past `max`. */
function foldersOf(root: string, max: number): string[] | null {
  const found = [root];
  for (let i = 0; i < found.length; i++) {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(found[i], { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith(".")) continue;
      found.push(path.join(found[i], e.name));
      if (found.length > max) return null;
    }
  }
  return found;
}

/**
 * Watch each folder of the store's memory/ once it exists (the scan retries
 * until then, after an error, and after a run: folders come and go), within
 * what DUALMIND_MAX_WATCHED_DIRS leaves beside the other stores' watches.
 */
function attach(state: State, store: string, w: Watching): void {
  // Only memory/: the store folder holds index.db, whose every write would look like a change.
  const root = path.join(storeDir(store), "memory");
  if (!fs.existsSync(root)) return;
  const others = [...state.stores.values()].reduce((n, o) => (o === w ? n : n + o.watchers.size), 0);
  const folders = foldersOf(root, getConfig().limits.maxWatchedDirs - others);
  if (folders === null) {
    if (!w.scanOnly) log("warn", "memory folders past DUALMIND_MAX_WATCHED_DIRS: the store's changes are picked up by the periodic scan", { store });
    closeAll(w);
    w.scanOnly = true;
    return;
  }
  w.scanOnly = false;
  const wanted = new Set(folders);
  for (const [dir, watcher] of w.watchers) {
    if (wanted.has(dir)) continue;
    watcher.close();
    w.watchers.delete(dir);
  }
  for (const dir of folders) {
    if (w.watchers.has(dir)) continue;
    try {
      const watcher = fs.watch(dir, { persistent: false }, () => {
        w.dirty = true;
        w.changed = true;
        schedule(state, store, w, state.batchMs);
      });
      watcher.on("error", (e) => {
        // A watched folder removed or the watch limit reached: the periodic scan carries on and attaches again.
        log("warn", "memory folder watch stopped; the periodic scan still picks up changes", { store, error: String(e) });
        watcher.close();
        if (w.watchers.get(dir) === watcher) w.watchers.delete(dir);
      });
      w.watchers.set(dir, watcher);
    } catch (e) {
      log("warn", "memory folder cannot be watched; changes are picked up by the periodic scan", { store, error: String(e) });
    }
  }
}

function schedule(state: State, store: string, w: Watching, delayMs: number): void {
  if (state.stopped || w.timer || w.running) return;
  w.timer = setTimeout(() => {
    w.timer = null;
    void run(state, store, w);
  }, delayMs);
  w.timer.unref();
}

async function run(state: State, store: string, w: Watching): Promise<void> {
  if (state.stopped || !w.dirty) return;
  const scanned = !w.changed;
  w.dirty = false;
  w.changed = false;
  // What the files and the database are before this run: a run that finds them so again has nothing to do.
  const before = { files: indexableFilesStamp({ store }), db: storeFilesStamp({ store }) };
  // The periodic scan is a look, not a use: a store none of whose files changed is not read (nor opened) for it.
  if (scanned && before.files !== null && before.files === w.last?.files && before.db !== null && throughCloses({ store, seen: w.last.db }) === before.db) return;
  w.running = true;
  try {
    const result = await holdingStoreHandles({ work: () => {
      const handle = getStoreDb({ store, create: false, use: false });
      // A never-built index (a deleted index.db) is rebuilt as on first access; then the incremental pass.
      ensureIndexBuilt({ handle });
      return reindexStoreAsync({ handle, background: true });
    } });
    w.last = before.files !== null && before.db !== null ? { files: before.files, db: before.db } : null;
    auditFileChange(result);
    if (!state.stopped && state.stores.get(store) === w) attach(state, store, w);
  } catch (e) {
    // A reindex already running (an admin's) covers these changes; a store deleted meanwhile is forgotten; anything else is tried again on the next change or scan.
    if (isAppError(e) && e.code === "not_found") forget(state, store, w);
    else if (!(isAppError(e) && e.code === "conflict")) log("warn", "indexing memory file changes failed; the next change or scan tries again", { store, error: String(e) });
  } finally {
    w.running = false;
  }
  // Changes that arrived while it ran are indexed in the next batch.
  if (w.dirty) schedule(state, store, w, state.batchMs);
}

/** Stop watching a store (archived, deleted): its watchers and timer go. */
function forget(state: State, store: string, w: Watching): void {
  closeAll(w);
  if (w.timer) clearTimeout(w.timer);
  state.stores.delete(store);
}

function auditFileChange(r: ReindexResult): void {
  const { added, changed, removed } = r.counts;
  if (added + changed + removed === 0) return;
  appendAudit({
    actor: "system:files",
    action: "store.file_change",
    target: `store:${r.store}`,
    reason: "files changed on disk",
    details: { added, changed, removed, paths: r.changed_paths, unindexable: r.unindexable.length },
  });
}
