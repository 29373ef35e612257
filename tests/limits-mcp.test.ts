import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getGovernance } from "@/lib/db/connection";
import { recordRequest, routeLatencySnapshot } from "@/lib/http/request-timer";
import { handleMcpPost } from "@/lib/mcp/http";
import { flushLatencyRollups } from "@/lib/metrics/rollups";
import { seedDocument, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";

/** MCP and metrics limits: made-up tool names, route-key cardinality, JSON-RPC batches. */
let env: TestEnv;
let readToken = "";

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_METRIC_ROUTE_KEYS: "40", DUALMIND_MCP_BATCH_MAX: "5" });
  await seedStore("only");
  await seedDocument("only", "notes/a.md", "# Alpha\n\nThe alpha note about limits and batches.");
  readToken = await seedToken({ label: "r", agent_id: "limit-reader", scopes: ["read"], stores: ["only"] });
});
afterAll(async () => env?.cleanup());

function mcp(body: unknown, contentType = "application/json"): Promise<Response> {
  return handleMcpPost(
    new Request("http://127.0.0.1/api/mcp", {
      method: "POST",
      headers: { accept: "application/json, text/event-stream", "content-type": contentType, authorization: `Bearer ${readToken}` },
      body: typeof body === "string" ? body : JSON.stringify(body),
    }),
  );
}

describe("made-up MCP tool names", () => {
  it("are counted under one key, never echoed whole, and leave the metrics and governance.db bounded", async () => {
    flushLatencyRollups();
    const keysBefore = routeLatencySnapshot().length;
    const longName = (i: number) => `tool-${i}-` + "x".repeat(200_000);
    for (let i = 0; i < 10; i++) {
      // A long name is refused before anything runs or is recorded; the answer is a few hundred bytes, not the 200 KB name.
      const res = await mcp({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: longName(i), arguments: {} } });
      expect(res.status).toBe(400);
      expect((await res.text()).length).toBeLessThan(2000);
    }
    for (let i = 0; i < 20; i++) {
      const res = await mcp({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: `made-up-tool-${i}`, arguments: {} } });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("not_found");
    }
    const snapshot = routeLatencySnapshot();
    expect(snapshot.length).toBeLessThanOrEqual(keysBefore + 1);
    expect(snapshot.find((r) => r.route === "MCP tool (unknown)")?.count).toBe(20);
    expect(snapshot.every((r) => r.route.length <= 120)).toBe(true);
    flushLatencyRollups();
    const routes = getGovernance().sqlite.prepare("select distinct route from metric_rollups").pluck().all() as string[];
    expect(routes.every((r) => r.length <= 120)).toBe(true);
    expect(routes).toContain("MCP tool (unknown)");
  });

  it("route keys stop at DUALMIND_METRIC_ROUTE_KEYS in memory and in the rollups; the rest count as `other`", () => {
    for (let i = 0; i < 200; i++) recordRequest({ route: `made up route ${i}`, status: 200, ms: 1 });
    const snapshot = routeLatencySnapshot();
    expect(snapshot.length).toBeLessThanOrEqual(41);
    const counted = snapshot.filter((r) => r.route.startsWith("made up route")).reduce((n, r) => n + r.count, 0) + (snapshot.find((r) => r.route === "other")?.count ?? 0);
    expect(counted).toBeGreaterThanOrEqual(200);
    flushLatencyRollups();
    const n = getGovernance().sqlite.prepare("select count(distinct route) from metric_rollups").pluck().get() as number;
    expect(n).toBeLessThanOrEqual(41);
  });
});

describe("MCP JSON-RPC batches", () => {
  const search = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "search", arguments: { store: "only", q: "alpha" } } });

  it("a batch over DUALMIND_MCP_BATCH_MAX is refused before any call runs, naming the limit", async () => {
    const res = await mcp(Array.from({ length: 100 }, (_, i) => search(i)));
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: { code: string; message: string; details: { limit?: string }[] } };
    expect(body.error.message).toContain("DUALMIND_MCP_BATCH_MAX");
    expect(body.error.details[0].limit).toBe("DUALMIND_MCP_BATCH_MAX");
  });

  it("the batch and depth limits hold whatever the Content-Type is spelt as (the transport reads the header its own way)", async () => {
    // "\u00a0application/json" is JSON to the MCP transport (its parser trims the no-break space) but did not match
    // a plain /^application\/json/ test, so such a batch once reached the tools unchecked, up to the transport's 100.
    for (const contentType of ["\u00a0application/json", "APPLICATION/JSON; charset=utf-8", "text/plain"]) {
      const res = await mcp(Array.from({ length: 100 }, (_, i) => search(i)), contentType);
      expect(res.status, contentType).toBe(422);
      expect(((await res.json()) as { error: { details: { limit?: string }[] } }).error.details[0].limit).toBe("DUALMIND_MCP_BATCH_MAX");
      const deep = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":${"[".repeat(5000)}${"]".repeat(5000)}}}`;
      expect((await mcp(deep, contentType)).status, contentType).toBe(400);
    }
    // Within the limits, such a request is answered by the transport as before.
    const ok = await mcp([search(1), search(2)], "\u00a0application/json");
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { id: number }[]).map((a) => a.id).sort()).toEqual([1, 2]);
  });

  it("a small batch still runs, one answer per call", async () => {
    const res = await mcp([search(1), search(2)]);
    expect(res.status).toBe(200);
    const answers = (await res.json()) as { id: number; result: { isError?: boolean } }[];
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2]);
    expect(answers.every((a) => !a.result.isError)).toBe(true);
  });
});
