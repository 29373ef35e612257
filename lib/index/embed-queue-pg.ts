import { letOthersRun } from "../common";
import { sql } from "drizzle-orm";
import { getConfig } from "../config";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx, type SqlRunner } from "../db/pg-store";
import { inCallerTx } from "../db/port";
import { getEmbedder } from "../embed/model";
import { embeddingProvenanceRecords, PROVENANCE_BATCH, retireReplacedVectorFacts, vectorKindOf } from "../embed/provenance";
import type { Fingerprint } from "../embed/providers";
import { releaseDeadWorkerClaims, type Backlog, type ClaimedItem } from "../embed/queue";
import type { EmbeddingProvider } from "../embed/types";
import { cacheKey, drainEach, embedClaimed, processClaimOwner, runEmbedBatch, type BatchResult, type ClaimedWork } from "../embed/worker";
import { newClaimOwnerId, type StaleClaims } from "../embed/healing";
import { pgLedger } from "../governance/audit";
import type { PgGovernanceExecutor } from "../db/pg";
import { recordProvenanceBatch } from "../governance/ledger";
import { log } from "../log";
import type { Fallback } from "../retrieval";
import { CHUNK_KIND } from "./chunk-embeddings";
import { getPgEmbeddable, pgEmbeddableKinds, type PgEmbeddableText } from "./embed-kinds-pg";
import { putChunkEmbeddingsPg, putKindEmbeddingsPg } from "./vectors-pg";
import { rebuildBloatedTextIndexesPg } from "./engines/pg-text-indexes";
import { adoptActiveFingerprintPg, finishReembedIfDonePg } from "./reembed-pg";
import { HEARTBEAT_MS, WORKER_STALE_MS, type WorkerMode } from "../embed/worker-state";
import { heartbeatWorker, recordWorkerBatch, registerWorker, stopWorker } from "../embed/worker-state";
import { EMBEDDING_CACHE_EXCESS_SQL, embeddingCacheTrimSql } from "../db/store-usage";

/**
 * The embed queue on PostgreSQL, shared by N replicas (docs/ARCHITECTURE.md,
 * "Embed"). Claims are leases taken with FOR UPDATE SKIP LOCKED; the finish
 * deletes only the queue rows this worker still owns and writes vectors and
 * provenance for exactly those, so a worker that lost its claim writes nothing.
 */

export type PgEmbedder = { provider: EmbeddingProvider; fingerprint: Promise<Fingerprint> };

/** Claim up to `limit` ready rows of the registered kinds for `leaseMs` (FOR UPDATE SKIP LOCKED: concurrent claims never share a row). */
async function claimEmbedBatchPg({ tx, workerId, limit, leaseMs, now = Date.now(), kinds = pgEmbeddableKinds() }: { tx: SqlRunner; workerId: string; limit: number; leaseMs: number; now?: number; kinds?: string[] }): Promise<ClaimedItem[]> {
  const found = (
    await tx.execute(sql`with ready as (
        select id from embed_queue
        where parked_at is null and next_attempt_at <= ${now} and (claimed_until is null or claimed_until < ${now} or claimed_by = ${workerId}) and kind in ${kinds}
        order by next_attempt_at, id limit ${limit}
        for update skip locked)
      update embed_queue q set claimed_by = ${workerId}, claimed_until = ${now + leaseMs} from ready where q.id = ready.id
      returning q.id, q.kind, q.ref_id as "refId", q.input_hash as "inputHash", q.attempts`)
  ).rows as { id: string | number; kind: string; refId: string | number; inputHash: string; attempts: number }[];
  return found.map((r) => ({ ...r, id: Number(r.id), refId: Number(r.refId) })).sort((a, b) => a.id - b.id);
}

/** Claims whose worker stopped beating (silent in public.embed_workers for WORKER_STALE_MS), judged from the shared registry so every replica reports the same. */
export async function readStaleClaimsPg({ tx, now = Date.now() }: { tx: SqlRunner; now?: number }): Promise<StaleClaims | null> {
  const rows = await rowsOf<{ owner: string; items: number }>({
    tx,
    query: sql`select q.claimed_by as owner, count(*)::int as items from embed_queue q
      join public.embed_workers w on w.worker_id = q.claimed_by and w.heartbeat_at < ${now - WORKER_STALE_MS}
      where q.claimed_by is not null group by q.claimed_by order by q.claimed_by`,
  });
  return rows.length === 0 ? null : { items: rows.reduce((a, r) => a + r.items, 0), owners: rows.map((r) => r.owner) };
}

