import { sql } from "drizzle-orm";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { withStoreTx, type PgStoreHandle } from "@/lib/db/pg-store";
import { computeFingerprint } from "@/lib/embed/providers";
import { BuiltinProvider } from "@/lib/embed/providers/builtin";
import { OpenAICompatibleProvider } from "@/lib/embed/providers/openai";
import type { EmbeddingProvider, EmbedTask } from "@/lib/embed/types";
import { resetHoldsForTests } from "@/lib/embed/healing";
import { MAX_EMBED_ATTEMPTS } from "@/lib/embed/worker";
import { drainEmbedQueuesPg, getEmbedBacklogPg, processEmbedBatchPg, startEmbedWorkerPg, type PgEmbedder } from "@/lib/index/embed-queue-pg";
import { listParkedEmbeddings, retryParkedEmbeddings } from "@/lib/embed/queue";
import { putDocuments } from "@/lib/index/ingest";
import { putDocumentsSchema } from "@/lib/index/ingest";
import { createStorePg, openStorePg } from "@/lib/stores/engines/pg";
import { resetConfigForTests } from "@/lib/config";
import { searchInputSchema } from "@/lib/index/search";
import { searchStorePg } from "@/lib/index/search-pg";
import { startFakeOpenAI } from "../fixtures/fake-openai-server";
import { useTwoReplicas } from "./helpers";

const replicas = useTwoReplicas({ max: 4 });
let storeA: PgStoreHandle;
let storeB: PgStoreHandle;

beforeAll(async () => {
  await createStorePg({ pg: replicas.a(), input: { name: "kb" }, actor: "a" });
  storeA = await openStorePg({ pg: replicas.a(), store: "kb" });
  storeB = await openStorePg({ pg: replicas.b(), store: "kb" });
});

beforeEach(async () => {
  await withStoreTx({ handle: storeA, work: (tx) => tx.execute(sql`truncate documents, chunks, chunk_embeddings, embed_queue, embedding_cache, public.provenance cascade`) });
});

/** Every document's text is unique, so each chunk is one distinct text (the provider call log shows each embed). */
async function ingest(n: number, prefix = "doc"): Promise<number> {
  const documents = Array.from({ length: n }, (_, i) => ({ path: `${prefix}/${i}.md`, content: `# Note ${prefix} ${i}\n\nThe ${prefix} number ${i} talks about topic ${i * 7} and nothing else.` }));
  const results = await putDocuments({ handle: storeA, input: putDocumentsSchema.parse({ documents }), actor: "agent:a" });
  return results.reduce((s, r) => s + r.inserted_chunk_rowids.length, 0);
}

/** A provider that logs every text it embeds (and can be held at a gate). */
function loggingEmbedder(inner: EmbeddingProvider, log: string[], gate?: Promise<void>): PgEmbedder {
  const provider: EmbeddingProvider = {
    info: inner.info,
    embed: async (texts: string[], task: EmbedTask) => {
      if (gate) await gate;
      log.push(...texts);
      return inner.embed(texts, task);
    },
  };
  return { provider, fingerprint: computeFingerprint(inner) };
}

/** The local OpenAI-compatible stand-in (32 dimensions), answering normally until the test changes its mode. */
async function withFakeProvider(fn: (fake: Awaited<ReturnType<typeof startFakeOpenAI>>, embedder: PgEmbedder) => Promise<void>): Promise<void> {
  const fake = await startFakeOpenAI({ dimension: 32 });
  try {
    const provider = new OpenAICompatibleProvider({ baseUrl: fake.baseUrl, model: "fake", dimension: 32, timeoutMs: 5_000, batchSize: 16 });
    const embedder = { provider, fingerprint: computeFingerprint(provider) };
    await embedder.fingerprint;
    resetHoldsForTests();
    await fn(fake, embedder);
  } finally {
    await fake.close();
  }
}

