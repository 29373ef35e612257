import { pgEngine } from "@/lib/db/engine";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { resetConfigForTests } from "@/lib/config";
import { withStoreTx, type PgStoreHandle } from "@/lib/db/pg-store";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { listAuditTail, pgLedger } from "@/lib/governance/audit";
import { measureRecallStats } from "@/lib/metrics/snapshots";
import { drainEmbedQueuesPg } from "@/lib/index/embed-queue-pg";
import { enqueueEmbeddingsOp } from "@/lib/embed/queue";
import { write } from "@/lib/db/port";
import { storesOn, type StoresBackend } from "@/lib/stores/backend";
import { recallOn, type RecallBackend } from "@/lib/recall/backend";
import { openStorePg } from "@/lib/stores/engines/pg";
import { startFakeOpenAI } from "../fixtures/fake-openai-server";
import { useTwoReplicas } from "./helpers";

/**
 * Traces, learnings, recall and reflection settings on PostgreSQL, through
 * stores() on two replicas (separate pools) of one database: what one writes
 * the other recalls, lexically at once and by vector once the embed worker
 * (any replica's) has embedded the queued traces and learnings.
 */
const replicas = useTwoReplicas({ max: 4 });
let a: StoresBackend & RecallBackend;
let b: StoresBackend & RecallBackend;
let handleA: PgStoreHandle;

const loginFailure = {
  intent: { verb: "repair", target: "login flow" },
  shard_type: "auth",
  key_files: ["app/login/page.tsx"],
  outcome: "failure" as const,
  key_issue: "session cookie dropped behind the proxy",
  error_tags: ["cookie", "proxy"],
};

beforeAll(async () => {
  a = { ...storesOn(pgEngine(replicas.a())), ...recallOn(pgEngine(replicas.a())) };
  b = { ...storesOn(pgEngine(replicas.b())), ...recallOn(pgEngine(replicas.b())) };
  await a.createStore({ input: { name: "reflect" }, actor: "test" });
  handleA = await openStorePg({ pg: replicas.a(), store: "reflect" });
});

async function queued(kind: string): Promise<number> {
  return withStoreTx({ handle: handleA, readOnly: true, work: async (tx) => Number(((await tx.execute(sql`select count(*) as n from embed_queue where kind = ${kind}`)).rows[0] as { n: string }).n) });
}