/** The store's queue: rows waiting (ready or backing off), the oldest's age, and parked rows. */
export async function getEmbedBacklogPg({ tx }: { tx: SqlRunner }): Promise<Backlog> {
  const [row] = await rowsOf<{ pending: number; parked: number; oldest: string | null }>({
    tx,
    query: sql`select count(*) filter (where parked_at is null)::int as pending, count(*) filter (where parked_at is not null)::int as parked,
      min(enqueued_at) filter (where parked_at is null) as oldest from embed_queue`,
  });
  return { pending: row.pending, parked: row.parked, oldest_enqueued_at: row.oldest === null ? null : Number(row.oldest) };
}

/** The backlog reason of a store above DUALMIND_EMBED_BACKLOG_WATERMARK (vectors degrade to lexical), else null; counts at most watermark + 1 rows. */
export async function backlogFallbackPg({ tx, watermark = getConfig().embed.backlogWatermark }: { tx: SqlRunner; watermark?: number }): Promise<Fallback | null> {
  const [{ n }] = await rowsOf<{ n: number }>({ tx, query: sql`select count(*)::int as n from (select 1 from embed_queue where parked_at is null limit ${watermark + 1}) q` });
  if (n <= watermark) return null;
  const { pending } = await getEmbedBacklogPg({ tx });
  return { reason: "backlog", message: `${pending} item(s) are waiting for a vector, above the watermark of ${watermark} (DUALMIND_EMBED_BACKLOG_WATERMARK)`, count: pending };
}

type Work = ClaimedWork<PgEmbeddableText>;

/** One worker step for one store: claim a batch, embed what the cache lacks (outside any transaction), finish in one transaction. */
export async function processEmbedBatchPg({
  handle,
  embedder = getEmbedder(),
  workerId = processClaimOwner(),
  batchSize = getConfig().embed.batchSize,
  leaseMs = getConfig().embed.leaseMs,
  now = () => Date.now(),
  signal,
}: {
  handle: PgStoreHandle;
  embedder?: PgEmbedder;
  workerId?: string;
  batchSize?: number;
  leaseMs?: number;
  /** The clock (tests move it past a lease). */
  now?: () => number;
  /** Cancels an in-flight provider request when the worker stops. */
  signal?: AbortSignal;
}): Promise<BatchResult> {
  // The provider's state as every replica sees it (lib/embed/provider-state.ts), learned from the worker's calls as on SQLite.
  // The ledger's facts of vectors a batch replaced or dropped go after it (a sweep that fails is logged and tried again).
  const kindOf = vectorKindOf(pgEmbeddableKinds().map((kind) => ({ kind, artifactType: getPgEmbeddable(kind)!.artifactType })));
  const result = await runEmbedBatch({
    handle,
    provider: embedder.provider,
    fingerprint: embedder.fingerprint,
    workerId,
    signal,
    now: now(),
    embed: (fp, claimed) => embedClaimedBatchPg({ handle, embedder, fp, workerId, batchSize, leaseMs, now, claimed, signal }),
    retireFacts: (budget) => withStoreTx({ handle, work: (tx) => retireReplacedVectorFacts({ store: handle.store, ledger: { kind: "pg", db: tx }, readStore: (op) => inCallerTx(tx, op, handle), kindOf, pgChunkKind: CHUNK_KIND, budget }) }),
  });
  await rebuildBloatedTextIndexesPg({ handle, now: now() });
  return result;
}

