/**
 * Every retrieval path × every embedding-provider fault: search (vector and
 * hybrid), recall and remember, over REST and MCP, while the OpenAI-compatible
 * provider (a local stand-in server, the real client code) fails, hangs past
 * the timeout or answers the wrong dimension — and when it is unreachable
 * from the start. Each answer is a 200 that answered lexically and says
 * `fallback.reason: "provider_error"`, never a 5xx.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POST as recallPOST } from "@/app/api/v1/stores/[store]/recall/route";
import { POST as rememberPOST } from "@/app/api/v1/stores/[store]/remember/route";
import { POST as searchPOST } from "@/app/api/v1/stores/[store]/search/route";
import type { AgentPrincipal } from "@/lib/auth/tokens";
import { createApiToken } from "@/lib/auth/tokens";
import { bootstrapApp } from "@/lib/bootstrap";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { clearQueryVectorCache } from "@/lib/embed/query";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { createMcpServer } from "@/lib/mcp/server";
import { createStore } from "@/lib/stores/stores";
import { startFakeOpenAI, type FakeMode } from "./fixtures/fake-openai-server";
import { callRoute, restartWith, useTempDataDir } from "./helpers";

const STORE = "faults";
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let env: ReturnType<typeof useTempDataDir>;
let token: string;
let mcp: Client;

const principal: AgentPrincipal = { tokenId: null, agentId: "fault-agent", label: "faults", scopes: ["write"], stores: [STORE] };

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tool results are arbitrary JSON
function payload(result: unknown): any {
  const r = result as CallToolResult;
  const first = r.content[0];
  return first && first.type === "text" ? JSON.parse(first.text) : null;
}

async function connectMcp(): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer({ principal }).connect(serverSide);
  const client = new Client({ name: "faults-test", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

type Answer = { status: number; body: { fallback: { reason: string; message: string } | null } & Record<string, unknown> };

/** The six ways an agent retrieves: REST and MCP × search (vector, hybrid), recall, remember. */
const PATHS: { name: string; ask: () => Promise<Answer>; found: (body: Answer["body"]) => number }[] = [
  {
    name: "REST search vector",
    ask: async () => rest(searchPOST, { q: "lighthouse keeper logbook", mode: "vector" }),
    found: (b) => (b.results as unknown[]).length,
  },
  {
    name: "REST search hybrid",
    ask: async () => rest(searchPOST, { q: "lighthouse keeper logbook", mode: "hybrid" }),
    found: (b) => (b.results as unknown[]).length,
  },
  {
    name: "REST recall",
    ask: async () => rest(recallPOST, { query: "rotate the lighthouse lamp" }),
    found: (b) => (b.traces as unknown[]).length,
  },
  {
    name: "REST remember",
    ask: async () => rest(rememberPOST, { query: "lighthouse keeper" }),
    found: (b) => (b.results as unknown[]).length,
  },
  {
    name: "MCP search hybrid",
    ask: async () => tool("search", { store: STORE, q: "lighthouse keeper logbook", mode: "hybrid" }),
    found: (b) => (b.results as unknown[]).length,
  },
  {
    name: "MCP recall",
    ask: async () => tool("recall", { store: STORE, query: "rotate the lighthouse lamp" }),
    found: (b) => (b.traces as unknown[]).length,
  },
  {
    name: "MCP remember",
    ask: async () => tool("remember", { store: STORE, query: "lighthouse keeper" }),
    found: (b) => (b.results as unknown[]).length,
  },
];

async function rest(handler: Parameters<typeof callRoute>[0], body: Record<string, unknown>): Promise<Answer> {
  const r = await callRoute(handler, { token, params: { store: STORE }, body });
  return { status: r.status, body: r.json };
}

async function tool(name: string, args: Record<string, unknown>): Promise<Answer> {
  const result = (await mcp.callTool({ name, arguments: args })) as CallToolResult;
  const body = payload(result);
  // A refused or failed call is a tool error whose text is the REST envelope.
  return { status: result.isError ? 500 : 200, body };
}

beforeAll(async () => {
  fake = await startFakeOpenAI({ dimension: 32 });
  env = useTempDataDir({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_TIMEOUT_MS: "300" });
  resetEmbedderForTests();
  bootstrapApp();
  await getEmbedder().fingerprint;
  createStore({ input: { name: STORE }, actor: "test" });
  token = createApiToken({ input: { label: "faults", agent_id: "fault-agent", scopes: ["write"], stores: [STORE] }, actor: "test" }).token;
  mcp = await connectMcp();
  // Content for every path, embedded while the provider is up.
  await tool("write_memory", { store: STORE, path: "notes/lighthouse", body: "The lighthouse keeper writes the logbook every night at the lamp." });
  await tool("record_trace", { store: STORE, intent: { verb: "rotate", target: "lighthouse lamp" }, shard_type: "ops", outcome: "failure", key_issue: "the lighthouse lamp motor stalled" });
  await tool("think", { store: STORE, content: "The lighthouse keeper prefers paper logbooks." });
  await drainEmbedQueues({ stores: [STORE] });
});

afterAll(async () => {
  await mcp?.close();
  resetEmbedderForTests();
  env.cleanup();
  await fake.close();
});

describe("with the provider up", () => {
  it.each(PATHS.map((p) => [p.name, p] as const))("%s answers from vectors, no fallback", async (_name, path) => {
    fake.state.defaultMode = "ok";
    clearQueryVectorCache();
    const r = await path.ask();
    expect(r.status).toBe(200);
    expect(r.body.fallback).toBeNull();
    expect(path.found(r.body)).toBeGreaterThan(0);
  });
});

const FAULTS: [string, FakeMode][] = [
  ["down (HTTP 500)", "500"],
  ["slower than the timeout", "hang"],
  ["the wrong dimension", "wrong_dim"],
];

describe.each(FAULTS)("with the provider %s", (_label, mode) => {
  it.each(PATHS.map((p) => [p.name, p] as const))("%s answers lexically with fallback provider_error", async (_name, path) => {
    fake.state.defaultMode = mode;
    clearQueryVectorCache();
    const r = await path.ask();
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.fallback).toMatchObject({ reason: "provider_error" });
    expect(r.body.fallback!.message).toMatch(/could not embed the query/);
    // Lexical search still finds what the words match.
    expect(path.found(r.body)).toBeGreaterThan(0);
  });
});

describe("with the provider unreachable from the start", () => {
  beforeAll(async () => {
    fake.state.defaultMode = "ok";
    // Nothing listens on port 9 (discard) here: the connection is refused, and the model's fingerprint cannot be made.
    restartWith({ DUALMIND_EMBED_BASE_URL: "http://127.0.0.1:9/v1" });
    bootstrapApp();
    await mcp.close();
    mcp = await connectMcp();
  });

  it.each(PATHS.map((p) => [p.name, p] as const))("%s answers lexically with fallback provider_error", async (_name, path) => {
    const r = await path.ask();
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.fallback).toMatchObject({ reason: "provider_error" });
    expect(path.found(r.body)).toBeGreaterThan(0);
  });
});
