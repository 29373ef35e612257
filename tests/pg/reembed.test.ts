import { pgEngine } from "@/lib/db/engine";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as healthRoute from "@/app/api/v1/stores/[store]/health/route";
import * as reembedRoute from "@/app/api/v1/stores/[store]/reembed/route";
import * as compareRoute from "@/app/api/v1/stores/[store]/reembed/compare/route";
import * as switchRoute from "@/app/api/v1/stores/[store]/reembed/switch/route";
import * as retryParkedRoute from "@/app/api/v1/stores/[store]/embeddings/retry-parked/route";
import * as documentsRoute from "@/app/api/v1/stores/[store]/documents/route";
import { governance } from "@/lib/backend/governance";
import { resetConfigForTests } from "@/lib/config";
import { closePg, closePgHandle, getPg, openPgHandle } from "@/lib/db/pg";
import { rowsOf, storeSchemaVersion, withStoreTx, type PgStoreHandle } from "@/lib/db/pg-store";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { computeFingerprint, type Fingerprint } from "@/lib/embed/providers";
import type { EmbeddingProvider, EmbedTask } from "@/lib/embed/types";
import { listWorkerStates } from "@/lib/embed/worker-state";
import { listAuditTail, pgLedger } from "@/lib/governance/audit";
import { drainEmbedQueuesPg, startEmbedWorkerPg, type PgEmbedder } from "@/lib/index/embed-queue-pg";
import { putDocumentsSchema } from "@/lib/index/ingest";
import { graphOn } from "@/lib/graph/backend";
import { putDocuments } from "@/lib/index/ingest";
import { planQueryVectorPg } from "@/lib/index/query-vector-pg";
import { compareCandidateModelPg, estimateReembedPg, getReembedProgressPg, readActiveFingerprintPg, startReembedPg, switchHeldReembedPg } from "@/lib/index/reembed-pg";
import { searchInputSchema } from "@/lib/index/search";
import { searchStorePg } from "@/lib/index/search-pg";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { createStorePg, openStorePg } from "@/lib/stores/engines/pg";
import { storeCommands } from "@/scripts/commands/store-commands";
import { callRoute, useTempDataDir } from "../helpers";
import { createTestDatabase, useTwoReplicas } from "./helpers";

/**
 * Re-embed on PostgreSQL with two app replicas on one database: a model
 * change is built beside the active model while search keeps answering,
 * survives the death of the replica whose worker was embedding it (its
 * claims time out and the other replica finishes), waits for the admin's
 * switch, compares the candidate model on logged queries, then switches in
 * one step — and every start and switch is in the audit log.
 */
const replicas = useTwoReplicas({ max: 4 });
let storeA: PgStoreHandle;
let storeB: PgStoreHandle;
const DOCS = 40;

const topics = ["nginx certificate rotation", "postgres vacuum schedule", "sourdough starter feeding", "camera exposure triangle", "session cookie secure flag"];
const docs = Array.from({ length: DOCS }, (_, i) => ({ path: `notes/${i}.md`, content: `# Note ${i}\n\nAbout ${topics[i % topics.length]}, case ${i}: the ${topics[(i + 2) % topics.length]} matters here.` }));

/** The configured model, as an operator sets it (DUALMIND_EMBED_DIM), picked up like a restart would. */
function configureDimension(dim: string | undefined): void {
  if (dim === undefined) delete process.env.DUALMIND_EMBED_DIM;
  else process.env.DUALMIND_EMBED_DIM = dim;
  resetConfigForTests();
  resetEmbedderForTests();
}

async function search(handle: PgStoreHandle, q: string, mode: "vector" | "hybrid") {
  const input = searchInputSchema.parse({ q, mode, limit: 5 });
  return searchStorePg({ handle, core: null, input, vector: await planQueryVectorPg({ handle, text: q }) });
}

/** A provider whose calls after the first `free` hang until `release` (a replica that dies mid-batch, holding its claim). */
function dyingEmbedder(inner: EmbeddingProvider, free: number): { embedder: PgEmbedder; hanging: () => boolean; release: () => void } {
  let calls = 0;
  let hung = false;
  let release: () => void = () => undefined;
  const gate = new Promise<void>((_, reject) => {
    release = () => reject(new Error("replica A is gone"));
  });
  gate.catch(() => undefined);
  const provider: EmbeddingProvider = {
    info: inner.info,
    embed: async (texts: string[], task: EmbedTask) => {
      if (++calls > free) {
        hung = true;
        await gate;
      }
      return inner.embed(texts, task);
    },
  };
  return { embedder: { provider, fingerprint: computeFingerprint(inner) }, hanging: () => hung, release };
}