async function embedClaimedBatchPg({
  handle,
  embedder,
  fp,
  workerId,
  batchSize,
  leaseMs,
  now,
  claimed: claimedOut,
  signal,
}: {
  handle: PgStoreHandle;
  embedder: PgEmbedder;
  fp: Fingerprint;
  workerId: string;
  batchSize: number;
  leaseMs: number;
  now: () => number;
  claimed: ClaimedItem[];
  signal?: AbortSignal;
}): Promise<BatchResult> {
  const { work, gone, vectors, result } = await embedClaimed<PgEmbeddableText>({
    handle, provider: embedder.provider, fp, workerId, signal, now, claimedOut,
    claimed: withStoreTx({ handle, work: (tx) => claimEmbedBatchPg({ tx, workerId, limit: batchSize, leaseMs, now: now() }) }),
    // Current texts, per kind through its registered loader, and the cache's vectors of them, in one read.
    load: (claimed, keysOf) =>
      withStoreTx({ handle, readOnly: true, work: async (tx) => {
        const texts = new Map<string, Map<number, PgEmbeddableText>>();
        for (const kind of new Set(claimed.map((c) => c.kind))) {
          const loader = getPgEmbeddable(kind);
          if (loader) texts.set(kind, await loader.load({ tx, refIds: claimed.filter((c) => c.kind === kind).map((c) => c.refId) }));
        }
        const keys = keysOf(texts);
        const hits = keys.length ? await rowsOf<{ key: string; embedding: number[] }>({ tx, query: sql`select key, embedding from embedding_cache where key in ${keys}` }) : [];
        return { texts, cached: new Map(hits.map((h) => [h.key, h.embedding])) };
      } }),
  });
  if (result.claimed === 0) return result;
  result.embedded = await withStoreTx({ handle, work: (tx) => finishEmbedItemsPg({ tx, handle, fp, workerId, work, gone, vectors }) });
  // A re-embed finishes (or switches models) as soon as its last vector is written, on whichever replica wrote it.
  if (result.embedded > 0 || result.dropped > 0) await finishReembedIfDonePg({ handle });
  return result;
}

/** Delete the queue rows this worker still owns and, for exactly those, write provenance, vectors and cache in the caller's transaction; answers the vectors written. */
async function finishEmbedItemsPg({
  tx,
  handle,
  fp,
  workerId,
  work,
  gone,
  vectors,
}: {
  tx: PgStoreTx;
  handle: PgStoreHandle;
  fp: Fingerprint;
  workerId: string;
  work: Work[];
  gone: ClaimedItem[];
  vectors: Map<number, ArrayLike<number>>;
}): Promise<number> {
  const ids = [...work, ...gone.map((item) => ({ item }))].map((w) => w.item.id);
  if (ids.length === 0) return 0;
  const owned = new Set((await rowsOf<{ id: string }>({ tx, query: sql`delete from embed_queue where id in ${ids} and claimed_by = ${workerId} returning id` })).map((r) => Number(r.id)));
  const mine = work.filter((w) => owned.has(w.item.id));
  if (mine.length < work.length) log("warn", "embed claims lost to another worker (lease ran out); their vectors are left to it", { store: handle.store, lost: work.length - mine.length });
  if (mine.length === 0) return 0;
  // A store's first vectors make their model its active one (a re-embed switches it later).
  await adoptActiveFingerprintPg({ tx, fingerprintId: fp.id });
  const records = embeddingProvenanceRecords({
    fingerprint: fp,
    artifacts: mine.map((w) => ({ store: handle.store, artifactType: getPgEmbeddable(w.item.kind)?.artifactType ?? w.item.kind, refId: w.item.refId, inputHash: w.inputHash, chunkingVersion: w.chunkingVersion })),
  });
  for (let i = 0; i < records.length; i += PROVENANCE_BATCH) {
    await recordProvenanceBatch({ handle: { kind: "pg", db: tx }, input: { records: records.slice(i, i + PROVENANCE_BATCH) }, recordedBy: "system:embed-worker" });
  }
  const at = Date.now();
  const [chunkWork, kindWork] = [mine.filter((w) => w.item.kind === CHUNK_KIND), mine.filter((w) => w.item.kind !== CHUNK_KIND)];
  await putChunkEmbeddingsPg({ tx, fingerprintId: fp.id, items: chunkWork.map((w) => ({ chunkRowId: w.item.refId, inputHash: w.inputHash, vector: vectors.get(w.item.id)! })), now: at });
  await putKindEmbeddingsPg({ tx, fingerprintId: fp.id, items: kindWork.map((w) => ({ kind: w.item.kind, refId: w.item.refId, inputHash: w.inputHash, vector: vectors.get(w.item.id)! })), now: at });
  const cacheRows = [...new Map(mine.map((w) => [cacheKey({ fingerprintId: fp.id, text: w.text }), vectors.get(w.item.id)!])).entries()];
  for (let i = 0; i < cacheRows.length; i += 1_000) {
    const values = cacheRows.slice(i, i + 1_000).map(([key, v]) => sql`(${key}, ${`{${Array.from(v).join(",")}}`}::real[], ${at})`);
    await tx.execute(sql`insert into embedding_cache (key, embedding, created_at) values ${sql.join(values, sql`, `)} on conflict (key) do nothing`);
  }
  const [{ excess }] = await rowsOf<{ excess: string }>({ tx, query: sql.raw(EMBEDDING_CACHE_EXCESS_SQL.pg) });
  if (Number(excess) > 0) await tx.execute(sql.raw(embeddingCacheTrimSql(Number(excess))));
  return mine.length;
}

