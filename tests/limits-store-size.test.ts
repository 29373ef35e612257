import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DELETE as deleteDocumentRoute, PUT as putDocumentRoute } from "@/app/api/v1/stores/[store]/documents/route";
import { DELETE as deleteMemoryRoute, POST as createMemoryRoute, PUT as updateMemoryRoute } from "@/app/api/v1/stores/[store]/memories/route";
import { memoryDir } from "@/lib/index/memories";
import { reindexStore } from "@/lib/index/reindex";
import { handleMcpPost } from "@/lib/mcp/http";
import { openStore } from "@/lib/stores/stores";
import { onPg, seedStore, seedToken, storeSql, useTestBackend, type TestEnv } from "./backend";
import { callRoute, restartWith } from "./helpers";

/** Per-store quotas: documents (API documents and memories) and text bytes, on REST and MCP writes. */
let env: TestEnv;
let token = "";

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_MAX_STORE_DOCUMENTS: "3", DUALMIND_MAX_STORE_BYTES: String(1024 * 1024) });
  await seedStore("docs");
  await seedStore("mems");
  await seedStore("bytes");
  await seedStore("disk");
  await seedStore("race");
  token = await seedToken({ label: "w", agent_id: "quota-writer", scopes: ["write"] });
});
afterAll(async () => env?.cleanup());

const putDoc = (store: string, path: string, content: string) => callRoute(putDocumentRoute, { method: "PUT", token, params: { store }, body: { path, content } });
const createMemory = (store: string, path: string, body: string) => callRoute(createMemoryRoute, { token, params: { store }, body: { path, body } });
const updateMemory = (store: string, path: string, body: string) => callRoute(updateMemoryRoute, { method: "PUT", token, params: { store }, body: { path, body } });
const counted = async (store: string) => Number((await storeSql<{ bytes: unknown }>(store, "select bytes from store_usage where id = 1"))[0].bytes);
const usage = async (store: string) => {
  const [row] = await storeSql<{ n: unknown; bytes: unknown }>(store, "select count(*) as n, coalesce(sum(bytes), 0) as bytes from documents");
  return { documents: Number(row.n), bytes: Number(row.bytes) };
};

async function mcpWriteMemory(store: string, path: string, body: string): Promise<{ isError?: boolean; payload: { error?: { code: string; message: string; details: { limit?: string }[] } } }> {
  const res = await handleMcpPost(
    new Request("http://127.0.0.1/api/mcp", {
      method: "POST",
      headers: { accept: "application/json, text/event-stream", "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "write_memory", arguments: { store, path, body } } }),
    }),
  );
  expect(res.status).toBe(200);
  const { result } = (await res.json()) as { result: { isError?: boolean; content: { text: string }[] } };
  return { isError: result.isError, payload: JSON.parse(result.content[0].text) };
}

describe("DUALMIND_MAX_STORE_DOCUMENTS", () => {
  it("refuses the 4th API document with 422 naming the limit, writes nothing, and a delete frees room", async () => {
    for (const p of ["notes/a.md", "notes/b.md", "notes/c.md"]) expect((await putDoc("docs", p, `# ${p}\n\nsome text`)).status).toBe(200);
    const refused = await putDoc("docs", "notes/d.md", "# d\n\none too many");
    expect(refused.status).toBe(422);
    expect(refused.json.error.message).toContain("DUALMIND_MAX_STORE_DOCUMENTS");
    expect(refused.json.error.details[0].limit).toBe("DUALMIND_MAX_STORE_DOCUMENTS");
    expect((await usage("docs")).documents).toBe(3);
    expect(await storeSql("docs", "select 1 from documents where path = 'notes/d.md'")).toEqual([]);
    // Replacing a document the store already holds adds none.
    expect((await putDoc("docs", "notes/a.md", "# a\n\nnew text")).status).toBe(200);
    expect((await callRoute(deleteDocumentRoute, { method: "DELETE", token, params: { store: "docs" }, url: "http://127.0.0.1/x?path=notes/b.md" })).status).toBe(200);
    expect((await putDoc("docs", "notes/d.md", "# d\n\nnow it fits")).status).toBe(200);
  });

  it("counts memories too: the 4th memory (REST or MCP write_memory) is refused and nothing was written", async () => {
    for (const p of ["ops/one", "ops/two"]) expect((await createMemory("mems", p, "a short memory")).status).toBe(201);
    expect((await putDoc("mems", "notes/x.md", "# x\n\na document")).status).toBe(200);
    const refused = await createMemory("mems", "ops/four", "one too many");
    expect(refused.status).toBe(422);
    expect(refused.json.error.details[0].limit).toBe("DUALMIND_MAX_STORE_DOCUMENTS");
    const viaMcp = await mcpWriteMemory("mems", "ops/five", "one too many, through MCP");
    expect(viaMcp.isError).toBe(true);
    expect(viaMcp.payload.error?.code).toBe("unprocessable");
    expect(viaMcp.payload.error?.details[0].limit).toBe("DUALMIND_MAX_STORE_DOCUMENTS");
    expect((await usage("mems")).documents).toBe(3);
    expect(await storeSql("mems", "select 1 from documents where path in ('memory/ops/four.md', 'memory/ops/five.md')")).toEqual([]);
    // Nothing half-written: the refused memory is not there to read.
    expect((await callRoute(deleteMemoryRoute, { method: "DELETE", token, params: { store: "mems" }, url: "http://127.0.0.1/x?path=ops/four" })).status).toBe(404);
    expect((await callRoute(deleteMemoryRoute, { method: "DELETE", token, params: { store: "mems" }, url: "http://127.0.0.1/x?path=ops/one" })).status).toBe(200);
    expect((await mcpWriteMemory("mems", "ops/five", "fits after a delete")).isError).toBeFalsy();
  });
});

describe("concurrent writes", () => {
  it("cannot both squeeze past the limit: of six at once with room for one, one is written and five are 422", async () => {
    for (const p of ["notes/a.md", "notes/b.md"]) expect((await putDoc("race", p, "# x\n\ntext")).status).toBe(200);
    const answers = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => putDoc("race", `notes/r${i}.md`, `# r${i}\n\nat once`)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 422, 422, 422, 422, 422]);
    expect((await usage("race")).documents).toBe(3);
  });
});

