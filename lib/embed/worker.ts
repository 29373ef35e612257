import { sha256Hex, letOthersRun } from "../common";
import { pushTo } from "../collections";
import { getConfig } from "../config";
import { closeStoreDbWhenIdle, getGovernance, getStoreDb, isStoreDbOpen, type StoreHandle } from "../db/connection";
import { forgetGoneStores, lookAtStore, type StoreLooks } from "../db/store-looks";
import { read, write, type AnyStoreHandle } from "../db/port";
import { log } from "../log";
import { listStoreNames } from "../db/store-names";
import { activeStoreNames } from "../db/store-lifecycle";
import type { EmbeddingCacheRow, EmbeddingRow } from "../db/schema/embed";
import { getEmbeddable, listEmbeddables, type EmbeddableText } from "./embeddables";
import { isProviderDownError, probeProviderIfDown, readProviderHealth, recordProviderOutcome } from "./provider-state";
import { embedBatchTexts, passHold, splitBatchOutcome } from "./batch-embed";
import { closeHold, holdErrorText, isDiskFullError, newClaimOwnerId, openHold, shouldSweepParked, sweepParkedPending, type QueueHold } from "./healing";
import { HEARTBEAT_MS, heartbeatWorker, recordWorkerBatch, registerWorker, type WorkerMode } from "./worker-state";
import { getActiveFingerprintId, getEmbedder, rememberFingerprint } from "./model";
import { claimEmbedBatch, completeEmbedItems, failEmbedItems, failEmbedItemsOp, getEmbedBacklog, holdEmbedItemsOp, hasParkedEmbeddings, nextEmbedDueAt, readClaimOwners, releaseDeadWorkerClaims, releaseOutageParkedEmbeddings, type ClaimedItem } from "./queue";
import type { Fingerprint } from "./providers";
import type { EmbeddingProvider } from "./types";
import { recordEmbeddingProvenance, retireReplacedVectorFacts, sweepVectorFactsAfterBatch, vectorKindOf, type EmbeddedArtifact } from "./provenance";
import { finishReembedIfDone } from "./reembed";
import { ensureVecIndex, indexVector, vectorToBlob, blobToVector } from "./vector-index";
import { EMBEDDING_CACHE_EXCESS_SQL, embeddingCacheTrimSql } from "../db/store-usage";

export const MAX_EMBED_ATTEMPTS = 6;

export function cacheKey({ fingerprintId, text }: { fingerprintId: string; text: string }): string {
  return sha256Hex(`${fingerprintId}\0${text}`);
}

export type BatchResult = {
  claimed: number;
  embedded: number;
  cached: number;
  dropped: number;
  /** Items charged an attempt (refused for themselves). */
  failed: number;
  parked: number;
  /** Items handed back without spending an attempt (the provider is down or the disk is full). */
  held: number;
  /** Texts sent to the provider. */
  sent: number;
  error?: string;
  /** The hold the queue is under after this step (nothing is claimed until it lifts). */
  hold?: QueueHold | null;
};

const emptyBatchResult = (): BatchResult => ({ claimed: 0, embedded: 0, cached: 0, dropped: 0, failed: 0, parked: 0, held: 0, sent: 0 });

const g = globalThis as unknown as { __dualmindEmbedOwner?: string };
/** This process's claim owner id when the caller names none (host and pid in it: see ./healing.ts). */
export function processClaimOwner(): string {
  return (g.__dualmindEmbedOwner ??= newClaimOwnerId("worker"));
}

/**
 * One worker step for one store: claim a batch, embed what the cache lacks,
 * write vectors + index + cache and finish the queue rows in one transaction.
 * A provider outage or a full disk hands the batch back without spending
 * attempts and holds the queue (./healing.ts); only an item's own refusal
 * counts toward parking it.
 */