/** Drain the given stores until no ready work is left (tests, CLI, benchmarks). */
export async function drainEmbedQueuesPg({ handles, maxBatches, ...opts }: { handles: PgStoreHandle[]; embedder?: PgEmbedder; workerId?: string; batchSize?: number; leaseMs?: number; now?: () => number; maxBatches?: number }): Promise<{ embedded: number; failed: number; batches: number }> {
  return drainEach({ stores: handles, maxBatches, step: (handle) => processEmbedBatchPg({ handle, ...opts }) });
}

/**
 * The long-running loop for PostgreSQL stores (the twin of startEmbedWorker): every replica may run one; claims keep
 * them apart. `listStores`, `openStore` and `registry` come from the entry point (lib/stores sits above). While idle,
 * it checks once per heartbeat for a re-embed left to finish by a replica that died.
 */
export function startEmbedWorkerPg({
  listStores,
  openStore,
  registry,
  mode = "separate",
  signal,
  idleMs = 500,
  embedder,
  leaseMs,
  batchSize,
  workerId = newClaimOwnerId("pg-worker"),
}: {
  listStores: () => Promise<string[]>;
  openStore: (store: string) => Promise<PgStoreHandle>;
  registry?: () => Promise<PgGovernanceExecutor>;
  mode?: WorkerMode;
  signal?: AbortSignal;
  idleMs?: number;
  embedder?: PgEmbedder;
  leaseMs?: number;
  batchSize?: number;
  workerId?: string;
}): Promise<void> {
  const db = async () => (registry ? registry().catch(() => null) : null);
  return (async () => {
    let lastError: string | undefined;
    let lastHeartbeat = Date.now();
    const registered = await db();
    if (registered) await registerWorker({ handle: pgLedger(registered), workerId, mode });
    // Claims of a worker process on this host that is gone (kill -9) are released at start and per heartbeat, not left to their lease.
    let releaseDead = true;
    while (!signal?.aborted) {
      let didWork = false;
      // A database or provider outage must not end the loop (it tries again after the idle pause), and one
      // store that fails must not starve the stores listed after it.
      const failed = (message: string, store?: string) => {
        if (message !== lastError) log("error", "embed worker (PostgreSQL) step failed", { store, error: message });
        lastError = message;
      };
      let names: string[] = [];
      try {
        names = await listStores();
      } catch (e) {
        failed((e as Error).message);
      }
      const beat = Date.now() - lastHeartbeat >= HEARTBEAT_MS;
      for (const store of names) {
        try {
          const started = Date.now();
          const handle = await openStore(store);
          if (releaseDead) await releaseDeadWorkerClaims({ handle });
          const use = embedder ?? getEmbedder();
          const r = await processEmbedBatchPg({ handle, workerId, embedder: use, leaseMs, batchSize, signal });
          if (r.embedded > 0 || r.dropped > 0) didWork = true;
          if (r.error !== undefined && r.error !== lastError) log("warn", "embed worker (PostgreSQL): batch failed", { store, error: r.error });
          const reg = r.embedded > 0 || (r.error !== undefined && r.error !== lastError) ? await db() : null;
          if (reg) {
            await recordWorkerBatch({ handle: pgLedger(reg), workerId, store, embedded: r.embedded, durationMs: Date.now() - started, error: r.error, fingerprint: await use.fingerprint.catch(() => null) });
            lastHeartbeat = Date.now();
          }
          lastError = r.error;
          if (beat && r.claimed === 0) await finishReembedIfDonePg({ handle });
        } catch (e) {
          failed((e as Error).message, store);
        }
      }
      releaseDead = false;
      if (Date.now() - lastHeartbeat >= HEARTBEAT_MS) {
        const reg = await db();
        if (reg) await heartbeatWorker({ handle: pgLedger(reg), workerId });
        lastHeartbeat = Date.now();
        releaseDead = true;
      }
      if (didWork) await letOthersRun();
      else await new Promise((r) => setTimeout(r, idleMs));
    }
    const reg = await db();
    if (reg) await stopWorker({ handle: pgLedger(reg), workerId });
  })();
}