async function until<T>(what: string, f: () => Promise<T | null | false | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  configureDimension(undefined);
  await createStorePg({ pg: replicas.a(), input: { name: "kb" }, actor: "test" });
  storeA = await openStorePg({ pg: replicas.a(), store: "kb" });
  storeB = await openStorePg({ pg: replicas.b(), store: "kb" });
  await putDocuments({ handle: storeA, input: putDocumentsSchema.parse({ documents: docs }), actor: "agent:test" });
  await drainEmbedQueuesPg({ handles: [storeA], embedder: getEmbedder() });
});
afterAll(() => configureDimension(undefined));

describe("re-embed across two replicas on PostgreSQL", () => {
  let oldModel: Fingerprint;
  let newModel: Fingerprint;

  it("a store's first vectors make their model the active one, and vector searches are logged for a later comparison", async () => {
    oldModel = await getEmbedder().fingerprint;
    expect(await withStoreTx({ handle: storeA, readOnly: true, work: readActiveFingerprintPg })).toBe(oldModel.id);
    for (const q of topics) {
      const r = await search(storeB, q, "vector");
      expect(r.effective_mode).toBe("vector");
      expect(r.results.length).toBeGreaterThan(0);
    }
    const [{ n }] = await withStoreTx({ handle: storeA, readOnly: true, work: (tx) => rowsOf<{ n: number }>({ tx, query: sql`select count(*)::int as n from search_log where fingerprint_id = ${oldModel.id}` }) });
    expect(n).toBe(topics.length);
  });

  it("builds the new model's vectors on replica A, survives A's death (B takes its claims over), holds the switch, compares, then switches — search answering throughout", async () => {
    configureDimension("128");
    newModel = await getEmbedder().fingerprint;
    expect(newModel.id).not.toBe(oldModel.id);

    // The configured model is not the active one: searches answer lexically and say why, never empty.
    const before = await search(storeA, "nginx certificate rotation", "hybrid");
    expect(before).toMatchObject({ effective_mode: "fts", fallback: { reason: "model_mismatch" } });
    expect(before.results.length).toBeGreaterThan(0);

    // An admin on replica B starts it, holding the switch; the same start on replica A resumes it, no second job.
    const started = await startReembedPg({ handle: storeB, configured: newModel, onlyStale: false, holdSwitch: true, actor: "user:admin" });
    expect(started).toMatchObject({ started: true, job: { target_fingerprint_id: newModel.id, hold_switch: true, status: "running", total: DOCS, done: 0, remaining: DOCS } });
    const again = await startReembedPg({ handle: storeA, configured: newModel, onlyStale: false, holdSwitch: true, actor: "user:admin" });
    expect(again).toMatchObject({ started: true, job: { total: DOCS, status: "running" } });
    await expect(startReembedPg({ handle: storeA, configured: newModel, onlyStale: true, actor: "user:admin" })).rejects.toMatchObject({ code: "conflict" });

    // Replica A's worker embeds one batch, then dies holding its next claim (its loop is stopped mid-batch).
    const a = dyingEmbedder(getEmbedder().provider, 1);
    const stopA = new AbortController();
    const workerA = startEmbedWorkerPg({ listStores: async () => ["kb"], openStore: async () => storeA, registry: async () => replicas.a().db, embedder: a.embedder, signal: stopA.signal, idleMs: 20, batchSize: 8, leaseMs: 1_500, workerId: "replica-a-worker", mode: "in_server" });
    await until("replica A to hang mid-batch", async () => a.hanging());
    stopA.abort();
    const mid = await getReembedProgressPg({ handle: storeB });
    expect(mid).toMatchObject({ status: "running", done: 8, remaining: DOCS - 8 });
    const during = await search(storeB, "sourdough starter feeding", "hybrid");
    expect(during.results.length).toBeGreaterThan(0);
    expect(during.fallback?.reason).toBe("model_mismatch");

    // Replica B's worker finishes the job, A's claimed rows included once A's lease has run out.
    const stopB = new AbortController();
    const workerB = startEmbedWorkerPg({ listStores: async () => ["kb"], openStore: async () => storeB, registry: async () => replicas.b().db, embedder: { provider: getEmbedder().provider, fingerprint: getEmbedder().fingerprint }, signal: stopB.signal, idleMs: 20, batchSize: 8, leaseMs: 1_500, workerId: "replica-b-worker" });
    const waiting = await until("the held switch", async () => {
      const p = await getReembedProgressPg({ handle: storeA });
      return p?.status === "waiting_switch" ? p : null;
    });
    expect(waiting).toMatchObject({ done: DOCS, remaining: 0, total: DOCS });
    // Held: the old model still serves, searches still answer.
    expect(await withStoreTx({ handle: storeA, readOnly: true, work: readActiveFingerprintPg })).toBe(oldModel.id);
    expect((await search(storeA, "camera exposure triangle", "hybrid")).results.length).toBeGreaterThan(0);

    // The store's health shows the job and the workers of both replicas (A silent since it died).
    const workers = await listWorkerStates({ handle: replicas.a() });
    expect(workers.map((w) => w.workerId).sort()).toEqual(["replica-a-worker", "replica-b-worker"]);
    expect(workers.find((w) => w.workerId === "replica-b-worker")).toMatchObject({ running: true, lastBatchStore: "kb", model: newModel.model, dimension: 128 });
    expect(workers.find((w) => w.workerId === "replica-a-worker")).toMatchObject({ lastBatchItems: 8, lastBatchStore: "kb" });

    // Compare the candidate on the logged queries before switching.
    const cmp = await compareCandidateModelPg({ handle: storeB, n: 50, k: 5 });
    expect(cmp).toMatchObject({ active_fingerprint_id: oldModel.id, candidate_fingerprint_id: newModel.id, k: 5, queries: topics.length, candidate_coverage_pct: 100 });
    expect(cmp.mean_overlap).toBeGreaterThan(0);
    expect(cmp.mean_overlap).toBeLessThanOrEqual(1);
    expect(cmp.per_query.every((q) => q.candidate.length === 5)).toBe(true);

    await switchHeldReembedPg({ handle: storeA, actor: "user:admin" });
    expect(await withStoreTx({ handle: storeB, readOnly: true, work: readActiveFingerprintPg })).toBe(newModel.id);
    const after = await search(storeB, "nginx certificate rotation", "vector");
    expect(after.effective_mode).toBe("vector");
    expect(after.results.length).toBeGreaterThan(0);
    expect(await getReembedProgressPg({ handle: storeB })).toMatchObject({ status: "done", done: DOCS, remaining: 0 });
    await expect(switchHeldReembedPg({ handle: storeB, actor: "user:admin" })).rejects.toMatchObject({ code: "conflict" });

    // Replica A's hung batch comes back after all: it lost its claims, so it writes nothing; every vector was made once.
    a.release();
    stopB.abort();
    await Promise.all([workerA, workerB]);
    const [counts] = await withStoreTx({ handle: storeA, readOnly: true, work: (tx) =>
      rowsOf<{ vectors: number; other: number; queued: number; provenance: number }>({
        tx,
        query: sql`select (select count(*) from chunk_embeddings where fingerprint_id = ${newModel.id})::int as vectors, (select count(*) from chunk_embeddings where fingerprint_id <> ${newModel.id})::int as other,
          (select count(*) from embed_queue)::int as queued, (select count(*) from public.provenance where store = 'kb' and fingerprint = ${newModel.id})::int as provenance`,
      }),
    });
    expect(counts).toEqual({ vectors: DOCS, other: 0, queued: 0, provenance: DOCS });

    // Every start and the switch were audited, with who asked.
    const audit = (await listAuditTail({ handle: pgLedger(replicas.a().db), limit: 20 })).filter((r) => r.action.startsWith("store.reembed."));
    expect(audit.map((r) => [r.action, r.actor]).reverse()).toEqual([
      ["store.reembed.start", "user:admin"],
      ["store.reembed.resume", "user:admin"],
      ["store.reembed.switch", "user:admin"],
    ]);
  });

  it("an item of a kind that cannot list its artifacts is covered by its vectors: one of another model only is queued, never left without a vector", async () => {
    await withStoreTx({ handle: storeA, work: (tx) =>
      tx.execute(sql`insert into embeddings (kind, ref_id, fingerprint_id, input_hash, dimension, task, embedding, embedded_at) values ('unlisted-kind', 7, 'some-old-model', 'h', 1, 'document', '{1}', 0)`),
    });
    expect(await estimateReembedPg({ handle: storeA, configured: newModel, onlyStale: false })).toMatchObject({ to_embed: 1, model_changed: false });
    await withStoreTx({ handle: storeA, work: (tx) => tx.execute(sql`delete from embeddings where kind = 'unlisted-kind'`) });
    expect(await estimateReembedPg({ handle: storeA, configured: newModel, onlyStale: false })).toMatchObject({ to_embed: 0 });
  });

  it("queues thoughts and graph nodes for the new model too (each kind lists its rows without a vector of it)", async () => {
    expect(await estimateReembedPg({ handle: storeA, configured: newModel, onlyStale: false })).toMatchObject({ to_embed: 0 });
    const graph = graphOn(pgEngine(replicas.a()));
    const thought = await graph.think({ store: "kb", input: { content: "the certificate renews on Mondays" }, actor: "agent" });
    const node = await graph.createNode({ store: "kb", input: { name: "certbot", entity_type: "tool" }, actor: "agent" });
    expect(await estimateReembedPg({ handle: storeA, configured: newModel, onlyStale: false })).toMatchObject({ to_embed: 2 });
    await graph.deleteThought({ store: "kb", id: thought.id, actor: "agent" });
    await graph.deleteNode({ store: "kb", id: node.id, actor: "agent" });
    expect(await estimateReembedPg({ handle: storeA, configured: newModel, onlyStale: false })).toMatchObject({ to_embed: 0 });
  });

  it("a re-embed of stale rows with the same model finishes on its own (no switch)", async () => {
    await withStoreTx({ handle: storeA, work: (tx) => tx.execute(sql`update chunk_embeddings set input_hash = 'older text' where chunk_row_id in (select id from chunks order by id limit 3)`) });
    const r = await startReembedPg({ handle: storeA, configured: newModel, onlyStale: true, actor: "user:admin" });
    expect(r).toMatchObject({ started: true, job: { total: 3, only_stale: true } });
    await drainEmbedQueuesPg({ handles: [storeB], embedder: getEmbedder() });
    expect(await getReembedProgressPg({ handle: storeA })).toMatchObject({ status: "done", done: 3 });
    expect(await startReembedPg({ handle: storeA, configured: newModel, onlyStale: true, actor: "user:admin" })).toMatchObject({ started: false });
  });
});