export async function processEmbedBatch({ handle, ...opts }: { handle: StoreHandle; workerId?: string; batchSize?: number; signal?: AbortSignal }): Promise<BatchResult> {
  const { provider, fingerprint } = getEmbedder();
  const workerId = opts.workerId ?? processClaimOwner();
  return runEmbedBatch({
    handle,
    provider,
    fingerprint,
    workerId,
    signal: opts.signal,
    embed: (fp, claimed) => embedClaimedBatch({ handle, fp, provider, workerId, claimed, batchSize: opts.batchSize, signal: opts.signal }),
    retireFacts: (budget) => retireReplacedVectorFacts({ store: handle.store, ledger: getGovernance(), readStore: (op) => read(handle, op), kindOf: vectorKindOf(listEmbeddables()), pgChunkKind: "", budget }),
  });
}

/**
 * A worker step's shell on either engine: the provider's state learned from
 * the fingerprint, the queue's hold passed, outage-parked items swept back
 * now and then, and a full disk (or database) turned into a hold of the
 * claimed items instead of spent attempts.
 */
export async function runEmbedBatch({ handle, provider, fingerprint, workerId, signal, now = Date.now(), embed, retireFacts }: { handle: AnyStoreHandle; provider: EmbeddingProvider; fingerprint: Promise<Fingerprint>; workerId: string; signal?: AbortSignal; now?: number; embed: (fp: Fingerprint, claimed: ClaimedItem[]) => Promise<BatchResult>; retireFacts: (budget: number) => Promise<unknown> }): Promise<BatchResult> {
  let fp: Fingerprint;
  try {
    fp = await fingerprint;
  } catch (e) {
    if (isProviderDownError(e)) await recordProviderOutcome({ ok: false, error: (e as Error).message });
    throw e;
  }
  const hold = await passHold({ provider, signal, now });
  if (hold) return { ...emptyBatchResult(), error: hold.error, hold };
  const claimed: ClaimedItem[] = [];
  try {
    if (shouldSweepParked(handle.kind === "pg" ? `pg:${handle.store}` : handle.store)) await releaseOutageParkedEmbeddings({ handle });
    const result = await embed(fp, claimed);
    if (!result.hold) closeHold({ scope: "disk" });
    await sweepVectorFactsAfterBatch({
      store: handle.store,
      touched: result.embedded + result.dropped,
      sweep: retireFacts,
    });
    return result;
  } catch (e) {
    if (!isDiskFullError(e)) throw e;
    const h = openHold({ scope: "disk", error: holdErrorText({ scope: "disk", error: e }) });
    try {
      // Often refused too while the disk is full: then this worker takes its claims back at its next claim.
      await write(handle, holdEmbedItemsOp({ items: claimed, workerId, error: h.error, until: h.until }));
    } catch {
      // the claim stays this worker's (a claim takes the worker's own claims back)
    }
    log("warn", "the disk is full: the embed queue is held (no attempts spent) and tried again later", { store: handle.store, error: h.error, retryInMs: h.until - Date.now() });
    return { ...emptyBatchResult(), claimed: claimed.length, held: claimed.length, error: h.error, hold: h };
  }
}

