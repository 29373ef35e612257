import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import * as tracesRoute from "@/app/api/v1/stores/[store]/traces/route";
import * as traceRoute from "@/app/api/v1/stores/[store]/traces/[id]/route";
import * as learningsRoute from "@/app/api/v1/stores/[store]/learnings/route";
import * as recallRoute from "@/app/api/v1/stores/[store]/recall/route";
import * as reflectionRoute from "@/app/api/v1/stores/[store]/reflection/route";
import { createApiToken } from "@/lib/auth/tokens";
import { bootstrapApp } from "@/lib/bootstrap";
import { getGovernance, getStoreDb } from "@/lib/db/connection";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { enqueueEmbeddings, getEmbedBacklog } from "@/lib/embed/queue";
import { startReembed } from "@/lib/embed/reembed";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { renderTraceDescriptor, normalizeTrace, traceInputSchema, type TraceInput } from "@/lib/recall/descriptors";
import { getRecallMetrics, listRatingQueue, listRecentRecallEvents, rateRecallHit } from "@/lib/recall/events";
import { backfillLearningHandles, listLearnings, recordLearning } from "@/lib/recall/learnings";
import { recallReflections } from "@/lib/recall/recall";
import { getRecallScoreDistribution } from "@/lib/recall/quality";
import { clearQueryVectorCache } from "@/lib/embed/query";
import { getReflectionOverview } from "@/lib/recall/overview";
import { getReflectionSettings, updateReflectionSettings } from "@/lib/recall/settings";
import { listTraces, recordTrace, runTraceRetention } from "@/lib/recall/traces";
import { createStore, openStore } from "@/lib/stores/stores";
import { callRoute, restartWith, useTempDataDir } from "./helpers";
import { sha256Hex } from "@/lib/common";

const AUTH_FAILURE: TraceInput = {
  intent: { verb: "fix", target: "auth token refresh" },
  shard_type: "backend",
  key_files: ["lib/auth/session.ts", "lib/auth/refresh.ts"],
  outcome: "failure",
  key_issue: "refresh token rotated twice, causing 401 loops",
  error_tags: ["auth", "401"],
};
const PHOTO_SUCCESS: TraceInput = {
  intent: { verb: "edit", target: "RAW photos white balance" },
  shard_type: "photography",
  key_files: ["photos/2024/raw"],
  outcome: "success",
  key_issue: "batch white balance from a grey card",
  error_tags: ["color"],
};

const DAY = 86_400_000;

