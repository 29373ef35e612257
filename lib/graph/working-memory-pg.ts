import { and, count, eq, gt, isNull, lte, or, sql } from "drizzle-orm";
import type { z } from "zod";
import { bytewise, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { workingMemory } from "../db/schema/pg/store";
import { AppError } from "../errors";
import { setWorkingMemoryInputSchema, toWorkingMemoryEntry, WORKING_MEMORY_MAX_KEYS, type WorkingMemoryEntry } from "./working-memory";

/**
 * Working memory on PostgreSQL (the SQLite twin is ./working-memory.ts, whose
 * schema, limits and TTL rules this reuses): a key past expires_at is never
 * returned, even before a write sweeps it. A set takes a per-store
 * transaction advisory lock, so the key limit holds with writers on every
 * replica (SQLite's write lock does that there).
 */

const liveAt = (now: number) => or(isNull(workingMemory.expiresAt), gt(workingMemory.expiresAt, now));

/** Delete expired keys (inside the caller's transaction); returns how many went. */
export async function sweepExpiredWorkingMemoryPg(tx: PgStoreTx, now = Date.now()): Promise<number> {
  return (await tx.delete(workingMemory).where(lte(workingMemory.expiresAt, now)).returning({ key: workingMemory.key })).length;
}

export async function setWorkingMemoryPg({ handle, input, actor, now = Date.now() }: { handle: PgStoreHandle; input: z.input<typeof setWorkingMemoryInputSchema>; actor: string; now?: number }): Promise<WorkingMemoryEntry> {
  const e = setWorkingMemoryInputSchema.parse(input);
  return withStoreTx({ handle }, async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`dualmind:working-memory:${handle.schema}`}, 0))`);
    await sweepExpiredWorkingMemoryPg(tx, now);
    const [exists] = await tx.select({ key: workingMemory.key }).from(workingMemory).where(eq(workingMemory.key, e.key));
    if (!exists && (await tx.select({ n: count() }).from(workingMemory))[0].n >= WORKING_MEMORY_MAX_KEYS) {
      throw new AppError("unprocessable", `working memory is full (${WORKING_MEMORY_MAX_KEYS} keys); delete some or let them expire`);
    }
    const row = { key: e.key, value: JSON.stringify(e.value), expiresAt: e.ttl_seconds ? now + e.ttl_seconds * 1000 : null, updatedAt: now, updatedBy: actor };
    const [written] = await tx.insert(workingMemory).values(row).onConflictDoUpdate({ target: workingMemory.key, set: row }).returning();
    return toWorkingMemoryEntry(written);
  });
}

export async function getWorkingMemoryByKeyPg({ handle, key, now = Date.now() }: { handle: PgStoreHandle; key: string; now?: number }): Promise<WorkingMemoryEntry> {
  const [row] = await withStoreTx({ handle, readOnly: true }, (tx) =>
    tx
      .select()
      .from(workingMemory)
      .where(and(eq(workingMemory.key, key), liveAt(now))),
  );
  if (!row) throw new AppError("not_found", `working memory has no key ${key}`);
  return toWorkingMemoryEntry(row);
}

export async function listWorkingMemoryPg({ handle, now = Date.now() }: { handle: PgStoreHandle; now?: number }): Promise<WorkingMemoryEntry[]> {
  const rows = await withStoreTx({ handle, readOnly: true }, (tx) => tx.select().from(workingMemory).where(liveAt(now)).orderBy(bytewise(workingMemory.key)));
  return rows.map(toWorkingMemoryEntry);
}

export async function deleteWorkingMemoryByKeyPg({ handle, key, now = Date.now() }: { handle: PgStoreHandle; key: string; now?: number }): Promise<{ deleted: string }> {
  const gone = await withStoreTx({ handle }, (tx) =>
    tx
      .delete(workingMemory)
      .where(and(eq(workingMemory.key, key), liveAt(now)))
      .returning({ key: workingMemory.key }),
  );
  if (gone.length === 0) throw new AppError("not_found", `working memory has no key ${key}`);
  return { deleted: key };
}
