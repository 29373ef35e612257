import { desc, isNotNull } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { embedQueue } from "../db/schema/embed";
import { appendAudit } from "../governance/audit";
import { readLiveCounts, readOldestPendingAt } from "./counters";

export type EmbedItem = { kind: string; refId: number; inputHash: string };
export type ClaimedItem = EmbedItem & { id: number; attempts: number };

/**
 * Queue artifacts for a vector from the configured model. Writers call this
 * inside their own write transaction and never wait for the vector.
 * Re-queueing an item resets its retries (its text changed, so the old error
 * may not apply).
 */
export function enqueueEmbeddings({ handle, items }: { handle: StoreHandle; items: EmbedItem[] }): void {
  if (items.length === 0) return;
  const { sqlite } = handle;
  const now = Date.now();
  const stmt = sqlite.prepare(
    `insert into embed_queue(kind, ref_id, input_hash, enqueued_at, attempts, next_attempt_at)
     values (?, ?, ?, ?, 0, ?)
     on conflict(kind, ref_id) do update set
       input_hash = excluded.input_hash, attempts = 0, next_attempt_at = excluded.next_attempt_at,
       last_error = null, parked_at = null, claimed_by = null, claimed_until = null`,
  );
  sqlite.transaction(() => {
    for (const it of items) stmt.run(it.kind, it.refId, it.inputHash, now, now);
  })();
}

/**
 * Claim up to `limit` ready items with a lease. BEGIN IMMEDIATE makes the
 * claim atomic across processes: two workers never hold the same row.
 */
export function claimEmbedBatch({ handle, ...args }: { handle: StoreHandle; workerId: string; limit: number; leaseMs: number; now?: number }): ClaimedItem[] {
  const now = args.now ?? Date.now();
  const { sqlite } = handle;
  return sqlite.transaction(() => {
    const rows = sqlite
      .prepare(
        `select id, kind, ref_id as refId, input_hash as inputHash, attempts from embed_queue
         where parked_at is null and next_attempt_at <= ? and (claimed_until is null or claimed_until < ?)
         order by next_attempt_at, id limit ?`,
      )
      .all(now, now, args.limit) as ClaimedItem[];
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
export function backoffDelayMs(attempts: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** Record a failure: retry later, or park the item (visible with its error) so it never blocks the queue. */
export function failEmbedItems({ handle, ...args }: { handle: StoreHandle; items: ClaimedItem[]; workerId: string; error: string; retryable: boolean; maxAttempts: number; minDelayMs?: number }): { parked: number } {
  const now = Date.now();
  let parked = 0;
  const stmt = handle.sqlite.prepare(
    "update embed_queue set attempts = ?, last_error = ?, next_attempt_at = ?, parked_at = ?, claimed_by = null, claimed_until = null where id = ? and claimed_by = ?",
  );
  handle.sqlite.transaction(() => {
    for (const it of args.items) {
      const attempts = it.attempts + 1;
      const park = !args.retryable || attempts >= args.maxAttempts;
      if (park) parked++;
      const delay = Math.max(args.minDelayMs ?? 0, backoffDelayMs(attempts));
      stmt.run(attempts, args.error.slice(0, 1000), now + delay, park ? now : null, it.id, args.workerId);
    }
  })();
  return { parked };
}

/** Put parked items back in line (after the cause is fixed). Audited with who asked. */
export function retryParkedEmbeddings({ handle, actor }: { handle: StoreHandle; actor: string }): number {
  return handle.sqlite
    .transaction(() => {
      const requeued = handle.db
        .update(embedQueue)
        .set({ parkedAt: null, attempts: 0, nextAttemptAt: Date.now(), lastError: null })
        .where(isNotNull(embedQueue.parkedAt))
        .run().changes;
      // governance.db is another file: its row commits first, and a failed audit rolls the requeue back.
      appendAudit({ actor, action: "store.embeddings.retry_parked", target: `store:${handle.store}`, details: { requeued } });
      return requeued;
    })
    .immediate();
}

export type Backlog = { pending: number; oldestEnqueuedAt: number | null; parked: number };

/** Queue length from the live counters (no scan; see lib/embed/counters.ts). */
export function getEmbedBacklog({ handle }: { handle: StoreHandle }): Backlog {
  const c = readLiveCounts({ handle });
  return { pending: c.pending, oldestEnqueuedAt: c.pending > 0 ? readOldestPendingAt({ handle }) : null, parked: c.parked };
}

export type ParkedEmbedding = { kind: string; refId: number; attempts: number; lastError: string | null; parkedAt: number };

export function listParkedEmbeddings({ handle, limit = 50 }: { handle: StoreHandle; limit?: number }): ParkedEmbedding[] {
  return handle.db
    .select({ kind: embedQueue.kind, refId: embedQueue.refId, attempts: embedQueue.attempts, lastError: embedQueue.lastError, parkedAt: embedQueue.parkedAt })
    .from(embedQueue)
    .where(isNotNull(embedQueue.parkedAt))
    .orderBy(desc(embedQueue.parkedAt))
    .limit(limit)
    .all() as ParkedEmbedding[];
}
