import { spawnSync } from "node:child_process";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import { bootstrapApp } from "@/lib/bootstrap";
import { getStoreDb, openStoreReaderWithCore } from "@/lib/db/connection";
import { loadQueryBudget, runWithinBudget, startQueryBudget } from "@/lib/db/query-budget";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { putDocuments } from "@/lib/index/ingest";
import { searchInputSchema, searchStore, type SearchInput } from "@/lib/index/search";
import { handleMcpPost } from "@/lib/mcp/http";
import { createStore, openCoreFor, openStore } from "@/lib/stores/stores";
import { prefixAttack, seedPrefixAttackCorpus } from "./fixtures/prefix-attack-corpus";
import { callRoute, useTempDataDir } from "./helpers";

const TOKEN = "bootstrap-token-for-budget-tests-0123456789";
/** Far below what the attack takes unbounded here (4 × `wq*` over 1,600 documents: ~3.5 s). */
const BUDGET_MS = 200;

let env: ReturnType<typeof useTempDataDir>;

beforeAll(async () => {
  // The extension is built at install; a worktree made before it existed builds it here (a no-op when fresh).
  spawnSync(process.execPath, ["scripts/build-native.mjs"], { stdio: "inherit" });
  env = useTempDataDir({ DUALMIND_BOOTSTRAP_TOKEN: TOKEN, DUALMIND_QUERY_BUDGET_MS: String(BUDGET_MS) });
  await bootstrapApp();
  createStore({ input: { name: "attack" }, actor: "test" });
  seedPrefixAttackCorpus({ store: "attack", documents: 1600 });
  await drainEmbedQueues({ stores: ["attack"] });
  createStore({ input: { name: "notes" }, actor: "test" });
  putDocuments({
    handle: getStoreDb("notes"),
    actor: "test",
    input: {
      documents: Array.from({ length: 30 }, (_, i) => ({ path: `ops/note-${i}.md`, content: `# Note ${i}\n\nRestart nginx after rotating certificate number ${i} on the edge hosts.` })),
    },
  });
  await drainEmbedQueues({ stores: ["notes"] });
}, 120_000);
afterAll(() => env.cleanup());

const search = (store: string, body: Record<string, unknown>) => callRoute(searchRoute.POST, { token: TOKEN, params: { store }, body });
const parse = (body: Record<string, unknown>) => searchInputSchema.parse(body);
/** The domain call as every entry point makes it: the store opened once, core beside it when asked. */
function searchByName({ store, input }: { store: string; input: SearchInput }) {
  const handle = openStore({ store });
  return searchStore({ handle, core: openCoreFor({ handle, includeCore: input.include_core }), input });
}

