import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapApp } from "@/lib/bootstrap";
import { closeAllDatabases } from "@/lib/db/connection";
import { createStore } from "@/lib/stores/stores";
import { api, RELIABILITY_TOKEN, startServer, type ApiResult, type RunningServer } from "../fixtures/next-server";
import { prefixAttack, seedPrefixAttackCorpus } from "../fixtures/prefix-attack-corpus";
import { useTempDataDir } from "../helpers";
import { recordTally } from "./summary";

/**
 * One expensive search must not stall the server (issue 14 finding 2): a real
 * `next start` over a store where `wq*` expands to every word, so four prefix
 * terms take seconds unbounded and sixty take minutes.
 */
let env: ReturnType<typeof useTempDataDir>;
let server: RunningServer;
const tally = { requests: 0, badInputsTried: 0, serverErrorsSeen: 0 };

beforeAll(async () => {
  spawnSync(process.execPath, ["scripts/build-native.mjs"], { stdio: "inherit" });
  env = useTempDataDir();
  await bootstrapApp();
  createStore({ input: { name: "attack" }, actor: "test" });
  seedPrefixAttackCorpus({ store: "attack", documents: 1600 });
  closeAllDatabases();
  // No embed worker: nothing else competes for the event loop, so what health waits on is the search.
  server = await startServer({ dataDir: env.dataDir, env: { DUALMIND_QUERY_BUDGET_MS: "200", DUALMIND_EMBED_WORKER: "false" } });
});
afterAll(async () => {
  await server?.kill9();
  recordTally("query budget: expensive searches vs health", tally);
  env.cleanup();
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
    const { result, health } = await withHealthInFlight(call("POST", "/stores/attack/search", { q: prefixAttack(4), syntax: "fts5", mode: "fts" }));
    expect(result.status).toBe(422);
    expect(result.json).toMatchObject({ error: { code: "query_too_expensive", message: expect.stringMatching(/narrow it/) } });
    expect(health.length).toBeGreaterThan(0);
    expect(health.every((s) => s === 200)).toBe(true);
    const next = await call("POST", "/stores/attack/search", { q: "wq1", mode: "fts" });
    expect(next.status).toBe(200);
  });

  it("the issue's attack (60 × w*): refused with 400 naming the limit, health answers", async () => {
    tally.badInputsTried++;
    const { result, health } = await withHealthInFlight(call("POST", "/stores/attack/search", { q: prefixAttack(60, "w"), syntax: "fts5", mode: "fts" }));
    expect(result.status).toBe(400);
    expect(result.json).toMatchObject({ error: { code: "invalid_request", details: [{ path: "q", limit: "terms" }] } });
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