describe("traces and learnings on PostgreSQL", () => {
  it("records a trace sanitized and queued for its vector; the same descriptor again (from another replica) is the same row seen twice", async () => {
    const first = await a.recordTrace({ store: "reflect", agentId: "agent-1", input: { ...loginFailure, key_issue: `${loginFailure.key_issue} (token sk-abcdefghijklmnopqrstuvwx)` } });
    expect(first).toMatchObject({ deduped: false, embedding: "queued", retained: { deleted: 0 } });
    expect(first.trace).toMatchObject({ agent_id: "agent-1", intent: { verb: "repair", target: "login flow" }, outcome: "failure", key_files: ["app/login/page.tsx"], error_tags: ["cookie", "proxy"], seen_count: 1, embedding: "pending", vector: null });
    expect(first.trace.summary_descriptor).not.toContain("sk-abcdefghijklmnopqrstuvwx");
    expect(await queued("trace")).toBe(1);

    const again = await b.recordTrace({ store: "reflect", agentId: "agent-2", input: { ...loginFailure, key_issue: `${loginFailure.key_issue} (token sk-abcdefghijklmnopqrstuvwx)` } });
    expect(again).toMatchObject({ deduped: true, embedding: "unchanged", trace: { id: first.trace.id, seen_count: 2 } });
    expect(await queued("trace")).toBe(1);
  });

  it("two replicas recording one new descriptor at the same moment make one row, seen twice", async () => {
    const input = { intent: { verb: "rotate", target: "signing keys" }, shard_type: "security", outcome: "success" as const, key_issue: "" };
    const [x, y] = await Promise.all([a.recordTrace({ store: "reflect", agentId: "x", input }), b.recordTrace({ store: "reflect", agentId: "y", input })]);
    expect(x.trace.id).toBe(y.trace.id);
    expect([x.deduped, y.deduped].sort()).toEqual([false, true]);
    expect((await a.getTrace({ store: "reflect", id: x.trace.id })).seen_count).toBe(2);
  });

  it("lists traces newest first with filters, reads one by id, and 404s an unknown one", async () => {
    const all = await b.listTraces({ store: "reflect", filter: {} });
    expect(all.total).toBe(2);
    expect(all.traces.map((t) => t.intent.verb)).toEqual(["rotate", "repair"]);
    expect((await b.listTraces({ store: "reflect", filter: { outcome: "failure" } })).traces.map((t) => t.intent.target)).toEqual(["login flow"]);
    expect((await b.listTraces({ store: "reflect", filter: { shard_type: "AUTH" } })).total).toBe(1);
    expect((await b.listTraces({ store: "reflect", filter: { agent_id: "nobody" } })).total).toBe(0);
    await expect(b.getTrace({ store: "reflect", id: 999_999 })).rejects.toMatchObject({ code: "not_found" });
    await expect(b.listTraces({ store: "nowhere", filter: {} })).rejects.toMatchObject({ code: "not_found" });
  });

  it("records learnings with their handle, keeps the higher confidence on a repeat, and lists them by predicate", async () => {
    const made = await a.recordLearning({ store: "reflect", agentId: "agent-1", input: { predicate: "prefers", args: { tool: "pnpm", over: "npm" }, description: "The team prefers pnpm workspaces for monorepos", confidence: 0.6 } });
    expect(made).toMatchObject({ deduped: false, embedding: "queued", learning: { predicate: "prefers", args: { tool: "pnpm", over: "npm" }, confidence: 0.6, embedding: "pending" } });
    const again = await b.recordLearning({ store: "reflect", agentId: "agent-2", input: { predicate: "prefers", args: { tool: "pnpm", over: "npm" }, description: "The team prefers pnpm workspaces for monorepos", confidence: 0.9 } });
    expect(again).toMatchObject({ deduped: true, learning: { id: made.learning.id, confidence: 0.9, seen_count: 2 } });
    await a.recordLearning({ store: "reflect", agentId: "agent-1", input: { predicate: "avoids", args: {}, description: "Friday deploys of the billing service", confidence: 0.7 } });
    expect((await b.listLearnings({ store: "reflect", filter: { predicate: "prefers" } })).learnings.map((l) => l.id)).toEqual([made.learning.id]);
    expect((await b.listLearnings({ store: "reflect", filter: {} })).total).toBe(2);
    expect(await b.getLearning({ store: "reflect", id: made.learning.id })).toMatchObject({ description: "The team prefers pnpm workspaces for monorepos" });
    await expect(b.getLearning({ store: "reflect", id: 424_242 })).rejects.toMatchObject({ code: "not_found" });
    expect(await queued("learning")).toBe(2);
  });
});