/** One MCP tools/call through the real endpoint handler; the result's text is the REST body. */
async function mcpCall(name: string, args: Record<string, unknown>) {
  const res = await handleMcpPost(
    new Request("http://127.0.0.1/api/mcp", {
      method: "POST",
      headers: { accept: "application/json, text/event-stream", "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
    }),
  );
  const text = await res.text();
  const json = JSON.parse(text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data: "))!.slice(6));
  const result = json.result as { isError?: boolean; content: { text: string }[] };
  return { isError: !!result.isError, body: JSON.parse(result.content[0].text) };
}

describe("an expensive query is stopped at the query budget", () => {
  it("through the domain function: 422 query_too_expensive, with and without core; the store answers next", async () => {
    for (const extra of [{ mode: "fts" }, { mode: "fts", include_core: true }]) {
      await expect(searchByName({ store: "attack", input: parse({ q: prefixAttack(4), syntax: "fts5", ...extra }) })).rejects.toMatchObject({ code: "query_too_expensive", status: 422 });
    }
    // The connection is usable at once, for reads and writes.
    const next = await searchByName({ store: "attack", input: parse({ q: "wq1", mode: "fts", syntax: "fts5" }) });
    expect(next.results.length).toBeGreaterThan(0);
    putDocuments({ handle: getStoreDb("attack"), input: { path: "after/ok.md", content: "written after an interrupt" }, actor: "test" });
    expect((await searchByName({ store: "attack", input: parse({ q: "interrupt", mode: "fts" }) })).results.map((r) => r.path)).toEqual(["after/ok.md"]);
  });

  it("hybrid answers from its vectors when the full-text part runs out of budget, and says so", async () => {
    const r = await searchByName({ store: "attack", input: parse({ q: prefixAttack(4), syntax: "fts5", mode: "hybrid" }) });
    expect(r.effectiveMode).toBe("vector");
    expect(r.fallback).toMatchObject({ reason: "query_budget", message: expect.stringMatching(/query budget.*answered from vectors alone/) });
  });

  it("over REST: the error envelope says how to narrow the query (never a 500)", async () => {
    const r = await search("attack", { q: prefixAttack(4), syntax: "fts5", mode: "fts" });
    expect(r.status).toBe(422);
    expect(r.json.error.code).toBe("query_too_expensive");
    expect(r.json.error.message).toMatch(new RegExp(`${BUDGET_MS} ms query budget.*narrow it`));
  });

  it("over MCP: the same envelope", async () => {
    const r = await mcpCall("search", { store: "attack", q: prefixAttack(4), syntax: "fts5", mode: "fts" });
    expect(r.isError).toBe(true);
    expect(r.body.error.code).toBe("query_too_expensive");
  });

  it("a runaway statement on a store connection or a core reader is interrupted and the connection stays usable", () => {
    const runaway = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c";
    const handle = getStoreDb("notes").sqlite;
    const reader = openStoreReaderWithCore({ handle: getStoreDb("notes"), core: getStoreDb("core") });
    try {
      for (const sqlite of [handle, reader]) {
        const budget = startQueryBudget({ hint: "test", budgetMs: 50 });
        expect(() => runWithinBudget(sqlite, budget, () => sqlite.prepare(runaway).get())).toThrow(expect.objectContaining({ code: "query_too_expensive" }));
        // A spent budget refuses the request's next statement before it starts.
        expect(() => runWithinBudget(sqlite, budget, () => sqlite.prepare("select 1").get())).toThrow(expect.objectContaining({ code: "query_too_expensive" }));
        expect(sqlite.prepare("select count(*) as n from chunks").get()).toEqual({ n: 30 });
      }
    } finally {
      reader.close();
    }
  });

  it("without the compiled extension the connection still opens and queries run (structural limits only)", () => {
    const sqlite = new Database(":memory:");
    try {
      const status = loadQueryBudget(sqlite, "/nonexistent/query_budget.so");
      expect(status).toMatchObject({ available: false, reason: expect.stringMatching(/missing/) });
      expect(runWithinBudget(sqlite, startQueryBudget({ hint: "test", budgetMs: 1000 }), () => sqlite.prepare("select 41 + 1 as n").get())).toEqual({ n: 42 });
    } finally {
      sqlite.close();
    }
  });
});

describe("syntax=fts5 is structurally limited (400 naming the limit)", () => {
  const refused: [string, string, string][] = [
    ["the issue's attack: 60 one-letter prefix terms", prefixAttack(60, "w"), "terms"],
    ["more than 4 prefix terms", prefixAttack(12), "prefixTerms"],
    ["a one-letter prefix", "w*", "prefixChars"],
    ["a quoted one-letter prefix", '"w" * AND wq1', "prefixChars"],
    ["more than 32 terms", Array.from({ length: 33 }, (_, i) => `wq${i}`).join(" OR "), "terms"],
    ["more than 4 NEAR groups", Array.from({ length: 5 }, (_, i) => `NEAR(wq${i} wq${i + 1}, 5)`).join(" OR "), "nearGroups"],
    ["a phrase longer than 16 words", `"${Array.from({ length: 17 }, (_, i) => `wq${i}`).join(" ")}"`, "phraseTerms"],
    ["a long phrase joined with +", Array.from({ length: 17 }, (_, i) => `wq${i}`).join(" + "), "phraseTerms"],
  ];
  it.each(refused)("%s → 400", async (_name, q, limit) => {
    const r = await search("attack", { q, syntax: "fts5", mode: "fts" });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe("invalid_request");
    expect(r.json.error.details[0]).toMatchObject({ path: "q", limit });
    expect(r.json.error.message).toMatch(/at most \d+ allowed/);
  });

  it("the same limit over MCP", async () => {
    const r = await mcpCall("search", { store: "attack", q: prefixAttack(60, "w"), syntax: "fts5", mode: "fts" });
    expect(r.isError).toBe(true);
    expect(r.body.error).toMatchObject({ code: "invalid_request", details: [{ limit: "terms" }] });
  });

  // Counting must be exact at the edge: what FTS5 does not treat as a term is not counted, so these answer until one more term.
  const words = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `wq${from + i}`).join(" OR ");
  it.each([
    ["4 long prefixes, phrases and operators", '"wq1zz"* OR wq2zz* OR wq3zz* OR wq6zz* NOT "wq4 wq5"', '"wq1zz"* OR wq2zz* OR wq3zz* OR wq6zz* OR wq7zz* NOT "wq4 wq5"'],
    ["column filters are not terms", `text:wq1 OR {text}: wq2 OR ${words(30, 10)}`, `text:wq1 OR {text}: wq2 OR ${words(31, 10)}`],
    ["a NEAR distance is not a term", `NEAR(wq1 wq2, 10) OR ${words(30, 10)}`, `NEAR(wq1 wq2, 10) OR ${words(31, 10)}`],
  ])("%s: within the limit → 200, one more → 400", async (_name, within, over) => {
    expect((await search("attack", { q: within, syntax: "fts5", mode: "fts" })).status).toBe(200);
    expect((await search("attack", { q: over, syntax: "fts5", mode: "fts" })).status).toBe(400);
  });
});

describe("vector and hybrid search cap offset + limit", () => {
  it.each(["vector", "hybrid"])("mode=%s with offset 2500 → 400 over REST and MCP (sqlite-vec's k limit was a 500)", async (mode) => {
    const r = await search("notes", { q: "nginx certificate", mode, offset: 2500 });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: "invalid_request", details: [{ path: "offset", max: 1000 }] });
    expect(r.json.error.message).toMatch(/up to 1000 deep.*mode=fts/);
    const m = await mcpCall("search", { store: "notes", q: "nginx certificate", mode, offset: 2500 });
    expect(m.isError).toBe(true);
    expect(m.body.error.code).toBe("invalid_request");
    // The deepest allowed page answers from vectors, and full-text search by chunk still pages past the cap
    // (documents are grouped from a pool of chunks, so group=document is capped like the vector modes).
    const deepest = await search("notes", { q: "nginx certificate", mode, offset: 990, limit: 10 });
    expect(deepest.status).toBe(200);
    expect(deepest.json.effective_mode).toBe(mode);
    expect((await search("notes", { q: "nginx certificate", mode: "fts", group: "chunk", offset: 2500 })).status).toBe(200);
    const grouped = await search("notes", { q: "nginx certificate", mode: "fts", group: "document", offset: 2500 });
    expect(grouped.status).toBe(400);
    expect(grouped.json.error.message).toMatch(/group=document serves results up to 1000 deep.*group=chunk/);
  });
});
