import { randomUUID } from "node:crypto";
import { sha256Hex } from "../common";
import { pushTo } from "../collections";
import { getConfig } from "../config";
import { getStoreDb, type StoreHandle } from "../db/connection";
import { log } from "../log";
import { listStoreNames } from "../db/store-names";
import type { EmbeddingCacheRow, EmbeddingRow } from "../db/schema/embed";
import { getEmbeddable, type EmbeddableText } from "./embeddables";
import { isProviderDownError, probeProviderIfDown, readProviderHealth, recordProviderOutcome } from "./provider-state";
import { HEARTBEAT_MS, heartbeatWorker, recordWorkerBatch, registerWorker, type WorkerMode } from "./worker-state";
import { getActiveFingerprintId, getEmbedder, rememberFingerprint } from "./model";
import { claimEmbedBatch, completeEmbedItems, failEmbedItems, getEmbedBacklog, type ClaimedItem } from "./queue";
import type { Fingerprint } from "./providers";
import { EmbeddingError } from "./types";
import { recordEmbeddingProvenance, type EmbeddedArtifact } from "./provenance";
import { finishReembedIfDone } from "./reembed";
import { ensureVecIndex, indexVector, vectorToBlob, blobToVector } from "./vector-index";

export const MAX_EMBED_ATTEMPTS = 6;

function cacheKey(fingerprintId: string, text: string): string {
  return sha256Hex(`${fingerprintId}\0${text}`);
}

export type BatchResult = { claimed: number; embedded: number; cached: number; dropped: number; failed: number; parked: number; error?: string };

/**
 * One worker step for one store: claim a batch, embed what the cache lacks,
 * write vectors + index + cache and finish the queue rows in one transaction.
 */
export async function processEmbedBatch({ handle, ...opts }: { handle: StoreHandle; workerId?: string; batchSize?: number }): Promise<BatchResult> {
  const { store } = handle;
  const { provider, fingerprint } = getEmbedder();
  let fp: Fingerprint;
  try {
    fp = await fingerprint;
  } catch (e) {
    if (isProviderDownError(e)) recordProviderOutcome({ ok: false, error: (e as Error).message });
    throw e;
  }
  const workerId = opts.workerId ?? `worker-${process.pid}`;
  const config = getConfig().embed;
  let batchSize = opts.batchSize ?? config.batchSize;
  // Degraded (backlog above the watermark): smaller batches keep each write short.
  if (getEmbedBacklog({ handle }).pending > config.backlogWatermark) batchSize = Math.max(1, Math.floor(batchSize / 2));

  // A store's first vectors make the configured model its active one.
  getActiveFingerprintId({ handle, configured: fp });
  const claimed = claimEmbedBatch({ handle, workerId, limit: batchSize, leaseMs: getConfig().embed.leaseMs });
  const result: BatchResult = { claimed: claimed.length, embedded: 0, cached: 0, dropped: 0, failed: 0, parked: 0 };
  if (claimed.length === 0) return result;

  // Load current texts per kind; deleted artifacts are dropped from the queue.
  const work: { item: ClaimedItem; text: string; inputHash: string }[] = [];
  const gone: number[] = [];
  const byKind = new Map<string, ClaimedItem[]>();
  for (const c of claimed) pushTo(byKind, c.kind, c);
  for (const [kind, items] of byKind) {
    const embeddable = getEmbeddable(kind);
    const texts = embeddable?.load({ handle, refIds: items.map((i) => i.refId) }) ?? new Map<number, EmbeddableText>();
    for (const item of items) {
      const t = texts.get(item.refId);
      if (t) work.push({ item, text: t.text, inputHash: t.inputHash });
      else gone.push(item.id);
    }
  }
  result.dropped = gone.length;

  const getCached = handle.sqlite.prepare("select vector from embedding_cache where key = ?");
  const vectors = new Map<number, Float32Array>();
  const misses: typeof work = [];
  for (const w of work) {
    const row = getCached.get(cacheKey(fp.id, w.text)) as Pick<EmbeddingCacheRow, "vector"> | undefined;
    if (row) vectors.set(w.item.id, blobToVector(row.vector));
    else misses.push(w);
  }
  result.cached = work.length - misses.length;

  if (misses.length > 0) {
    try {
      // Identical texts within a batch are embedded once too.
      const unique = [...new Set(misses.map((m) => m.text))];
      const embedded = await provider.embed(unique, "document");
      recordProviderOutcome({ ok: true });
      const byText = new Map(unique.map((t, i) => [t, embedded[i]]));
      for (const m of misses) vectors.set(m.item.id, byText.get(m.text)!);
    } catch (e) {
      const err = e instanceof EmbeddingError ? e : new EmbeddingError("server", (e as Error).message);
      if (isProviderDownError(err)) recordProviderOutcome({ ok: false, error: err.message });
      const { parked } = failEmbedItems({
        handle,
        items: misses.map((m) => m.item),
        workerId,
        error: `${err.kind}: ${err.message}`,
        retryable: err.retryable,
        maxAttempts: MAX_EMBED_ATTEMPTS,
        minDelayMs: (err.retryAfterSeconds ?? 0) * 1000,
      });
      result.failed = misses.length;
      result.parked = parked;
      result.error = err.message;
      log("warn", "embedding batch failed", { store, kind: err.kind, error: err.message, items: misses.length, parked });
      // Cached items still go through below.
      work.splice(0, work.length, ...work.filter((w) => vectors.has(w.item.id)));
    }
  }

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
      // No provenance, no vector: the batch is retried like a provider failure.
      failEmbedItems({ handle, items: work.map((w) => w.item), workerId, error: `provenance: ${(e as Error).message}`, retryable: true, maxAttempts: MAX_EMBED_ATTEMPTS });
      log("error", "provenance write failed; batch will be retried", { store, error: (e as Error).message });
      return { ...result, failed: result.failed + work.length, error: (e as Error).message };
    }
  }
  writeVectors({ handle, fp, work: work.map((w) => ({ ...w, vector: vectors.get(w.item.id)! })), goneIds: gone, workerId });
  result.embedded = work.length;
  // A re-embed switches models as soon as its last vector is written (and resumes here after a crash).
  finishReembedIfDone({ handle });
  return result;
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
      putCache.run(cacheKey(args.fp.id, w.text), blob, now);
    }
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
  return getStoreDb(store);
}

