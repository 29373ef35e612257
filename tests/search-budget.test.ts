import { spawnSync } from "node:child_process";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import { getStoreDb, openStoreReaderWithCore } from "@/lib/db/connection";
import { loadQueryBudget, runWithinBudget, startQueryBudget } from "@/lib/db/query-budget";
import { handleMcpPost } from "@/lib/mcp/http";
import { stores } from "@/lib/stores/backend";
import { drainEmbeddings, itSqliteOnly, onPg, searchHere, seedDocument, seedStore, useTestBackend, type TestEnv } from "./backend";
import { prefixAttack, seedPrefixAttackCorpus } from "./fixtures/prefix-attack-corpus";
import { callRoute, restartWith } from "./helpers";

/**
 * The query budget (DUALMIND_QUERY_BUDGET_MS) on both backends: SQLite
 * interrupts the statement (native/query_budget), PostgreSQL sets it as the
 * statement_timeout (tests/pg/search-budget.test.ts has its SQL-level
 * checks). What a user sees must agree: 422 query_too_expensive with a hint,
 * over REST and MCP, and the store answers the next query.
 *
 * What is expensive differs: on SQLite an FTS5 prefix attack (`wq* wq* …`,
 * syntax=fts5, which PostgreSQL refuses as a whole), on PostgreSQL a plain
 * any-word query that every one of 3,000 long documents matches, ranked
 * under a 10 ms budget (the least the config allows). Elsewhere the budget
 * is roomy, so only the expensive query meets it.
 */
const TOKEN = "bootstrap-token-for-budget-tests-0123456789";
/** Far below what the attack takes unbounded on SQLite (4 × `wq*` over 1,600 documents: ~3.5 s). */
const BUDGET_MS = onPg ? 10 : 200;
const ROOMY_MS = onPg ? 60_000 : BUDGET_MS;
const WORDS = ["proxy", "timeout", "route", "cache", "server", "client", "retry", "budget", "index", "query", "vector", "token"];
/** The expensive query on this backend (see above). */
const EXPENSIVE: Record<string, unknown> = onPg ? { q: WORDS.join(" "), match: "any" } : { q: prefixAttack(4), syntax: "fts5" };
/** A cheap query the attack store answers. */
const CHEAP: Record<string, unknown> = onPg ? { q: "proxy" } : { q: "wq1", syntax: "fts5" };

let env: TestEnv;

beforeAll(async () => {
  // The extension is built at install; a worktree made before it existed builds it here (a no-op when fresh).
  if (!onPg) spawnSync(process.execPath, ["scripts/build-native.mjs"], { stdio: "inherit" });
  env = await useTestBackend({ DUALMIND_BOOTSTRAP_TOKEN: TOKEN, DUALMIND_QUERY_BUDGET_MS: String(ROOMY_MS) });
  await seedStore("attack");
  if (onPg) {
    for (let at = 0; at < 3_000; at += 500) {
      const documents = Array.from({ length: 500 }, (_, i) => ({ path: `notes/${at + i}.md`, content: Array.from({ length: 120 }, (_, j) => WORDS[(at + i + j) % WORDS.length]).join(" ") + ` note ${at + i}` }));
      await stores().putDocuments({ store: "attack", input: { documents }, actor: "test" });
    }
  } else seedPrefixAttackCorpus({ store: "attack", documents: 1600 });
  await drainEmbeddings(["attack"]);
  await seedStore("notes");
  await stores().putDocuments({
    store: "notes",
    actor: "test",
    input: {
      documents: Array.from({ length: 30 }, (_, i) => ({ path: `ops/note-${i}.md`, content: `# Note ${i}\n\nRestart nginx after rotating certificate number ${i} on the edge hosts.` })),
    },
  });
  await drainEmbeddings(["notes"]);
}, 300_000);
afterAll(async () => {
  restartWith({ DUALMIND_QUERY_BUDGET_MS: undefined });
  await env.cleanup();
});

/** Run `fn` with the budget at BUDGET_MS (on PostgreSQL it is roomy otherwise, see above). */
async function underBudget<T>(fn: () => Promise<T>): Promise<T> {
  if (!onPg) return fn();
  restartWith({ DUALMIND_QUERY_BUDGET_MS: String(BUDGET_MS) });
  try {
    return await fn();
  } finally {
    restartWith({ DUALMIND_QUERY_BUDGET_MS: String(ROOMY_MS) });
  }
}