describe("reflection recall", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
    resetEmbedderForTests();
    clearQueryVectorCache();
  });
  afterEach(() => {
    env.cleanup();
    resetEmbedderForTests();
  });

  it("the descriptor is deterministic: same fields in any order → same text and hash, on every run", () => {
    const a = renderTraceDescriptor(normalizeTrace(traceInputSchema.parse(AUTH_FAILURE)));
    const b = renderTraceDescriptor(
      normalizeTrace(traceInputSchema.parse({ ...AUTH_FAILURE, key_files: ["./lib/auth/refresh.ts", "lib/auth/session.ts", "lib/auth/session.ts"], error_tags: ["401", "AUTH"] })),
    );
    expect(a).toBe(b);
    expect(a).toBe(
      "Intent: fix|auth token refresh | Shard: backend | Files: lib/auth/refresh.ts, lib/auth/session.ts | Outcome: failure | Key Issue: refresh token rotated twice, causing 401 loops | Tags: 401, auth",
    );
    // Pinned: a change here changes every stored hash, so it needs a DESCRIPTOR_VERSION bump.
    expect(sha256Hex(a)).toBe("38f7e6271550ccabd55e3cf5feefd3a402886cf7dbad3bde62975e4d5682e365");
    const long = renderTraceDescriptor(normalizeTrace(traceInputSchema.parse({ ...AUTH_FAILURE, key_issue: "x ".repeat(900), key_files: Array.from({ length: 50 }, (_, i) => `f${i}.ts`) })));
    expect(long.length).toBeLessThanOrEqual(1000);
  });

  it("dedupes by descriptor hash: a repeat bumps the counter and last_seen, not a new vector", async () => {
    const h = getStoreDb("ops");
    const first = recordTrace({ handle: h, agentId: "a1", input: AUTH_FAILURE });
    expect(first).toMatchObject({ deduped: false, embedding: "queued" });
    const again = recordTrace({ handle: h, agentId: "a2", input: { ...AUTH_FAILURE, error_tags: ["401", "auth"] } });
    expect(again.deduped).toBe(true);
    expect(again.trace.id).toBe(first.trace.id);
    expect(again.trace.seenCount).toBe(2);
    expect(again.trace.lastSeenAt).toBeGreaterThanOrEqual(first.trace.lastSeenAt);
    expect(getEmbedBacklog({ handle: h }).pending).toBe(1);
    await drainEmbedQueues({ stores: ["ops"] });
    recordTrace({ handle: h, agentId: "a1", input: AUTH_FAILURE });
    expect(getEmbedBacklog({ handle: h }).pending).toBe(0);
    expect(h.sqlite.prepare("select count(*) as n from embeddings where kind = 'trace'").get()).toEqual({ n: 1 });
    const fp = await getEmbedder().fingerprint;
    expect(listTraces({ handle: h, filter: {} }).traces).toMatchObject([{ seenCount: 3, embedding: "vector", vector: { fingerprintId: fp.id, dim: 384, task: "document" } }]);
  });

  it("warns about a similar past failure, not about an unrelated one; hits carry joinable ids", async () => {
    const h = getStoreDb("ops");
    const failed = recordTrace({ handle: h, agentId: "a1", input: AUTH_FAILURE }).trace;
    recordTrace({ handle: h, agentId: "a1", input: PHOTO_SUCCESS });
    const pref = recordLearning({ handle: h, agentId: "a1", input: { predicate: "prefers_refresh_token_lock", args: { scope: "auth" }, description: "serialize auth token refresh with a lock to avoid double rotation", confidence: 0.9 } });
    await drainEmbedQueues({ stores: ["ops"] });
    // Each row reports its own vector (the learning's embedding row id differs from its own id here).
    expect(listLearnings({ handle: h, filter: {} }).learnings).toMatchObject([{ id: pref.learning.id, embedding: "vector" }]);
    expect(listTraces({ handle: h, filter: {} }).traces.map((t) => t.embedding)).toEqual(["vector", "vector"]);

    const similar = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a2", input: { intent: { verb: "repair", target: "auth token refreshing", key_files: ["lib/auth/session.ts"] } } });
    expect(similar.mode).toBe("hybrid");
    expect(similar.fallback).toBeNull();
    expect(similar.traces[0]).toMatchObject({ id: failed.id, outcome: "failure", match: "vector" });
    expect(similar.guidance.past_failure_warning).toMatchObject({ traceId: failed.id, keyIssue: AUTH_FAILURE.key_issue });
    expect(similar.guidance.aligned_preferences.map((p) => p.learningId)).toEqual([pref.learning.id]);
    // Ids join back to the tables and to the event log.
    const row = h.sqlite.prepare("select summary_descriptor from reasoning_traces where id = ?").get(similar.traces[0].id) as { summary_descriptor: string };
    expect(row.summary_descriptor).toBe(similar.traces[0].summary);
    const [event] = listRecentRecallEvents({ handle: h, limit: 1 });
    expect(event).toMatchObject({ id: similar.eventId, agentId: "a2", mode: "hybrid", warning: true, hitCount: similar.traces.length + similar.learnings.length });
    expect(event.hits[0]).toMatchObject({ artifact: "trace", refId: failed.id, rank: 1 });

    const unrelated = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a2", input: { query: "sourdough starter feeding schedule" } });
    expect(unrelated.traces).toEqual([]);
    expect(unrelated.guidance.past_failure_warning).toBeNull();
    expect(unrelated.guidance.aligned_preferences).toEqual([]);
    // A structured intent is no different: descriptor labels alone do not make a hit.
    const unrelatedIntent = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a2", input: { intent: { verb: "bake", target: "sourdough bread", shard_type: "kitchen" } } });
    expect(unrelatedIntent.traces).toEqual([]);
    expect(unrelatedIntent.guidance.past_failure_warning).toBeNull();
  });

  it("the score distribution puts every logged hit in the bin of its score, and counts lexical matches at the 0.500 ceiling", async () => {
    const h = getStoreDb("ops");
    recordTrace({ handle: h, agentId: "a1", input: AUTH_FAILURE });
    recordTrace({ handle: h, agentId: "a1", input: PHOTO_SUCCESS });
    // No worker run: no vectors, so recall matches lexically; a query of the trace's own words scores the ceiling.
    await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: { query: "auth token refresh", signals: "lexical" } });
    await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: { query: "white balance raw photos", signals: "lexical" } });
    const scores = listRecentRecallEvents({ handle: h, limit: 10 }).flatMap((e) => e.hits.map((x) => x.score));
    expect(scores.length).toBeGreaterThan(0);
    const d = getRecallScoreDistribution({ handle: h });
    expect(d.hits).toBe(scores.length);
    expect(d.bins).toHaveLength(20);
    expect(d.bins.reduce((a, b) => a + b.count, 0)).toBe(scores.length);
    for (const b of d.bins) expect(b.count).toBe(scores.filter((x) => x >= b.lo && (x < b.hi || (b.hi === 1 && x === 1))).length);
    expect(d.atLexicalCeiling).toBe(scores.filter((x) => x === 0.5).length);
    expect(d.atLexicalCeiling).toBeGreaterThan(0);
    expect(d.rated).toBe(0);
  });

  it("gates by min_score and by recency half-life; identical queries hit the query cache", async () => {
    const h = getStoreDb("ops");
    const fresh = recordTrace({ handle: h, agentId: "a1", input: AUTH_FAILURE }).trace;
    const old = recordTrace({ handle: h, agentId: "a1", input: { ...AUTH_FAILURE, shard_type: "api" } }).trace;
    h.sqlite.prepare("update reasoning_traces set last_seen_at = ? where id = ?").run(Date.now() - 180 * DAY, old.id);
    await drainEmbedQueues({ stores: ["ops"] });
    const q = { intent: { verb: "fix", target: "auth token refresh" }, min_score: 0.3 };
    const r = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: q });
    expect(r.cacheHit).toBe(false);
    // Two half-lives (90 days each) quarter the old trace's score: below the gate.
    expect(r.traces.map((t) => t.id)).toEqual([fresh.id]);
    updateReflectionSettings({ handle: h, input: { settings: { recency_half_life_days: 0 } }, actor: "test" });
    const noDecay = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: q });
    expect(noDecay.cacheHit).toBe(true);
    expect(noDecay.traces.map((t) => t.id).sort()).toEqual([fresh.id, old.id].sort());
    const strict = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: { ...q, min_score: 0.99 } });
    expect(strict.traces).toEqual([]);
    const capped = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: { ...q, top_k: 1 } });
    expect(capped.traces).toHaveLength(1);
  });

  it("model fingerprint mismatch: no vector hits, lexical fallback flagged", async () => {
    const h = getStoreDb("ops");
    const failed = recordTrace({ handle: h, agentId: "a1", input: AUTH_FAILURE }).trace;
    await drainEmbedQueues({ stores: ["ops"] });
    h.sqlite.prepare("update meta set value = '0123456789abcdef' where key = 'active_fingerprint'").run();
    const r = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: { query: "auth token refresh failing with 401" } });
    expect(r.mode).toBe("lexical");
    expect(r.fallback).toMatchObject({ reason: "model_mismatch" });
    expect(r.traces.length).toBeGreaterThan(0);
    expect(r.traces.every((t) => t.match === "lexical")).toBe(true);
    expect(r.traces[0].id).toBe(failed.id);
    expect(r.guidance.past_failure_warning?.traceId).toBe(failed.id);
    expect(listRecentRecallEvents({ handle: h, limit: 1 })[0]).toMatchObject({ mode: "lexical", fallbackReason: "model_mismatch" });
  });

  it("without the sqlite-vec extension vector recall still answers (exact scan) and says the index is unavailable", async () => {
    env.cleanup();
    env = useTempDataDir({ DUALMIND_DISABLE_VECTORS: "true" });
    const h = getStoreDb("ops");
    const failed = recordTrace({ handle: h, agentId: "a1", input: AUTH_FAILURE }).trace;
    await drainEmbedQueues({ stores: ["ops"] });
    const r = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: { query: "auth token refresh", signals: "vector" } });
    expect(r.mode).toBe("vector");
    expect(r.method).toContain("vectors_index_unavailable");
    expect(r.traces[0]).toMatchObject({ id: failed.id, match: "vector" });
  });

  it("a degraded store (backlog above the watermark) answers lexically and says so", async () => {
    env.cleanup();
    env = useTempDataDir({ DUALMIND_EMBED_BACKLOG_WATERMARK: "1" });
    const h = getStoreDb("ops");
    recordTrace({ handle: h, agentId: "a1", input: AUTH_FAILURE });
    recordTrace({ handle: h, agentId: "a1", input: PHOTO_SUCCESS });
    const r = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: { query: "white balance raw photos" } });
    expect(r.fallback).toMatchObject({ reason: "backlog" });
    expect(r.traces[0].intent.target).toBe("RAW photos white balance");
  });

  it("backpressure: above the store's watermark success traces skip embedding, failures do not; both stay recallable", async () => {
    // One watermark for the whole app: the embed backlog watermark of the config.
    restartWith({ DUALMIND_EMBED_BACKLOG_WATERMARK: "1" });
    onTestFinished(() => restartWith({ DUALMIND_EMBED_BACKLOG_WATERMARK: undefined }));
    const h = getStoreDb("ops");
    expect(getReflectionSettings({ handle: h }).backlog_watermark).toBe(1);
    enqueueEmbeddings({ handle: h, items: [
      { kind: "trace", refId: 9001, inputHash: "x" },
      { kind: "trace", refId: 9002, inputHash: "y" },
    ] });
    const ok = recordTrace({ handle: h, agentId: "a1", input: PHOTO_SUCCESS });
    const bad = recordTrace({ handle: h, agentId: "a1", input: AUTH_FAILURE });
    expect(ok.embedding).toBe("skipped_backpressure");
    expect(bad.embedding).toBe("queued");
    await drainEmbedQueues({ stores: ["ops"] });
    expect(listTraces({ handle: h, filter: { outcome: "success" } }).traces[0].embedding).toBe("skipped_backpressure");
    // Even with vector-only signals, a trace without a vector is found lexically.
    const r = await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: { query: "raw photos white balance", signals: "vector" } });
    expect(r.mode).toBe("vector");
    expect(r.traces[0]).toMatchObject({ id: ok.trace.id, match: "lexical" });
    // Once the backlog has drained, the next write queues the skipped trace again.
    recordTrace({ handle: h, agentId: "a1", input: { ...AUTH_FAILURE, key_issue: "second attempt" } });
    await drainEmbedQueues({ stores: ["ops"] });
    expect(listTraces({ handle: h, filter: { outcome: "success" } }).traces[0].embedding).toBe("vector");
  });

  it("retention: TTL removes unseen traces with their vectors; a stratified cap keeps every shard/outcome", async () => {
    const h = getStoreDb("ops");
    for (let i = 0; i < 12; i++) recordTrace({ handle: h, agentId: "a", input: { ...PHOTO_SUCCESS, intent: { verb: "edit", target: `photo batch ${i}` } } });
    const rare = recordTrace({ handle: h, agentId: "a", input: AUTH_FAILURE }).trace;
    h.sqlite.prepare("update reasoning_traces set last_seen_at = last_seen_at - 100000 where id = ?").run(rare.id);
    await drainEmbedQueues({ stores: ["ops"] });
    updateReflectionSettings({ handle: h, input: { settings: { retention: { max_traces: 10, strategy: "stratified" } } }, actor: "test" });
    expect(runTraceRetention({ handle: h })).toEqual({ deleted: 3 });
    const left = listTraces({ handle: h, filter: { limit: 200 } }).traces;
    expect(left).toHaveLength(10);
    expect(left.map((t) => t.id)).toContain(rare.id);
    expect(h.sqlite.prepare("select count(*) as n from embeddings where kind = 'trace'").get()).toEqual({ n: 10 });

    h.sqlite.prepare("update reasoning_traces set last_seen_at = ? where id != ?").run(Date.now() - 40 * DAY, rare.id);
    updateReflectionSettings({ handle: h, input: { settings: { retention: { ttl_days: 30, max_traces: null } } }, actor: "test" });
    expect(runTraceRetention({ handle: h })).toEqual({ deleted: 9 });
    expect(listTraces({ handle: h, filter: {} }).traces.map((t) => t.id)).toEqual([rare.id]);
    expect(h.sqlite.prepare("select count(*) as n from reasoning_traces_fts where reasoning_traces_fts match 'photo'").get()).toEqual({ n: 0 });
  });

  it("re-embed backfills descriptors of an old version and queues their vectors", async () => {
    const h = getStoreDb("ops");
    const t = recordTrace({ handle: h, agentId: "a", input: AUTH_FAILURE }).trace;
    await drainEmbedQueues({ stores: ["ops"] });
    h.sqlite.prepare("update reasoning_traces set summary_descriptor = 'Intent: fix auth (v0 rendering)', descriptor_hash = 'old', descriptor_version = 0 where id = ?").run(t.id);
    const fp = await getEmbedder().fingerprint;
    startReembed({ handle: h, configured: fp, onlyStale: true, actor: "test" });
    const after = listTraces({ handle: h, filter: {} }).traces[0];
    expect(after).toMatchObject({ summaryDescriptor: t.summaryDescriptor, descriptorHash: t.descriptorHash, descriptorVersion: 1 });
    expect(getGovernance().sqlite.prepare("select count(*) as n from audit_log where action = 'store.reembed.backfill'").get()).toEqual({ n: 1 });
  });

  it("backfills learning handles of an old version: synthesized ones are re-rendered, and one that now matches merges into it", () => {
    const h = getStoreDb("ops");
    const a = recordLearning({ handle: h, agentId: "a", input: { predicate: "prefers_small_commits", args: { max_files: 5 }, description: "keep commits small", confidence: 0.6 } }).learning;
    const b = recordLearning({ handle: h, agentId: "b", input: { predicate: "prefers_rebase", args: {}, description: "rebase before merging", confidence: 0.9 } }).learning;
    const stale = h.sqlite.prepare("update learnings set semantic_handle = ?, handle_hash = ?, handle_version = 0, predicate = ?, args = ?, description = ? where id = ?");
    stale.run("Learning: v0 a", "old-a", a.predicate, JSON.stringify(a.args), a.description, a.id);
    // b now says what a says, under an old rendering: re-rendered, it is a's twin.
    stale.run("Learning: v0 b", "old-b", a.predicate, JSON.stringify(a.args), a.description, b.id);
    expect(backfillLearningHandles({ handle: h })).toBe(2);
    const { learnings } = listLearnings({ handle: h, filter: {} });
    expect(learnings).toHaveLength(1);
    expect(learnings[0]).toMatchObject({ id: a.id, semanticHandle: a.semanticHandle, handleHash: a.handleHash, handleVersion: a.handleVersion, seenCount: 2, confidence: 0.9 });
  });

  it("ratings give precision per time bucket; the rating queue offers unrated hits", async () => {
    const h = getStoreDb("ops");
    recordTrace({ handle: h, agentId: "a1", input: AUTH_FAILURE });
    recordTrace({ handle: h, agentId: "a1", input: { ...AUTH_FAILURE, shard_type: "frontend", key_issue: "login form kept a stale token" } });
    await drainEmbedQueues({ stores: ["ops"] });
    await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: { query: "auth token refresh" } });
    await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a", input: { query: "nothing like anything stored" } });
    const queue = listRatingQueue({ handle: h, limit: 10 });
    expect(queue).toHaveLength(2);
    rateRecallHit({ handle: h, input: { hit_id: queue[0].id, relevant: true }, actor: "user:admin" });
    rateRecallHit({ handle: h, input: { hit_id: queue[1].id, relevant: false }, actor: "user:admin" });
    expect(listRatingQueue({ handle: h })).toEqual([]);
    const [bucket] = getRecallMetrics({ handle: h, bucketMs: DAY });
    expect(bucket).toMatchObject({ recalls: 2, hitRate: 0.5, rated: 2, precision: 0.5, fallbackRate: 0 });
    expect(bucket.p95Ms).toBeGreaterThanOrEqual(bucket.p50Ms);
    expect(getReflectionOverview({ handle: h })).toMatchObject({
      counts: { traces: 2, failures: 2, learnings: 0, awaitingVector: 0, skippedBackpressure: 0 },
      totals: { recalls: 2, hitRate: 0.5, rated: 2, precision: 0.5 },
    });
    expect(() => rateRecallHit({ handle: h, input: { hit_id: 999, relevant: true }, actor: "x" })).toThrow(/no recall hit/);
  });
});

