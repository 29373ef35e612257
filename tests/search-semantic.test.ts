import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import * as documentsRoute from "@/app/api/v1/stores/[store]/documents/route";
import * as healthRoute from "@/app/api/v1/stores/[store]/health/route";
import * as reembedRoute from "@/app/api/v1/stores/[store]/reembed/route";
import * as compareRoute from "@/app/api/v1/stores/[store]/reembed/compare/route";
import * as switchRoute from "@/app/api/v1/stores/[store]/reembed/switch/route";
import { bootstrapApp } from "@/lib/bootstrap";
import { getGovernance, getStoreDb } from "@/lib/db/connection";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { drainEmbeddings, itSqliteOnly, onPg, seedStore, sqliteOnlyCheck, useTestBackend, type TestEnv } from "./backend";
import { callRoute, restartWith } from "./helpers";

const TOKEN = "bootstrap-token-for-search-tests-0123456789";
const params = { store: "notes" };

const DOCS = [
  { path: "ops/nginx.md", content: "# Reverse proxy\n\nRestart nginx after rotating the TLS certificate on the edge hosts." },
  { path: "ops/postgres.md", content: "# Database upkeep\n\nRun VACUUM ANALYZE weekly on the large Postgres tables." },
  { path: "photo/exposure.md", content: "# Exposure\n\nThe exposure triangle: aperture, shutter speed and ISO sensitivity." },
  { path: "auth/login.md", content: "# Login\n\nAuthentication fails when the session cookie lacks the secure flag." },
  { path: "kitchen/bread.md", content: "# Sourdough\n\nFeed the starter twice a day and keep it warm." },
];

async function put(docs: { path: string; content: string }[]) {
  const r = await callRoute(documentsRoute.PUT, { method: "PUT", token: TOKEN, params, body: { documents: docs } });
  expect(r.status).toBe(200);
}

async function search(body: Record<string, unknown>) {
  const r = await callRoute(searchRoute.POST, { token: TOKEN, params, body });
  expect(r.status).toBe(200);
  return r.json;
}


/** A fresh DATA_DIR (and on PostgreSQL a fresh database) with the `notes` store holding DOCS (vectors not yet made). */
async function freshNotesStore() {
  return useTestBackend({ DUALMIND_BOOTSTRAP_TOKEN: TOKEN }, { seed: seedNotes });
}
async function seedNotes() {
  await seedStore("notes");
  await put(DOCS);
}
const drainEmbedQueues = ({ stores }: { stores: string[] }) => drainEmbeddings(stores);
/** The store's embed queue as its health report counts it (both backends). */
const pendingEmbeddings = async () => (await callRoute(healthRoute.GET, { token: TOKEN, params })).json.backlog.pending;