/** Drain every store until no ready work is left (tests, CLI, benchmarks). */
export async function drainEmbedQueues(opts: { stores?: string[]; batchSize?: number; maxBatches?: number } = {}): Promise<{ embedded: number; failed: number; batches: number }> {
  let embedded = 0;
  let failed = 0;
  let batches = 0;
  for (const store of opts.stores ?? listStoreNames()) {
    const handle = openForWorker(store);
    for (;;) {
      if (opts.maxBatches !== undefined && batches >= opts.maxBatches) return { embedded, failed, batches };
      const r = await processEmbedBatch({ handle, batchSize: opts.batchSize });
      if (r.claimed === 0) break;
      batches++;
      embedded += r.embedded;
      failed += r.failed;
      if (r.failed > 0 && r.embedded === 0) break; // provider failing: let backoff work
    }
  }
  return { embedded, failed, batches };
}

/**
 * The long-running loop: in the server (instrumentation, mode "in_server") or
 * standalone (`npm run worker`, mode "separate"). Its state (last batch,
 * last error, items/s, model) is written to governance.db per batch and by a
 * heartbeat, so the app shows it whichever process runs it.
 */
export function startEmbedWorker(opts: { idleMs?: number; signal?: AbortSignal; mode?: WorkerMode } = {}): Promise<void> {
  const workerId = `worker-${process.pid}-${randomUUID().slice(0, 8)}`;
  const idleMs = opts.idleMs ?? 500;
  return (async () => {
    registerWorker({ workerId, mode: opts.mode ?? "separate" });
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
      for (const store of listStoreNames()) {
        const started = Date.now();
        let r: BatchResult;
        try {
          r = await processEmbedBatch({ handle: openForWorker(store), workerId });
        } catch (e) {
          r = { claimed: 0, embedded: 0, cached: 0, dropped: 0, failed: 0, parked: 0, error: (e as Error).message };
          log("error", "embed worker step failed", { store, error: r.error });
        }
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
        lastHeartbeat = Date.now();
      }
      // A local provider resolves without I/O: yield between rounds, or a long backlog starves the server's requests.
      if (didWork) await new Promise((r) => setImmediate(r));
      else {
        probeProviderIfDown({ health: readProviderHealth() });
        await new Promise((r) => setTimeout(r, idleMs));
      }
    }
  })();
}
