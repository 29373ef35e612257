import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handleMcpPost } from "@/lib/mcp/http";
import { createMemorySchema } from "@/lib/index/memories";
import { stores } from "@/lib/stores/backend";
import { seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";

/** One MCP request's answers share DUALMIND_MCP_BATCH_MAX_BYTES, counted as they go on the wire. */
let env: TestEnv;
let token = "";
const store = "batch";
const MAX = 65_536;

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_MCP_BATCH_MAX_BYTES: String(MAX) });
  await seedStore(store);
  token = await seedToken({ label: "w", agent_id: "batch-agent", scopes: ["write"] });
  await stores().createMemory({ store, input: createMemorySchema.parse({ path: "big/one", body: "w ".repeat(12_500) }), actor: "seed" });
});
afterAll(async () => env?.cleanup());

type Answer = { id: number; result?: { isError?: boolean; content?: { text: string }[]; structuredContent?: unknown; contents?: { text: string }[] }; error?: { message: string } };

async function batch(calls: { method: string; params: Record<string, unknown> }[]): Promise<Answer[]> {
  const res = await handleMcpPost(
    new Request("http://127.0.0.1/api/mcp", {
      method: "POST",
      headers: { accept: "application/json, text/event-stream", "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(calls.map((c, id) => ({ jsonrpc: "2.0", id, ...c }))),
    }),
  );
  expect(res.status).toBe(200);
  return ((await res.json()) as Answer[]).sort((a, b) => a.id - b.id);
}

const readMemory = { method: "tools/call", params: { name: "read_memory", arguments: { store, path: "big/one" } } };
const wireBytes = (a: Answer) => Buffer.byteLength(JSON.stringify(a.result ?? {}));

describe("MCP batch bytes", () => {
  it("a tool answer counts its structuredContent too: a batch of 25 KB memories carries no more than the limit past its first answer", async () => {
    const answers = await batch(Array.from({ length: 6 }, () => readMemory));
    const carried = answers.filter((a) => a.result && !a.result.isError);
    expect(carried.length).toBeGreaterThan(0);
    // Each answer is ~25 KB of text and the same again as structuredContent: past the first, none may pass the limit.
    expect(carried.slice(1).reduce((n, a) => n + wireBytes(a), wireBytes(carried[0]))).toBeLessThanOrEqual(Math.max(MAX, wireBytes(carried[0])) + 1024);
    expect(answers.find((a) => a.result?.isError)?.result?.content?.[0]?.text).toContain("DUALMIND_MCP_BATCH_MAX_BYTES");
  });

  it("resources/read shares the budget", async () => {
    const answers = await batch(Array.from({ length: 6 }, () => ({ method: "resources/read", params: { uri: `dualmind://stores/${store}/memories/big/one` } })));
    const read = answers.filter((a) => a.result?.contents);
    expect(read.length).toBeGreaterThan(0);
    expect(read.length).toBeLessThan(6);
    expect(read.reduce((n, a) => n + Buffer.byteLength(a.result!.contents![0].text), 0)).toBeLessThanOrEqual(MAX + 30_000);
    expect(answers.find((a) => a.error)?.error?.message).toContain("DUALMIND_MCP_BATCH_MAX_BYTES");
  });

  it("once the budget is spent, the rest of the batch is refused before doing its work: a write after it writes nothing", async () => {
    const write = { method: "tools/call", params: { name: "write_memory", arguments: { store, path: "late/write", body: "should not be written" } } };
    const answers = await batch([readMemory, readMemory, readMemory, write]);
    expect(answers[3].result?.isError).toBe(true);
    expect(answers[3].result?.content?.[0]?.text).toContain("DUALMIND_MCP_BATCH_MAX_BYTES");
    await expect(stores().getMemory({ store, memoryPath: "late/write" })).rejects.toMatchObject({ code: "not_found" });
  });
});
