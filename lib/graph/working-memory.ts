import { and, eq, gt, isNull, lte, or, type Column } from "drizzle-orm";
import { z } from "zod";
import { count, read, remove, row, rows, storeLock, upsert, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import type { WorkingMemoryRow } from "../db/schema/graph";
import { AppError } from "../errors";
import { limitReached, parseJsonColumnOr } from "../common";
import { getConfig } from "../config";
import { withinListBudget } from "../governance/limits";
import { graphTables } from "./tables";

/** Working memory, one repository over both engines (lib/db/port.ts). */
const memory = graphTables.workingMemory;

/** A scratchpad, not a database: bounded keys (DUALMIND_WORKING_MEMORY_MAX_KEYS) and value size (UTF-8 bytes) per store. */
export const workingMemoryMaxKeys = (): number => getConfig().limits.workingMemoryMaxKeys;
export const WORKING_MEMORY_MAX_VALUE_BYTES = 64 * 1024;

/** One page of a store's working memory; the answer also stops at DUALMIND_LIST_MAX_BYTES and says `next_offset`. */
export const listWorkingMemoryQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();
export type WorkingMemoryPage = { entries: WorkingMemoryEntry[]; total: number; nextOffset: number | null };

export const workingMemoryKeySchema = z.string().regex(/^[A-Za-z0-9._:/-]{1,200}$/, "keys are 1-200 chars of letters, digits, . _ : / -");
export const setWorkingMemoryInputSchema = z
  .object({
    key: workingMemoryKeySchema,
    value: z.json().refine((v) => Buffer.byteLength(JSON.stringify(v), "utf8") <= WORKING_MEMORY_MAX_VALUE_BYTES, `value must serialize to at most ${WORKING_MEMORY_MAX_VALUE_BYTES} bytes of UTF-8 JSON`),
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
  return write(handle, function* () {
    yield* storeLock("working-memory");
    yield* sweep(now);
    const exists = yield* row(memory, (t) => eq(t.key, e.key));
    const max = workingMemoryMaxKeys();
    if (!exists && (yield* count(memory)) >= max) {
      throw limitReached({ limit: "DUALMIND_WORKING_MEMORY_MAX_KEYS", message: `working memory is full (${max} keys); delete some or let them expire` });
    }
    const values = { key: e.key, value: JSON.stringify(e.value), expiresAt: e.ttl_seconds ? now + e.ttl_seconds * 1000 : null, updatedAt: now, updatedBy: actor };
    return toWorkingMemoryEntry(yield* upsert(memory, values, (t) => t.key, values));
  });
}

export function getWorkingMemoryByKey<H extends AnyStoreHandle>({ handle, key, now = Date.now() }: { handle: H; key: string; now?: number }): On<H, WorkingMemoryEntry> {
  return read(handle, function* () {
    const found = yield* row(memory, (t) => and(eq(t.key, key), liveAt(t, now)));
    if (!found) throw notFoundKey(key);
    return toWorkingMemoryEntry(found);
  });
}

/** A page of live keys in key order, within DUALMIND_LIST_MAX_BYTES; `nextOffset` continues it. */
export function listWorkingMemory<H extends AnyStoreHandle>({ handle, query = {}, now = Date.now() }: { handle: H; query?: z.input<typeof listWorkingMemoryQuerySchema>; now?: number }): On<H, WorkingMemoryPage> {
  const q = listWorkingMemoryQuerySchema.parse(query);
  return read(handle, function* () {
    const page = (yield* rows(memory, { where: (t) => liveAt(t, now), orderBy: (t, o) => [o.bytewise(t.key)], limit: q.limit, offset: q.offset })).map(toWorkingMemoryEntry);
    const total = yield* count(memory, (t) => liveAt(t, now));
    const { shown, nextOffset } = withinListBudget({ items: page, offset: q.offset, total });
    return { entries: shown, total, nextOffset };
  });
}

export function deleteWorkingMemoryByKey<H extends AnyStoreHandle>({ handle, key, now = Date.now() }: { handle: H; key: string; now?: number }): On<H, { deleted: string }> {
  return write(handle, function* () {
    const gone = yield* remove(memory, (t) => and(eq(t.key, key), liveAt(t, now)));
    if (gone.length === 0) throw notFoundKey(key);
    return { deleted: key };
  });
}
