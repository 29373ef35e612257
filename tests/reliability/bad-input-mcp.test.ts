import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { toAppError } from "@/lib/api/route";
import type { AgentPrincipal } from "@/lib/auth/tokens";
import { governance } from "@/lib/backend/governance";
import { handleMcpPost } from "@/lib/mcp/http";
import { runTool } from "@/lib/mcp/server";
import { MCP_TOOLS, type ToolDef } from "@/lib/mcp/tools";
import { onPg, principalOf, seedStore, seedToken, useTestBackend, type TestEnv } from "../backend";
import { snapshotDatabases, snapshotPgDatabase } from "./db-snapshot";
import { recordTally } from "./summary";

const STORE = "rel";
let env: TestEnv;
const tokens = { admin: "", read: "", otherStore: "", revoked: "" };
const principals = {} as Record<"admin" | "read" | "otherStore", AgentPrincipal>;
let tried = 0;
let serverErrors = 0;

beforeAll(async () => {
  // On SQLite, and on PostgreSQL in vitest.reliability.pg.config.ts (DM_TEST_BACKEND=pg: a fresh database).
  env = await useTestBackend();
  await seedStore(STORE);
  await seedStore("other");
  tokens.admin = await seedToken({ label: "a", agent_id: "mcp-admin", scopes: ["admin"] });
  tokens.read = await seedToken({ label: "r", agent_id: "mcp-reader", scopes: ["read"] });
  tokens.otherStore = await seedToken({ label: "o", agent_id: "mcp-other", scopes: ["admin"], stores: ["other"] });
  const revoked = await governance().createApiToken({ input: { label: "x", agent_id: "mcp-gone", scopes: ["admin"] }, actor: "test" });
  tokens.revoked = revoked.token;
  await governance().revokeApiToken({ id: revoked.info.id, actor: "test" });
  for (const k of ["admin", "read", "otherStore"] as const) principals[k] = await principalOf(tokens[k]);
});
afterAll(async () => {
  recordTally("bad input: every MCP tool", { requests: tried, badInputsTried: tried, serverErrorsSeen: serverErrors });
  await env?.cleanup();
});

/** Row counts of every table of the backend (and the data dir's listing): "nothing written" means this does not change. */
const snapshot = (): Promise<string> => (onPg ? snapshotPgDatabase({ dataDir: env.dataDir }) : Promise.resolve(snapshotDatabases({ dataDir: env.dataDir, stores: [STORE, "other"] })));
const shapeOf = (t: ToolDef): Record<string, unknown> => (t.input instanceof z.ZodObject ? (t.input.shape as Record<string, unknown>) : {});

/** Run a tool the way the MCP server does and return the HTTP status its error maps to (200 when it ran). */
async function statusOf(t: ToolDef, principal: AgentPrincipal, args: Record<string, unknown> | undefined): Promise<number> {
  tried++;
  try {
    await runTool({ name: t.name, args, options: { principal } });
    return 200;
  } catch (e) {
    const status = toAppError({ error: e, requestId: "test" }).status;
    if (status >= 500) serverErrors++;
    return status;
  }
}

describe("bad input on every MCP tool: a 4xx tool error, nothing written", () => {
  it("table-driven: each tool × each bad input", async () => {
    expect(MCP_TOOLS.length).toBeGreaterThan(20);
    const wrong: string[] = [];
    // Each tool's cases start from the state the previous tool's left (nothing else writes in between).
    let before = await snapshot();
    for (const t of MCP_TOOLS) {
      const shape = shapeOf(t);
      const withStore = "store" in shape ? { store: STORE } : {};
      const cases: [string, AgentPrincipal, Record<string, unknown> | undefined, number | "4xx"][] = [
        ["unknown field", principals.admin, { ...withStore, zz_unknown_field: 1 }, "4xx"],
        ["hostile strings everywhere", principals.admin, { ...Object.fromEntries(Object.keys(shape).map((k) => [k, "\u0000../../etc/passwd' OR 1=1 --"])), zz: 1 }, "4xx"],
      ];
      // Tools whose only argument is the store have nothing else to get wrong.
      if (Object.keys(shape).some((k) => k !== "store")) {
        // 3,000 levels in every argument (a task spec, node attributes): a 400, never a stack overflow.
        const deepField = JSON.parse("[".repeat(3000) + "]".repeat(3000)) as unknown;
        cases.push(["every field nested 3,000 deep", principals.admin, { ...Object.fromEntries(Object.keys(shape).map((k) => [k, deepField])), ...withStore }, 400]);
      }
      if (Object.keys(shape).some((k) => k !== "store")) cases.push(["every field of the wrong type", principals.admin, { ...Object.fromEntries(Object.keys(shape).map((k) => [k, { nested: [[{}]] }])), ...withStore }, "4xx"]);
      if (t.scope !== "read") cases.push(["scope below " + t.scope, principals.read, { ...withStore }, 403]);
      if ("store" in shape) {
        cases.push(["store traversal", principals.admin, { store: "../etc" }, 400]);
        cases.push(["unknown store", principals.admin, { store: "nosuchstore", zz_unknown_field: 1 }, "4xx"]);
        cases.push(["token of another store", principals.otherStore, { store: STORE }, "4xx"]);
      }
      for (const [name, principal, args, expected] of cases) {
        const status = await statusOf(t, principal, args);
        const ok = expected === "4xx" ? status >= 400 && status < 500 : status === expected;
        if (!ok) wrong.push(`${t.name} [${name}] → ${status}`);
      }
      const after = await snapshot();
      if (after !== before) wrong.push(`${t.name}: bad input changed the database`);
      before = after;
    }
    expect(wrong).toEqual([]);
  });

  it("the HTTP endpoint refuses missing and revoked tokens, broken JSON, deep JSON and oversized bodies with a 4xx", async () => {
    const before = await snapshot();
    const rpc = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const post = (body: string | Uint8Array, headers: Record<string, string>) => {
      tried++;
      return handleMcpPost(new Request("http://127.0.0.1/api/mcp", { method: "POST", headers: { accept: "application/json, text/event-stream", "content-type": "application/json", ...headers }, body: body as BodyInit }));
    };
    const auth = { authorization: `Bearer ${tokens.admin}` };
    const cases: [string, Promise<Response>, number | "4xx"][] = [
      ["no token", post(rpc, {}), 401],
      ["revoked token", post(rpc, { authorization: `Bearer ${tokens.revoked}` }), 401],
      ["truncated JSON", post('{"jsonrpc":"2.0",', auth), "4xx"],
      ["invalid UTF-8", post(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), auth), "4xx"],
      ["deeply nested JSON", post("[".repeat(200_000) + "]".repeat(200_000), auth), "4xx"],
      ["a tool argument nested 3,000 deep", post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "task_create", arguments: { intent: "x", spec: JSON.parse("[".repeat(3000) + "]".repeat(3000)) } } }), auth), 400],
      ["not JSON-RPC", post(JSON.stringify({ hello: "world" }), auth), "4xx"],
      ["body over the limit", post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "think", arguments: { content: "x".repeat(2 * 1024 * 1024) } } }), auth), 413],
    ];
    const wrong: string[] = [];
    for (const [name, res, expected] of cases) {
      const r = await res;
      if (r.status >= 500) serverErrors++;
      const ok = expected === "4xx" ? r.status >= 400 && r.status < 500 : r.status === expected;
      if (!ok) wrong.push(`${name} → ${r.status} ${(await r.text()).slice(0, 120)}`);
    }
    expect(wrong).toEqual([]);
    expect(await snapshot()).toBe(before);
  });
});