async function counts() {
  return withStoreTx({ handle: storeA, readOnly: true, work: async (tx) => {
    const n = async (q: ReturnType<typeof sql>) => Number(((await tx.execute(q)).rows[0] as { n: string }).n);
    return {
      chunks: await n(sql`select count(*) as n from chunks`),
      vectors: await n(sql`select count(*) as n from chunk_embeddings`),
      chunksWithVector: await n(sql`select count(distinct chunk_row_id) as n from chunk_embeddings`),
      provenance: await n(sql`select count(*) as n from public.provenance where store = 'kb' and artifact_type = 'chunk_vector'`),
      provenanceArtifacts: await n(sql`select count(distinct artifact_id) as n from public.provenance where store = 'kb' and artifact_type = 'chunk_vector'`),
      queued: await n(sql`select count(*) as n from embed_queue`),
    };
  } });
}

describe("the embed queue on PostgreSQL", () => {
  it("ingest queues new chunks in the same commit, and re-ingesting unchanged text queues nothing", async () => {
    const inserted = await ingest(12);
    expect(await withStoreTx({ handle: storeA, readOnly: true, work: (tx) => getEmbedBacklogPg({ tx }) })).toMatchObject({ pending: inserted, parked: 0 });
    await ingest(12);
    expect((await counts()).queued).toBe(inserted);
  });

  it("two replicas draining one queue at once embed every chunk exactly once, with one provenance row each", async () => {
    const inserted = await ingest(60);
    expect(inserted).toBeGreaterThanOrEqual(60);
    const seen: string[] = [];
    const builtin = new BuiltinProvider({ dimension: 64 });
    const drain = (handle: PgStoreHandle, workerId: string) => drainEmbedQueuesPg({ handles: [handle], embedder: loggingEmbedder(builtin, seen), workerId, batchSize: 4 });
    const results = await Promise.all([drain(storeA, "replica-a:1"), drain(storeB, "replica-b:1"), drain(storeA, "replica-a:2"), drain(storeB, "replica-b:2")]);

    expect(results.reduce((s, r) => s + r.embedded, 0)).toBe(inserted);
    // The work was shared (each worker waits on its own round trips, so they interleave).
    expect(results.filter((r) => r.embedded > 0).length).toBeGreaterThanOrEqual(2);
    // No text went to the provider twice: no item was processed by two workers.
    expect(seen).toHaveLength(inserted);
    expect(new Set(seen).size).toBe(inserted);
    expect(await counts()).toEqual({ chunks: inserted, vectors: inserted, chunksWithVector: inserted, provenance: inserted, provenanceArtifacts: inserted, queued: 0 });
  });

  it("the worker loops of two replicas, started like the server starts them, drain the queue and stop when asked", async () => {
    const inserted = await ingest(8);
    const stop = new AbortController();
    const embedder = loggingEmbedder(new BuiltinProvider({ dimension: 64 }), []);
    const loops = [storeA, storeB].map((handle) => startEmbedWorkerPg({ signal: stop.signal, idleMs: 20, embedder, listStores: async () => ["kb"], openStore: async () => handle }));
    for (const until = Date.now() + 60_000; Date.now() < until && (await counts()).queued > 0; ) await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    await Promise.all(loops);
    expect(await counts()).toMatchObject({ vectors: inserted, provenance: inserted, queued: 0 });
  });

  it("a worker that claimed and died loses its items to another once the lease runs out; if it comes back, it writes nothing", async () => {
    const inserted = await ingest(10);
    const builtin = new BuiltinProvider({ dimension: 64 });
    const leaseMs = 60_000;
    // Worker A claims everything, then stalls at the provider (a hung or dead replica).
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const stalled = processEmbedBatchPg({ handle: storeA, embedder: loggingEmbedder(builtin, [], gate), workerId: "replica-a", batchSize: 100, leaseMs });
    // Wait until A's claim is committed.
    for (const until = Date.now() + 60_000; Date.now() < until && (await withStoreTx({ handle: storeB, readOnly: true, work: (tx) => tx.execute(sql`select 1 from embed_queue where claimed_by = 'replica-a'`) })).rows.length < inserted; ) {
      await new Promise((r) => setTimeout(r, 20));
    }

    const seenB: string[] = [];
    // Within the lease, B finds nothing to claim.
    const early = await processEmbedBatchPg({ handle: storeB, embedder: loggingEmbedder(builtin, seenB), workerId: "replica-b", leaseMs });
    expect(early.claimed).toBe(0);
    // After it, B takes every item over and finishes them.
    const later = () => Date.now() + leaseMs + 1_000;
    const takeover = await drainEmbedQueuesPg({ handles: [storeB], embedder: loggingEmbedder(builtin, seenB), workerId: "replica-b", leaseMs, now: later });
    expect(takeover.embedded).toBe(inserted);

    // A wakes up after the takeover: its claims are no longer its own, so it writes no vector and no provenance.
    release();
    const late = await stalled;
    expect(late).toMatchObject({ claimed: inserted, embedded: 0 });
    expect(await counts()).toEqual({ chunks: inserted, vectors: inserted, chunksWithVector: inserted, provenance: inserted, provenanceArtifacts: inserted, queued: 0 });
  });

  it("a provider that is down: the queue is held without spending attempts, probed with a growing backoff, and drains by itself when it answers; a refused input parks alone", async () => {
    await withFakeProvider(async (fake, embedder) => {
      const inserted = await ingest(3);
      fake.state.defaultMode = "500";
      let clock = Date.now();
      const first = await processEmbedBatchPg({ handle: storeB, embedder, workerId: "w", now: () => clock });
      expect(first).toMatchObject({ claimed: inserted, embedded: 0, failed: 0, held: inserted, parked: 0 });
      const rows = async () =>
        (await withStoreTx({ handle: storeA, readOnly: true, work: (tx) => tx.execute(sql`select attempts, parked_at, claimed_by, last_error from embed_queue order by id`) })).rows as { attempts: number; parked_at: string | null; claimed_by: string | null; last_error: string }[];
      expect((await rows()).every((row) => row.attempts === 0 && row.parked_at === null && row.claimed_by === null && row.last_error.startsWith("server:"))).toBe(true);
      // While held, nothing is claimed; each due probe that fails waits longer before the next.
      fake.state.requests.length = 0;
      const waits: number[] = [];
      for (let i = 0; i < MAX_EMBED_ATTEMPTS + 2; i++) {
        const r = await processEmbedBatchPg({ handle: storeB, embedder, workerId: "w", now: () => clock });
        expect(r).toMatchObject({ claimed: 0, held: 0 });
        waits.push(r.hold!.until - clock);
        clock = r.hold!.until;
      }
      expect(waits[waits.length - 1]).toBeGreaterThan(waits[0]);
      // Only the probe text was sent, never the items'.
      expect(new Set(fake.state.requests.flatMap((r) => r.input)).size).toBe(1);
      expect(await rows()).toHaveLength(inserted);
      expect((await rows()).every((row) => row.attempts === 0 && row.parked_at === null)).toBe(true);
      expect(await counts()).toMatchObject({ vectors: 0, provenance: 0 });

      // It answers again, one input excepted: the probe reopens the queue, the rest embed and that one parks alone.
      fake.state.defaultMode = "ok";
      const texts = (await withStoreTx({ handle: storeA, readOnly: true, work: (tx) => tx.execute(sql`select c.text from chunks c join embed_queue q on q.ref_id = c.id order by q.id limit 1`) })).rows as { text: string }[];
      fake.state.refuseTexts.add(texts[0].text);
      const back = await processEmbedBatchPg({ handle: storeA, embedder, workerId: "w", now: () => clock });
      expect(back).toMatchObject({ claimed: inserted, embedded: inserted - 1, failed: 1, parked: 1, held: 0 });
      const parked = await listParkedEmbeddings({ handle: storeA });
      expect(parked).toEqual([expect.objectContaining({ kind: "chunk", attempts: 1, last_error: expect.stringMatching(/^bad_request: .*\(400\)/) })]);

      // An admin puts it back in line once the input is accepted (audited): it is embedded.
      fake.state.refuseTexts.clear();
      expect(await retryParkedEmbeddings({ handle: storeB, actor: "user:admin" })).toBe(1);
      const audit = (await replicas.a().pool.query("select actor, details from audit_log where action = 'store.embeddings.retry_parked'")).rows;
      expect(audit).toHaveLength(1);
      expect(audit[0].actor).toBe("user:admin");
      expect(await processEmbedBatchPg({ handle: storeA, embedder, workerId: "w" })).toMatchObject({ claimed: 1, embedded: 1 });
      expect(await counts()).toMatchObject({ vectors: inserted, provenance: inserted, queued: 0 });
    });
  });

  it("a vector of the wrong dimension is parked at once with a clear error, never stored", async () => {
    await withFakeProvider(async (fake, embedder) => {
      const inserted = await ingest(2);
      fake.state.defaultMode = "wrong_dim";
      const r = await processEmbedBatchPg({ handle: storeA, embedder, workerId: "w" });
      expect(r).toMatchObject({ claimed: inserted, embedded: 0, parked: inserted });
      const parked = await listParkedEmbeddings({ handle: storeA });
      expect(parked).toHaveLength(inserted);
      expect(parked[0].attempts).toBe(1);
      expect(parked[0].last_error).toBe("dimension_mismatch: provider returned a 31-d vector; expected 32");
      expect(await counts()).toMatchObject({ vectors: 0, provenance: 0 });
    });
  });

  it("above the backlog watermark, vector search answers lexically with reason backlog, and with vectors once the queue drains", async () => {
    process.env.DUALMIND_EMBED_BACKLOG_WATERMARK = "5";
    resetConfigForTests();
    try {
      const inserted = await ingest(8);
      const provider = new BuiltinProvider({ dimension: 64 });
      const fingerprint = await computeFingerprint(provider);
      const search = async () =>
        searchStorePg({
          handle: storeB,
          core: null,
          input: searchInputSchema.parse({ q: "doc number 3 topic", mode: "hybrid", group: "chunk" }),
          vector: { ok: true, fingerprint, vector: (await provider.embed(["doc number 3 topic"], "query"))[0] },
        });
      const degraded = await search();
      expect(degraded).toMatchObject({ effective_mode: "fts", degraded: true, fallback: { reason: "backlog", count: inserted } });
      expect(degraded.fallback?.message).toMatch(/above the watermark of 5/);
      expect(degraded.results.length).toBeGreaterThan(0);

      await drainEmbedQueuesPg({ handles: [storeA], embedder: { provider, fingerprint: Promise.resolve(fingerprint) } });
      expect(await search()).toMatchObject({ effective_mode: "hybrid", degraded: false, fallback: null });
    } finally {
      delete process.env.DUALMIND_EMBED_BACKLOG_WATERMARK;
      resetConfigForTests();
    }
  });

  it("identical text is embedded once per model (the embedding cache)", async () => {
    const same = "A paragraph that two documents share word for word.";
    await putDocuments({ handle: storeA, input: putDocumentsSchema.parse({ documents: [{ path: "one.md", content: same }] }), actor: "agent:a" });
    const seen: string[] = [];
    const embedder = loggingEmbedder(new BuiltinProvider({ dimension: 64 }), seen);
    await drainEmbedQueuesPg({ handles: [storeA], embedder });
    await putDocuments({ handle: storeA, input: putDocumentsSchema.parse({ documents: [{ path: "two.md", content: same }] }), actor: "agent:a" });
    const r = await processEmbedBatchPg({ handle: storeA, embedder });
    expect(r).toMatchObject({ claimed: 1, cached: 1, embedded: 1 });
    expect(seen).toHaveLength(1);
    expect(await counts()).toMatchObject({ vectors: 2, provenance: 2, queued: 0 });
  });
});
