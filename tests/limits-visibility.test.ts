import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as storeHealth } from "@/app/api/v1/stores/[store]/health/route";
import { registerWorker, recordWorkerBatch } from "@/lib/embed/worker-state";
import { runTool } from "@/lib/mcp/server";
import { principalOf, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/** What a token may learn of things that are not its own: other stores through health, provider text. */
let env: TestEnv;
const tokens = { limited: "", admin: "" };

beforeAll(async () => {
  env = await useTestBackend();
  await seedStore("mine");
  await seedStore("secret-plans");
  tokens.limited = await seedToken({ label: "l", agent_id: "limited-reader", scopes: ["read"], stores: ["mine"] });
  tokens.admin = await seedToken({ label: "a", agent_id: "the-admin", scopes: ["admin"] });
  registerWorker({ workerId: "w-visibility", mode: "in_server" });
  recordWorkerBatch({ workerId: "w-visibility", store: "secret-plans", embedded: 3, durationMs: 10, fingerprint: null });
  recordWorkerBatch({ workerId: "w-visibility", store: "secret-plans", embedded: 0, durationMs: 10, error: "cannot reach http://10.1.2.3:8080/v1: connect ECONNREFUSED", fingerprint: null });
});
afterAll(async () => env?.cleanup());

describe("store health for a store-limited token", () => {
  it("names no store the token may not read, and no provider text (REST and MCP)", async () => {
    const rest = await callRoute(storeHealth, { token: tokens.limited, params: { store: "mine" } });
    expect(rest.status, JSON.stringify(rest.json)).toBe(200);
    const mcp = await runTool({ name: "store_health", args: { store: "mine" }, options: { principal: await principalOf(tokens.limited) } });
    for (const body of [rest.json, mcp]) {
      const text = JSON.stringify(body);
      expect(text).not.toContain("secret-plans");
      expect(text).not.toContain("10.1.2.3");
      const w = (body as { workers: { worker_id: string; last_batch_store: string | null; last_error: string | null }[] }).workers.find((x) => x.worker_id === "w-visibility");
      expect(w?.last_batch_store).toBeNull();
      expect(w?.last_error).toBeNull();
    }
  });

  it("an unrestricted admin token still reads it whole", async () => {
    const rest = await callRoute(storeHealth, { token: tokens.admin, params: { store: "mine" } });
    const w = (rest.json as { workers: { worker_id: string; last_batch_store: string | null; last_error: string | null }[] }).workers.find((x) => x.worker_id === "w-visibility");
    expect(w?.last_batch_store).toBe("secret-plans");
    expect(w?.last_error).toContain("10.1.2.3");
  });
});
