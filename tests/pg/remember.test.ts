import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import * as rememberRoute from "@/app/api/v1/stores/[store]/remember/route";
import { governance } from "@/lib/backend/governance";
import { resetConfigForTests } from "@/lib/config";
import { closePg, getPg } from "@/lib/db/pg";
import { withStoreTx } from "@/lib/db/pg-store";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { graphBackend } from "@/lib/graph/backend";
import type { RememberResponse } from "@/lib/graph/remember";
import { drainEmbedQueuesPg } from "@/lib/index/embed-queue-pg";
import { EXACT_SCAN_LIMIT } from "@/lib/index/vectors-pg";
import { runTool } from "@/lib/mcp/server";
import { stores } from "@/lib/stores/backend";
import { openStorePg } from "@/lib/stores/engines/pg";
import { startFakeOpenAI } from "../fixtures/fake-openai-server";
import { callRoute, useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

/**
 * Remember on PostgreSQL answers as on SQLite: the same small ops graph is
 * written through graphBackend() on each backend, embedded by that
 * backend's worker, and asked the same questions — the same results in the
 * same order with the same scores. Then what only a PostgreSQL deployment
 * meets: its fallbacks (backlog, provider down, another model), core read
 * only for a token that may read core, the query budget, never a 5xx.
 */

type Backend = "sqlite" | "postgres";
let env: ReturnType<typeof useTempDataDir> | null = null;

async function startOn(backend: Backend, extraEnv: Record<string, string> = {}): Promise<void> {
  env = useTempDataDir({ ...(backend === "postgres" ? { DATABASE_URL: await createTestDatabase() } : {}), ...extraEnv });
  resetEmbedderForTests();
  await stores().ensureStartupStores();
  await stores().createStore({ input: { name: "ops" }, actor: "test" });
}

afterEach(async () => {
  await closePg();
  env?.cleanup();
  env = null;
  resetEmbedderForTests();
});

async function drain(backend: Backend, names: string[]): Promise<void> {
  if (backend === "sqlite") await drainEmbedQueues({ stores: names });
  else {
    const pg = (await getPg())!;
    await drainEmbedQueuesPg({ handles: await Promise.all(names.map((store) => openStorePg({ pg, store }))) });
  }
}

/** The ops graph of tests/graph-remember.test.ts, written through the backend the process runs on. */
async function seedOps(store = "ops") {
  const g = graphBackend();
  const t = (content: string, framework: "debug" | "build" | "conversation", timestamp: number) => g.think({ store, input: { content, framework, timestamp }, actor: "seed" });
  const sawBadGateway = await t("nginx returned 502 bad gateway right after the certificate renewal", "debug", 1_790_000_000_000);
  const reloadFix = await t("reloading nginx picked up the renewed certificate and fixed the 502", "build", 1_790_000_100_000);
  await t("grafana dashboards load slowly on monday mornings", "conversation", 1_789_000_000_000);
  const nginx = await g.createNode({ store, input: { name: "nginx", entity_type: "system", tags: ["proxy"] }, actor: "seed" });
  const certbot = await g.createNode({ store, input: { name: "certbot", entity_type: "tool" }, actor: "seed" });
  const grafana = await g.createNode({ store, input: { name: "grafana", entity_type: "system" }, actor: "seed" });
  const semantic = await g.createFrame({ store, input: { node_id: nginx.id, column: "semantic", properties: { role: "reverse proxy", status: "healthy" } }, actor: "seed" });
  const procedural = await g.createFrame({ store, input: { node_id: nginx.id, column: "procedural", properties: { steps: "renew the certificate then reload nginx" } }, actor: "seed" });
  await g.createFrame({ store, input: { node_id: nginx.id, column: "episodic", properties: { incident: "502 after renewal" } }, actor: "seed" });
  // A second semantic frame that disagrees with the first: nginx carries some inconsistency.
  await g.createFrame({ store, input: { node_id: nginx.id, column: "semantic", properties: { status: "degraded" } }, actor: "seed" });
  await g.linkEvidence({ store, input: { target: "frame", target_id: semantic.id, thought_id: sawBadGateway.id }, actor: "seed" });
  await g.linkEvidence({ store, input: { target: "frame", target_id: procedural.id, thought_id: reloadFix.id }, actor: "seed" });
  const renews = (await g.createOrMergeRelation({ store, input: { from_id: certbot.id, to_id: nginx.id, relationship_type: "renews certificates for", weight: 0.8, confidence: 0.9 }, actor: "seed" })).relation;
  await g.linkEvidence({ store, input: { target: "relation", target_id: renews.id, thought_id: reloadFix.id }, actor: "seed" });
  await g.createOrMergeRelation({ store, input: { from_id: nginx.id, to_id: grafana.id, relationship_type: "proxies", weight: 0.3 }, actor: "seed" });
  const grafanaSlow = await g.listThoughts({ store, filter: { q: "grafana" } });
  const contentById = new Map([sawBadGateway, reloadFix, ...grafanaSlow.thoughts].map((x) => [x.id, x.content]));
  return { nginx, certbot, grafana, sawBadGateway, reloadFix, contentById };
}

const QUERIES = [
  { query: "nginx certificate renewal reload" },
  { query: "grafana dashboards slow", min_edge_weight: 0.2 },
  { query: "nginx", kinds: ["node" as const], candidates: 1 },
  { query: "502 bad gateway", kinds: ["thought" as const] },
  { query: "zeppelin quartz" },
];

/** What a user compares across backends: ids are each backend's own, so results are named by title; evidence by its thoughts' titles. */
function comparable(r: RememberResponse, contentById: Map<string, string>) {
  return {
    mode: r.mode,
    fallback: r.fallback,
    reason: r.reason,
    results: r.results.map((x) => ({
      kind: x.kind,
      title: x.title,
      store: x.store,
      matched_by: x.matched_by,
      semantic_source: x.breakdown.semantic_source,
      via: x.via?.relationship_type ?? null,
      evidence: x.evidence_thought_ids.map((id) => contentById.get(id) ?? id).sort(),
      score: x.score,
      breakdown: { ...x.breakdown, recency: undefined, terms: undefined },
    })),
  };
}

describe("remember on PostgreSQL answers as on SQLite", () => {
  it("ranks the same results with the same scores and breakdowns, once each backend's worker has embedded the graph", async () => {
    const answers: Record<Backend, ReturnType<typeof comparable>[]> = { sqlite: [], postgres: [] };
    const AS_OF = Date.now() + 20 * 3600_000;
    for (const backend of ["sqlite", "postgres"] as const) {
      await startOn(backend);
      const { contentById } = await seedOps();
      await drain(backend, ["ops"]);
      // as_of fixed for both runs (node times are each run's own clock) and after both: an item written after as_of
      // was not there then, so it is set past the nodes this test writes.
      for (const q of QUERIES) answers[backend].push(comparable(await graphBackend().remember({ store: "ops", input: { ...q, as_of: AS_OF } }), contentById));
      await closePg();
      env!.cleanup();
      env = null;
    }
    for (const [i, pg] of answers.postgres.entries()) {
      const lite = answers.sqlite[i];
      expect({ mode: pg.mode, fallback: pg.fallback, reason: pg.reason }, QUERIES[i].query).toEqual({ mode: lite.mode, fallback: lite.fallback, reason: lite.reason });
      // The full-text leg ranks by FTS5's bm25 on both (from stored token counts on PostgreSQL): the same results in
      // the same order, the same scores and breakdowns.
      expect(pg.results.map(({ score: _s, breakdown: _b, ...r }) => r), QUERIES[i].query).toEqual(lite.results.map(({ score: _s, breakdown: _b, ...r }) => r));
      for (const [j, r] of pg.results.entries()) {
        const twin = lite.results[j];
        expect(r.score, `${QUERIES[i].query} ${r.title} score`).toBeCloseTo(twin.score, 4);
        for (const k of ["lexical", "context", "semantic", "episodic", "procedure_match", "edge_weight", "inconsistency"] as const) expect(r.breakdown[k], `${QUERIES[i].query} ${r.title} ${k}`).toBeCloseTo(twin.breakdown[k], 4);
        if (r.breakdown.vector !== null) expect(r.breakdown.vector).toBeCloseTo(twin.breakdown.vector!, 4);
      }
    }
    // The fixture exercises every signal: vectors, expansion with evidence, a conflicting node, an empty answer.
    const first = answers.postgres[0];
    expect(first.mode).toBe("vector+fts");
    expect(first.results.find((r) => r.title === "nginx")!.breakdown.inconsistency).toBeGreaterThan(0);
    expect(answers.postgres[2].results.map((r) => [r.title, r.via])).toEqual([
      ["nginx", null],
      ["certbot", "renews_certificates_for"],
    ]);
    expect(answers.postgres[2].results[1].evidence).toEqual(["reloading nginx picked up the renewed certificate and fixed the 502"]);
    expect(answers.postgres[4]).toMatchObject({ results: [], reason: { code: "below_similarity_floor" } });
  });
});

describe("remember on PostgreSQL says why vectors did not answer", () => {
  it("answers at once by full-text while the graph waits for its vectors (backlog), then by vector", async () => {
    await startOn("postgres");
    await seedOps();
    const waiting = await graphBackend().remember({ store: "ops", input: { query: "nginx certificate renewal" } });
    expect(waiting).toMatchObject({ mode: "fts", fallback: { reason: "backlog" }, reason: { code: "backlog" } });
    expect(waiting.results.map((r) => r.title)).toContain("nginx");
    expect(waiting.results.every((r) => r.breakdown.semantic_source === "lexical")).toBe(true);
    await drain("postgres", ["ops"]);
    const ready = await graphBackend().remember({ store: "ops", input: { query: "nginx certificate renewal", explain: true } });
    expect(ready).toMatchObject({ mode: "vector+fts", fallback: null, reason: null });
    expect(ready.results.every((r) => r.breakdown.semantic_source === "vector")).toBe(true);
    expect(ready.explain!.stages.map((s) => s.stage)).toEqual(expect.arrayContaining(["readiness", "vector", "lexical", "fusion"]));
  });

  it("answers lexically with provider_error when the provider is down, and with model_mismatch when the vectors are another model's: never a 5xx", async () => {
    const fake = await startFakeOpenAI({ dimension: 32 });
    const openai = { DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_TIMEOUT_MS: "1000" };
    try {
      await startOn("postgres", openai);
      await seedOps();
      await drain("postgres", ["ops"]);
      const token = (await governance().createApiToken({ input: { label: "r", agent_id: "r", scopes: ["read"] }, actor: "test" })).token;
      const ask = (body: object) => callRoute(rememberRoute.POST, { token, params: { store: "ops" }, body });
      const up = await ask({ query: "nginx certificate renewal" });
      expect(up.status).toBe(200);
      expect(up.json).toMatchObject({ mode: "vector+fts", fallback: null });

      fake.state.defaultMode = "500";
      // Another query (a query's vector is cached once made).
      const down = await ask({ query: "nginx certificate renewed" });
      expect(down.status).toBe(200);
      expect(down.json).toMatchObject({ mode: "fts", fallback: { reason: "provider_error" }, reason: { code: "provider_error" } });
      expect(down.json.results.map((r: { title: string }) => r.title)).toContain("nginx");
      expect(down.json.results.every((r: { breakdown: { semantic_source: string } }) => r.breakdown.semantic_source === "lexical")).toBe(true);
      fake.state.defaultMode = "ok";

      // Another model configured: the stored vectors are not its own.
      process.env.DUALMIND_EMBED_PROVIDER = "builtin";
      delete process.env.DUALMIND_EMBED_MODEL;
      delete process.env.DUALMIND_EMBED_DIM;
      resetConfigForTests();
      resetEmbedderForTests();
      const other = await ask({ query: "nginx certificate renewal" });
      expect(other.status).toBe(200);
      expect(other.json).toMatchObject({ mode: "fts", fallback: { reason: "model_mismatch" }, reason: { code: "model_mismatch" } });
      expect(other.json.results.length).toBeGreaterThan(0);
    } finally {
      await fake.close();
    }
  });

  it("answers lexically with vectors_unavailable when more thought vectors than the exact scan's limit would be scanned (no pgvector here)", async () => {
    await startOn("postgres");
    await seedOps();
    await drain("postgres", ["ops"]);
    const fp = await getEmbedder().fingerprint;
    const handle = await openStorePg({ pg: (await getPg())!, store: "ops" });
    // EXACT_SCAN_LIMIT + 1 current thought vectors of this model (their values never matter: the scan refuses before reading them).
    await withStoreTx({ handle, work: async (tx) => {
      await tx.execute(sql`insert into thoughts (id, content, framework, timestamp, tags, content_hash, created_by)
        select 'bulk-' || g, 'bulk thought ' || g, 'conversation', 1700000000000 + g, '[]', md5(g::text), 'bulk' from generate_series(1, ${EXACT_SCAN_LIMIT + 1}) g`);
      await tx.execute(sql`insert into embeddings (kind, ref_id, fingerprint_id, input_hash, dimension, task, embedding, embedded_at)
        select 'thought', t.seq, ${fp.id}, t.content_hash, ${fp.dimension}, 'document', '{0}', 0 from thoughts t where t.created_by = 'bulk'`);
    } });
    const r = await graphBackend().remember({ store: "ops", input: { query: "nginx certificate renewal" } });
    expect(r).toMatchObject({ mode: "fts", fallback: { reason: "vectors_unavailable" }, reason: { code: "vectors_unavailable" } });
    expect(r.fallback!.message).toMatch(/exact scan/);
    expect(r.results.map((x) => x.title)).toContain("nginx");
    expect(r.results.every((x) => x.breakdown.semantic_source === "lexical")).toBe(true);
    // Nodes alone are few: their vectors answer.
    expect(await graphBackend().remember({ store: "ops", input: { query: "nginx", kinds: ["node"] } })).toMatchObject({ mode: "vector+fts", fallback: null });
  });

  it("keeps the full-text leg within the query budget: 422 query_too_expensive, not a 500", async () => {
    await startOn("postgres");
    const pg = (await getPg())!;
    const handle = await openStorePg({ pg, store: "ops" });
    const words = ["proxy", "timeout", "route", "cache", "server", "client", "retry", "budget", "index", "query", "vector", "token"];
    await withStoreTx({ handle, work: (tx) =>
      tx.execute(sql`insert into thoughts (id, content, framework, timestamp, tags, content_hash, created_by)
        select gen_random_uuid()::text, (select string_agg(w, ' ') from (select (${`{${words.join(",")}}`}::text[])[1 + (g + j) % 12] as w from generate_series(0, 39) j) s) || ' note ' || g,
          'conversation', 1790000000000 + g, '[]', md5(g::text), 'bulk' from generate_series(1, 20000) g`),
    });
    process.env.DUALMIND_QUERY_BUDGET_MS = "10";
    resetConfigForTests();
    try {
      const token = (await governance().createApiToken({ input: { label: "r", agent_id: "r", scopes: ["read"] }, actor: "test" })).token;
      const r = await callRoute(rememberRoute.POST, { token, params: { store: "ops" }, body: { query: words.join(" "), kinds: ["thought"] } });
      expect(r.status).toBe(422);
      expect(r.json.error).toMatchObject({ code: "query_too_expensive" });
      expect(r.json.error.message).toMatch(/fewer or rarer words/);
    } finally {
      delete process.env.DUALMIND_QUERY_BUDGET_MS;
      resetConfigForTests();
    }
    // A rare word is cheap at any size: within the default budget it answers.
    const rare = await graphBackend().remember({ store: "ops", input: { query: "17", kinds: ["thought"] } });
    // The one row with the word, and (as context) the rows written just before and after it.
    expect(rare.results.filter((x) => x.matched_by.includes("thought_fts"))).toEqual([expect.objectContaining({ kind: "thought", matched_by: ["thought_fts"] })]);
    expect(rare.results[0].matched_by).toEqual(["thought_fts"]);
    expect(rare.results.slice(1).every((x) => x.matched_by.join() === "thought_context" && x.confidence === "low")).toBe(true);
  });
});

describe("remember on PostgreSQL with include_core", () => {
  it("reads core read-only for a token that may read core; refuses a token that may not (403, over REST and MCP)", async () => {
    await startOn("postgres");
    const s = await seedOps();
    const g = graphBackend();
    await g.think({ store: "core", input: { content: "the user prefers dark mode in every dashboard" }, actor: "seed" });
    await g.createNode({ store: "core", input: { name: "nginx", entity_type: "system" }, actor: "seed" });
    await drain("postgres", ["ops", "core"]);
    const pg = (await getPg())!;
    const core = await openStorePg({ pg, store: "core" });
    const snapshot = () => withStoreTx({ handle: core, readOnly: true, work: async (tx) => JSON.stringify(await Promise.all(["thoughts", "kg_node", "embeddings", "embed_queue"].map(async (t) => (await tx.execute(sql`select * from ${sql.identifier(t)} order by 1`)).rows))) });
    const before = await snapshot();

    const mayReadCore = (await governance().createApiToken({ input: { label: "both", agent_id: "both", scopes: ["read"], stores: ["ops", "core"] }, actor: "test" })).token;
    const opsOnly = (await governance().createApiToken({ input: { label: "ops", agent_id: "ops", scopes: ["read"], stores: ["ops"] }, actor: "test" })).token;
    const body = { query: "dark mode dashboard nginx", include_core: true };

    const merged = await callRoute(rememberRoute.POST, { token: mayReadCore, params: { store: "ops" }, body });
    expect(merged.status).toBe(200);
    expect(merged.json.include_core).toBe(true);
    expect(merged.json.results.find((r: { title: string }) => r.title.includes("dark mode"))).toMatchObject({ store: "core", kind: "thought" });
    // core's nginx is the store's nginx: one result, from the store, marked as also in core.
    const nginx = merged.json.results.filter((r: { title: string }) => r.title === "nginx");
    expect(nginx).toEqual([expect.objectContaining({ id: s.nginx.id, store: "ops", also_in_core: true })]);
    expect(await snapshot()).toBe(before);

    const refused = await callRoute(rememberRoute.POST, { token: opsOnly, params: { store: "ops" }, body });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe("forbidden");
    const principal = (await governance().verifyApiToken({ token: opsOnly }))!;
    await expect(runTool({ name: "remember", args: { store: "ops", ...body }, options: { principal } })).rejects.toMatchObject({ code: "forbidden" });
    expect(await runTool({ name: "remember", args: { store: "ops", query: "nginx" }, options: { principal } })).toMatchObject({ include_core: false, mode: "vector+fts" });
    const opsAlone = await callRoute(rememberRoute.POST, { token: opsOnly, params: { store: "ops" }, body: { query: "dark mode dashboard nginx" } });
    expect(opsAlone.status).toBe(200);
    expect(opsAlone.json.results.every((r: { store: string }) => r.store === "ops")).toBe(true);
  });
});
