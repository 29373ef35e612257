/**
 * Every retrieval path × every provider and store state (issue 16 part 6):
 * search (fts, vector, hybrid), recall and remember, over REST and MCP,
 * while the OpenAI-compatible provider (a local stand-in server, the real
 * client code) is up, fails, hangs past the timeout or answers the wrong
 * dimension; when it is unreachable from the start; when the store's embed
 * backlog is over the watermark; and when the configured model differs from
 * the store's vectors. Each answer is a 200 with the effective mode that
 * really answered and the reason (`fallback.reason`, and `reason` for a weak
 * answer), never a 5xx. The query timeout is the provider's
 * DUALMIND_EMBED_TIMEOUT_MS (here 1 s), so a hang costs a second, not five.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POST as recallPOST } from "@/app/api/v1/stores/[store]/recall/route";
import { POST as rememberPOST } from "@/app/api/v1/stores/[store]/remember/route";
import { POST as searchPOST } from "@/app/api/v1/stores/[store]/search/route";
import type { AgentPrincipal } from "@/lib/auth/tokens";
import { bootstrapApp } from "@/lib/bootstrap";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { clearQueryVectorCache } from "@/lib/embed/query";
import { createMcpServer } from "@/lib/mcp/server";
import { startFakeOpenAI, type FakeMode } from "./fixtures/fake-openai-server";
import { drainEmbeddings, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute, restartWith } from "./helpers";

const STORE = "faults";
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let env: TestEnv;
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

type Answer = {
  status: number;
  body: { fallback: { reason: string; message: string; count?: number } | null; reason: { code: string; message: string; count?: number } | null } & Record<string, unknown>;
};

type RetrievalPath = {
  name: string;
  ask: () => Promise<Answer>;
  found: (body: Answer["body"]) => number;
  /** The mode the answer reports as what answered. */
  effective: (body: Answer["body"]) => unknown;
  /** What that is with vectors working, and after a fallback to lexical; null when the path never uses vectors. */
  withVectors: string;
  lexical: string | null;
};

const search = (via: "REST" | "MCP", mode: "fts" | "vector" | "hybrid"): RetrievalPath => ({
  name: `${via} search ${mode}`,
  ask: () => (via === "REST" ? rest(searchPOST, { q: "lighthouse keeper logbook", mode }) : tool("search", { store: STORE, q: "lighthouse keeper logbook", mode })),
  found: (b) => (b.results as unknown[]).length,
  effective: (b) => b.effective_mode,
  withVectors: mode,
  lexical: mode === "fts" ? null : "fts",
});
const recall = (via: "REST" | "MCP"): RetrievalPath => ({
  name: `${via} recall`,
  ask: () => (via === "REST" ? rest(recallPOST, { query: "rotate the lighthouse lamp" }) : tool("recall", { store: STORE, query: "rotate the lighthouse lamp" })),
  found: (b) => (b.traces as unknown[]).length,
  effective: (b) => b.mode,
  withVectors: "hybrid",
  lexical: "lexical",
});
const remember = (via: "REST" | "MCP"): RetrievalPath => ({
  name: `${via} remember`,
  ask: () => (via === "REST" ? rest(rememberPOST, { query: "lighthouse keeper" }) : tool("remember", { store: STORE, query: "lighthouse keeper" })),
  found: (b) => (b.results as unknown[]).length,
  effective: (b) => b.mode,
  withVectors: "vector+fts",
  lexical: "fts",
});

/** The ten ways an agent retrieves: REST and MCP × search (fts, vector, hybrid), recall, remember. */
const PATHS: RetrievalPath[] = (["REST", "MCP"] as const).flatMap((via) => [search(via, "fts"), search(via, "vector"), search(via, "hybrid"), recall(via), remember(via)]);

