import { letOthersRun } from "../common";
import { closeIdleStoreDbs, getStoreDb, holdingStoreHandles, storeIndexPath, type StoreHandle } from "./connection";
import { databaseFilesStamp, throughCloses } from "./file-stamp";

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
/** The state of a store's files (databaseFilesStamp of its index.db), or null when it cannot vouch for them. */
export function storeFilesStamp({ store, now = Date.now() }: { store: string; now?: number }): string | null {
  return databaseFilesStamp({ file: storeIndexPath(store), now });
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
  // Each close checkpoints and syncs, and a loop's looks at unchanged stores run without a pause: idle connections
  // are closed a few at a time with requests running between, and after a look that read its store requests run
  // before the loop's next store.
  while (closeIdleStoreDbs() > 0) await letOthersRun();
  const stamp = storeFilesStamp({ store, now });
  const last = looks.get(store);
  if (last && reusable(last.value)) {
    // A close of this process since the last look changed the files (its checkpoint), not the store; its change is
    // recent, so the racy rule refuses the stamp for a while: the files as the close left them are taken as they are.
    const through = throughCloses({ store, seen: last.stamp });
    const current = stamp ?? (through !== last.stamp ? databaseFilesStamp({ file: storeIndexPath(store), trustRecent: true }) : null);
    if (current !== null && through === current) {
      if (stamp !== null) last.stamp = stamp;
      return last.value;
    }
  }
  const value = await holdingStoreHandles({ work: () => look(open(store)) });
  if (stamp === null) looks.delete(store);
  else looks.set(store, { stamp, value });
  await letOthersRun();
  return value;
}

/** A loop's looks by its name, one map per process (on globalThis: the build bundles a module more than once, and every copy must share what was seen). */
export function storeLooks<T>(loop: string): StoreLooks<T> {
  const all = ((globalThis as unknown as { __dualmindStoreLooks?: Map<string, StoreLooks<unknown>> }).__dualmindStoreLooks ??= new Map());
  let looks = all.get(loop);
  if (!looks) all.set(loop, (looks = new Map()));
  return looks as StoreLooks<T>;
}

/** Forget the looks at stores no longer on disk: a loop's looks are as many as the stores. */
export function forgetGoneStores<T>({ looks, stores }: { looks: StoreLooks<T>; stores: readonly string[] }): void {
  const names = new Set(stores);
  for (const store of looks.keys()) if (!names.has(store)) looks.delete(store);
}