describe("reflection API", () => {
  let env: ReturnType<typeof useTempDataDir>;
  let writer: string;
  let reader: string;
  let admin: string;
  beforeEach(async () => {
    env = useTempDataDir();
    resetEmbedderForTests();
    await bootstrapApp();
    createStore({ input: { name: "ops" }, actor: "test" });
    writer = createApiToken({ input: { label: "w", agent_id: "coder", scopes: ["write"] }, actor: "test" }).token;
    reader = createApiToken({ input: { label: "r", agent_id: "viewer", scopes: ["read"] }, actor: "test" }).token;
    admin = createApiToken({ input: { label: "a", agent_id: "ops-lead", scopes: ["admin"] }, actor: "test" }).token;
  });
  afterEach(() => env.cleanup());

  const params = { store: "ops" };

  it("records a trace (201, then 200 for the repeat), reads it back by id, and recalls it", async () => {
    const created = await callRoute(tracesRoute.POST, { token: writer, params, body: AUTH_FAILURE });
    expect(created.status).toBe(201);
    expect(created.json.trace).toMatchObject({ agent_id: "coder", outcome: "failure", seen_count: 1 });
    const repeat = await callRoute(tracesRoute.POST, { token: writer, params, body: AUTH_FAILURE });
    expect(repeat.status).toBe(200);
    expect(repeat.json).toMatchObject({ deduped: true, trace: { id: created.json.trace.id, seen_count: 2 } });
    await drainEmbedQueues({ stores: ["ops"] });
    const recall = await callRoute(recallRoute.POST, { token: reader, params, body: { query: "auth token refresh keeps failing" } });
    expect(recall.status).toBe(200);
    expect(recall.json.guidance.past_failure_warning.trace_id).toBe(created.json.trace.id);
    const byId = await callRoute(traceRoute.GET, { token: reader, params: { ...params, id: String(recall.json.traces[0].id) } });
    expect(byId.json.trace.summary_descriptor).toBe(recall.json.traces[0].summary);
    const missing = await callRoute(traceRoute.GET, { token: reader, params: { ...params, id: "424242" } });
    expect(missing.status).toBe(404);
  });

  it("validates input: bad bodies are 400, unknown stores 404, a read token cannot write", async () => {
    const both = await callRoute(recallRoute.POST, { token: reader, params, body: { query: "x", intent: { verb: "fix", target: "y" } } });
    expect(both.status).toBe(400);
    const extra = await callRoute(tracesRoute.POST, { token: writer, params, body: { ...AUTH_FAILURE, secret_field: 1 } });
    expect(extra.status).toBe(400);
    const badOutcome = await callRoute(tracesRoute.POST, { token: writer, params, body: { ...AUTH_FAILURE, outcome: "maybe" } });
    expect(badOutcome.status).toBe(400);
    const nowhere = await callRoute(recallRoute.POST, { token: reader, params: { store: "nowhere" }, body: { query: "x" } });
    expect(nowhere.status).toBe(404);
    const readOnly = await callRoute(learningsRoute.POST, { token: reader, params, body: { predicate: "p" } });
    expect(readOnly.status).toBe(403);
  });

  it("learnings get a synthesized handle; settings are admin-only, audited, and can disable recall", async () => {
    const l = await callRoute(learningsRoute.POST, { token: writer, params, body: { predicate: "prefers_small_commits", args: { max_files: 5 }, description: "keep commits small and focused", confidence: 0.8 } });
    expect(l.status).toBe(201);
    expect(l.json.learning.semantic_handle).toBe("Learning: prefers small commits | Args: max_files=5 | Description: keep commits small and focused");
    const repeat = await callRoute(learningsRoute.POST, { token: writer, params, body: { predicate: "prefers_small_commits", args: { max_files: 5 }, description: "keep commits small and focused", confidence: 0.95 } });
    expect(repeat.status).toBe(200);
    expect(repeat.json).toMatchObject({ deduped: true, learning: { id: l.json.learning.id, seen_count: 2, confidence: 0.95 } });
    const listed = await callRoute(learningsRoute.GET, { token: reader, params, url: "http://127.0.0.1/api/v1/stores/ops/learnings?limit=5" });
    expect(listed.json.total).toBe(1);

    const denied = await callRoute(reflectionRoute.PUT, { token: writer, params, body: { settings: { enabled: false } } });
    expect(denied.status).toBe(403);
    const bad = await callRoute(reflectionRoute.PUT, { token: admin, params, body: { settings: { top_k: 0 } } });
    expect(bad.status).toBe(400);
    const off = await callRoute(reflectionRoute.PUT, { token: admin, params, body: { settings: { enabled: false, min_score: 0.4 }, reason: "noisy warnings" } });
    expect(off.status).toBe(200);
    expect(off.json.settings).toMatchObject({ enabled: false, min_score: 0.4, top_k: 5 });
    const audit = getGovernance().sqlite.prepare("select actor, reason from audit_log where action = 'reflection.settings.update'").get();
    expect(audit).toEqual({ actor: "agent:ops-lead", reason: "noisy warnings" });
    const disabled = await callRoute(recallRoute.POST, { token: reader, params, body: { query: "commits" } });
    expect(disabled.status).toBe(409);
    const overview = await callRoute(reflectionRoute.GET, { token: reader, params });
    expect(overview.json).toMatchObject({ store: "ops", settings: { enabled: false }, counts: { learnings: 1, traces: 0 } });
  });
});