/** A path that fell back: a 200, answered lexically, saying why (and, since it found something, a weak answer with that reason). */
function expectFallback(path: RetrievalPath, r: Answer, reason: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  // Lexical search still finds what the words match.
  expect(path.found(r.body)).toBeGreaterThan(0);
  if (path.lexical === null) {
    // Full-text search never asks for vectors: nothing to fall back from.
    expect(path.effective(r.body)).toBe("fts");
    expect(r.body.fallback).toBeNull();
    expect(r.body.reason).toBeNull();
    return;
  }
  expect(path.effective(r.body)).toBe(path.lexical);
  expect(r.body.fallback).toMatchObject({ reason });
  expect(r.body.reason).toMatchObject({ code: reason });
}


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
  env = await useTestBackend({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_TIMEOUT_MS: "1000" }, { bootstrap: false });
  resetEmbedderForTests();
  await bootstrapApp();
  await getEmbedder().fingerprint;
  await seedStore(STORE);
  token = await seedToken({ label: "faults", agent_id: "fault-agent", scopes: ["write"], stores: [STORE] });
  mcp = await connectMcp();
  // Content for every path, embedded while the provider is up.
  await tool("write_memory", { store: STORE, path: "notes/lighthouse", body: "The lighthouse keeper writes the logbook every night at the lamp." });
  await tool("record_trace", { store: STORE, intent: { verb: "rotate", target: "lighthouse lamp" }, shard_type: "ops", outcome: "failure", key_issue: "the lighthouse lamp motor stalled" });
  await tool("think", { store: STORE, content: "The lighthouse keeper prefers paper logbooks." });
  await drainEmbeddings([STORE]);
});

afterAll(async () => {
  await mcp?.close();
  resetEmbedderForTests();
  await env.cleanup();
  await fake.close();
});

describe("with the provider up", () => {
  it.each(PATHS.map((p) => [p.name, p] as const))("%s answers from vectors, no fallback, no reason", async (_name, path) => {
    fake.state.defaultMode = "ok";
    clearQueryVectorCache();
    const r = await path.ask();
    expect(r.status).toBe(200);
    expect(path.effective(r.body)).toBe(path.withVectors);
    expect(r.body.fallback).toBeNull();
    expect(r.body.reason).toBeNull();
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
    expectFallback(path, r, "provider_error");
    if (path.lexical !== null) expect(r.body.fallback!.message).toMatch(/could not embed the query: provider \w+/);
    // The provider's own words and address are not the caller's to read: the answer names the kind of failure only.
    expect(JSON.stringify(r.body)).not.toContain("boom");
    expect(JSON.stringify(r.body)).not.toContain(new URL(fake.baseUrl).host);
  });
});

describe("with the store's embed backlog over the watermark", () => {
  beforeAll(async () => {
    fake.state.defaultMode = "ok";
    // Two more writes wait for vectors (nothing drains them here): above a watermark of 1.
    restartWith({ DUALMIND_EMBED_BACKLOG_WATERMARK: "1" });
    await tool("write_memory", { store: STORE, path: "notes/tides", body: "Tide tables for the harbour." });
    await tool("write_memory", { store: STORE, path: "notes/gulls", body: "Gulls nest on the cliff." });
  });
  afterAll(async () => {
    await drainEmbeddings([STORE]);
    restartWith({ DUALMIND_EMBED_BACKLOG_WATERMARK: undefined });
  });

  it.each(PATHS.map((p) => [p.name, p] as const))("%s answers lexically with fallback backlog and its count", async (_name, path) => {
    clearQueryVectorCache();
    const r = await path.ask();
    expectFallback(path, r, "backlog");
    if (path.lexical !== null) expect(r.body.fallback!.count).toBeGreaterThan(1);
  });
});

describe("with another model configured than the store's vectors", () => {
  beforeAll(() => {
    fake.state.defaultMode = "ok";
    restartWith({ DUALMIND_EMBED_MODEL: "fake-successor" });
  });
  afterAll(() => restartWith({ DUALMIND_EMBED_MODEL: "fake" }));

  it.each(PATHS.map((p) => [p.name, p] as const))("%s answers lexically with fallback model_mismatch", async (_name, path) => {
    clearQueryVectorCache();
    const r = await path.ask();
    expectFallback(path, r, "model_mismatch");
  });
});

describe("with the provider unreachable from the start", () => {
  beforeAll(async () => {
    fake.state.defaultMode = "ok";
    // Nothing listens on port 9 (discard) here: the connection is refused, and the model's fingerprint cannot be made.
    restartWith({ DUALMIND_EMBED_BASE_URL: "http://127.0.0.1:9/v1" });
    await bootstrapApp();
    await mcp.close();
    mcp = await connectMcp();
  });

  it.each(PATHS.map((p) => [p.name, p] as const))("%s answers lexically with fallback provider_error", async (_name, path) => {
    const r = await path.ask();
    expectFallback(path, r, "provider_error");
    expect(JSON.stringify(r.body)).not.toContain("127.0.0.1:9");
  });
});
