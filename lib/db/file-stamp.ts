import fs from "node:fs";

/** How close to a file's last change a stamp is too close to trust: a change within the file system's timestamp granularity could hide behind an equal mtime. */
const RACY_MS = 2_000;

/**
 * The state of a SQLite database's files as the file system tells it (the
 * database and its `-wal`, by size, change times and inode), or null when it
 * cannot vouch for them: the database is missing, or (unless `trustRecent`)
 * changed too recently (see RACY_MS). A `-wal` that is absent and one that is
 * empty are the same state (closing the last connection removes it).
 */
export function databaseFilesStamp({ file, now = Date.now(), trustRecent = false }: { file: string; now?: number; trustRecent?: boolean }): string | null {
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
    if (!trustRecent && (now - Number(st.mtimeMs) < RACY_MS || now - Number(st.ctimeMs) < RACY_MS)) return null;
    parts.push(`${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}`);
  }
  return parts.join("|");
}

/**
 * What closing a store's connection did to its files: closing the last
 * connection checkpoints the log into the database, so the files change though
 * the content does not. A look that saw `before` may take `after` as unchanged.
 * One entry per store on disk (on globalThis: one per process).
 */
const closes = ((globalThis as unknown as { __dualmindStoreCloses?: Map<string, { before: string; after: string }> }).__dualmindStoreCloses ??= new Map());

/** Close a store's connection, noting its files' stamps either side (see `closes`). */
export function closeNotingStamps({ store, file, close }: { store: string; file: string; close: () => void }): void {
  const before = databaseFilesStamp({ file, trustRecent: true });
  close();
  const after = databaseFilesStamp({ file, trustRecent: true });
  if (before !== null && after !== null && before !== after) closes.set(store, { before, after });
  else closes.delete(store);
}

/** The stamp a look that saw `seen` may take the store's files to have now, if only a close of this process changed them since. */
export function throughCloses({ store, seen }: { store: string; seen: string }): string {
  const c = closes.get(store);
  return c && c.before === seen ? c.after : seen;
}
