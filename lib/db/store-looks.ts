import fs from "node:fs";
import { getStoreDb, holdingStoreHandles, storeIndexPath, type StoreHandle } from "./connection";

/**
 * Background loops look at every store (the embed worker's rounds, the status
 * watch, the minute's snapshots, the memory folder scan, metrics, the store
 * list). A look is not a use, so beyond DUALMIND_MAX_OPEN_STORES the idle
 * connections are closed; and a look must not read a store again round after
 * round while nothing in it changed (opening a closed store costs pragmas and a
 * migration check, and even an open one's reads add up over hundreds of stores
 * every few seconds). The one rule: a store whose files have not changed since
 * the last look gives that look's result without being read, or opened. Any
 * commit to a store, by this process or another, changes `index.db` or its
 * `-wal` file.
 */
/** How close to a file's last change a stamp is too close to trust: a change within the file system's timestamp granularity could hide behind an equal mtime. */
const RACY_MS = 2_000;

/**
 * The state of a store's files as the file system tells it (`index.db` and its
 * `-wal`, by size and change time), or null when it cannot vouch for them: the
 * database is missing, or changed too recently (see RACY_MS). A `-wal` that is
 * absent and one that is empty are the same state (closing the last connection
 * removes it).
 */
export function storeFilesStamp({ store, now = Date.now() }: { store: string; now?: number }): string | null {
  const file = storeIndexPath(store);
  const parts: string[] = [];
  for (const f of [file, `${file}-wal`]) {
    let st: fs.BigIntStats | undefined;
    try {
      st = fs.statSync(f, { bigint: true });
    } catch {
      if (f === file) return null;
    }
    if (!st || (f !== file && st.size === 0n)) {
      parts.push("-");
      continue;
    }
    if (now - Number(st.mtimeMs) < RACY_MS || now - Number(st.ctimeMs) < RACY_MS) return null;
    parts.push(`${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}`);
  }
  return parts.join("|");
}

/** The last look at each store by one loop, with the stamp its files had just before it. */
export type StoreLooks<T> = Map<string, { stamp: string; value: T }>;

/**
 * Look at a store for a background loop: read it (through its connection if
 * open, not counted as a use; else opened for the look) only if its files
 * changed since the last look, or that look's value is no longer `reusable`;
 * otherwise the last look's value. `open` opens it for the look (default: the
 * store's connection, not counted as a use); the handle is held while `look` runs.
 */
export async function lookAtStore<T>({ store, looks, look, reusable = () => true, open = (s) => getStoreDb({ store: s, create: false, use: false }), now = Date.now() }: {
  store: string;
  looks: StoreLooks<T>;
  look: (handle: StoreHandle) => T | Promise<T>;
  reusable?: (value: T) => boolean;
  open?: (store: string) => StoreHandle;
  now?: number;
}): Promise<T> {
  const stamp = storeFilesStamp({ store, now });
  const last = looks.get(store);
  if (stamp !== null && last?.stamp === stamp && reusable(last.value)) return last.value;
  const value = await holdingStoreHandles({ work: () => look(open(store)) });
  if (stamp === null) looks.delete(store);
  else looks.set(store, { stamp, value });
  return value;
}

/** Forget the looks at stores no longer on disk: a loop's looks are as many as the stores. */
export function forgetGoneStores<T>({ looks, stores }: { looks: StoreLooks<T>; stores: readonly string[] }): void {
  const names = new Set(stores);
  for (const store of looks.keys()) if (!names.has(store)) looks.delete(store);
}
