import { sql } from "drizzle-orm";
import { limitReached } from "../common";
import { getConfig } from "../config";
import type { PgStoreTx } from "../db/pg-store";
import { engineStep, sqlRows, type Op } from "../db/port";
import { STORE_USAGE_SQL } from "../db/store-usage";

/**
 * The per-store quotas (SECURITY.md, "Limits"): DUALMIND_MAX_STORE_DOCUMENTS
 * documents (API documents and memories) and DUALMIND_MAX_STORE_BYTES bytes
 * of every kind of row. Both are read from the store's running total
 * (lib/db/store-usage.ts), one row kept by triggers, never by a scan. The
 * byte quota is enforced by those triggers on every write of every kind; the
 * document count here: API and MCP document and memory writes run inside
 * `withStoreQuota*`, in their write transaction, and a write that grew the
 * store past the count is refused, so its transaction rolls back and nothing
 * was written. An update adds no document; a delete frees room. A store
 * already past a limit (the limit lowered, or files reindexed from disk,
 * which are never refused) still takes writes that do not grow it.
 */
export type StoreUsage = { documents: number; bytes: number };


function assertStoreRoom(store: string, before: StoreUsage, after: StoreUsage): void {
  const { maxStoreDocuments } = getConfig().limits;
  if (after.documents > maxStoreDocuments && after.documents > before.documents) {
    throw limitReached({ limit: "DUALMIND_MAX_STORE_DOCUMENTS", message: `this write would take store ${store} to ${after.documents} documents, its most is ${maxStoreDocuments}` });
  }
}

/**
 * Before the work: a write that adds at least `adds` bytes (new documents' and memories' own text, which nothing in
 * the write takes away) to a store already too full for them is refused here, before any row is written. The
 * triggers still decide every write exactly; this spares a write they would refuse its chunking and index work, which
 * on PostgreSQL leaves index pages behind even when rolled back.
 */
export function assertRoomFor({ store, before, adds }: { store: string; before: StoreUsage; adds: number }): void {
  const { maxStoreBytes } = getConfig().limits;
  if (adds > 0 && before.bytes + adds > maxStoreBytes) {
    throw limitReached({ limit: "DUALMIND_MAX_STORE_BYTES", message: `store ${store} holds ${before.bytes} bytes; this write adds at least ${adds}, past its most of ${maxStoreBytes}` });
  }
}

export function usageOf(row: { documents: unknown; bytes: unknown } | undefined): StoreUsage {
  return { documents: Number(row?.documents ?? 0), bytes: Number(row?.bytes ?? 0) };
}

/** `op` (in the caller's write, on either engine) under the store quotas; on PostgreSQL with withStoreQuotaPg's lock. */
export function* withinStoreQuota<T>({ store, op, adds = () => 0 }: { store: string; op: Op<T>; adds?: () => Op<number> | number }): Op<T> {
  yield* engineStep({ sqlite: () => undefined, pg: async (tx) => void (await tx.execute(quotaLock(store))) });
  const usage = function* () {
    return usageOf((yield* sqlRows<{ documents: unknown; bytes: unknown }>(sql.raw(STORE_USAGE_SQL)))[0]);
  };
  const before = yield* usage();
  const least = adds();
  assertRoomFor({ store, before, adds: typeof least === "number" ? least : yield* least });
  const result = yield* op;
  assertStoreRoom(store, before, yield* usage());
  return result;
}

export const quotaLock = (store: string) => sql`select pg_advisory_xact_lock(hashtextextended(${`dualmind:store-quota:${store}`}, 0))`;

/**
 * PostgreSQL: the same, inside the caller's store transaction. A per-store
 * advisory lock, held to commit, queues quota-checked writers, so two
 * concurrent writes cannot both squeeze past the limit.
 */
export async function withStoreQuotaPg<T>({ tx, store, write, adds = 0 }: { tx: PgStoreTx; store: string; write: () => Promise<T>; adds?: number }): Promise<T> {
  await tx.execute(quotaLock(store));
  const usage = async () => usageOf((await tx.execute(sql.raw(STORE_USAGE_SQL))).rows[0] as { documents: unknown; bytes: unknown } | undefined);
  const before = await usage();
  assertRoomFor({ store, before, adds });
  const result = await write();
  assertStoreRoom(store, before, await usage());
  return result;
}
