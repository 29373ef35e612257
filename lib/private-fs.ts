import fs from "node:fs";
import { log } from "./log";

/**
 * DATA_DIR holds password hashes, token hashes, the session secret and every
 * memory: only the user running dualmind may read it. Folders are created
 * 0700 and files 0600, whatever the umask.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

const isWindows = process.platform === "win32";

/** `mkdir -p` that creates every missing folder 0700 (folders that exist are left as they are). */
export function mkdirPrivate(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Make existing files 0600; a file that is not there is skipped. SQLite
 * creates a database 0644 (on purpose past the umask) and gives its -wal and
 * -shm the database's mode, so a database is made private right after it is
 * opened, before its first write.
 */
export function chmodPrivate(...files: string[]): void {
  if (isWindows) return;
  for (const file of files) {
    try {
      if ((fs.statSync(file).mode & 0o777) !== PRIVATE_FILE_MODE) fs.chmodSync(file, PRIVATE_FILE_MODE);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }
}

/**
 * At start-up: create DATA_DIR 0700, or tighten an existing one that others
 * may enter (data dirs made before this release are 0755). Closing the top
 * folder is enough: nothing below it can be reached without passing it.
 * Logged when the mode changes; a folder we may not chmod is logged, not fatal.
 */
export function tightenDataDir(dataDir: string): void {
  mkdirPrivate(dataDir);
  if (isWindows) return;
  const mode = fs.statSync(dataDir).mode & 0o777;
  if ((mode & 0o077) === 0) return;
  try {
    fs.chmodSync(dataDir, mode & PRIVATE_DIR_MODE);
    log("warn", "DATA_DIR was readable by other users; tightened it to owner-only", { dataDir, from: mode.toString(8), to: (mode & PRIVATE_DIR_MODE).toString(8) });
  } catch (e) {
    log("error", "DATA_DIR is readable by other users and could not be tightened; chmod 700 it", { dataDir, mode: mode.toString(8), error: String(e) });
  }
}
