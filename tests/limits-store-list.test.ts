import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as listStoresRoute } from "@/app/api/v1/stores/route";
import { GET as getStoreRoute } from "@/app/api/v1/stores/[store]/route";
import { handleMcpPost } from "@/lib/mcp/http";
import { createMemorySchema } from "@/lib/index/memories";
import { stores } from "@/lib/stores/backend";
import { getAllStoreStatuses } from "@/lib/metrics/health";
import { onPg, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/** The store list describes only the caller's stores, and cheaply: no walk of each memory folder per call. */
let env: TestEnv;
let limited = "";

beforeAll(async () => {
  env = await useTestBackend();
  for (const s of ["mine", "theirs", "others"]) await seedStore(s);
  limited = await seedToken({ label: "l", agent_id: "limited", scopes: ["read"], stores: ["mine"] });
  await stores().createMemory({ store: "mine", input: createMemorySchema.parse({ path: "a/one", body: "one" }), actor: "seed" });
});
afterAll(async () => env?.cleanup());

async function mcp(body: unknown) {
  const res = await handleMcpPost(
    new Request("http://127.0.0.1/api/mcp", {
      method: "POST",
      headers: { accept: "application/json, text/event-stream", "content-type": "application/json", authorization: `Bearer ${limited}` },
      body: JSON.stringify(body),
    }),
  );
  return res.json();
}

describe("store list", () => {
  it("GET /stores, MCP list_stores and resources/list name only the token's stores; the list leaves memory_files to GET /stores/{store}", async () => {
    const list = await callRoute(listStoresRoute, { token: limited, url: "http://127.0.0.1/api/v1/stores" });
    expect(list.status).toBe(200);
    expect(list.json.stores.map((s: { name: string }) => s.name)).toEqual(["mine"]);
    expect(list.json.stores[0].counts.memories).toBe(1);
    expect(list.json.stores[0].files?.memory_files ?? null).toBeNull();
    const one = await callRoute(getStoreRoute, { token: limited, url: "http://127.0.0.1/api/v1/stores/mine", params: { store: "mine" } });
    expect(one.status).toBe(200);
    expect(one.json.files?.memory_files ?? null).toBe(onPg ? null : 1);

    const tool = await mcp({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_stores", arguments: {} } });
    expect(tool.result.structuredContent.stores.map((s: { name: string }) => s.name)).toEqual(["mine"]);
    const resources = await mcp({ jsonrpc: "2.0", id: 2, method: "resources/list", params: {} });
    expect(resources.result.resources.map((r: { uri: string }) => r.uri)).toEqual(["dualmind://stores", "dualmind://stores/mine"]);
  });

  it("a list of many stores lets other work run between stores: it never holds the event loop for the whole list", async () => {
    for (let i = 0; i < 6; i++) await seedStore(`many-${i}`);
    let served = 0;
    let done = false;
    const list = stores()
      .listStores()
      .then((l) => ((done = true), l));
    // Another request's turn, queued behind the list: each turn it gets is counted while the list is still going.
    const tick = () => void setImmediate(() => (done ? undefined : (served++, tick())));
    tick();
    const listed = await list;
    expect(listed.length).toBeGreaterThanOrEqual(9);
    expect(served).toBeGreaterThanOrEqual(listed.length - 1);
  });

  it("the stores' statuses (metrics, the status watch, the dashboards) let other work run between stores too", async () => {
    for (let i = 0; i < 6; i++) await seedStore(`watched-${i}`);
    let served = 0;
    let done = false;
    const statuses = getAllStoreStatuses().then((l) => ((done = true), l));
    const tick = () => void setImmediate(() => (done ? undefined : (served++, tick())));
    tick();
    const all = await statuses;
    expect(all.length).toBeGreaterThanOrEqual(9);
    expect(served).toBeGreaterThanOrEqual(all.length - 1);
  });
});