describe("recall on PostgreSQL", () => {
  it("recalls at once by full-text (stemmed) while vectors are pending, says why vectors did not answer, and warns of the past failure", async () => {
    const r = await b.recall({ store: "reflect", agentId: "agent-3", input: { query: "repairing the login flows behind a proxy" } });
    expect(r).toMatchObject({ mode: "lexical", fallback: { reason: "backlog" }, reason: { code: "backlog" }, method: "tsvector" });
    expect(r.traces.map((t) => t.intent.target)).toEqual(["login flow"]);
    expect(r.traces[0]).toMatchObject({ match: "lexical", outcome: "failure" });
    expect(r.guidance.past_failure_warning).toMatchObject({ trace_id: r.traces[0].id, intent: { verb: "repair", target: "login flow" } });
    const lexicalOnly = await a.recall({ store: "reflect", agentId: "agent-3", input: { query: "pnpm workspaces", signals: "lexical", kinds: ["learning"] } });
    expect(lexicalOnly).toMatchObject({ mode: "lexical", fallback: null, reason: null, traces: [] });
    expect(lexicalOnly.learnings.map((l) => l.predicate)).toEqual(["prefers"]);
    expect(lexicalOnly.guidance.aligned_preferences.map((p) => p.predicate)).toEqual(["prefers"]);
  });

  it("takes query words as words, never tsquery syntax, and says why an answer is empty", async () => {
    for (const query of ["login & !proxy", "a:* | b", "'); drop table reasoning_traces; --", "\\\\ ( ) <-> !!"]) {
      const r = await a.recall({ store: "reflect", agentId: "q", input: { query, signals: "lexical" } });
      expect(r.reason === null || ["no_match"].includes(r.reason.code)).toBe(true);
    }
    expect((await a.recall({ store: "reflect", agentId: "q", input: { query: "zeppelin quartz", signals: "lexical" } })).reason).toMatchObject({ code: "no_match" });
    await a.createStore({ input: { name: "empty-reflect" }, actor: "test" });
    expect((await a.recall({ store: "empty-reflect", agentId: "q", input: { query: "anything" } })).reason).toMatchObject({ code: "store_empty" });
  });

  it("recalls by vector once a replica's embed worker has embedded the traces and learnings, with provenance per artifact", async () => {
    const handleB = await openStorePg({ pg: replicas.b(), store: "reflect" });
    const drained = await drainEmbedQueuesPg({ handles: [handleB] });
    expect(drained.embedded).toBe(4);
    expect(await queued("trace")).toBe(0);
    const trace = (await a.listTraces({ store: "reflect", filter: { outcome: "failure" } })).traces[0];
    expect(trace).toMatchObject({ embedding: "vector", vector: { task: "document", dim: expect.any(Number), fingerprint_id: expect.any(String) } });
    expect((await a.listLearnings({ store: "reflect", filter: {} })).learnings.every((l) => l.embedding === "vector")).toBe(true);
    const provenance = await withStoreTx({ handle: handleA, readOnly: true, work: async (tx) =>
      (await tx.execute(sql`select artifact_type as t, count(*)::int as n from public.provenance where store = 'reflect' group by 1 order by 1`)).rows,
    });
    expect(provenance).toEqual([
      { t: "learning_vector", n: 2 },
      { t: "reasoning_trace_vector", n: 2 },
    ]);

    const r = await a.recall({ store: "reflect", agentId: "agent-3", input: { query: "repair login flow session cookie proxy", signals: "vector", explain: true } });
    expect(r).toMatchObject({ mode: "vector", fallback: null, method: "exact" });
    expect(r.traces[0]).toMatchObject({ id: trace.id, match: "vector" });
    expect(r.explain!.stages.map((s) => s.stage)).toEqual(expect.arrayContaining(["readiness", "vector", "lexical", "fusion"]));
    const hybrid = await b.recall({ store: "reflect", agentId: "agent-3", input: { intent: { verb: "repair", target: "login flow" } } });
    expect(hybrid).toMatchObject({ mode: "hybrid", method: "exact+tsvector", reason: null });
    expect(hybrid.traces[0].id).toBe(trace.id);
  });

  it("gates by min_score and caps at top_k, and logs every recall with its hits", async () => {
    const strict = await a.recall({ store: "reflect", agentId: "agent-4", input: { query: "repair login flow", min_score: 0.99 } });
    expect(strict.traces).toEqual([]);
    const capped = await a.recall({ store: "reflect", agentId: "agent-4", input: { query: "repair login flow rotate signing keys", top_k: 1, min_score: 0, kinds: ["trace"] } });
    expect(capped.traces).toHaveLength(1);
    const logged = await withStoreTx({ handle: handleA, readOnly: true, work: async (tx) =>
      (await tx.execute(sql`select e.agent_id, e.mode, e.hit_count, (select count(*)::int from recall_event_hits h where h.event_id = e.id) as hits from recall_events e where e.id = ${capped.event_id}`)).rows,
    });
    expect(logged).toEqual([{ agent_id: "agent-4", mode: "hybrid", hit_count: 1, hits: 1 }]);
  });

  it("answers lexically with reason provider_error when the embedding provider is down: never a 5xx", async () => {
    const fake = await startFakeOpenAI({ dimension: 32 });
    const env = { DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_TIMEOUT_MS: "1000" };
    Object.assign(process.env, env);
    resetConfigForTests();
    resetEmbedderForTests();
    try {
      await a.createStore({ input: { name: "reflect-down" }, actor: "test" });
      await a.recordTrace({ store: "reflect-down", agentId: "x", input: loginFailure });
      await drainEmbedQueuesPg({ handles: [await openStorePg({ pg: replicas.a(), store: "reflect-down" })] });
      expect((await a.recall({ store: "reflect-down", agentId: "x", input: { query: "login flow cookie" } })).mode).toBe("hybrid");
      fake.state.defaultMode = "500";
      const r = await b.recall({ store: "reflect-down", agentId: "x", input: { query: "login flow proxy cookie" } });
      expect(r).toMatchObject({ mode: "lexical", fallback: { reason: "provider_error" }, reason: { code: "provider_error" } });
      expect(r.traces.map((t) => t.intent.target)).toEqual(["login flow"]);
    } finally {
      for (const k of Object.keys(env)) delete process.env[k];
      resetConfigForTests();
      resetEmbedderForTests();
      await fake.close();
    }
  });
});

