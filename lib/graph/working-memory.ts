import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { AppError } from "../errors";
import { parseJsonColumnOr } from "../common";

/** A scratchpad, not a database: bounded keys and value size per store. */
export const WORKING_MEMORY_MAX_KEYS = 1000;
export const WORKING_MEMORY_MAX_VALUE_BYTES = 64 * 1024;

export const workingMemoryKeySchema = z.string().regex(/^[A-Za-z0-9._:/-]{1,200}$/, "keys are 1-200 chars of letters, digits, . _ : / -");
export const setWorkingMemoryInputSchema = z
  .object({
    key: workingMemoryKeySchema,
    value: z.json().refine((v) => JSON.stringify(v).length <= WORKING_MEMORY_MAX_VALUE_BYTES, `value must serialize to at most ${WORKING_MEMORY_MAX_VALUE_BYTES} bytes`),
    /** Omit for no expiry. */
    ttl_seconds: z.number().int().min(1).max(30 * 24 * 3600).optional(),
  })
  .strict();

export type WorkingMemoryEntry = { key: string; value: unknown; expires_at: number | null; updated_at: number; updated_by: string };
type Row = { key: string; value: string; expiresAt: number | null; updatedAt: number; updatedBy: string };
const toEntry = (r: Row): WorkingMemoryEntry => ({ key: r.key, value: parseJsonColumnOr<unknown>(r.value, null), expires_at: r.expiresAt, updated_at: r.updatedAt, updated_by: r.updatedBy });
const COLUMNS = "key, value, expires_at as expiresAt, updated_at as updatedAt, updated_by as updatedBy";

/** Delete expired keys; returns how many went. */
export function sweepExpiredWorkingMemory({ handle, now = Date.now() }: { handle: StoreHandle; now?: number }): number {
  return handle.sqlite.prepare("delete from working_memory where expires_at is not null and expires_at <= ?").run(now).changes;
}

/** Set a key (sweeping expired ones first, so they never count against the limit). */
export function setWorkingMemory({ handle, input, actor, now = Date.now() }: { handle: StoreHandle; input: z.input<typeof setWorkingMemoryInputSchema>; actor: string; now?: number }): WorkingMemoryEntry {
  const e = setWorkingMemoryInputSchema.parse(input);
  const { sqlite } = handle;
  return sqlite
    .transaction(() => {
      sweepExpiredWorkingMemory({ handle, now });
      const exists = sqlite.prepare("select 1 from working_memory where key = ?").get(e.key);
      const { n } = sqlite.prepare("select count(*) as n from working_memory").get() as { n: number };
      if (!exists && n >= WORKING_MEMORY_MAX_KEYS) throw new AppError("unprocessable", `working memory is full (${WORKING_MEMORY_MAX_KEYS} keys); delete some or let them expire`);
      sqlite
        .prepare(
          `insert into working_memory(key, value, expires_at, updated_at, updated_by) values (?, ?, ?, ?, ?)
           on conflict(key) do update set value = excluded.value, expires_at = excluded.expires_at, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
        )
        .run(e.key, JSON.stringify(e.value), e.ttl_seconds ? now + e.ttl_seconds * 1000 : null, now, actor);
      return toEntry(sqlite.prepare(`select ${COLUMNS} from working_memory where key = ?`).get(e.key) as Row);
    })
    .immediate();
}

export function getWorkingMemoryByKey({ handle, key, now = Date.now() }: { handle: StoreHandle; key: string; now?: number }): WorkingMemoryEntry {
  const row = handle.sqlite.prepare(`select ${COLUMNS} from working_memory where key = ? and (expires_at is null or expires_at > ?)`).get(key, now) as Row | undefined;
  if (!row) throw new AppError("not_found", `working memory has no key ${key}`);
  return toEntry(row);
}

export function listWorkingMemory({ handle, now = Date.now() }: { handle: StoreHandle; now?: number }): WorkingMemoryEntry[] {
  return (handle.sqlite.prepare(`select ${COLUMNS} from working_memory where expires_at is null or expires_at > ? order by key`).all(now) as Row[]).map(toEntry);
}

export function deleteWorkingMemoryByKey({ handle, key, now = Date.now() }: { handle: StoreHandle; key: string; now?: number }): { deleted: string } {
  const changes = handle.sqlite.prepare("delete from working_memory where key = ? and (expires_at is null or expires_at > ?)").run(key, now).changes;
  if (changes === 0) throw new AppError("not_found", `working memory has no key ${key}`);
  return { deleted: key };
}
