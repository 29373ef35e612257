/**
 * Read-through cache of active session views. Never authoritative: every write
 * path reads SQLite inside its own transaction, and every write in this
 * process drops the entry it touched. Other processes' writes show up within
 * the TTL at worst.
 */
export const SESSION_CACHE_TTL_MS = 60_000;

type Entry<T> = { value: T; expiresAt: number };

const g = globalThis as unknown as { __dualmindSessionCache?: Map<string, Entry<unknown>> };
function entries(): Map<string, Entry<unknown>> {
  g.__dualmindSessionCache ??= new Map();
  return g.__dualmindSessionCache;
}

// Keyed by database file too, so a test pointing at a new DATA_DIR never sees another file's sessions.
function key(dbFile: string, sessionId: string): string {
  return `${dbFile}\u0000${sessionId}`;
}

export function readCachedSession<T>({ dbFile, sessionId, now = Date.now() }: { dbFile: string; sessionId: string; now?: number }): T | undefined {
  const k = key(dbFile, sessionId);
  const hit = entries().get(k);
  if (!hit) return undefined;
  if (hit.expiresAt <= now) {
    entries().delete(k);
    return undefined;
  }
  return hit.value as T;
}

export function cacheSession<T>({ dbFile, sessionId, value, now = Date.now() }: { dbFile: string; sessionId: string; value: T; now?: number }): void {
  entries().set(key(dbFile, sessionId), { value, expiresAt: now + SESSION_CACHE_TTL_MS });
}

export function invalidateSession({ dbFile, sessionId }: { dbFile: string; sessionId: string }): void {
  entries().delete(key(dbFile, sessionId));
}

export function invalidateAllSessions(): void {
  entries().clear();
}