describe("reflection settings and overview on PostgreSQL", () => {
  it("patches settings with an audit row, shows them and the counts in the overview, and refuses recall when disabled", async () => {
    const settings = await a.updateReflectionSettings({ store: "reflect", input: { settings: { top_k: 3, retention: { max_traces: 10 } }, reason: "tighter" }, actor: "admin" });
    expect(settings).toMatchObject({ top_k: 3, min_score: 0.25, retention: { max_traces: 10, ttl_days: null, strategy: "stratified" }, backlog_watermark: expect.any(Number) });
    const overview = await b.getReflectionOverview({ store: "reflect" });
    expect(overview).toMatchObject({ store: "reflect", settings: { top_k: 3 }, counts: { traces: 2, failures: 1, learnings: 2, awaiting_vector: 0, skipped_backpressure: 0 } });
    expect(overview.totals.recalls).toBeGreaterThan(3);
    expect(overview.metrics.reduce((n, m) => n + m.recalls, 0)).toBe(overview.totals.recalls);
    const audit = (await listAuditTail({ handle: pgLedger(replicas.a().db), limit: 20 })).find((r) => r.action === "reflection.settings.update");
    expect(audit).toMatchObject({ actor: "admin", target: "store:reflect", reason: "tighter" });

    await b.updateReflectionSettings({ store: "reflect", input: { settings: { enabled: false } }, actor: "admin" });
    await expect(a.recall({ store: "reflect", agentId: "x", input: { query: "login" } })).rejects.toMatchObject({ code: "conflict" });
    expect((await a.getReflectionOverview({ store: "reflect" })).settings).toMatchObject({ enabled: false, top_k: 3 });
  });

  it("keeps at most max_traces: the cap deletes the surplus and their vectors, never the trace just written", async () => {
    for (let i = 0; i < 11; i++) await a.recordTrace({ store: "reflect", agentId: "bulk", input: { intent: { verb: "build", target: `artifact ${i}` }, shard_type: "ci", outcome: "success" } });
    expect((await a.listTraces({ store: "reflect", filter: {} })).total).toBe(10);
    const latest = await a.recordTrace({ store: "reflect", agentId: "bulk", input: { intent: { verb: "build", target: "artifact last" }, shard_type: "ci", outcome: "success" } });
    expect(latest.retained.deleted).toBe(1);
    expect((await a.getTrace({ store: "reflect", id: latest.trace.id })).intent.target).toBe("artifact last");
    // The rare failure stratum keeps its trace under the stratified strategy.
    expect((await a.listTraces({ store: "reflect", filter: { outcome: "failure" } })).total).toBe(1);
  });
});