const search = (store: string, body: Record<string, unknown>) => callRoute(searchRoute.POST, { token: TOKEN, params: { store }, body });

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
  it("through the stores backend: 422 query_too_expensive, with and without core; the store answers next", async () => {
    for (const extra of [{ mode: "fts" }, { mode: "fts", include_core: true }]) {
      await underBudget(() => expect(searchHere("attack", { ...EXPENSIVE, ...extra })).rejects.toMatchObject({ code: "query_too_expensive", status: 422 }));
    }
    // The connection is usable at once, for reads and writes.
    const next = await searchHere("attack", { ...CHEAP, mode: "fts" });
    expect(next.results.length).toBeGreaterThan(0);
    await seedDocument("attack", "after/ok.md", "written after an interrupt");
    expect((await searchHere("attack", { q: "interrupt", mode: "fts" })).results.map((r) => r.path)).toEqual(["after/ok.md"]);
  });

  it("hybrid answers from its vectors when the full-text part runs out of budget, and says so", async () => {
    const r = await underBudget(() => searchHere("attack", { ...EXPENSIVE, mode: "hybrid" }));
    expect(r.effective_mode).toBe("vector");
    expect(r.fallback).toMatchObject({ reason: "query_budget", message: expect.stringMatching(/query budget.*answered from vectors alone/) });
  });

  it("over REST: the error envelope says how to narrow the query (never a 500)", async () => {
    const r = await underBudget(() => search("attack", { ...EXPENSIVE, mode: "fts" }));
    expect(r.status).toBe(422);
    expect(r.json.error.code).toBe("query_too_expensive");
    expect(r.json.error.message).toMatch(new RegExp(`${BUDGET_MS} ms query budget.*narrow it`));
  });

  it("over MCP: the same envelope", async () => {
    const r = await underBudget(() => mcpCall("search", { store: "attack", ...EXPENSIVE, mode: "fts" }));
    expect(r.isError).toBe(true);
    expect(r.body.error.code).toBe("query_too_expensive");
  });

  itSqliteOnly("a runaway statement on a store connection or a core reader is interrupted and the connection stays usable", "SQLite connections and the query_budget extension (tests/pg/search-budget.test.ts holds the pool's statement limit)", () => {
    const runaway = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c";
    const handle = getStoreDb({ store: "notes" }).sqlite;
    const reader = openStoreReaderWithCore({ handle: getStoreDb({ store: "notes" }), core: getStoreDb({ store: "core" }) });
    try {
      for (const sqlite of [handle, reader]) {
        const budget = startQueryBudget({ hint: "test", budgetMs: 50 });
        expect(() => runWithinBudget({ sqlite, budget, fn: () => sqlite.prepare(runaway).get() })).toThrow(expect.objectContaining({ code: "query_too_expensive" }));
        // A spent budget refuses the request's next statement before it starts.
        expect(() => runWithinBudget({ sqlite, budget, fn: () => sqlite.prepare("select 1").get() })).toThrow(expect.objectContaining({ code: "query_too_expensive" }));
        expect(sqlite.prepare("select count(*) as n from chunks").get()).toEqual({ n: 30 });
      }
    } finally {
      reader.close();
    }
  });

  itSqliteOnly("work with its own budget inside a request's query (a build slice) does not leave the rest of the request without its interrupt", "SQLite connections and the query_budget extension", () => {
    const { sqlite } = getStoreDb({ store: "big" });
    const runaway = "with recursive c(x) as (select 1 union all select x + 1 from c where x < 50000000) select count(*) from c";
    const request = startQueryBudget({ hint: "test", budgetMs: 150 });
    expect(() =>
      runWithinBudget({ sqlite, budget: request, fn: () => {
        // The inner call arms its own, longer deadline and disarms it when done; the request's must then be back.
        runWithinBudget({ sqlite, budget: startQueryBudget({ hint: "slice", budgetMs: 5000 }), fn: () => sqlite.prepare("select 1").get() });
        return sqlite.prepare(runaway).get();
      } }),
    ).toThrow(expect.objectContaining({ code: "query_too_expensive" }));
    expect(runWithinBudget({ sqlite, budget: startQueryBudget({ hint: "test", budgetMs: 1000 }), fn: () => sqlite.prepare("select 41 + 1 as n").get() })).toEqual({ n: 42 });
  });

  itSqliteOnly("without the compiled extension the connection still opens and queries run (structural limits only)", "the SQLite query_budget extension", () => {
    const sqlite = new Database(":memory:");
    try {
      const status = loadQueryBudget({ sqlite, file: "/nonexistent/query_budget.so" });
      expect(status).toMatchObject({ available: false, reason: expect.stringMatching(/missing/) });
      expect(runWithinBudget({ sqlite, budget: startQueryBudget({ hint: "test", budgetMs: 1000 }), fn: () => sqlite.prepare("select 41 + 1 as n").get() })).toEqual({ n: 42 });
    } finally {
      sqlite.close();
    }
  });
});

