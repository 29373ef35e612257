import { desc, isNotNull } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { embedQueue } from "../db/schema/embed";
import { appendAudit } from "../governance/audit";
import { log } from "../log";
import { readLiveCounts, readOldestPendingAt } from "./counters";
import { isDeadLocalOwner, outageParkedPatterns, staleClaimsOf, type StaleClaims } from "./healing";

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
      const delay = Math.max(args.minDelayMs ?? 0, backoffDelayMs({ attempts }));
      stmt.run(attempts, args.error.slice(0, 1000), now + delay, park ? now : null, it.id, args.workerId);
    }
  })();
  return { parked };
}

/**
 * Hand a batch back without spending its attempts (the provider is down or
 * the disk is full: not the items' fault). It is claimable again at `until`.
 */
export function holdEmbedItems({ handle, ...args }: { handle: StoreHandle; items: { id: number }[]; workerId: string; error: string; until: number }): void {
  const stmt = handle.sqlite.prepare("update embed_queue set last_error = ?, next_attempt_at = ?, claimed_by = null, claimed_until = null where id = ? and claimed_by = ?");
  handle.sqlite.transaction(() => {
    for (const it of args.items) stmt.run(args.error.slice(0, 1000), args.until, it.id, args.workerId);
  })();
}

/** Rows parked by a provider outage or a full disk go back in line, attempts reset (the worker calls this after a recovery). */
export function releaseOutageParkedEmbeddings({ handle, now = Date.now() }: { handle: StoreHandle; now?: number }): number {
  const patterns = outageParkedPatterns();
  const released = handle.sqlite
    .prepare(
      `update embed_queue set parked_at = null, attempts = 0, next_attempt_at = ?, claimed_by = null, claimed_until = null
       where parked_at is not null and (${patterns.map(() => "last_error like ?").join(" or ")})`,
    )
    .run(now, ...patterns).changes;
  if (released > 0) log("info", "embed items parked by a provider outage or a full disk are back in line", { store: handle.store, released });
  return released;
}

/** Who holds claims on this store's queue, and on how many items (served by the partial index on claimed_by). */
function claimOwners({ handle }: { handle: StoreHandle }): { owner: string; items: number }[] {
  return handle.sqlite.prepare("select claimed_by as owner, count(*) as items from embed_queue where claimed_by is not null group by claimed_by").all() as { owner: string; items: number }[];
}

/** Release the claims of workers on this host whose process is gone (killed mid-batch): their items need not wait out the lease. */
export function releaseDeadWorkerClaims({ handle }: { handle: StoreHandle }): number {
  const release = handle.sqlite.prepare("update embed_queue set claimed_by = null, claimed_until = null where claimed_by = ?");
  let released = 0;
  for (const { owner } of claimOwners({ handle })) if (isDeadLocalOwner(owner)) released += release.run(owner).changes;
  if (released > 0) log("warn", "released the embed claims of a worker that is gone", { store: handle.store, released });
  return released;
}

/** Claims whose worker process on this host is gone (health reports them until a worker releases them). */
export function readStaleClaims({ handle }: { handle: StoreHandle }): StaleClaims | null {
  return staleClaimsOf(claimOwners({ handle }));
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

export type Backlog = { pending: number; oldest_enqueued_at: number | null; parked: number };

/** Queue length from the live counters (no scan; see lib/embed/counters.ts). */
export function getEmbedBacklog({ handle }: { handle: StoreHandle }): Backlog {
  const c = readLiveCounts({ handle });
  return { pending: c.pending, oldest_enqueued_at: c.pending > 0 ? readOldestPendingAt({ handle }) : null, parked: c.parked };
}

export type ParkedEmbedding = { kind: string; ref_id: number; attempts: number; last_error: string | null; parked_at: number };

export function listParkedEmbeddings({ handle, limit = 50 }: { handle: StoreHandle; limit?: number }): ParkedEmbedding[] {
  return handle.db
    .select({ kind: embedQueue.kind, ref_id: embedQueue.refId, attempts: embedQueue.attempts, last_error: embedQueue.lastError, parked_at: embedQueue.parkedAt })
    .from(embedQueue)
    .where(isNotNull(embedQueue.parkedAt))
    .orderBy(desc(embedQueue.parkedAt))
    .limit(limit)
    .all() as ParkedEmbedding[];
}
