import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as tracesRoute from "@/app/api/v1/stores/[store]/traces/route";
import * as traceRoute from "@/app/api/v1/stores/[store]/traces/[id]/route";
import * as learningsRoute from "@/app/api/v1/stores/[store]/learnings/route";
import * as recallRoute from "@/app/api/v1/stores/[store]/recall/route";
import * as reflectionRoute from "@/app/api/v1/stores/[store]/reflection/route";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { renderTraceDescriptor, normalizeTrace, traceInputSchema, type TraceInput } from "@/lib/recall/descriptors";
import { recallBackend } from "@/lib/recall/backend";
import type { RecallInput } from "@/lib/recall/recall";
import { clearQueryVectorCache } from "@/lib/embed/query";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { getStoreDb } from "@/lib/db/connection";
import { drainEmbeddings, governanceSql, itSqliteOnly, seedStore, seedTokens, seedTrace, sqliteOnlyCheck, storeSql, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";
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

/** The statements `fn` runs on a connection, with their parameters (to ask SQLite for their query plans). */
async function statementsRun(sqlite: Database.Database, fn: () => Promise<void>): Promise<{ source: string; args: unknown[] }[]> {
  const ran: { source: string; args: unknown[] }[] = [];
  const prepare = sqlite.prepare;
  sqlite.prepare = function (this: Database.Database, source: string) {
    const stmt = prepare.call(this, source);
    for (const method of ["run", "get", "all", "iterate"] as const) {
      const original = stmt[method] as (...a: unknown[]) => unknown;
      (stmt as unknown as Record<string, unknown>)[method] = function (this: unknown, ...args: unknown[]) {
        if (!/^\s*(begin|commit|rollback|savepoint|release)\b/i.test(source)) ran.push({ source, args });
        return original.apply(this, args);
      };
    }
    return stmt;
  } as typeof sqlite.prepare;
  try {
    await fn();
  } finally {
    sqlite.prepare = prepare;
  }
  return ran;
}

describe("reflection recall", () => {
  let env: TestEnv;
  const store = "ops";
  const r = () => recallBackend();
  const recall = (input: RecallInput, agentId = "a") => r().recall({ store, agentId, input });
  const learn = (input: Parameters<ReturnType<typeof r>["recordLearning"]>[0]["input"], agentId = "a1") => r().recordLearning({ store, agentId, input });
  const trace = async (input: TraceInput, agentId = "a1") => seedTrace(store, input, agentId);
  const pending = async () => (await storeHealthReportFor({ store, principal: "operator" })).backlog.pending;
  const count = async (table: string, where = "") => (await storeSql<{ n: number }>(store, `select cast(count(*) as integer) as n from ${table} ${where}`))[0].n;

  const seed = () => seedStore(store);
  async function start(extraEnv: Record<string, string> = {}) {
    env = await useTestBackend(extraEnv, { seed });
    clearQueryVectorCache();
  }
  async function restart(extraEnv: Record<string, string>) {
    await env.cleanup();
    await start(extraEnv);
  }
  beforeEach(() => start());
  afterEach(async () => {
    await env.cleanup();
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
    const first = await trace(AUTH_FAILURE, "a1");
    expect(first).toMatchObject({ deduped: false, embedding: "queued" });
    const again = await trace({ ...AUTH_FAILURE, error_tags: ["401", "auth"] }, "a2");
    expect(again.deduped).toBe(true);
    expect(again.trace.id).toBe(first.trace.id);
    expect(again.trace.seen_count).toBe(2);
    expect(again.trace.last_seen_at).toBeGreaterThanOrEqual(first.trace.last_seen_at);
    expect(await pending()).toBe(1);
    await drainEmbeddings([store]);
    await trace(AUTH_FAILURE, "a1");
    expect(await pending()).toBe(0);
    expect(await count("embeddings", "where kind = 'trace'")).toBe(1);
    const fp = await getEmbedder().fingerprint;
    expect((await r().listTraces({ store, filter: {} })).traces).toMatchObject([{ seen_count: 3, embedding: "vector", vector: { fingerprint_id: fp.id, dim: 384, task: "document" } }]);
  });

  it("warns about a similar past failure, not about an unrelated one; hits carry joinable ids", async () => {
    const failed = (await trace(AUTH_FAILURE)).trace;
    await trace(PHOTO_SUCCESS);
    const pref = await learn({ predicate: "prefers_refresh_token_lock", args: { scope: "auth" }, description: "serialize auth token refresh with a lock to avoid double rotation", confidence: 0.9 });
    await drainEmbeddings([store]);
    // Each row reports its own vector (the learning's embedding row id differs from its own id here).
    expect((await r().listLearnings({ store, filter: {} })).learnings).toMatchObject([{ id: pref.learning.id, embedding: "vector" }]);
    expect((await r().listTraces({ store, filter: {} })).traces.map((t) => t.embedding)).toEqual(["vector", "vector"]);

    const similar = await recall({ intent: { verb: "repair", target: "auth token refreshing", key_files: ["lib/auth/session.ts"] } }, "a2");
    expect(similar.mode).toBe("hybrid");
    expect(similar.fallback).toBeNull();
    expect(similar.traces[0]).toMatchObject({ id: failed.id, outcome: "failure", match: "vector" });
    expect(similar.guidance.past_failure_warning).toMatchObject({ trace_id: failed.id, key_issue: AUTH_FAILURE.key_issue });
    expect(similar.guidance.aligned_preferences.map((p) => p.learning_id)).toEqual([pref.learning.id]);
    // Ids join back to the tables and to the event log.
    const [row] = await storeSql<{ summary_descriptor: string }>(store, "select summary_descriptor from reasoning_traces where id = ?", [similar.traces[0].id]);
    expect(row.summary_descriptor).toBe(similar.traces[0].summary);
    const [event] = await r().listRecentRecalls({ store, limit: 1 });
    expect(event).toMatchObject({ id: similar.event_id, agentId: "a2", mode: "hybrid", warning: true, hitCount: similar.traces.length + similar.learnings.length });
    expect(event.hits[0]).toMatchObject({ artifact: "trace", refId: failed.id, rank: 1 });

    const unrelated = await recall({ query: "sourdough starter feeding schedule" }, "a2");
    expect(unrelated.traces).toEqual([]);
    expect(unrelated.guidance.past_failure_warning).toBeNull();
    expect(unrelated.guidance.aligned_preferences).toEqual([]);
    // A structured intent is no different: descriptor labels alone do not make a hit.
    const unrelatedIntent = await recall({ intent: { verb: "bake", target: "sourdough bread", shard_type: "kitchen" } }, "a2");
    expect(unrelatedIntent.traces).toEqual([]);
    expect(unrelatedIntent.guidance.past_failure_warning).toBeNull();
  });

  it("the score distribution puts every logged hit in the bin of its score, and counts lexical matches at the 0.500 ceiling", async () => {
    await trace(AUTH_FAILURE);
    await trace(PHOTO_SUCCESS);
    // No worker run: no vectors, so recall matches lexically; a query of the trace's own words scores the ceiling.
    await recall({ query: "auth token refresh", signals: "lexical" });
    await recall({ query: "white balance raw photos", signals: "lexical" });
    const scores = (await r().listRecentRecalls({ store, limit: 10 })).flatMap((e) => e.hits.map((x) => x.score));
    expect(scores.length).toBeGreaterThan(0);
    const d = await r().getScoreDistribution({ store });
    expect(d.hits).toBe(scores.length);
    expect(d.bins).toHaveLength(20);
    expect(d.bins.reduce((a, b) => a + b.count, 0)).toBe(scores.length);
    for (const b of d.bins) expect(b.count).toBe(scores.filter((x) => x >= b.lo && (x < b.hi || (b.hi === 1 && x === 1))).length);
    expect(d.atLexicalCeiling).toBe(scores.filter((x) => x === 0.5).length);
    expect(d.atLexicalCeiling).toBeGreaterThan(0);
    expect(d.rated).toBe(0);
  });

  it("gates by min_score and by recency half-life; identical queries hit the query cache", async () => {
    const fresh = (await trace(AUTH_FAILURE)).trace;
    const old = (await trace({ ...AUTH_FAILURE, shard_type: "api" })).trace;
    await storeSql(store, "update reasoning_traces set last_seen_at = ? where id = ?", [Date.now() - 180 * DAY, old.id]);
    await drainEmbeddings([store]);
    const q = { intent: { verb: "fix", target: "auth token refresh" }, min_score: 0.3 };
    const first = await recall(q);
    expect(first.cache_hit).toBe(false);
    // Two half-lives (90 days each) quarter the old trace's score: below the gate.
    expect(first.traces.map((t) => t.id)).toEqual([fresh.id]);
    await r().updateReflectionSettings({ store, input: { settings: { recency_half_life_days: 0 } }, actor: "test" });
    const noDecay = await recall(q);
    expect(noDecay.cache_hit).toBe(true);
    expect(noDecay.traces.map((t) => t.id).sort()).toEqual([fresh.id, old.id].sort());
    const strict = await recall({ ...q, min_score: 0.99 });
    expect(strict.traces).toEqual([]);
    const capped = await recall({ ...q, top_k: 1 });
    expect(capped.traces).toHaveLength(1);
  });

  it("model fingerprint mismatch: no vector hits, lexical fallback flagged", async () => {
    const failed = (await trace(AUTH_FAILURE)).trace;
    await drainEmbeddings([store]);
    // The store's vectors are said to be another model's (as after a model change).
    await storeSql(store, `update ${env.backend === "pg" ? "store_meta" : "meta"} set value = '0123456789abcdef' where key = 'active_fingerprint'`);
    const res = await recall({ query: "auth token refresh failing with 401" });
    expect(res.mode).toBe("lexical");
    expect(res.fallback).toMatchObject({ reason: "model_mismatch" });
    expect(res.traces.length).toBeGreaterThan(0);
    expect(res.traces.every((t) => t.match === "lexical")).toBe(true);
    expect(res.traces[0].id).toBe(failed.id);
    expect(res.guidance.past_failure_warning?.trace_id).toBe(failed.id);
    expect((await r().listRecentRecalls({ store, limit: 1 }))[0]).toMatchObject({ mode: "lexical", fallbackReason: "model_mismatch" });
  });

  itSqliteOnly("without the sqlite-vec extension vector recall still answers (exact scan) and says the index is unavailable", "the sqlite-vec extension (PostgreSQL without pgvector: tests/pg/recall.test.ts)", async () => {
    await restart({ DUALMIND_DISABLE_VECTORS: "true" });
    const failed = (await trace(AUTH_FAILURE)).trace;
    await drainEmbeddings([store]);
    const res = await recall({ query: "auth token refresh", signals: "vector" });
    expect(res.mode).toBe("vector");
    expect(res.method).toContain("vectors_index_unavailable");
    expect(res.traces[0]).toMatchObject({ id: failed.id, match: "vector" });
  });

  it("a degraded store (backlog above the watermark) answers lexically and says so", async () => {
    await restart({ DUALMIND_EMBED_BACKLOG_WATERMARK: "1" });
    await trace(AUTH_FAILURE);
    await trace(PHOTO_SUCCESS);
    const res = await recall({ query: "white balance raw photos" });
    expect(res.fallback).toMatchObject({ reason: "backlog" });
    expect(res.traces[0].intent.target).toBe("RAW photos white balance");
  });

  it("backpressure: above the store's watermark success traces skip embedding, failures do not; both stay recallable", async () => {
    // One watermark for the whole app: the embed backlog watermark of the config.
    await restart({ DUALMIND_EMBED_BACKLOG_WATERMARK: "1" });
    expect((await r().getReflectionOverview({ store })).settings.backlog_watermark).toBe(1);
    // Two failures waiting for their vectors: the backlog (2) is above the watermark (1).
    await trace({ ...AUTH_FAILURE, key_issue: "first failure in the backlog" });
    await trace({ ...AUTH_FAILURE, key_issue: "second failure in the backlog" });
    const ok = await trace(PHOTO_SUCCESS);
    const bad = await trace(AUTH_FAILURE);
    expect(ok.embedding).toBe("skipped_backpressure");
    expect(bad.embedding).toBe("queued");
    await drainEmbeddings([store]);
    expect((await r().listTraces({ store, filter: { outcome: "success" } })).traces[0].embedding).toBe("skipped_backpressure");
    // Even with vector-only signals, a trace without a vector is found lexically.
    const res = await recall({ query: "raw photos white balance", signals: "vector" });
    expect(res.mode).toBe("vector");
    expect(res.traces[0]).toMatchObject({ id: ok.trace.id, match: "lexical" });
    // Once the backlog has drained, the next write queues the skipped trace again.
    await trace({ ...AUTH_FAILURE, key_issue: "second attempt" });
    await drainEmbeddings([store]);
    expect((await r().listTraces({ store, filter: { outcome: "success" } })).traces[0].embedding).toBe("vector");
  });

  itSqliteOnly("writing a trace or a learning reads no other row: no statement it runs scans the traces, learnings, vectors or embed queue", "SQLite's query plans", async () => {
    for (let i = 0; i < 20; i++) await trace({ ...PHOTO_SUCCESS, intent: { verb: "edit", target: `photo batch ${i}` } });
    await learn({ predicate: "prefers", args: { tool: "darktable" }, description: "edits RAW photos in darktable" });
    await drainEmbeddings([store]);
    await r().updateReflectionSettings({ store, input: { settings: { retention: { ttl_days: 30, max_traces: null } } }, actor: "test" });
    const ran = await statementsRun(getStoreDb({ store }).sqlite, async () => {
      await trace(PHOTO_SUCCESS);
      await trace(AUTH_FAILURE);
      await trace(AUTH_FAILURE);
      await learn({ predicate: "prefers", args: { tool: "rawtherapee" }, description: "edits RAW photos in rawtherapee" });
    });
    const plans = ran.map(({ source, args }) => ({ source, plan: (getStoreDb({ store }).sqlite.prepare(`explain query plan ${source}`).all(...args) as { detail: string }[]).map((p) => p.detail) }));
    expect(plans.filter((p) => p.plan.some((d) => /^SCAN (reasoning_traces|learnings|embeddings|embed_queue)\b/.test(d)))).toEqual([]);
  });

  it("retention on write: a stratified cap keeps every shard/outcome, a TTL removes unseen traces, each with its vectors", async () => {
    for (let i = 0; i < 12; i++) await trace({ ...PHOTO_SUCCESS, intent: { verb: "edit", target: `photo batch ${i}` } }, "a");
    const rare = (await trace(AUTH_FAILURE, "a")).trace;
    await storeSql(store, "update reasoning_traces set last_seen_at = last_seen_at - 100000 where id = ?", [rare.id]);
    await drainEmbeddings([store]);
    await r().updateReflectionSettings({ store, input: { settings: { retention: { max_traces: 10, strategy: "stratified" } } }, actor: "test" });
    // The next write applies the cap (the new trace is kept): 14 traces, 10 left, the only failure among them.
    const newest = (await trace({ ...PHOTO_SUCCESS, intent: { verb: "edit", target: "photo batch 12" } }, "a")).trace;
    const left = (await r().listTraces({ store, filter: { limit: 200 } })).traces;
    expect(left).toHaveLength(10);
    expect(left.map((t) => t.id)).toEqual(expect.arrayContaining([rare.id, newest.id]));
    await drainEmbeddings([store]);
    expect(await count("embeddings", "where kind = 'trace'")).toBe(10);

    await storeSql(store, "update reasoning_traces set last_seen_at = ? where id != ?", [Date.now() - 40 * DAY, rare.id]);
    await r().updateReflectionSettings({ store, input: { settings: { retention: { ttl_days: 30, max_traces: null } } }, actor: "test" });
    const last = (await trace({ ...AUTH_FAILURE, shard_type: "frontend" }, "a")).trace;
    expect((await r().listTraces({ store, filter: {} })).traces.map((t) => t.id).sort()).toEqual([rare.id, last.id].sort());
    expect(await count("embeddings", "where kind = 'trace'")).toBe(1);
    // Their words went from the full-text index too.
    expect((await recall({ query: "photo batch white balance", signals: "lexical" })).traces).toEqual([]);
  });

  it("retention run on demand (CLI `recall retention`): TTL and the stratified cap, vectors and full-text rows with the traces", async () => {
    for (let i = 0; i < 12; i++) await trace({ ...PHOTO_SUCCESS, intent: { verb: "edit", target: `photo batch ${i}` } }, "a");
    const rare = (await trace(AUTH_FAILURE, "a")).trace;
    await storeSql(store, "update reasoning_traces set last_seen_at = last_seen_at - 100000 where id = ?", [rare.id]);
    await drainEmbeddings([store]);
    await r().updateReflectionSettings({ store, input: { settings: { retention: { max_traces: 10, strategy: "stratified" } } }, actor: "test" });
    expect(await r().runTraceRetention({ store })).toEqual({ deleted: 3 });
    const left = (await r().listTraces({ store, filter: { limit: 200 } })).traces;
    expect(left).toHaveLength(10);
    expect(left.map((t) => t.id)).toContain(rare.id);
    expect(await storeSql(store, "select cast(count(*) as integer) as n from embeddings where kind = 'trace'")).toEqual([{ n: 10 }]);

    await storeSql(store, "update reasoning_traces set last_seen_at = ? where id != ?", [Date.now() - 40 * DAY, rare.id]);
    await r().updateReflectionSettings({ store, input: { settings: { retention: { ttl_days: 30, max_traces: null } } }, actor: "test" });
    expect(await r().runTraceRetention({ store })).toEqual({ deleted: 9 });
    expect((await r().listTraces({ store, filter: {} })).traces.map((t) => t.id)).toEqual([rare.id]);
    await sqliteOnlyCheck("the FTS5 rows of deleted traces (PostgreSQL's tsvector is a column of the row)", async () =>
      expect(await storeSql(store, "select count(*) as n from reasoning_traces_fts where reasoning_traces_fts match 'photo'")).toEqual([{ n: 0 }]),
    );
  });

  it(
    "re-embed backfills descriptors of an old version and queues their vectors",
    async () => {
      const t = (await trace(AUTH_FAILURE, "a")).trace;
      await drainEmbeddings([store]);
      await storeSql(store, "update reasoning_traces set summary_descriptor = 'Intent: fix auth (v0 rendering)', descriptor_hash = 'old', descriptor_version = 0 where id = ?", [t.id]);
      // Its vector was made from the old text.
      await storeSql(store, "update embeddings set input_hash = 'old' where kind = 'trace' and ref_id = ?", [t.id]);
      const fp = await getEmbedder().fingerprint;
      const started = await embeddingsBackend().startReembed({ store, configured: fp, onlyStale: true, holdSwitch: false, actor: "test" });
      expect(started).toMatchObject({ started: true, job: { total: 1 } });
      const after = (await r().listTraces({ store, filter: {} })).traces[0];
      expect(after).toMatchObject({ summary_descriptor: t.summary_descriptor, descriptor_hash: t.descriptor_hash, descriptor_version: 1, embedding: "pending" });
      await drainEmbeddings([store]);
      expect((await r().listTraces({ store, filter: {} })).traces[0]).toMatchObject({ embedding: "vector" });
      expect(await governanceSql("select cast(count(*) as integer) as n from audit_log where action = 'store.reembed.backfill'")).toEqual([{ n: 1 }]);
    },
  );

  it(
    "re-embed backfills learning handles of an old version: synthesized ones are re-rendered, and one that now matches merges into it",
    async () => {
      const a = (await learn({ predicate: "prefers_small_commits", args: { max_files: 5 }, description: "keep commits small", confidence: 0.6 }, "a")).learning;
      const b = (await learn({ predicate: "prefers_rebase", args: {}, description: "rebase before merging", confidence: 0.9 }, "b")).learning;
      const stale = "update learnings set semantic_handle = ?, handle_hash = ?, handle_version = 0, predicate = ?, args = ?, description = ? where id = ?";
      await storeSql(store, stale, ["Learning: v0 a", "old-a", a.predicate, JSON.stringify(a.args), a.description, a.id]);
      // b now says what a says, under an old rendering: re-rendered, it is a's twin.
      await storeSql(store, stale, ["Learning: v0 b", "old-b", a.predicate, JSON.stringify(a.args), a.description, b.id]);
      const fp = await getEmbedder().fingerprint;
      await embeddingsBackend().startReembed({ store, configured: fp, onlyStale: true, holdSwitch: false, actor: "test" });
      // The re-embed's audit row counts what its backfill re-rendered.
      expect(await governanceSql("select details from audit_log where action = 'store.reembed.backfill'")).toEqual([{ details: JSON.stringify({ backfilled: 2 }) }]);
      const { learnings } = await r().listLearnings({ store, filter: {} });
      expect(learnings).toHaveLength(1);
      expect(learnings[0]).toMatchObject({ id: a.id, semantic_handle: a.semantic_handle, handle_hash: a.handle_hash, handle_version: a.handle_version, seen_count: 2, confidence: 0.9 });
    },
  );

  it("ratings give precision per time bucket; the rating queue offers unrated hits", async () => {
    await trace(AUTH_FAILURE);
    await trace({ ...AUTH_FAILURE, shard_type: "frontend", key_issue: "login form kept a stale token" });
    await drainEmbeddings([store]);
    await recall({ query: "auth token refresh" });
    await recall({ query: "nothing like anything stored" });
    const queue = await r().listRatingQueue({ store, limit: 10 });
    expect(queue).toHaveLength(2);
    await r().rateRecallHit({ store, input: { hit_id: queue[0].id, relevant: true }, actor: "user:admin" });
    await r().rateRecallHit({ store, input: { hit_id: queue[1].id, relevant: false }, actor: "user:admin" });
    expect(await r().listRatingQueue({ store, limit: 10 })).toEqual([]);
    const [bucket] = await r().getRecallMetrics({ store, bucketMs: DAY, since: 0 });
    expect(bucket).toMatchObject({ recalls: 2, hit_rate: 0.5, rated: 2, precision: 0.5, fallback_rate: 0 });
    expect(bucket.p95_ms).toBeGreaterThanOrEqual(bucket.p50_ms);
    expect(await r().getReflectionOverview({ store })).toMatchObject({
      counts: { traces: 2, failures: 2, learnings: 0, awaiting_vector: 0, skipped_backpressure: 0 },
      totals: { recalls: 2, hit_rate: 0.5, rated: 2, precision: 0.5 },
    });
    await expect(r().rateRecallHit({ store, input: { hit_id: 999, relevant: true }, actor: "x" })).rejects.toThrow(/no recall hit/);
  });
});

describe("reflection API", () => {
  let env: TestEnv;
  let writer: string;
  let reader: string;
  let admin: string;
  /** Store ops and a writer's, a reader's and an admin's tokens. */
  const seed = async () => {
    await seedStore("ops");
    return seedTokens({
      writer: { label: "w", agent_id: "coder", scopes: ["write"] },
      reader: { label: "r", agent_id: "viewer", scopes: ["read"] },
      admin: { label: "a", agent_id: "ops-lead", scopes: ["admin"] },
    });
  };
  beforeEach(async () => {
    const started = await useTestBackend({}, { seed });
    env = started;
    ({ writer, reader, admin } = started.seeded);
  });
  afterEach(async () => env.cleanup());

  const params = { store: "ops" };

  it("records a trace (201, then 200 for the repeat), reads it back by id, and recalls it", async () => {
    const created = await callRoute(tracesRoute.POST, { token: writer, params, body: AUTH_FAILURE });
    expect(created.status).toBe(201);
    expect(created.json.trace).toMatchObject({ agent_id: "coder", outcome: "failure", seen_count: 1 });
    const repeat = await callRoute(tracesRoute.POST, { token: writer, params, body: AUTH_FAILURE });
    expect(repeat.status).toBe(200);
    expect(repeat.json).toMatchObject({ deduped: true, trace: { id: created.json.trace.id, seen_count: 2 } });
    await drainEmbeddings(["ops"]);
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
    const audit = await governanceSql("select actor, reason from audit_log where action = 'reflection.settings.update'");
    expect(audit).toEqual([{ actor: "agent:ops-lead", reason: "noisy warnings" }]);
    const disabled = await callRoute(recallRoute.POST, { token: reader, params, body: { query: "commits" } });
    expect(disabled.status).toBe(409);
    const overview = await callRoute(reflectionRoute.GET, { token: reader, params });
    expect(overview.json).toMatchObject({ store: "ops", settings: { enabled: false }, counts: { learnings: 1, traces: 0 } });
  });
});
