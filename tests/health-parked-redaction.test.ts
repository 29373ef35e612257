import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as storeHealth } from "@/app/api/v1/stores/[store]/health/route";
import { runTool } from "@/lib/mcp/server";
import { principalOf, seedStore, seedToken, storeSql, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/** Provider text below admin scope: every place a health report quotes it, not only the live provider error. */
let env: TestEnv;
const tokens = { reader: "", admin: "" };
const PROVIDER_REPLY = "provider rejected the request (400) at http://10.9.8.7:8080/v1/embeddings: internal-tenant-42 input too long";

beforeAll(async () => {
  env = await useTestBackend();
  await seedStore("notes");
  tokens.reader = await seedToken({ label: "r", agent_id: "reader", scopes: ["read"] });
  tokens.admin = await seedToken({ label: "a", agent_id: "the-admin", scopes: ["admin"] });
  // An item parked long ago on the provider's reply; the provider itself is fine now (no live provider error).
  await storeSql("notes", "insert into embed_queue (kind, ref_id, input_hash, enqueued_at, attempts, next_attempt_at, last_error, parked_at) values ('chunk', 424242, 'h', 1, 5, 1, ?, 2)", [PROVIDER_REPLY]);
});
afterAll(async () => env?.cleanup());

describe("parked items in store health", () => {
  it("a read token sees the kind of failure of a parked item, not the provider's text (REST and MCP)", async () => {
    const rest = await callRoute(storeHealth, { token: tokens.reader, params: { store: "notes" } });
    expect(rest.status, JSON.stringify(rest.json)).toBe(200);
    const mcp = await runTool({ name: "store_health", args: { store: "notes" }, options: { principal: await principalOf(tokens.reader) } });
    for (const body of [rest.json, mcp]) {
      const parked = (body as { parked: { ref_id: number; last_error: string | null }[] }).parked.find((p) => p.ref_id === 424242);
      expect(parked?.last_error).toMatch(/^provider bad_request/);
      expect(JSON.stringify(body)).not.toContain("10.9.8.7");
    }
  });

  it("an admin token reads the parked item's error whole", async () => {
    const rest = await callRoute(storeHealth, { token: tokens.admin, params: { store: "notes" } });
    const parked = (rest.json as { parked: { ref_id: number; last_error: string | null }[] }).parked.find((p) => p.ref_id === 424242);
    expect(parked?.last_error).toBe(PROVIDER_REPLY);
  });
});