async function embedClaimedBatch({
  handle,
  fp,
  provider,
  workerId,
  claimed: claimedOut,
  ...opts
}: {
  handle: StoreHandle;
  fp: Fingerprint;
  provider: EmbeddingProvider;
  workerId: string;
  claimed: ClaimedItem[];
  batchSize?: number;
  signal?: AbortSignal;
}): Promise<BatchResult> {
  const { store } = handle;
  const config = getConfig().embed;
  let batchSize = opts.batchSize ?? config.batchSize;
  // Degraded (backlog above the watermark): smaller batches keep each write short.
  if (getEmbedBacklog({ handle }).pending > config.backlogWatermark) batchSize = Math.max(1, Math.floor(batchSize / 2));

  // A store's first vectors make the configured model its active one.
  getActiveFingerprintId({ handle, configured: fp });
  const { work, gone, vectors, result } = await embedClaimed({
    handle, provider, fp, workerId, signal: opts.signal, claimedOut,
    claimed: claimEmbedBatch({ handle, workerId, limit: batchSize, leaseMs: config.leaseMs }),
    load: async (claimed, keysOf) => {
      const byKind = new Map<string, ClaimedItem[]>();
      for (const c of claimed) pushTo(byKind, c.kind, c);
      const texts = new Map([...byKind].map(([kind, items]) => [kind, getEmbeddable(kind)?.load({ handle, refIds: items.map((i) => i.refId) }) ?? new Map<number, EmbeddableText>()]));
      const getCached = handle.sqlite.prepare("select vector from embedding_cache where key = ?");
      const cached = new Map<string, ArrayLike<number>>();
      for (const key of keysOf(texts)) {
        const row = getCached.get(key) as Pick<EmbeddingCacheRow, "vector"> | undefined;
        if (row) cached.set(key, blobToVector(row.vector));
      }
      return { texts, cached };
    },
  });
  if (result.claimed === 0) return result;
  const artifacts: EmbeddedArtifact[] = work.map((w) => {
    const embeddable = getEmbeddable(w.item.kind);
    return {
      store,
      artifactType: embeddable?.artifactType ?? w.item.kind,
      refId: w.item.refId,
      inputHash: w.inputHash,
      chunkingVersion: embeddable?.chunkingVersion?.({ handle, refId: w.item.refId }) ?? null,
    };
  });
  if (artifacts.length > 0) {
    try {
      recordEmbeddingProvenance({ fingerprint: fp, artifacts });
    } catch (e) {
      if (isDiskFullError(e)) throw e;
      // No provenance, no vector: the batch is retried like a provider failure.
      failEmbedItems({ handle, items: work.map((w) => w.item), workerId, error: `provenance: ${(e as Error).message}`, retryable: true, maxAttempts: MAX_EMBED_ATTEMPTS });
      log("error", "provenance write failed; batch will be retried", { store, error: (e as Error).message });
      return { ...result, failed: result.failed + work.length, error: (e as Error).message };
    }
  }
  writeVectors({ handle, fp, work: work.map((w) => ({ ...w, vector: vectors.get(w.item.id) as Float32Array })), goneIds: gone.map((g) => g.id), workerId });
  result.embedded = work.length;
  // A re-embed switches models as soon as its last vector is written (and resumes here after a crash).
  finishReembedIfDone({ handle });
  return result;
}

/** A claimed item with its current text (the item's kind's loader read it). */
export type ClaimedWork<T extends EmbeddableText = EmbeddableText> = { item: ClaimedItem } & T;

/**
 * A claimed batch on either engine, up to its write: the items' current texts (an artifact deleted since it was
 * queued is `gone`), the cache's vectors, and the misses embedded; what is left in `work` has its vector.
 */
export async function embedClaimed<T extends EmbeddableText>({ handle, provider, fp, workerId, signal, now, claimed: claiming, claimedOut, load }: {
  handle: AnyStoreHandle;
  provider: EmbeddingProvider;
  fp: Fingerprint;
  workerId: string;
  signal?: AbortSignal;
  /** The clock (tests move it past a lease). */
  now?: () => number;
  claimed: ClaimedItem[] | Promise<ClaimedItem[]>;
  /** Where the claimed items go as soon as they are claimed (a full disk hands them back). */
  claimedOut: ClaimedItem[];
  /** Current texts by kind, then ref id, and the cache's vectors of their keys (`keysOf`). */
  load: (claimed: ClaimedItem[], keysOf: (texts: Map<string, Map<number, T>>) => string[]) => Promise<{ texts: Map<string, Map<number, T>>; cached: Map<string, ArrayLike<number>> }>;
}): Promise<{ work: ClaimedWork<T>[]; gone: ClaimedItem[]; vectors: Map<number, ArrayLike<number>>; result: BatchResult }> {
  const claimed = await claiming;
  claimedOut.push(...claimed);
  const result: BatchResult = { ...emptyBatchResult(), claimed: claimed.length };
  const work: ClaimedWork<T>[] = [];
  const gone: ClaimedItem[] = [];
  const vectors = new Map<number, ArrayLike<number>>();
  if (claimed.length === 0) return { work, gone, vectors, result };
  const keyOf = (text: string) => cacheKey({ fingerprintId: fp.id, text });
  const { texts: byKind, cached: hits } = await load(claimed, (texts) => [...new Set([...texts.values()].flatMap((m) => [...m.values()].map((t) => keyOf(t.text))))]);
  for (const item of claimed) {
    const t = byKind.get(item.kind)?.get(item.refId);
    if (t) work.push({ item, ...t });
    else gone.push(item);
  }
  result.dropped = gone.length;
  const misses = work.filter((w) => {
    const hit = hits.get(keyOf(w.text));
    if (hit) vectors.set(w.item.id, hit);
    return !hit;
  });
  result.cached = work.length - misses.length;
  if (misses.length > 0) {
    await embedMisses({ handle, provider, fp, misses, workerId, vectors, result, signal, now: now?.() });
    // Cached and embedded items still go through.
    work.splice(0, work.length, ...work.filter((w) => vectors.has(w.item.id)));
  }
  return { work, gone, vectors, result };
}

