import { and, asc, count, eq, gt, isNull, lte, or } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { workingMemory, type WorkingMemoryRow } from "../db/schema/graph";
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
/** A row as the API shows it (both dialects). */
export const toWorkingMemoryEntry = (r: WorkingMemoryRow): WorkingMemoryEntry => ({ key: r.key, value: parseJsonColumnOr<unknown>(r.value, null), expires_at: r.expiresAt, updated_at: r.updatedAt, updated_by: r.updatedBy });
/** Keys past their expiry are never returned, even before a sweep deletes them. */
const liveAt = (now: number) => or(isNull(workingMemory.expiresAt), gt(workingMemory.expiresAt, now));

/** Delete expired keys; returns how many went. */
export function sweepExpiredWorkingMemory({ handle, now = Date.now() }: { handle: StoreHandle; now?: number }): number {
  return handle.db.delete(workingMemory).where(lte(workingMemory.expiresAt, now)).run().changes;
}

/** Set a key (sweeping expired ones first, so they never count against the limit). */
export function setWorkingMemory({ handle, input, actor, now = Date.now() }: { handle: StoreHandle; input: z.input<typeof setWorkingMemoryInputSchema>; actor: string; now?: number }): WorkingMemoryEntry {
  const e = setWorkingMemoryInputSchema.parse(input);
  const { db } = handle;
  return handle.sqlite
    .transaction(() => {
      sweepExpiredWorkingMemory({ handle, now });
      const exists = db.select({ key: workingMemory.key }).from(workingMemory).where(eq(workingMemory.key, e.key)).get();
      if (!exists && db.select({ n: count() }).from(workingMemory).get()!.n >= WORKING_MEMORY_MAX_KEYS) {
        throw new AppError("unprocessable", `working memory is full (${WORKING_MEMORY_MAX_KEYS} keys); delete some or let them expire`);
      }
      const row = { key: e.key, value: JSON.stringify(e.value), expiresAt: e.ttl_seconds ? now + e.ttl_seconds * 1000 : null, updatedAt: now, updatedBy: actor };
      return toWorkingMemoryEntry(db.insert(workingMemory).values(row).onConflictDoUpdate({ target: workingMemory.key, set: row }).returning().get());
    })
    .immediate();
}

export function getWorkingMemoryByKey({ handle, key, now = Date.now() }: { handle: StoreHandle; key: string; now?: number }): WorkingMemoryEntry {
  const row = handle.db.select().from(workingMemory).where(and(eq(workingMemory.key, key), liveAt(now))).get();
  if (!row) throw new AppError("not_found", `working memory has no key ${key}`);
  return toWorkingMemoryEntry(row);
}

export function listWorkingMemory({ handle, now = Date.now() }: { handle: StoreHandle; now?: number }): WorkingMemoryEntry[] {
  return handle.db.select().from(workingMemory).where(liveAt(now)).orderBy(asc(workingMemory.key)).all().map(toWorkingMemoryEntry);
}

export function deleteWorkingMemoryByKey({ handle, key, now = Date.now() }: { handle: StoreHandle; key: string; now?: number }): { deleted: string } {
  const changes = handle.db.delete(workingMemory).where(and(eq(workingMemory.key, key), liveAt(now))).run().changes;
  if (changes === 0) throw new AppError("not_found", `working memory has no key ${key}`);
  return { deleted: key };
}
