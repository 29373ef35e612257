import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeAllDatabases } from "@/lib/db/connection";
import { stores } from "@/lib/stores/backend";
import { onPg, seedStore, storeSql, useTestBackend, type TestEnv } from "../backend";
import { api, RELIABILITY_TOKEN, startServer, type ApiResult, type RunningServer } from "../fixtures/next-server";
import { prefixAttack, seedPrefixAttackCorpus } from "../fixtures/prefix-attack-corpus";
import { recordTally } from "./summary";

/**
 * One expensive search must not stall the server (issue 14 finding 2): a real
 * `next start` over a store where `wq*` expands to every word, so four prefix
 * terms take seconds unbounded and sixty take minutes. On PostgreSQL
 * (vitest.reliability.pg.config.ts), where FTS5 syntax does not exist, the
 * expensive search is a plain match=any query whose every word is in every
 * document, and the budget is the statement's timeout (tests/pg/search-budget.test.ts
 * has the same in-process).
 */
const PG_WORDS = ["proxy", "timeout", "route", "cache", "server", "client", "retry", "budget", "index", "query", "vector", "token", "shard", "lease", "queue", "chain", "store", "agent", "trace", "frame", "relay", "drift", "batch", "audit"];
/** A search that takes long unbounded (seconds on either backend), and one that does not, on this backend. */
const expensive = onPg ? { q: PG_WORDS.join(" "), mode: "fts", match: "any", group: "chunk" } : { q: prefixAttack(4), syntax: "fts5", mode: "fts" };
const cheap = onPg ? { q: "note7", mode: "fts" } : { q: "wq1", mode: "fts" };

/**
 * On PostgreSQL: 1,000 documents through the ingest, each holding every word of `expensive`, then forty SQL
 * copies of their chunks, so ranking them is real work (41,000 chunks: well past the 250 ms budget on a quiet machine, which 11,000 were not — CI once answered 200) without paying the ingest for every
 * row — the ingest is not what this file tests. The copies say "copy" where the originals say "note", so
 * `cheap` matches one chunk.
 */
async function seedBroadCorpusPg({ store }: { store: string }): Promise<void> {
  for (let at = 0; at < 1000; at += 500) {
    const documents = Array.from({ length: 500 }, (_, i) => ({
      path: `broad/${at + i}.md`,
      content: Array.from({ length: 200 }, (_, j) => PG_WORDS[(at + i + j) % PG_WORDS.length]).join(" ") + ` note${at + i}`,
    }));
    await stores().putDocuments({ store, input: { documents }, actor: "test" });
  }
  await storeSql(
    store,
    "insert into chunks (chunk_id, doc_id, chunk_index, chunk_sha256, chunking_version, start_byte, end_byte, text) " +
      "select c.chunk_id || '-copy-' || g, c.doc_id, c.chunk_index + 1000 * g, c.chunk_sha256, c.chunking_version, c.start_byte, c.end_byte, replace(c.text, 'note', 'copy') " +
      "from chunks c cross join generate_series(1, 40) g",
  );
}

let env: TestEnv;
let server: RunningServer;
const tally = { requests: 0, badInputsTried: 0, serverErrorsSeen: 0 };

beforeAll(async () => {
  spawnSync(process.execPath, ["scripts/build-native.mjs"], { stdio: "inherit" });
  env = await useTestBackend();
  await seedStore("attack");
  if (onPg) await seedBroadCorpusPg({ store: "attack" });
  else seedPrefixAttackCorpus({ store: "attack", documents: 1600 });
  closeAllDatabases();
  // No embed worker: nothing else competes for the event loop, so what health waits on is the search.
  server = await startServer({ dataDir: env.dataDir, env: { DUALMIND_QUERY_BUDGET_MS: onPg ? "250" : "200", DUALMIND_EMBED_WORKER: "false" } });
  // PostgreSQL's corpus (41,000 chunks) takes most of the suite's hook time on a loaded machine: more room than the config's.
}, 300_000);
afterAll(async () => {
  await server?.kill9();
  recordTally(`query budget: expensive searches vs health${onPg ? " (PostgreSQL)" : ""}`, tally);
  await env?.cleanup();
});

async function call(method: string, path: string, body?: unknown): Promise<ApiResult> {
  tally.requests++;
  const r = await api(server.url, method, path, { body });
  if (r.status >= 500) tally.serverErrorsSeen++;
  return r;
}

/**
 * Run `request` while asking /health again and again until it settles: the
 * first health request is in flight while the search is, and every one must
 * be answered.
 */
async function withHealthInFlight(request: Promise<ApiResult>): Promise<{ result: ApiResult; health: number[] }> {
  let settled = false;
  const tracked = request.finally(() => (settled = true));
  const health: number[] = [];
  const probe = (async () => {
    do health.push((await call("GET", "/health")).status);
    while (!settled);
  })();
  const [result] = await Promise.all([tracked, probe]);
  return { result, health };
}

describe("an expensive search while /health is in flight", () => {
  it("within the structural limits: the search is interrupted (422 query_too_expensive), health answers, the store answers next", async () => {
    tally.badInputsTried++;
    const { result, health } = await withHealthInFlight(call("POST", "/stores/attack/search", expensive));
    expect(result.status).toBe(422);
    expect(result.json).toMatchObject({ error: { code: "query_too_expensive", message: expect.stringMatching(/narrow it/) } });
    expect(health.length).toBeGreaterThan(0);
    expect(health.every((s) => s === 200)).toBe(true);
    const next = await call("POST", "/stores/attack/search", cheap);
    expect(next.status).toBe(200);
    expect((next.json as { results: unknown[] }).results.length).toBeGreaterThan(0);
  });

  it("the issue's attack (60 × w*): refused with 400 naming the limit (on PostgreSQL: naming the FTS5 syntax it lacks), health answers", async () => {
    tally.badInputsTried++;
    const { result, health } = await withHealthInFlight(call("POST", "/stores/attack/search", { q: prefixAttack(60, "w"), syntax: "fts5", mode: "fts" }));
    expect(result.status).toBe(400);
    expect(result.json).toMatchObject({ error: { code: "invalid_request", details: [onPg ? { path: "syntax" } : { path: "q", limit: "terms" }] } });
    expect(health.every((s) => s === 200)).toBe(true);
  });

  it("vector search past the depth cap: 400 over REST and MCP", async () => {
    tally.badInputsTried += 2;
    const rest = await call("GET", "/stores/attack/search?q=wq1&mode=vector&offset=2500");
    expect(rest.status).toBe(400);
    expect(rest.json).toMatchObject({ error: { code: "invalid_request", details: [{ path: "offset", max: 1000 }] } });
    tally.requests++;
    const res = await fetch(`${server.url}/api/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${RELIABILITY_TOKEN}`, accept: "application/json, text/event-stream", "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search", arguments: { store: "attack", q: "wq1", mode: "hybrid", offset: 2500 } } }),
    });
    if (res.status >= 500) tally.serverErrorsSeen++;
    const text = await res.text();
    const rpc = JSON.parse(text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data: "))!.slice(6));
    expect(rpc.result.isError).toBe(true);
    expect(JSON.parse(rpc.result.content[0].text).error.code).toBe("invalid_request");
  });
});