/**
 * Embed a batch's cache misses (identical texts once) into `vectors`; items
 * refused for themselves are charged an attempt and items a provider outage
 * left are handed back, in one write (either engine).
 */
async function embedMisses({ handle, provider, fp, misses, workerId, vectors, result, signal, now = Date.now() }: { handle: AnyStoreHandle; provider: EmbeddingProvider; fp: Fingerprint; misses: { item: ClaimedItem; text: string }[]; workerId: string; vectors: Map<number, ArrayLike<number>>; result: BatchResult; signal?: AbortSignal; now?: number }): Promise<void> {
  const got = await embedBatchTexts({ provider, texts: [...new Set(misses.map((m) => m.text))], dimension: fp.dimension, signal });
  result.sent = got.sent;
  const { refused, held, vectors: made } = splitBatchOutcome({ misses, got });
  for (const [id, v] of made) vectors.set(id, v);
  if (refused.length === 0 && !got.hold) return;
  await write(handle, function* () {
    for (const r of refused) {
      const { parked } = yield* failEmbedItemsOp({ items: r.items, workerId, error: r.error, retryable: r.retryable, maxAttempts: MAX_EMBED_ATTEMPTS, now });
      Object.assign(result, { failed: result.failed + r.items.length, parked: result.parked + parked, error: r.error });
    }
    if (got.hold) {
      yield* holdEmbedItemsOp({ items: held, workerId, error: got.hold.error, until: got.hold.until });
      Object.assign(result, { held: held.length, hold: got.hold, error: got.hold.error });
    }
  });
  if (result.failed > 0 || result.held > 0) log("warn", "embedding batch failed", { store: handle.store, error: result.error, charged: result.failed, parked: result.parked, held: result.held });
}

function writeVectors({
  handle,
  ...args
}: {
  handle: StoreHandle;
  fp: Fingerprint;
  work: { item: ClaimedItem; text: string; inputHash: string; vector: Float32Array }[];
  goneIds: number[];
  workerId: string;
}): void {
  const { sqlite } = handle;
  const now = Date.now();
  const upsert = sqlite.prepare(
    `insert into embeddings(kind, ref_id, fingerprint_id, dim, task, input_hash, vector, created_at) values (?, ?, ?, ?, 'document', ?, ?, ?)
     on conflict(kind, ref_id, fingerprint_id) do update set dim = excluded.dim, input_hash = excluded.input_hash, vector = excluded.vector, created_at = excluded.created_at
     returning id`,
  );
  const putCache = sqlite.prepare("insert or ignore into embedding_cache(key, vector, created_at) values (?, ?, ?)");
  sqlite.transaction(() => {
    rememberFingerprint({ handle, fingerprint: args.fp });
    if (args.work.length > 0) ensureVecIndex({ handle, fingerprintId: args.fp.id, dim: args.fp.dimension });
    for (const w of args.work) {
      const blob = vectorToBlob(w.vector);
      const { id } = upsert.get(w.item.kind, w.item.refId, args.fp.id, w.vector.length, w.inputHash, blob, now) as Pick<EmbeddingRow, "id">;
      indexVector({ handle, fingerprintId: args.fp.id, embeddingId: id, kind: w.item.kind, vector: w.vector });
      putCache.run(cacheKey({ fingerprintId: args.fp.id, text: w.text }), blob, now);
    }
    const excess = Number(sqlite.prepare(EMBEDDING_CACHE_EXCESS_SQL.sqlite).pluck().get());
    if (excess > 0) sqlite.prepare(embeddingCacheTrimSql(excess)).run();
    completeEmbedItems({ handle, ids: [...args.work.map((w) => w.item.id), ...args.goneIds], workerId: args.workerId });
  }).immediate();
}

