import { and, eq, gt, isNull, lte, or, type Column } from "drizzle-orm";
import { z } from "zod";
import { count, read, remove, row, rows, storeLock, upsert, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import type { WorkingMemoryRow } from "../db/schema/graph";
import { AppError } from "../errors";
import { parseJsonColumnOr } from "../common";
import { graphTables } from "./tables";

/** Working memory, one repository over both engines (lib/db/port.ts). */
const memory = graphTables.workingMemory;

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
export const toWorkingMemoryEntry = (r: WorkingMemoryRow): WorkingMemoryEntry => ({ key: r.key, value: parseJsonColumnOr<unknown>({ text: r.value, fallback: null }), expires_at: r.expiresAt, updated_at: r.updatedAt, updated_by: r.updatedBy });
/** Keys past their expiry are never returned, even before a sweep deletes them. */
const liveAt = (t: { expiresAt: Column }, now: number) => or(isNull(t.expiresAt), gt(t.expiresAt, now));
const notFoundKey = (key: string) => new AppError("not_found", `working memory has no key ${key}`);

function* sweep(now: number): Op<number> {
  return (yield* remove(memory, (t) => lte(t.expiresAt, now))).length;
}

/** Delete expired keys; returns how many went. */
export function sweepExpiredWorkingMemory<H extends AnyStoreHandle>({ handle, now = Date.now() }: { handle: H; now?: number }): On<H, number> {
  return write(handle, sweep(now));
}

/**
 * Set a key (sweeping expired ones first, so they never count against the
 * limit). The key limit holds with writers on every replica: PostgreSQL takes
 * a per-store transaction lock, as SQLite's write lock does.
 */
export function setWorkingMemory<H extends AnyStoreHandle>({ handle, input, actor, now = Date.now() }: { handle: H; input: z.input<typeof setWorkingMemoryInputSchema>; actor: string; now?: number }): On<H, WorkingMemoryEntry> {
  const e = setWorkingMemoryInputSchema.parse(input);
  return write(
    handle,
    (function* () {
      yield* storeLock("working-memory");
      yield* sweep(now);
      const exists = yield* row(memory, (t) => eq(t.key, e.key));
      if (!exists && (yield* count(memory)) >= WORKING_MEMORY_MAX_KEYS) {
        throw new AppError("unprocessable", `working memory is full (${WORKING_MEMORY_MAX_KEYS} keys); delete some or let them expire`);
      }
      const values = { key: e.key, value: JSON.stringify(e.value), expiresAt: e.ttl_seconds ? now + e.ttl_seconds * 1000 : null, updatedAt: now, updatedBy: actor };
      return toWorkingMemoryEntry(yield* upsert(memory, values, (t) => t.key, values));
    })(),
  );
}

export function getWorkingMemoryByKey<H extends AnyStoreHandle>({ handle, key, now = Date.now() }: { handle: H; key: string; now?: number }): On<H, WorkingMemoryEntry> {
  return read(
    handle,
    (function* () {
      const found = yield* row(memory, (t) => and(eq(t.key, key), liveAt(t, now)));
      if (!found) throw notFoundKey(key);
      return toWorkingMemoryEntry(found);
    })(),
  );
}

export function listWorkingMemory<H extends AnyStoreHandle>({ handle, now = Date.now() }: { handle: H; now?: number }): On<H, WorkingMemoryEntry[]> {
  return read(
    handle,
    (function* () {
      return (yield* rows(memory, { where: (t) => liveAt(t, now), orderBy: (t, o) => [o.bytewise(t.key)] })).map(toWorkingMemoryEntry);
    })(),
  );
}

export function deleteWorkingMemoryByKey<H extends AnyStoreHandle>({ handle, key, now = Date.now() }: { handle: H; key: string; now?: number }): On<H, { deleted: string }> {
  return write(
    handle,
    (function* () {
      const gone = yield* remove(memory, (t) => and(eq(t.key, key), liveAt(t, now)));
      if (gone.length === 0) throw notFoundKey(key);
      return { deleted: key };
    })(),
  );
}
