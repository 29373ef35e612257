/**
 * Golden answers for every reason a retrieval can be empty or weak (issue 16
 * part 4), through the real routes (REST and MCP) over real SQLite files:
 * store_empty, no_match, below_similarity_floor, backlog (with its count),
 * model_mismatch, provider_error (tests/retrieval-provider-faults.test.ts
 * covers it on every path), and the mapping of vectors_unavailable. Also:
 * an empty query is a 400 for search, snippets are text (an HTML document's
 * tags never reach a snippet), group=document returns each document once
 * with its passages, and explain=true shows each stage.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as documentsRoute from "@/app/api/v1/stores/[store]/documents/route";
import { POST as recallPOST } from "@/app/api/v1/stores/[store]/recall/route";
import { POST as rememberPOST } from "@/app/api/v1/stores/[store]/remember/route";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import type { AgentPrincipal } from "@/lib/auth/tokens";
import { clearQueryVectorCache } from "@/lib/embed/query";
import { createMcpServer } from "@/lib/mcp/server";
import { answerReason } from "@/lib/retrieval";
import { drainEmbeddings, onPg, seedStore, seedThought, seedTrace, useTestBackend, type TestEnv } from "./backend";
import { callRoute, restartWith } from "./helpers";

const TOKEN = "bootstrap-token-for-reason-tests-0123456789";
const STORE = "golden";
const params = { store: STORE };
const principal: AgentPrincipal = { tokenId: null, agentId: "golden-agent", label: "golden", scopes: ["write"], stores: [STORE] };

const DOCS = [
  { path: "ops/nginx.md", content: "# Reverse proxy\n\nRestart nginx after rotating the TLS certificate on the edge hosts." },
  { path: "ops/postgres.md", content: "# Database upkeep\n\nRun VACUUM ANALYZE weekly on the large Postgres tables." },
  { path: "kitchen/bread.md", content: "# Sourdough\n\nFeed the starter twice a day and keep it warm." },
];

let env: TestEnv;

async function search(body: Record<string, unknown>) {
  const r = await callRoute(searchRoute.POST, { token: TOKEN, params, body });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.json;
}
const recall = async (body: Record<string, unknown>) => (await callRoute(recallPOST, { token: TOKEN, params, body })).json;
const remember = async (body: Record<string, unknown>) => (await callRoute(rememberPOST, { token: TOKEN, params, body })).json;

async function put(docs: { path: string; content: string }[]) {
  const r = await callRoute(documentsRoute.PUT, { method: "PUT", token: TOKEN, params, body: { documents: docs } });
  expect(r.status).toBe(200);
}

async function mcpCall(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer({ principal }).connect(serverSide);
  const client = new Client({ name: "golden-test", version: "1.0.0" });
  await client.connect(clientSide);
  try {
    return (await client.callTool({ name, arguments: args })) as CallToolResult;
  } finally {
    await client.close();
  }
}

const seed = () => seedStore(STORE);
beforeEach(async () => {
  env = await useTestBackend({ DUALMIND_BOOTSTRAP_TOKEN: TOKEN }, { seed });
  clearQueryVectorCache();
});
afterEach(async () => {
  restartWith({ DUALMIND_EMBED_BACKLOG_WATERMARK: undefined, DUALMIND_EMBED_MODEL: undefined, DUALMIND_EMBED_DIM: undefined });
  await env.cleanup();
});

describe("an empty store", () => {
  it("says store_empty on search (every mode), recall and remember", async () => {
    for (const mode of ["fts", "vector", "hybrid"]) {
      const r = await search({ q: "nginx certificate", mode });
      expect(r.results).toEqual([]);
      expect(r.reason).toMatchObject({ code: "store_empty" });
    }
    const rc = await recall({ query: "rotate the certificate" });
    expect([...rc.traces, ...rc.learnings]).toEqual([]);
    expect(rc.reason).toMatchObject({ code: "store_empty" });
    const rm = await remember({ query: "certificate" });
    expect(rm.results).toEqual([]);
    expect(rm.reason).toMatchObject({ code: "store_empty" });
  });
});

describe("a store with documents", () => {
  beforeEach(async () => {
    await put(DOCS);
  });

  it("says no_match when no word matches (fts), and answers with no reason when something does", async () => {
    const none = await search({ q: "zeppelin", mode: "fts" });
    expect(none.results).toEqual([]);
    expect(none.reason).toMatchObject({ code: "no_match" });
    const some = await search({ q: "nginx", mode: "fts" });
    expect(some.results[0].path).toBe("ops/nginx.md");
    expect(some.reason).toBeNull();
  });

  it("leaves vector neighbours below the similarity floor out, and says below_similarity_floor", async () => {
    await drainEmbeddings([STORE]);
    const r = await search({ q: "qqqq zzzz", mode: "vector" });
    expect(r.effective_mode).toBe("vector");
    expect(r.results).toEqual([]);
    expect(r.vectors.below_floor).toBeGreaterThan(0);
    expect(r.reason).toMatchObject({ code: "below_similarity_floor" });
    // A real query clears the floor and answers.
    const real = await search({ q: "restart nginx certificate", mode: "vector" });
    expect(real.results[0].path).toBe("ops/nginx.md");
    expect(real.results.every((h: { score: number }) => h.score >= real.vectors.similarity_floor)).toBe(true);
  });

  it("says backlog, with the count, when the embed backlog is over the watermark", async () => {
    restartWith({ DUALMIND_EMBED_BACKLOG_WATERMARK: "1" });
    const r = await search({ q: "zeppelin", mode: "hybrid" });
    expect(r.effective_mode).toBe("fts");
    expect(r.results).toEqual([]);
    expect(r.reason).toMatchObject({ code: "backlog", count: 3 });
    expect(r.fallback).toMatchObject({ reason: "backlog", count: 3 });
    // A weak (lexical) answer with hits says so too.
    const weak = await search({ q: "nginx", mode: "vector" });
    expect(weak.results[0].path).toBe("ops/nginx.md");
    expect(weak.reason).toMatchObject({ code: "backlog", count: 3 });
  });

  it("says model_mismatch when the configured model is not the store's", async () => {
    await drainEmbeddings([STORE]);
    restartWith({ DUALMIND_EMBED_DIM: "256", DUALMIND_EMBED_MODEL: "hash-256" });
    const r = await search({ q: "zeppelin", mode: "vector" });
    expect(r.effective_mode).toBe("fts");
    expect(r.reason).toMatchObject({ code: "model_mismatch" });
  });

  it("refuses an empty or blank query with 400 invalid_request (REST GET and POST, MCP)", async () => {
    for (const q of ["", "   "]) {
      const post = await callRoute(searchRoute.POST, { token: TOKEN, params, body: { q } });
      expect(post.status).toBe(400);
      expect(post.json.error.code).toBe("invalid_request");
      const get = await callRoute(searchRoute.GET, { token: TOKEN, params, url: `http://127.0.0.1/api/v1/stores/${STORE}/search?q=${encodeURIComponent(q)}` });
      expect(get.status).toBe(400);
    }
    const missing = await callRoute(searchRoute.POST, { token: TOKEN, params, body: { mode: "fts" } });
    expect(missing.status).toBe(400);
    const tool = await mcpCall("search", { store: STORE, q: " " });
    expect(tool.isError).toBe(true);
  });

  it("gives snippets as text: an HTML document's tags and entities never reach a snippet", async () => {
    await put([
      {
        path: "site/index.html",
        content: '<!doctype html><html><head><style>p { color: red }</style></head><body><div class="hero"><p>Our <b>lighthouse</b> &amp; harbour <a href="https://x.test/">guide</a></p></div></body></html>',
      },
      { path: "notes/mixed.md", content: "The **lighthouse** keeper <span style=\"color:red\">logs</span> every [storm](https://x.test/storm)." },
    ]);
    const r = await search({ q: "lighthouse", mode: "fts" });
    expect(r.results.map((h: { path: string }) => h.path).sort()).toEqual(["notes/mixed.md", "site/index.html"]);
    for (const h of r.results) {
      expect(h.snippet).not.toMatch(/<[a-z/!]|&amp;|\*\*|\]\(/i);
      // The highlight still points at the word.
      const [start, end] = h.highlights[0];
      expect(h.snippet.slice(start, end).toLowerCase()).toBe("lighthouse");
    }
    const html = r.results.find((h: { path: string }) => h.path === "site/index.html");
    expect(html.snippet).toContain("Our lighthouse & harbour guide");
  });
});

describe("group=document and explain", () => {
  beforeEach(async () => {
    // One long document whose many chunks mention the word, and a short one that mentions it once.
    const long = Array.from({ length: 40 }, (_, i) => `## Part ${i}\n\n${"Lanterns need oil. ".repeat(30)}The keeper trims the lantern wick in part ${i}.`).join("\n\n");
    await put([
      { path: "manual/lantern.md", content: `# Lantern manual\n\n${long}` },
      { path: "notes/shed.md", content: "# Shed\n\nA spare lantern hangs in the shed." },
    ]);
    await drainEmbeddings([STORE]);
  });

  it("returns each document once, with its best passages and how many chunks matched", async () => {
    const chunks = await search({ q: "lantern", mode: "fts", group: "chunk", limit: 50 });
    const manualChunks = chunks.results.filter((h: { path: string }) => h.path === "manual/lantern.md").length;
    expect(manualChunks).toBeGreaterThan(3);
    const docs = await search({ q: "lantern", mode: "hybrid", group: "document", explain: true });
    expect(docs.group).toBe("document");
    const paths = docs.results.map((h: { path: string }) => h.path);
    expect(paths).toEqual([...new Set(paths)]);
    expect(paths.sort()).toEqual(["manual/lantern.md", "notes/shed.md"]);
    const manual = docs.results.find((h: { path: string }) => h.path === "manual/lantern.md");
    expect(manual.matched_chunks).toBeGreaterThan(3);
    expect(manual.passages.length).toBe(3);
    expect(manual.passages[0].chunk_id).toBe(manual.chunk_id);
    expect(manual.signals.document.chunks).toBe(manual.matched_chunks);
    expect(manual.signals.why).toMatch(/best of \d+ matching chunk/);
  });

  it("explain=true shows each stage with its candidates, and why each hit ranked where it did", async () => {
    const r = await search({ q: "spare lantern", mode: "hybrid", explain: true });
    const stages = r.explain.stages.map((s: { stage: string }) => s.stage);
    // The default groups by document, so grouping is a stage too.
    expect(stages).toEqual(["readiness", "vector", "lexical", "fusion", "filters", "grouping"]);
    const lexical = r.explain.stages.find((s: { stage: string }) => s.stage === "lexical");
    // What each backend's full-text engine was asked: FTS5's MATCH expression, PostgreSQL's tsquery (its own scoring named).
    expect(lexical.detail).toContain(onPg ? "'spare' | 'lantern'" : '"spare" OR "lantern"');
    expect(lexical.candidates).toBeGreaterThan(0);
    expect(lexical.top[0]).toMatchObject({ rank: 1, key: expect.stringMatching(/^golden:\d+$/) });
    const vector = r.explain.stages.find((s: { stage: string }) => s.stage === "vector");
    expect(vector.candidates).toBeGreaterThan(0);
    expect(vector.detail).toMatch(/below the similarity floor/);
    const fusion = r.explain.stages.find((s: { stage: string }) => s.stage === "fusion");
    expect(fusion.detail).toMatch(/weighted reciprocal rank fusion/);
    const grouping = r.explain.stages.at(-1);
    expect(grouping.top[0].key).toBe("golden:notes/shed.md");
    expect(grouping.top[0].score).toBeCloseTo(r.results[0].score, 5);
    expect(r.results[0].path).toBe("notes/shed.md");
    // Both backends rank full-text by FTS5's bm25 (PostgreSQL from its stored statistics).
    expect(r.results[0].signals.why).toContain("bm25 rank 1");
    expect(r.results[0].signals.why).toMatch(/lexical document rank 1/);
    // Without explain, none of it is computed or sent.
    const plain = await search({ q: "spare lantern", mode: "hybrid" });
    expect(plain.explain).toBeUndefined();
    expect(plain.results[0].signals).toBeUndefined();
  });
});

describe("explain=true on recall and remember (REST and MCP)", () => {
  beforeEach(async () => {
    await seedTrace(STORE, { intent: { verb: "rotate", target: "tls certificate" }, shard_type: "ops", outcome: "failure", key_issue: "nginx kept the old certificate until restarted" }, "a");
    await seedThought(STORE, { content: "Rotating the TLS certificate needs an nginx reload afterwards." }, "a");
    await drainEmbeddings([STORE]);
  });

  it("recall shows its readiness, vector, lexical and ranking stages, and only when asked", async () => {
    const r = await recall({ query: "rotate the tls certificate", explain: true });
    expect(r.traces.length).toBe(1);
    const stages = r.explain.stages.map((s: { stage: string }) => s.stage);
    // Every vector leg runs before the lexical ones, on both backends (a refused exact scan turns the whole answer lexical).
    expect(stages).toEqual(["readiness", "vector", "vector", "lexical", "lexical", "fusion"]);
    const lexical = r.explain.stages.find((s: { stage: string; detail: string }) => s.stage === "lexical" && s.detail.startsWith("trace"));
    expect(lexical.candidates).toBe(1);
    expect(lexical.top[0].key).toBe(`trace:${r.traces[0].id}`);
    const fusion = r.explain.stages.at(-1);
    expect(fusion.top[0]).toMatchObject({ key: `trace:${r.traces[0].id}`, score: r.traces[0].score });
    expect((await recall({ query: "rotate the tls certificate" })).explain).toBeUndefined();
    const tool = await mcpCall("recall", { store: STORE, query: "rotate the tls certificate", explain: true });
    expect(tool.isError).toBeFalsy();
    expect((tool.structuredContent as { explain: { stages: unknown[] } }).explain.stages.length).toBe(stages.length);
  });

  it("remember shows each source's candidates and the fused ranking, and only when asked", async () => {
    const r = await remember({ query: "tls certificate reload", explain: true });
    expect(r.results.length).toBeGreaterThan(0);
    const stages = r.explain.stages.map((s: { stage: string }) => s.stage);
    expect(stages).toEqual(["readiness", "vector", "lexical", "filters", "fusion"]);
    const lexical = r.explain.stages.find((s: { stage: string }) => s.stage === "lexical");
    // The match each dialect ran: FTS5's quoted word; on PostgreSQL, FTS5's own porter token scored by bm25 from the stored counts.
    expect(lexical.detail).toContain(onPg ? "certif" : '"certificate"');
    if (onPg) expect(lexical.detail).toContain("ranked by FTS5's bm25");
    expect(lexical.candidates).toBeGreaterThan(0);
    const fusion = r.explain.stages.at(-1);
    expect(fusion.top[0]).toMatchObject({ key: `${STORE}:${r.results[0].kind}:${r.results[0].id}`, score: r.results[0].score });
    expect((await remember({ query: "tls certificate reload" })).explain).toBeUndefined();
    const tool = await mcpCall("remember", { store: STORE, query: "tls certificate reload", explain: true });
    expect(tool.isError).toBeFalsy();
    expect((tool.structuredContent as { explain: { stages: unknown[] } }).explain.stages.map((s) => (s as { stage: string }).stage)).toEqual(stages);
  });
});

describe("reasons as a rule", () => {
  // vectors_unavailable has no store state that produces it today (sqlite-vec missing still scans vectors exactly),
  // so its rule is checked directly: a fallback reason is the answer's reason, whether it found something or not.
  it("an answer's reason is its fallback's, and store_empty wins over everything when nothing is stored", () => {
    const fallback = { reason: "vectors_unavailable" as const, message: "no vectors here" };
    expect(answerReason({ found: 2, searchable: 1, fallback, belowFloor: 0 })).toMatchObject({ code: "vectors_unavailable" });
    expect(answerReason({ found: 0, searchable: 1, fallback, belowFloor: 5 })).toMatchObject({ code: "vectors_unavailable" });
    expect(answerReason({ found: 0, searchable: 0, fallback, belowFloor: 0 })).toMatchObject({ code: "store_empty" });
    expect(answerReason({ found: 3, searchable: 1, fallback: null, belowFloor: 9 })).toBeNull();
  });
});