/**
 * The worker walks every store on disk by name. It opens each with
 * getStoreDb, not openStore: lib/embed sits below lib/stores, the names come
 * from the data dir itself (so there is no unknown store to 404), and a store
 * whose index was never built has nothing queued to embed.
 */
function openForWorker(store: string): StoreHandle {
  // The worker's looks are not uses: they keep no store open past DUALMIND_MAX_OPEN_STORES (store-looks.ts).
  return getStoreDb({ store, create: false, use: false });
}

/**
 * Claims of a worker process on this host that is gone (kill -9) are released at start and per heartbeat, not left
 * to their lease. A closed store that had no claims at the last look and whose files are unchanged has none now.
 */
async function releaseClaimsOfDeadWorkers({ looks }: { looks: StoreLooks<number> }): Promise<void> {
  const all = listStoreNames();
  forgetGoneStores({ looks, stores: all });
  for (const store of activeStoreNames(all)) {
    try {
      await lookAtStore({
        store,
        looks,
        open: openForWorker,
        look: (handle) => {
          releaseDeadWorkerClaims({ handle });
          return readClaimOwners({ handle }).length;
        },
        reusable: (owners) => owners === 0,
      });
    } catch (e) {
      log("warn", "could not release a stopped worker's embed claims", { store, error: (e as Error).message });
    }
    // Each store is read synchronously: other requests are served between stores.
    await letOthersRun();
  }
}

/**
 * A worker's look at one store: a batch, and when nothing was there to do, when the queue next has something
 * (`dueAt`; 0 after work or a fault: look again), and whether parked rows wait (swept back after each recovery).
 */
type WorkerLook = BatchResult & { dueAt: number | null; parkedRows: boolean };

async function workerLook({ handle, workerId, signal }: { handle: StoreHandle; workerId: string; signal?: AbortSignal }): Promise<WorkerLook> {
  const r = await processEmbedBatch({ handle, workerId, signal });
  const idle = r.claimed === 0 && r.error === undefined && !r.hold;
  return { ...r, dueAt: idle ? nextEmbedDueAt({ handle }) : 0, parkedRows: hasParkedEmbeddings({ handle }) };
}

/** Nothing for the worker in a store unchanged since this look: nothing due yet, and no parked rows a recovery has not swept. */
function nothingDue({ store, look, now = Date.now() }: { store: string; look: WorkerLook; now?: number }): boolean {
  return (look.dueAt === null || look.dueAt > now) && !(look.parkedRows && sweepParkedPending(store));
}

/** Drain every store until no ready work is left (tests, CLI, benchmarks). */
export async function drainEmbedQueues(opts: { stores?: string[]; batchSize?: number; maxBatches?: number } = {}): Promise<{ embedded: number; failed: number; batches: number }> {
  // Each store opened when its turn comes.
  const handles = (function* () {
    for (const store of opts.stores ?? listStoreNames()) yield getStoreDb({ store, create: false });
  })();
  return drainEach({ stores: handles, maxBatches: opts.maxBatches, step: (handle) => processEmbedBatch({ handle, batchSize: opts.batchSize }) });
}