describe("a 0005 store migrates to 0006", () => {
  it("gets the search log and adopts the model most of its vectors are of", async () => {
    const url = await createTestDatabase();
    let pg = await openPgHandle({ url, max: 2 });
    await createStorePg({ pg, input: { name: "old" }, actor: "test" });
    const handle = await openStorePg({ pg, store: "old" });
    await putDocuments({ handle, input: putDocumentsSchema.parse({ documents: docs.slice(0, 3) }), actor: "agent:test" });
    await drainEmbedQueuesPg({ handles: [handle], embedder: getEmbedder() });
    // Back to what 0005 left: no search log, no active model named; one vector of another model beside three of this one.
    await withStoreTx({ handle, work: (tx) =>
      tx.execute(sql`drop table search_log; delete from store_meta where key = 'active_fingerprint'; delete from store_migrations where tag = '0006_reembed';
        update store_meta set value = '0005_graph' where key = 'schema_version';
        insert into chunk_embeddings (chunk_row_id, fingerprint_id, input_hash, dimension, embedding, embedded_at) select id, 'a-minor-model', chunk_sha256, 1, '{1}', 0 from chunks order by id limit 1`),
    });
    await closePgHandle(pg);
    pg = await openPgHandle({ url, max: 2 });
    try {
      const reopened = await openStorePg({ pg, store: "old" });
      const [row] = await withStoreTx({ handle: reopened, readOnly: true, work: (tx) =>
        rowsOf<{ version: string; log: string | null }>({ tx, query: sql`select (select value from store_meta where key = 'schema_version') as version, to_regclass('search_log')::text as log` }),
      });
      expect(row).toEqual({ version: storeSchemaVersion(), log: "search_log" });
      expect(await withStoreTx({ handle: reopened, readOnly: true, work: readActiveFingerprintPg })).toBe((await getEmbedder().fingerprint).id);
    } finally {
      await closePgHandle(pg);
    }
  });
});