const FTS5_SYNTAX = "syntax=fts5 is SQLite's FTS5 expression syntax; PostgreSQL refuses it as a whole (checked below)";

describe("syntax=fts5 is structurally limited (400 naming the limit)", () => {
  it("on PostgreSQL syntax=fts5 is refused as a whole, 400 naming syntax (REST and MCP); on SQLite a plain fts5 expression answers", async () => {
    const r = await search("attack", { q: "wq1 OR proxy", syntax: "fts5", mode: "fts" });
    const m = await mcpCall("search", { store: "attack", q: "wq1 OR proxy", syntax: "fts5", mode: "fts" });
    if (onPg) {
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ code: "invalid_request", details: [{ path: "syntax" }] });
      expect(r.json.error.message).toMatch(/syntax=plain/);
      expect(m.isError).toBe(true);
      expect(m.body.error).toMatchObject({ code: "invalid_request", details: [{ path: "syntax" }] });
    } else {
      expect(r.status).toBe(200);
      expect(m.isError).toBe(false);
    }
  });

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
  for (const [name, q, limit] of refused) {
    itSqliteOnly(`${name} → 400`, FTS5_SYNTAX, async () => {
      const r = await search("attack", { q, syntax: "fts5", mode: "fts" });
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe("invalid_request");
      expect(r.json.error.details[0]).toMatchObject({ path: "q", limit });
      expect(r.json.error.message).toMatch(/at most \d+ allowed/);
    });
  }

  itSqliteOnly("the same limit over MCP", FTS5_SYNTAX, async () => {
    const r = await mcpCall("search", { store: "attack", q: prefixAttack(60, "w"), syntax: "fts5", mode: "fts" });
    expect(r.isError).toBe(true);
    expect(r.body.error).toMatchObject({ code: "invalid_request", details: [{ limit: "terms" }] });
  });

  // Counting must be exact at the edge: what FTS5 does not treat as a term is not counted, so these answer until one more term.
  const words = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `wq${from + i}`).join(" OR ");
  for (const [name, within, over] of [
    ["4 long prefixes, phrases and operators", '"wq1zz"* OR wq2zz* OR wq3zz* OR wq6zz* NOT "wq4 wq5"', '"wq1zz"* OR wq2zz* OR wq3zz* OR wq6zz* OR wq7zz* NOT "wq4 wq5"'],
    ["column filters are not terms", `text:wq1 OR {text}: wq2 OR ${words(30, 10)}`, `text:wq1 OR {text}: wq2 OR ${words(31, 10)}`],
    ["a NEAR distance is not a term", `NEAR(wq1 wq2, 10) OR ${words(30, 10)}`, `NEAR(wq1 wq2, 10) OR ${words(31, 10)}`],
  ]) {
    itSqliteOnly(`${name}: within the limit → 200, one more → 400`, FTS5_SYNTAX, async () => {
      expect((await search("attack", { q: within, syntax: "fts5", mode: "fts" })).status).toBe(200);
      expect((await search("attack", { q: over, syntax: "fts5", mode: "fts" })).status).toBe(400);
    });
  }
});

describe("vector and hybrid search cap offset + limit", () => {
  it.each(["vector", "hybrid"])("mode=%s with offset 2500 → 400 over REST and MCP (on SQLite, sqlite-vec's k limit was a 500)", async (mode) => {
    const r = await search("notes", { q: "nginx certificate", mode, offset: 2500 });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: "invalid_request", details: [{ path: "offset", max: 1000 }] });
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
    expect(grouped.json.error.message).toMatch(/group=document serves results up to 1000 deep/);
  });

  it("the refusal says how to page further: with mode=fts and group=chunk", async () => {
    const r = await search("notes", { q: "nginx certificate", mode: "vector", offset: 2500 });
    expect(r.json.error.message).toMatch(/up to 1000 deep.*mode=fts/);
    const grouped = await search("notes", { q: "nginx certificate", mode: "fts", group: "document", offset: 2500 });
    expect(grouped.json.error.message).toMatch(/group=document serves results up to 1000 deep.*group=chunk/);
  });
});