/** Run `step` on each store until it claims nothing (either engine). */
export async function drainEach<S>({ stores, maxBatches, step }: { stores: Iterable<S>; maxBatches?: number; step: (store: S) => Promise<BatchResult> }): Promise<{ embedded: number; failed: number; batches: number }> {
  const total = { embedded: 0, failed: 0, batches: 0 };
  for (const store of stores) {
    for (;;) {
      if (maxBatches !== undefined && total.batches >= maxBatches) return total;
      const r = await step(store);
      if (r.claimed === 0) break;
      total.batches++;
      total.embedded += r.embedded;
      total.failed += r.failed;
      if (r.hold || (r.failed > 0 && r.embedded === 0)) break; // provider down, disk full or items failing: let the backoff work
    }
  }
  return total;
}

/**
 * The long-running loop: in the server (instrumentation, mode "in_server") or
 * standalone (`npm run worker`, mode "separate"). Its state (last batch,
 * last error, items/s, model) is written to governance.db per batch and by a
 * heartbeat, so the app shows it whichever process runs it.
 */
export function startEmbedWorker(opts: { idleMs?: number; signal?: AbortSignal; mode?: WorkerMode } = {}): Promise<void> {
  const workerId = newClaimOwnerId("worker");
  const idleMs = opts.idleMs ?? 500;
  return (async () => {
    registerWorker({ workerId, mode: opts.mode ?? "separate" });
    // The last look at each store: a closed store with nothing due and unchanged files is not opened again.
    const looks: StoreLooks<WorkerLook> = new Map();
    const claimLooks: StoreLooks<number> = new Map();
    await releaseClaimsOfDeadWorkers({ looks: claimLooks });
    try {
      await getEmbedder().fingerprint;
    } catch (e) {
      log("error", "embedding provider unavailable; the worker will keep retrying", { error: (e as Error).message });
    }
    let lastHeartbeat = Date.now();
    const lastErrorWrite = new Map<string, { error: string; at: number }>();
    while (!opts.signal?.aborted) {
      let didWork = false;
      const fp = await getEmbedder().fingerprint.catch(() => null);
      const all = listStoreNames();
      const active = activeStoreNames(all);
      forgetGoneStores({ looks, stores: all });
      // Archived stores are left closed: one this process still has open (archived by another process) is closed once idle.
      for (const store of all) if (!active.includes(store)) closeStoreDbWhenIdle(store);
      let held = false;
      for (const store of active) {
        // Under a hold (the provider down, the disk full) a closed store would only show the same hold: it waits for a round without one.
        if (held && !isStoreDbOpen(store)) continue;
        const started = Date.now();
        let r: BatchResult;
        try {
          r = await lookAtStore({ store, looks, open: openForWorker, look: (handle) => workerLook({ handle, workerId, signal: opts.signal }), reusable: (look) => nothingDue({ store, look }) });
        } catch (e) {
          r = { ...emptyBatchResult(), error: (e as Error).message };
          log("error", "embed worker step failed", { store, error: r.error });
        }
        if (r.hold) held = true;
        if (r.embedded > 0 || r.dropped > 0) didWork = true;
        // A failing provider fails every round: write the same error at most once per heartbeat.
        const prev = lastErrorWrite.get(store);
        const repeat = r.error !== undefined && prev?.error === r.error && started - prev.at < HEARTBEAT_MS;
        if (r.embedded > 0 || (r.error !== undefined && !repeat)) {
          recordWorkerBatch({ workerId, store, embedded: r.embedded, durationMs: Date.now() - started, error: r.error, fingerprint: fp });
          lastHeartbeat = Date.now();
          if (r.error !== undefined) lastErrorWrite.set(store, { error: r.error, at: started });
        }
      }
      if (Date.now() - lastHeartbeat >= HEARTBEAT_MS) {
        heartbeatWorker({ workerId });
        await releaseClaimsOfDeadWorkers({ looks: claimLooks });
        lastHeartbeat = Date.now();
      }
      // A local provider resolves without I/O: yield between rounds, or a long backlog starves the server's requests.
      if (didWork) await letOthersRun();
      else {
        probeProviderIfDown({ health: await readProviderHealth() });
        await new Promise((r) => setTimeout(r, idleMs));
      }
    }
  })();
}