describe("the re-embed and retry-parked routes with DATABASE_URL, in-process", () => {
  it("are served from PostgreSQL to admins, refused (403) to other tokens, and the store's health shows the job", async () => {
    const env = useTempDataDir({ DATABASE_URL: await createTestDatabase() });
    try {
      const pg = await getPg()!;
      await createStorePg({ pg, input: { name: "ops" }, actor: "test" });
      const writer = (await governance().createApiToken({ input: { label: "w", agent_id: "w", scopes: ["read", "write"] }, actor: "test" })).token;
      const admin = (await governance().createApiToken({ input: { label: "a", agent_id: "a", scopes: ["read", "write", "admin"] }, actor: "test" })).token;
      const params = { store: "ops" };
      expect((await callRoute(documentsRoute.PUT, { method: "PUT", token: writer, params, body: { documents: docs.slice(0, 4) } })).status).toBe(200);

      for (const [route, method] of [
        [reembedRoute.POST, "POST"],
        [switchRoute.POST, "POST"],
        [retryParkedRoute.POST, "POST"],
        [compareRoute.GET, "GET"],
      ] as const) {
        const r = await callRoute(route, { method, token: writer, params, ...(method === "POST" ? { body: {} } : {}), url: "http://127.0.0.1/api/v1/stores/ops/reembed" });
        expect([method, r.status, r.json.error.code]).toEqual([method, 403, "forbidden"]);
      }

      const dry = await callRoute(reembedRoute.POST, { token: admin, params, body: { dry_run: true } });
      expect(dry).toMatchObject({ status: 202, json: { estimate: { to_embed: 4, model_changed: false } } });
      const started = await callRoute(reembedRoute.POST, { token: admin, params, body: {} });
      expect(started).toMatchObject({ status: 202, json: { job: { status: "running", total: 4, remaining: 4 } } });
      const progress = await callRoute(reembedRoute.GET, { token: writer, params, url: "http://127.0.0.1/api/v1/stores/ops/reembed" });
      expect(progress).toMatchObject({ status: 200, json: { job: { total: 4, done: 0 } } });
      const health = await callRoute(healthRoute.GET, { token: writer, params, url: "http://127.0.0.1/api/v1/stores/ops/health" });
      expect(health).toMatchObject({ status: 200, json: { reembed: { status: "running", total: 4 } } });
      expect(await storeHealthReportFor({ store: "ops", principal: "operator" })).toMatchObject({ reembed: { status: "running" } });

      // Parked items go back in line when an admin asks; the job then finishes.
      const handle = await openStorePg({ pg, store: "ops" });
      await withStoreTx({ handle, work: (tx) => tx.execute(sql`update embed_queue set parked_at = 1, attempts = 6, last_error = 'provider said 400'`) });
      expect((await callRoute(healthRoute.GET, { token: writer, params, url: "http://127.0.0.1/api/v1/stores/ops/health" })).json).toMatchObject({ status: "parked", backlog: { parked: 4 } });
      const retried = await callRoute(retryParkedRoute.POST, { token: admin, params, body: {} });
      expect(retried).toMatchObject({ status: 200, json: { requeued: 4 } });
      // A worker of this replica finishes the job; the store's health lists it, alive.
      const stop = new AbortController();
      const worker = startEmbedWorkerPg({ listStores: async () => ["ops"], openStore: async () => handle, registry: async () => pg.db, signal: stop.signal, idleMs: 20, workerId: "ops-worker", mode: "in_server" });
      await until("the job to finish", async () => (await getReembedProgressPg({ handle }))?.status === "done");
      // The worker notes its batch in the registry after the batch's own transaction (which ends the job) commits.
      const workerHealth = async () => callRoute(healthRoute.GET, { token: writer, params, url: "http://127.0.0.1/api/v1/stores/ops/health" });
      await until("the worker to note its last batch", async () => (await workerHealth()).json.workers?.[0]?.last_batch_items != null);
      const healthy = await workerHealth();
      expect(healthy.json).toMatchObject({ status: "healthy", reembed: { status: "done", done: 4 } });
      expect(healthy.json.workers).toEqual([expect.objectContaining({ worker_id: "ops-worker", running: true, in_this_process: true, mode: "in_server", last_batch_store: "ops", last_batch_items: 4 })]);
      stop.abort();
      await worker;
      const done = await callRoute(reembedRoute.GET, { token: writer, params, url: "http://127.0.0.1/api/v1/stores/ops/reembed" });
      expect(done).toMatchObject({ status: 200, json: { job: { status: "done", done: 4, remaining: 0 } } });
      // Nothing to compare: the configured model is the active one.
      expect((await callRoute(compareRoute.GET, { token: admin, params, url: "http://127.0.0.1/api/v1/stores/ops/reembed/compare" })).status).toBe(409);
      // The CLI's embeddings commands answer from PostgreSQL too.
      const cli = async (name: string) => {
        const outs: string[] = [];
        const code = await storeCommands.find((c) => c.name === name)!.run({ args: ["ops"], flags: {}, json: false, out: (human) => outs.push(human) });
        return { code: code ?? 0, human: outs.join("\n") };
      };
      expect(await cli("embeddings status")).toMatchObject({ code: 0, human: expect.stringContaining("re-embed:   4/4") });
      expect(await cli("embeddings retry-parked")).toMatchObject({ code: 0, human: "0 parked item(s) queued again" });
      const audit = (await listAuditTail({ handle: pgLedger(pg.db), limit: 20 })).map((r) => r.action);
      expect(audit).toEqual(expect.arrayContaining(["store.reembed.start", "store.reembed.done", "store.embeddings.retry_parked"]));
    } finally {
      await closePg();
      env.cleanup();
    }
  });
});