describe("the embed queue's kinds on PostgreSQL", () => {
  it("embeds only kinds a loader is registered for: another kind's queued rows wait, untouched, for a process that knows it", async () => {
    await a.createStore({ input: { name: "kinds" }, actor: "test" });
    const handle = await openStorePg({ pg: replicas.a(), store: "kinds" });
    await write(handle, enqueueEmbeddingsOp({ items: [{ kind: "not-a-kind-yet", refId: 7, inputHash: "h" }] }));
    await a.recordLearning({ store: "kinds", agentId: "x", input: { predicate: "likes", description: "tea" } });
    expect(await drainEmbedQueuesPg({ handles: [handle] })).toMatchObject({ embedded: 1 });
    const left = await withStoreTx({ handle, readOnly: true, work: async (tx) => (await tx.execute(sql`select kind, attempts, claimed_by from embed_queue`)).rows });
    expect(left).toEqual([{ kind: "not-a-kind-yet", attempts: 0, claimed_by: null }]);
  });

  it("under backpressure stores a success trace without a vector (still recalled by its words), always queues failures, and catches up once the backlog drains", async () => {
    process.env.DUALMIND_EMBED_BACKLOG_WATERMARK = "2";
    resetConfigForTests();
    try {
      await a.createStore({ input: { name: "pressure" }, actor: "test" });
      const handle = await openStorePg({ pg: replicas.a(), store: "pressure" });
      const trace = (i: number, outcome: "success" | "failure") => a.recordTrace({ store: "pressure", agentId: "x", input: { intent: { verb: "deploy", target: `service ${i}` }, shard_type: "ops", outcome } });
      for (let i = 0; i < 3; i++) expect((await trace(i, "success")).embedding).toBe("queued");
      const skipped = await trace(3, "success");
      expect(skipped).toMatchObject({ embedding: "skipped_backpressure", trace: { embedding: "skipped_backpressure" } });
      expect((await trace(4, "failure")).embedding).toBe("queued");
      const r = await b.recall({ store: "pressure", agentId: "x", input: { query: "deploy service", signals: "lexical", top_k: 10, min_score: 0 } });
      expect(r.traces.map((t) => t.id)).toContain(skipped.trace.id);
      expect((await a.getReflectionOverview({ store: "pressure" })).counts).toMatchObject({ traces: 5, skipped_backpressure: 1, awaiting_vector: 4 });

      await drainEmbedQueuesPg({ handles: [handle] });
      await trace(5, "failure");
      expect((await a.getTrace({ store: "pressure", id: skipped.trace.id })).embedding).toBe("pending");
      await drainEmbedQueuesPg({ handles: [handle] });
      expect((await a.getTrace({ store: "pressure", id: skipped.trace.id })).embedding).toBe("vector");
    } finally {
      delete process.env.DUALMIND_EMBED_BACKLOG_WATERMARK;
      resetConfigForTests();
    }
  });
});

describe("recall quality in a PostgreSQL store's health", () => {
  it("counts the last full minute's recalls, their hit rate, hit age and latency, and the last hour's rated precision, as SQLite's snapshots do", async () => {
    await a.createStore({ input: { name: "quality" }, actor: "test" });
    await a.recordTrace({ store: "quality", agentId: "q", input: { intent: { verb: "rotate", target: "tls certificate" }, shard_type: "ops", outcome: "failure", key_issue: "the certificate expired on a Sunday" } });
    const handle = await openStorePg({ pg: replicas.a(), store: "quality" });
    const before = await measureRecallStats({ handle, now: Date.now() + 60_000 });
    expect(before).toMatchObject({ recallCount: 0, hitRate: null, precision: null });
    const hit = await a.recall({ store: "quality", agentId: "q", input: { query: "rotate the tls certificate", signals: "lexical" } });
    await b.recall({ store: "quality", agentId: "q", input: { query: "sourdough starter feeding", signals: "lexical" } });
    expect(hit.traces.length).toBeGreaterThan(0);
    // One minute on, both recalls are in the last full minute: one found something, one did not.
    const after = await measureRecallStats({ handle, now: Date.now() + 60_000 });
    expect(after).toMatchObject({ recallCount: 2, hitRate: 0.5, precision: null });
    expect(after.avgHitAgeS).toBeGreaterThanOrEqual(0);
    expect(after.recallP95Ms).toBeGreaterThanOrEqual(after.recallP50Ms!);
  });
});