describe("vector and hybrid search", () => {
  let env: TestEnv;
  beforeEach(async () => {
    env = await freshNotesStore();
  });
  afterEach(async () => {
    restartWith({ DUALMIND_EMBED_DIM: undefined, DUALMIND_EMBED_MODEL: undefined, DUALMIND_DISABLE_VECTORS: undefined, DUALMIND_EMBED_BACKLOG_WATERMARK: undefined });
    await env.cleanup();
  });

  it("vector search finds a misspelled query that full-text misses, and explains itself", async () => {
    await drainEmbedQueues({ stores: ["notes"] });
    const fts = await search({ q: "authentification cookie secure", mode: "fts" });
    expect(fts.results).toHaveLength(0);
    const vec = await search({ q: "authentification cookie secure", mode: "vector", explain: true });
    expect(vec.effective_mode).toBe("vector");
    expect(vec.fallback).toBeNull();
    expect(vec.results[0].path).toBe("auth/login.md");
    expect(vec.results[0].signals.vector).toMatchObject({ rank: 1 });
    expect(vec.results[0].signals.vector.similarity).toBeGreaterThan(0.2);
    expect(vec.vectors.model).toMatchObject({ provider: "builtin", dimension: 384 });
    // SQLite's small-store method; PostgreSQL answers with pgvector's HNSW index or, without it, the exact scan.
    expect(vec.vectors.method).toBe(onPg ? (vec.vectors.index_available ? "hnsw" : "exact") : "simhash+rescore");
  });

  it("hybrid keeps a keyword-only hit and a vector-only hit", async () => {
    await drainEmbedQueues({ stores: ["notes"] });
    // "VACUUM" is an exact keyword (fts); the misspelled rest only matches login.md by character n-grams (vector),
    // above the builtin similarity floor.
    const r = await search({ q: "vacuum authentification cookiee securee", mode: "hybrid", match: "any", explain: true });
    const paths = r.results.map((h: { path: string }) => h.path);
    expect(paths).toContain("ops/postgres.md");
    expect(paths).toContain("auth/login.md");
    const login = r.results.find((h: { path: string }) => h.path === "auth/login.md");
    expect(login.signals.fts).toBeNull();
    expect(login.signals.vector).not.toBeNull();
    expect(login.signals.vector.similarity).toBeGreaterThanOrEqual(r.vectors.similarity_floor);
    const pg = r.results.find((h: { path: string }) => h.path === "ops/postgres.md");
    expect(pg.signals.fts).not.toBeNull();
    expect(r.fusion).toMatchObject({ k: 60 });
  });

  it("filters apply to vector hits too", async () => {
    await drainEmbedQueues({ stores: ["notes"] });
    const r = await search({ q: "restart proxy certificate", mode: "vector", prefix: "photo/" });
    expect(r.results.every((h: { path: string }) => h.path.startsWith("photo/"))).toBe(true);
  });

  it("before any vector exists, vector and hybrid answer lexically and say how many chunks wait (backlog), without degrading the store", async () => {
    for (const mode of ["vector", "hybrid"]) {
      const r = await search({ q: "nginx", mode });
      // Never an empty vector answer that says no_match: the words still find the document, and the answer says why vectors did not.
      expect(r.results[0].path).toBe("ops/nginx.md");
      expect(r).toMatchObject({ mode, effective_mode: "fts", degraded: false, fallback: { reason: "backlog", count: 5 }, reason: { code: "backlog", count: 5 } });
      expect(r.fallback.message).toMatch(/none of this store's 5 queued chunk\(s\) has a vector/);
    }
    const health = await callRoute(healthRoute.GET, { token: TOKEN, params });
    // Its health says the items are queued, not degraded.
    expect(health.json).toMatchObject({ status: "healthy", degraded: false, backlog: { pending: 5 } });
    expect(health.json.status_reason).toMatch(/5 items are queued for the worker, under the watermark/);
  });

  it("once vectors exist, chunks still waiting for theirs are a warning on an answer from both signals", async () => {
    await drainEmbedQueues({ stores: ["notes"] });
    await put([{ path: "ops/haproxy.md", content: "# Load balancer\n\nDrain the haproxy backend before patching the edge hosts." }]);
    const r = await search({ q: "haproxy edge hosts", mode: "hybrid" });
    expect(r).toMatchObject({ effective_mode: "hybrid", degraded: false, fallback: null, reason: null, vectors: { pending_embeddings: 1 } });
    // The new document is found by its words meanwhile.
    expect(r.results.map((h: { path: string }) => h.path)).toContain("ops/haproxy.md");
    expect(r.warnings.map((w: { code: string }) => w.code)).toContain("embeddings_pending");
  });

  it("above the backlog watermark the store is degraded: lexical answer, flagged, health says why; it recovers when drained", async () => {
    restartWith({ DUALMIND_EMBED_BACKLOG_WATERMARK: "2" });
    const r = await search({ q: "nginx certificate", mode: "vector" });
    expect(r.effective_mode).toBe("fts");
    expect(r.degraded).toBe(true);
    expect(r.fallback.reason).toBe("backlog");
    expect(r.fallback.count).toBeGreaterThan(0);
    expect(r.results[0].path).toBe("ops/nginx.md");
    const health = await callRoute(healthRoute.GET, { token: TOKEN, params });
    expect(health.json).toMatchObject({ degraded: true, backlog: { pending: 5, watermark: 2 } });
    await drainEmbedQueues({ stores: ["notes"] });
    const after = await search({ q: "nginx certificate", mode: "vector" });
    expect(after).toMatchObject({ effective_mode: "vector", degraded: false, fallback: null });
  });

  it("a model change is drift: vector search falls back instead of mixing models, re-embed clears it", async () => {
    await drainEmbedQueues({ stores: ["notes"] });
    restartWith({ DUALMIND_EMBED_DIM: "256", DUALMIND_EMBED_MODEL: "hash-256" });
    const drifted = await search({ q: "nginx certificate", mode: "vector" });
    expect(drifted.effective_mode).toBe("fts");
    expect(drifted.fallback.reason).toBe("model_mismatch");
    const health = await callRoute(healthRoute.GET, { token: TOKEN, params });
    expect(health.json.drift).toMatchObject({ model_changed: true, drifted: 5, drift_pct: 100 });
    const dry = await callRoute(reembedRoute.POST, { token: TOKEN, params, body: { dry_run: true } });
    expect(dry.json.estimate).toMatchObject({ to_embed: 5, model_changed: true });
    const start = await callRoute(reembedRoute.POST, { token: TOKEN, params, body: {} });
    expect(start.status).toBe(202);
    await drainEmbedQueues({ stores: ["notes"] });
    const fixed = await search({ q: "nginx certificate", mode: "vector" });
    expect(fixed.effective_mode).toBe("vector");
    expect(fixed.vectors.model.dimension).toBe(256);
    expect(fixed.results[0].path).toBe("ops/nginx.md");
  });

  itSqliteOnly("every chunk vector has a provenance row in governance.db", "reads index.db's embeddings table; tests/pg/embed-worker.test.ts checks one provenance row per vector on PostgreSQL", async () => {
    await drainEmbedQueues({ stores: ["notes"] });
    const vectors = getStoreDb({ store: "notes" }).sqlite.prepare("select ref_id, input_hash from embeddings where kind = 'chunk'").all() as { ref_id: number; input_hash: string }[];
    const proofs = getGovernance().sqlite.prepare("select artifact_id, input_hash, chunking_version from provenance where store = 'notes' and artifact_type = 'chunk_vector'").all() as { artifact_id: string; input_hash: string; chunking_version: string }[];
    expect(vectors.length).toBe(5);
    expect(new Set(proofs.map((p) => `${p.artifact_id}:${p.input_hash}`))).toEqual(new Set(vectors.map((v) => `${v.ref_id}:${v.input_hash}`)));
    expect(proofs.every((p) => p.chunking_version === "1")).toBe(true);
  });

  it("deleting a document drops its vectors; changing it re-queues only the changed chunk", async () => {
    await drainEmbedQueues({ stores: ["notes"] });
    const del = await callRoute(documentsRoute.DELETE, { method: "DELETE", token: TOKEN, params, url: "http://127.0.0.1/api/v1/stores/notes/documents?path=kitchen/bread.md" });
    expect(del.status).toBe(200);
    await sqliteOnlyCheck("search-semantic: the deleted document's rows leave index.db's embeddings table", () =>
      expect(getStoreDb({ store: "notes" }).sqlite.prepare("select count(*) as n from embeddings").get()).toEqual({ n: 4 }),
    );
    await put([{ path: "ops/nginx.md", content: DOCS[0].content + " Also reload the OCSP stapling cache." }]);
    expect(await pendingEmbeddings()).toBe(1);
  });

  itSqliteOnly("with sqlite-vec disabled the app still searches vectors (exact scan, flagged)", "sqlite-vec is the SQLite backend's vector index", async () => {
    await drainEmbedQueues({ stores: ["notes"] });
    restartWith({ DUALMIND_DISABLE_VECTORS: "true" });
    const r = await search({ q: "exposure aperture", mode: "vector" });
    expect(r.effective_mode).toBe("vector");
    expect(r.results[0].path).toBe("photo/exposure.md");
    expect(r.vectors.method).toBe("exact-scan-js");
    expect(r.warnings.map((w: { code: string }) => w.code)).toContain("vectors_index_unavailable");
  });
});

describe("comparing a candidate model before switching", () => {
  let env: TestEnv;
  beforeEach(async () => {
    env = await freshNotesStore();
    await drainEmbedQueues({ stores: ["notes"] });
  });
  afterEach(async () => {
    restartWith({ DUALMIND_EMBED_DIM: undefined, DUALMIND_EMBED_MODEL: undefined });
    await env.cleanup();
  });

  it("replays logged queries against the held candidate, reports overlap@k, then switches on request", async () => {
    for (const q of ["nginx certificate", "postgres vacuum", "exposure aperture", "session cookie login"]) await search({ q, mode: "vector" });
    restartWith({ DUALMIND_EMBED_DIM: "512", DUALMIND_EMBED_MODEL: "hash-512" });
    const early = await callRoute(compareRoute.GET, { token: TOKEN, params, url: "http://127.0.0.1/x?k=3" });
    expect(early.status).toBe(409);
    expect((await callRoute(reembedRoute.POST, { token: TOKEN, params, body: { hold_switch: true } })).status).toBe(202);
    await drainEmbedQueues({ stores: ["notes"] });
    // Held: the old model still serves (the new one is not active yet).
    expect((await search({ q: "nginx", mode: "vector" })).fallback.reason).toBe("model_mismatch");
    const cmp = await callRoute(compareRoute.GET, { token: TOKEN, params, url: "http://127.0.0.1/x?k=1&n=10" });
    expect(cmp.status).toBe(200);
    expect(cmp.json.queries).toBe(4);
    expect(cmp.json.candidate_coverage_pct).toBe(100);
    // Both hashed models put the same document first for these clear-cut queries.
    expect(cmp.json.mean_overlap).toBe(1);
    const deeper = await callRoute(compareRoute.GET, { token: TOKEN, params, url: "http://127.0.0.1/x?k=5&n=10" });
    const mean = deeper.json.per_query.reduce((s: number, x: { overlap: number }) => s + x.overlap, 0) / 4;
    expect(deeper.json.mean_overlap).toBeCloseTo(mean, 10);
    expect(deeper.json.mean_overlap).toBeLessThanOrEqual(1);
    const sw = await callRoute(switchRoute.POST, { token: TOKEN, params });
    expect(sw.status).toBe(200);
    const after = await search({ q: "nginx certificate", mode: "vector" });
    expect(after.effective_mode).toBe("vector");
    expect(after.vectors.model.dimension).toBe(512);
    expect((await callRoute(switchRoute.POST, { token: TOKEN, params })).status).toBe(409);
  });
});

describe("writers never wait for the embedding provider", () => {
  it("a hanging provider does not block ingest: the write is acknowledged, searchable by full text, and queued", async () => {
    const { startFakeOpenAI } = await import("./fixtures/fake-openai-server");
    const fake = await startFakeOpenAI({ dimension: 32 });
    fake.state.defaultMode = "hang";
    const env = await useTestBackend({ DUALMIND_BOOTSTRAP_TOKEN: TOKEN, DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_TIMEOUT_MS: "200" }, { bootstrap: false });
    resetEmbedderForTests();
    try {
      await bootstrapApp();
      await seedStore("notes");
      fake.state.requests.length = 0;
      await put(DOCS);
      // The write path made no provider call at all.
      expect(fake.state.requests).toHaveLength(0);
      expect(await pendingEmbeddings()).toBe(5);
      const r = await search({ q: "sourdough", mode: "hybrid" });
      expect(r.results[0].path).toBe("kitchen/bread.md");
      expect(r.fallback.reason).toBe("provider_error");
    } finally {
      await fake.close();
      await env.cleanup();
      resetEmbedderForTests();
    }
  });
});
