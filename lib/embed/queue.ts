import { desc, isNotNull, sql } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { inCallerTx, read, select, sqlRows, sqlRun, tablePair, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import { embedQueue } from "../db/schema/embed";
import * as pgStore from "../db/schema/pg/store";
import { auditStep } from "../governance/audit";
import { log } from "../log";
import { readLiveCounts, readOldestPendingAt } from "./counters";
import { isDeadLocalOwner, outageParkedPatterns } from "./healing";

export type EmbedItem = { kind: string; refId: number; inputHash: string };
export type ClaimedItem = EmbedItem & { id: number; attempts: number };

/**
 * Queue artifacts for a vector from the configured model, on either engine, inside the writer's transaction (writers
 * never wait for the vector). Re-queueing an item resets its retries (its text changed, so the old error may not apply).
 */
export function* enqueueEmbeddingsOp({ items, now = Date.now() }: { items: EmbedItem[]; now?: number }): Op<void> {
  // 6 parameters per row: 1,000 rows stay far below either engine's bind-parameter limit.
  for (let at = 0; at < items.length; at += 1_000) {
    const values = items.slice(at, at + 1_000).map((c) => sql`(${c.kind}, ${c.refId}, ${c.inputHash}, ${now}, 0, ${now})`);
    yield* sqlRun(sql`insert into embed_queue (kind, ref_id, input_hash, enqueued_at, attempts, next_attempt_at) values ${sql.join(values, sql`, `)}
      on conflict (kind, ref_id) do update set input_hash = excluded.input_hash, attempts = 0, next_attempt_at = excluded.next_attempt_at,
        last_error = null, parked_at = null, claimed_by = null, claimed_until = null`);
  }
}

/** enqueueEmbeddingsOp on a SQLite store, all or nothing (within the writer's transaction when it holds one). */
export function enqueueEmbeddings({ handle, items }: { handle: StoreHandle; items: EmbedItem[] }): void {
  if (items.length > 0) handle.sqlite.transaction(() => inCallerTx(handle, enqueueEmbeddingsOp({ items })))();
}

/**
 * Claim up to `limit` ready items with a lease. BEGIN IMMEDIATE makes the
 * claim atomic across processes: two workers never hold the same row. A
 * worker takes back its own claims at once (a batch whose finish could not
 * be written, on a full disk, is not left to its lease).
 */
export function claimEmbedBatch({ handle, ...args }: { handle: StoreHandle; workerId: string; limit: number; leaseMs: number; now?: number }): ClaimedItem[] {
  const now = args.now ?? Date.now();
  const { sqlite } = handle;
  return sqlite.transaction(() => {
    const rows = sqlite
      .prepare(
        `select id, kind, ref_id as refId, input_hash as inputHash, attempts from embed_queue
         where parked_at is null and next_attempt_at <= ? and (claimed_until is null or claimed_until < ? or claimed_by = ?)
         order by next_attempt_at, id limit ?`,
      )
      .all(now, now, args.workerId, args.limit) as ClaimedItem[];
    const claim = sqlite.prepare("update embed_queue set claimed_by = ?, claimed_until = ? where id = ?");
    for (const r of rows) claim.run(args.workerId, now + args.leaseMs, r.id);
    return rows;
  }).immediate();
}

/** Finish claimed items. An item re-queued meanwhile (claim cleared) stays for its new text. */
export function completeEmbedItems({ handle, ...args }: { handle: StoreHandle; ids: number[]; workerId: string }): void {
  const stmt = handle.sqlite.prepare("delete from embed_queue where id = ? and claimed_by = ?");
  for (const id of args.ids) stmt.run(id, args.workerId);
}

export const BACKOFF_BASE_MS = 1000;
export const BACKOFF_MAX_MS = 5 * 60_000;

/** Exponential backoff with full jitter: attempt n waits up to base·2^(n-1), capped. */
export function backoffDelayMs({ attempts, random = Math.random }: { attempts: number; random?: () => number }): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * The queue's writes below are written once for both engines (lib/db/port.ts):
 * each takes a SQLite handle (answering at once) or a PostgreSQL one (a
 * promise, in its own transaction), and the Op versions run inside a
 * caller's. Every write touches only rows this worker still owns.
 */

/** Record a failure: retry later, or park the item (visible with its error) so it never blocks the queue. */
export function* failEmbedItemsOp({ items, workerId, error, retryable, maxAttempts, minDelayMs = 0, now = Date.now() }: { items: ClaimedItem[]; workerId: string; error: string; retryable: boolean; maxAttempts: number; minDelayMs?: number; now?: number }): Op<{ parked: number }> {
  let parked = 0;
  for (const it of items) {
    const attempts = it.attempts + 1;
    const park = !retryable || attempts >= maxAttempts;
    const next = now + Math.max(minDelayMs, backoffDelayMs({ attempts }));
    const owned = yield* sqlRows(sql`update embed_queue set attempts = ${attempts}, last_error = ${error.slice(0, 1000)}, next_attempt_at = ${next},
        parked_at = ${park ? now : null}, claimed_by = null, claimed_until = null
      where id = ${it.id} and claimed_by = ${workerId} returning id`);
    if (park && owned.length > 0) parked++;
  }
  return { parked };
}

export function failEmbedItems<H extends AnyStoreHandle>({ handle, ...args }: Parameters<typeof failEmbedItemsOp>[0] & { handle: H }): On<H, { parked: number }> {
  return write(handle, failEmbedItemsOp(args));
}

/**
 * Hand a batch back without spending its attempts (the provider is down or
 * the disk is full: not the items' fault). It is claimable again at `until`.
 */
export function* holdEmbedItemsOp({ items, workerId, error, until }: { items: { id: number }[]; workerId: string; error: string; until: number }): Op<void> {
  if (items.length === 0) return;
  yield* sqlRun(sql`update embed_queue set last_error = ${error.slice(0, 1000)}, next_attempt_at = ${until}, claimed_by = null, claimed_until = null
    where id in ${items.map((i) => i.id)} and claimed_by = ${workerId}`);
}

/** Rows parked by a provider outage or a full disk go back in line, attempts reset (the worker calls this after a recovery). */
export function releaseOutageParkedEmbeddings<H extends AnyStoreHandle>({ handle, now = Date.now() }: { handle: H; now?: number }): On<H, number> {
  const like = sql.join(outageParkedPatterns().map((p) => sql`last_error like ${p}`), sql` or `);
  const op = function* (): Op<number> {
    const released = (yield* sqlRows(sql`update embed_queue set parked_at = null, attempts = 0, next_attempt_at = ${now}, claimed_by = null, claimed_until = null
      where parked_at is not null and (${like}) returning id`)).length;
    if (released > 0) log("info", "embed items parked by a provider outage or a full disk are back in line", { store: handle.store, released });
    return released;
  };
  return write(handle, op());
}

/** Release the claims of workers on this host whose process is gone (killed mid-batch): their items need not wait out the lease (another host's wait for it). */
export function releaseDeadWorkerClaims<H extends AnyStoreHandle>({ handle }: { handle: H }): On<H, number> {
  const op = function* (): Op<number> {
    // Who holds claims on this store's queue (served by the partial index on claimed_by).
    const owners = yield* sqlRows<{ owner: string }>(sql`select distinct claimed_by as owner from embed_queue where claimed_by is not null`);
    const dead = owners.map((o) => o.owner).filter(isDeadLocalOwner);
    if (dead.length === 0) return 0;
    const released = (yield* sqlRows(sql`update embed_queue set claimed_by = null, claimed_until = null where claimed_by in ${dead} returning id`)).length;
    if (released > 0) log("warn", "released the embed claims of a worker that is gone", { store: handle.store, released });
    return released;
  };
  return write(handle, op());
}

/** When the store's queue next has an item for a worker (ready now, or after its backoff; claimed items count as ready), or null when nothing is queued but parked items. */
export function nextEmbedDueAt({ handle }: { handle: StoreHandle }): number | null {
  return handle.sqlite.prepare("select min(next_attempt_at) from embed_queue where parked_at is null").pluck().get() as number | null;
}

/** Whether any of the store's queue rows is parked (one probe of the ready index). */
export function hasParkedEmbeddings({ handle }: { handle: StoreHandle }): boolean {
  return handle.sqlite.prepare("select 1 from embed_queue where parked_at is not null limit 1").get() !== undefined;
}

/** Who holds claims on the store's queue, and on how many items (whether an owner is gone is the caller's question, asked when it asks). */
export function readClaimOwners({ handle }: { handle: StoreHandle }): { owner: string; items: number }[] {
  return handle.sqlite.prepare("select claimed_by as owner, count(*) as items from embed_queue where claimed_by is not null group by claimed_by").all() as { owner: string; items: number }[];
}

/** Put parked items back in line (after the cause is fixed). Audited with who asked, in the same write (on SQLite governance.db commits first: a failed audit rolls the requeue back). */
export function retryParkedEmbeddings<H extends AnyStoreHandle>({ handle, actor, now = Date.now() }: { handle: H; actor: string; now?: number }): On<H, number> {
  const op = function* (): Op<number> {
    const requeued = (yield* sqlRows(sql`update embed_queue set parked_at = null, attempts = 0, next_attempt_at = ${now}, last_error = null, claimed_by = null, claimed_until = null where parked_at is not null returning id`)).length;
    const entry = { actor, action: "store.embeddings.retry_parked", target: `store:${handle.store}`, details: { requeued } };
    yield* auditStep(entry);
    return requeued;
  };
  return write(handle, op());
}

export type Backlog = { pending: number; oldest_enqueued_at: number | null; parked: number };

/** Queue length from the live counters (no scan; see lib/embed/counters.ts). */
export function getEmbedBacklog({ handle }: { handle: StoreHandle }): Backlog {
  const c = readLiveCounts({ handle });
  return { pending: c.pending, oldest_enqueued_at: c.pending > 0 ? readOldestPendingAt({ handle }) : null, parked: c.parked };
}

export type ParkedEmbedding = { kind: string; ref_id: number; attempts: number; last_error: string | null; parked_at: number };

export function listParkedEmbeddings<H extends AnyStoreHandle>({ handle, limit = 50 }: { handle: H; limit?: number }): On<H, ParkedEmbedding[]> {
  const op = function* (): Op<ParkedEmbedding[]> {
    const rows = yield* select({ q: EMBED_QUEUE }, (db, { q }) =>
      db.select({ kind: q.kind, ref_id: q.refId, attempts: q.attempts, last_error: q.lastError, parked_at: q.parkedAt }).from(q).where(isNotNull(q.parkedAt)).orderBy(desc(q.parkedAt), q.id).limit(limit),
    );
    return rows as ParkedEmbedding[];
  };
  return read(handle, op());
}

const EMBED_QUEUE = tablePair(embedQueue, pgStore.embedQueue);