describe("DUALMIND_MAX_STORE_BYTES", () => {
  it("an update counts the difference; one past the budget is 422 and leaves the old text; a delete frees room", async () => {
    expect((await createMemory("bytes", "big/one", "x".repeat(1500))).status).toBe(201);
    expect((await putDoc("bytes", "notes/big.md", "y".repeat(1500))).status).toBe(200);
    const before = await counted("bytes");
    expect((await updateMemory("bytes", "big/one", "z".repeat(2000))).status).toBe(200);
    const after = await counted("bytes");
    // Replacing 1500 bytes by 2000 counts the difference, not the whole text again.
    expect(after - before).toBeGreaterThan(0);
    expect(after - before).toBeLessThan(before / 2);
    // The limit now leaves no room to grow: the total as it stands, and a little.
    restartWith({ DUALMIND_MAX_STORE_BYTES: String(after + 100) });
    const refused = await updateMemory("bytes", "big/one", "w".repeat(3000));
    expect(refused.status).toBe(422);
    expect(refused.json.error.message).toContain("DUALMIND_MAX_STORE_BYTES");
    expect(refused.json.error.details[0].limit).toBe("DUALMIND_MAX_STORE_BYTES");
    const [kept] = await storeSql<{ bytes: unknown }>("bytes", "select bytes from documents where path = 'memory/big/one.md'");
    expect(Number(kept.bytes)).toBeLessThan(2500);
    const newDoc = await putDoc("bytes", "notes/more.md", "v".repeat(1000));
    expect(newDoc.status).toBe(422);
    expect(newDoc.json.error.details[0].limit).toBe("DUALMIND_MAX_STORE_BYTES");
    expect((await callRoute(deleteDocumentRoute, { method: "DELETE", token, params: { store: "bytes" }, url: "http://127.0.0.1/x?path=notes/big.md" })).status).toBe(200);
    expect((await putDoc("bytes", "notes/more.md", "v".repeat(1000))).status).toBe(200);
    expect(await counted("bytes")).toBeLessThanOrEqual(after + 100);
  });
});

describe.skipIf(onPg)("reindex from the files on disk (SQLite: the files are the truth)", () => {
  it("is never refused by the quotas, and a refused write leaves no memory file behind", async () => {
    const dir = memoryDir({ handle: openStore({ store: "disk" }) });
    for (let i = 0; i < 5; i++) {
      fs.mkdirSync(path.join(dir, "put-by-hand"), { recursive: true });
      fs.writeFileSync(path.join(dir, "put-by-hand", `m${i}.md`), `memory ${i}, written by hand\n`);
    }
    reindexStore({ handle: openStore({ store: "disk" }) });
    expect((await usage("disk")).documents).toBe(5);
    const refused = await createMemory("disk", "put-by-hand/m9", "through the API");
    expect(refused.status).toBe(422);
    expect(fs.existsSync(path.join(dir, "put-by-hand", "m9.md"))).toBe(false);
    expect(fs.readdirSync(path.join(dir, "put-by-hand")).filter((f) => f.startsWith("."))).toEqual([]);
    // A store already past the limit still takes an update that does not grow it.
    expect((await updateMemory("disk", "put-by-hand/m0", "shorter")).status).toBe(200);
  });
});
