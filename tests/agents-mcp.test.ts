import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { POST, GET } from "@/app/api/mcp/route";
import { GET as healthGET } from "@/app/api/v1/stores/[store]/health/route";
import { governance } from "@/lib/backend/governance";
import { stores } from "@/lib/stores/backend";
import { stdioPrincipal } from "@/scripts/mcp-stdio";
import { onPg, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { patience } from "./fixtures/patience";

/** The real route handler behind a real HTTP server, so the SDK client speaks actual HTTP. */
function serveRoute(): Promise<{ url: URL; close: () => Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const request = new Request(`http://127.0.0.1${req.url}`, {
      method: req.method,
      headers,
      body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
      duplex: "half",
    } as RequestInit);
    const response = await (req.method === "POST" ? POST(request) : GET());
    // A refused body was not read to the end: the socket cannot carry another request.
    const outHeaders = { ...Object.fromEntries(response.headers), ...(req.complete ? {} : { connection: "close" }) };
    res.writeHead(response.status, outHeaders);
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: new URL(`http://127.0.0.1:${port}/api/mcp`), close: () => new Promise((r) => server.close(() => r())) });
    }),
  );
}

async function connectHttp(url: URL, token: string): Promise<Client> {
  const client = new Client({ name: "agents-test", version: "1.0.0" });
  // A fresh connection per request: a kept-alive socket the server closes as idle while the next call goes out
  // answers ECONNRESET on a loaded machine, which says nothing about the server.
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}`, Connection: "close" } } }));
  return client;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tool results are arbitrary JSON
function payload(result: unknown): any {
  const r = result as CallToolResult;
  const first = r.content[0];
  return first && first.type === "text" ? JSON.parse(first.text) : null;
}

let env: TestEnv;
/** A memory file in the default store's folder (SQLite's truth; PostgreSQL keeps none, so never one there). */
const memoryFileExists = (memoryPath: string) => fs.existsSync(path.join(env.dataDir, "stores", "default", "memory", `${memoryPath}.md`));
let server: Awaited<ReturnType<typeof serveRoute>>;
let alice: string;
let bob: string;
let reader: string;

beforeAll(async () => {
  env = await useTestBackend();
  await seedStore("private");
  alice = await seedToken({ label: "alice", agent_id: "alice", scopes: ["write"], stores: ["default"] });
  bob = await seedToken({ label: "bob", agent_id: "bob", scopes: ["write"], stores: ["default"] });
  reader = await seedToken({ label: "reader", agent_id: "reader", scopes: ["read"] });
  server = await serveRoute();
});

afterAll(async () => {
  await server.close();
  await env.cleanup();
});

describe("MCP over Streamable HTTP with the SDK client", () => {
  it("lists the tools with JSON schemas generated from the REST zod schemas", async () => {
    const client = await connectHttp(server.url, alice);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ["search", "read_chunk", "recall", "record_trace", "record_learning", "query_memories", "recent_memories", "list_memories", "write_memory", "think", "remember", "node_create", "task_create", "task_status", "record_run", "record_validation", "dialectic_request", "dialectic_post", "dialectic_get", "store_health"]) {
      expect(names).toContain(n);
    }
    const search = tools.find((t) => t.name === "search")!;
    expect(search.inputSchema.properties).toHaveProperty("mode");
    expect(search.inputSchema.properties).toHaveProperty("store");
    await client.close();
  });

  it("writes a memory, reads it back, and finds it by search", async () => {
    const client = await connectHttp(server.url, alice);
    const written = await client.callTool({ name: "write_memory", arguments: { store: "default", path: "ops/backups", body: "Nightly backups run at 02:00 with restic.", tags: ["ops"] } });
    expect(written.isError).toBeFalsy();
    const read = payload(await client.callTool({ name: "read_memory", arguments: { store: "default", path: "ops/backups" } }));
    expect(read.body).toContain("restic");
    expect(read.tags).toEqual(["ops"]);
    const found = payload(await client.callTool({ name: "search", arguments: { store: "default", q: "restic backups", mode: "fts" } }));
    expect(found.results.map((h: { path: string }) => h.path)).toContain("memory/ops/backups.md");
    const chunk = payload(await client.callTool({ name: "read_chunk", arguments: { store: "default", id: found.results[0].chunk_id } }));
    expect(chunk.text).toContain("restic");
    const browse = payload(await client.callTool({ name: "list_memories", arguments: { store: "default" } }));
    expect(browse.categories.map((c: { path: string }) => c.path)).toContain("ops");
    const inOps = payload(await client.callTool({ name: "list_memories", arguments: { store: "default", parent: "ops" } }));
    expect(inOps.memories.map((m: { path: string }) => m.path)).toContain("ops/backups");
    const resource = await client.readResource({ uri: "dualmind://stores/default/memories/ops/backups" });
    expect(JSON.stringify(resource.contents[0])).toContain("restic");
    await client.close();
  });

  it("runs a dialectic round between two agents to resolution", async () => {
    const a = await connectHttp(server.url, alice);
    const b = await connectHttp(server.url, bob);
    const opened = payload(await a.callTool({ name: "dialectic_request", arguments: { topic: "enable WAL checkpoints hourly", reviewer_agent_id: "bob" } }));
    const id = opened.session.session_id;
    expect(payload(await a.callTool({ name: "dialectic_post", arguments: { session_id: id, message_type: "thesis", reasoning: "checkpoint hourly to bound WAL size" } })).message).toBeTruthy();
    const outOfTurn = await a.callTool({ name: "dialectic_post", arguments: { session_id: id, message_type: "antithesis", reasoning: "I review myself" } });
    expect(outOfTurn.isError).toBe(true);
    expect(payload(outOfTurn).error.code).toBe("conflict");
    await b.callTool({ name: "dialectic_post", arguments: { session_id: id, message_type: "antithesis", reasoning: "hourly may stall writers", concerns: ["writer stalls"] } });
    await a.callTool({ name: "dialectic_post", arguments: { session_id: id, message_type: "synthesis", reasoning: "use PASSIVE checkpoints", proposed_conditions: ["PASSIVE mode"], agrees: true } });
    await b.callTool({ name: "dialectic_post", arguments: { session_id: id, message_type: "synthesis", reasoning: "agreed", agrees: true } });
    const session = payload(await b.callTool({ name: "dialectic_get", arguments: { session_id: id } }));
    expect(session.status).toBe("resolved");
    expect(session.resolution.conditions).toEqual(["PASSIVE mode"]);
    await a.close();
    await b.close();
  });

  it("records a failed trace and recalls it as a past-failure warning", async () => {
    const client = await connectHttp(server.url, alice);
    const recorded = await client.callTool({
      name: "record_trace",
      arguments: { store: "default", intent: { verb: "migrate", target: "the sessions table to a new schema" }, shard_type: "database", key_files: ["drizzle/governance/0003.sql"], outcome: "failure", key_issue: "the migration locked the table for minutes" },
    });
    expect(recorded.isError).toBeFalsy();
    expect(payload(recorded).trace.id).toBeTruthy();
    const recalled = payload(await client.callTool({ name: "recall", arguments: { store: "default", intent: { verb: "migrate", target: "the sessions table to a new schema" }, signals: "lexical" } }));
    expect(recalled.traces.length).toBeGreaterThan(0);
    expect(recalled.guidance.past_failure_warning?.key_issue).toContain("locked the table");
    const learned = await client.callTool({ name: "record_learning", arguments: { store: "default", predicate: "prefers", args: { style: "small migrations" }, description: "split schema changes", confidence: 0.8 } });
    expect(learned.isError).toBeFalsy();
    await client.close();
  });

  it("answers a wrong token with an auth error before any tool runs", async () => {
    await expect(connectHttp(server.url, "dm_not-a-real-token")).rejects.toThrow(/401|unauthorized|invalid or revoked/i);
  });

  it("turns bad arguments into a tool error with the REST code, and writes nothing", async () => {
    const client = await connectHttp(server.url, alice);
    const bad = await client.callTool({ name: "write_memory", arguments: { store: "default", path: "../../etc/passwd", body: "x" } });
    expect(bad.isError).toBe(true);
    expect(payload(bad).error.code).toBe("invalid_request");
    expect(payload(bad).error.details[0].path).toBe("arguments.path");
    const missing = await client.callTool({ name: "write_memory", arguments: { store: "default", path: "ops/no-body" } });
    expect(payload(missing).error.code).toBe("invalid_request");
    const gone = await client.callTool({ name: "read_memory", arguments: { store: "default", path: "ops/no-body" } });
    expect(payload(gone).error.code).toBe("not_found");
    expect(memoryFileExists("ops/no-body")).toBe(false);
    await client.close();
  });

  it("answers tools/list byte for byte as a per-request MCP server does, and leaves what that server's transport refuses to it", async () => {
    const { createMcpServer } = await import("@/lib/mcp/server");
    const { WebStandardStreamableHTTPServerTransport } = await import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js");
    const headers = { authorization: `Bearer ${reader}`, "content-type": "application/json", accept: "application/json, text/event-stream" };
    const viaSdk = async (message: unknown, extra: Record<string, string> = {}) => {
      const sdk = createMcpServer({ principal: { tokenId: null, agentId: "reader", label: "reader", scopes: ["read"], stores: null } });
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await sdk.connect(transport);
      const res = await transport.handleRequest(new Request(server.url, { method: "POST", headers: { ...headers, ...extra }, body: JSON.stringify(message) }), { parsedBody: message });
      const out = { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
      await sdk.close();
      return out;
    };
    const viaRoute = async (message: unknown, extra: Record<string, string> = {}) => {
      const res = await fetch(server.url, { method: "POST", headers: { ...headers, ...extra }, body: JSON.stringify(message) });
      return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
    };
    for (const message of [
      { jsonrpc: "2.0", id: 7, method: "tools/list" },
      { jsonrpc: "2.0", id: "a\"b", method: "tools/list", params: { cursor: "x" } },
      { jsonrpc: "2.0", id: 8, method: "tools/list", params: { _meta: { progressToken: 1 } } },
    ]) {
      const [a, b] = [await viaRoute(message, { "mcp-protocol-version": "2025-06-18" }), await viaSdk(message, { "mcp-protocol-version": "2025-06-18" })];
      expect(a).toEqual(b);
      expect(JSON.parse(a.body).result.tools.length).toBeGreaterThan(10);
    }
    // What the transport refuses is still its answer: an unsupported protocol version, an Accept without event streams.
    const refused = await viaRoute({ jsonrpc: "2.0", id: 9, method: "tools/list" }, { "mcp-protocol-version": "1999-01-01" });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatch(/Unsupported protocol version/);
    expect((await viaRoute({ jsonrpc: "2.0", id: 10, method: "tools/list" }, { accept: "application/json" })).status).toBe(406);
  });

  it("answers tools/list from bytes made once: every tool of the catalog on every call, the request's id put in, and a revoked token refused on its next call", async () => {
    const { MCP_TOOLS } = await import("@/lib/mcp/tools");
    const token = await seedToken({ label: "lister", agent_id: "lister", scopes: ["read"] });
    const list = async (id: unknown, bearer = token) => {
      const res = await fetch(server.url, { method: "POST", headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list" }) });
      return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
    };
    const first = await list(1);
    const again = await list("é ✓ \"quoted\"");
    expect(first.status).toBe(200);
    expect(first.type).toBe("application/json");
    const [a, b] = [JSON.parse(first.body), JSON.parse(again.body)];
    expect(a.result.tools.map((t: { name: string }) => t.name)).toEqual(MCP_TOOLS.map((t) => t.name));
    expect(b.id).toBe("é ✓ \"quoted\"");
    expect(b.result).toEqual(a.result);
    const info = (await governance().listApiTokens({})).find((t) => t.label === "lister")!;
    await governance().revokeApiToken({ id: info.id, actor: "test" });
    const refused = await list(2);
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body).error.code).toBe("unauthorized");
  });

  it("refuses a request body over the REST limit with 413", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "write_memory", arguments: { store: "default", path: "ops/huge", body: "x".repeat(1024 * 1024 + 10) } } });
    const res = await fetch(server.url, { method: "POST", headers: { authorization: `Bearer ${alice}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body });
    expect(res.status).toBe(413);
    await expect(stores().getMemory({ store: "default", memoryPath: "ops/huge" })).rejects.toMatchObject({ code: "not_found" });
    expect(memoryFileExists("ops/huge")).toBe(false);
  });

  it("applies the token's scopes and store allow-list like the REST API", async () => {
    const ro = await connectHttp(server.url, reader);
    const denied = await ro.callTool({ name: "write_memory", arguments: { store: "default", path: "ops/ro", body: "no" } });
    expect(payload(denied).error.code).toBe("forbidden");
    await ro.close();
    const client = await connectHttp(server.url, alice);
    const elsewhere = await client.callTool({ name: "search", arguments: { store: "private", q: "anything" } });
    expect(payload(elsewhere).error.code).toBe("forbidden");
    const stores = payload(await client.callTool({ name: "list_stores", arguments: {} }));
    expect(stores.stores.map((s: { name: string }) => s.name)).toEqual(["default"]);
    await client.close();
  });

  it("does graph CRUD with evidence through the tools", async () => {
    const client = await connectHttp(server.url, alice);
    const call = async (name: string, args: Record<string, unknown>) => {
      const r = await client.callTool({ name, arguments: { store: "default", ...args } });
      expect(r.isError, `${name}: ${JSON.stringify(r.content)}`).toBeFalsy();
      return payload(r);
    };
    const a = (await call("node_create", { name: "nginx", entity_type: "tool" })).node;
    const b = (await call("node_create", { name: "letsencrypt", entity_type: "tool" })).node;
    const rel = (await call("relation_create", { from_id: a.id, to_id: b.id, relationship_type: "uses", weight: 0.6 })).relation;
    expect((await call("relation_update", { id: rel.id, changes: { weight: 0.9 } })).relation.weight).toBe(0.9);
    const frame = (await call("frame_create", { node_id: a.id, column: "procedural", properties: { reload: "nginx -s reload" } })).frame;
    expect((await call("frame_update", { id: frame.id, changes: { properties: { reload: "systemctl reload nginx" } } })).frame.properties.reload).toBe("systemctl reload nginx");
    const thought = (await call("think", { content: "nginx reload picks up renewed certificates" })).thought;
    expect((await call("evidence_link", { target: "relation", target_id: rel.id, thought_id: thought.id })).created).toBe(true);
    const detail = await call("node_get", { id: a.id });
    expect(JSON.stringify(detail)).toContain(b.id);
    await call("evidence_unlink", { target: "relation", target_id: rel.id, thought_id: thought.id });
    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.name)).toEqual(["chunk", "memory", "dialectic-session"]);
    await client.close();
  });

  it("audits a destructive write made through MCP under the calling agent", async () => {
    const client = await connectHttp(server.url, alice);
    const node = payload(await client.callTool({ name: "node_create", arguments: { store: "default", name: "restic", entity_type: "tool" } })).node;
    await client.callTool({ name: "node_delete", arguments: { store: "default", id: node.id } });
    const entry = (await governance().listAuditTail({ limit: 5 })).find((e) => e.action === "graph.node.delete");
    expect(entry?.actor).toBe("agent:alice");
    expect(entry?.target).toContain(node.id);
    await client.close();
  });

  it("store_health returns the same report as GET /stores/{store}/health", async () => {
    const client = await connectHttp(server.url, alice);
    // A queued trace gives the report a backlog with an age; the clock is held still so both answers are taken at the same instant.
    await client.callTool({ name: "record_trace", arguments: { store: "default", intent: { verb: "rotate", target: "the backup keys" }, outcome: "success" } });
    const now = vi.spyOn(Date, "now").mockReturnValue(Date.now() + 5_000);
    try {
      const res = await healthGET(new Request("http://127.0.0.1/api/v1/stores/default/health", { headers: { authorization: `Bearer ${alice}` } }), { params: Promise.resolve({ store: "default" }) });
      expect(res.status).toBe(200);
      const rest = await res.json();
      const tool = await client.callTool({ name: "store_health", arguments: { store: "default" } });
      expect(tool.isError).toBeFalsy();
      expect(rest).toMatchObject({ store: "default", status: expect.any(String), backlog: { pending: expect.any(Number) } });
      expect(payload(tool)).toEqual(rest);
    } finally {
      now.mockRestore();
    }
    await client.close();
  });
});

describe("MCP over stdio (npx dualmind mcp)", () => {
  it("acts as the token's agent when given one, else as the local operator limited to --store", async () => {
    await expect(stdioPrincipal({ token: alice })).resolves.toMatchObject({ agentId: "alice", stores: ["default"] });
    await expect(stdioPrincipal({ token: "dm_wrong" })).rejects.toThrow(/invalid or revoked/);
    const local = await stdioPrincipal({ store: "default", agentId: "carol" });
    expect(local).toMatchObject({ agentId: "carol", scopes: ["read", "write"], stores: ["default"] });
  });

  it("serves tools to a spawned client with nothing but protocol on stdout", async () => {
    const dataDir = fs.mkdtempSync(path.join(env.dataDir, "stdio-"));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.join(process.cwd(), "scripts", "dualmind.mjs"), "mcp", "--store", "default", "--agent", "carol"],
      env: { ...(process.env as Record<string, string>), DATA_DIR: dataDir, DUALMIND_ADMIN_PASSWORD: "test-admin-password" },
      stderr: "pipe",
    });
    const client = new Client({ name: "agents-test-stdio", version: "1.0.0" });
    // A stray line on stdout would reach the client as an unparsable message.
    const protocolErrors: Error[] = [];
    client.onerror = (e) => protocolErrors.push(e);
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(20);
    // --store fills in the store argument.
    const written = await client.callTool({ name: "write_memory", arguments: { path: "people/carol", body: "Carol prefers terse commit messages." } });
    expect(written.isError).toBeFalsy();
    const found = payload(await client.callTool({ name: "search", arguments: { q: "terse commit", mode: "fts" } }));
    expect(found.results[0].path).toBe("memory/people/carol.md");
    const bad = await client.callTool({ name: "think", arguments: { content: "" } });
    expect(payload(bad).error.code).toBe("invalid_request");
    await client.close();
    // The child inherited DATABASE_URL on PostgreSQL: the memory is in the database, not in its data dir.
    if (onPg) expect((await stores().getMemory({ store: "default", memoryPath: "people/carol" })).body).toContain("terse commit");
    else expect(fs.readFileSync(path.join(dataDir, "stores", "default", "memory", "people", "carol.md"), "utf8")).toContain("terse commit");
    expect(protocolErrors).toEqual([]);
  }, patience(60_000));
});
