import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { renderToStaticMarkup } from "react-dom/server";
import { GET as listWorkingMemory, PUT as putWorkingMemory } from "@/app/api/v1/stores/[store]/working-memory/route";
import WorkingMemoryPage from "@/app/(dashboard)/reflection/[store]/working-memory/page";
import { GET as listNodes, POST as createNode } from "@/app/api/v1/stores/[store]/nodes/route";
import { GET as listThoughts, POST as think } from "@/app/api/v1/stores/[store]/thoughts/route";
import { handleMcpPost } from "@/lib/mcp/http";
import { DELETE as deleteMemory, POST as createMemory } from "@/app/api/v1/stores/[store]/memories/route";
import { GET as listTrash } from "@/app/api/v1/stores/[store]/memories/trash/route";
import { governanceSql, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

vi.mock("server-only", () => ({}));
vi.mock("@/app/_server/session", () => ({ requireUser: async () => ({ id: 1, username: "viewer", role: "viewer" }) }));

/** Graph and working-memory answers stay within their byte budgets; "bytes" limits count UTF-8 bytes. */
let env: TestEnv;
let token = "";
const store = "lim";
const LIMITS = { DUALMIND_LIST_MAX_BYTES: "16384", DUALMIND_WORKING_MEMORY_MAX_KEYS: "12", DUALMIND_MCP_BATCH_MAX_BYTES: "65536", DUALMIND_MEMORY_TRASH_MAX_BYTES: "65536" };

beforeAll(async () => {
  env = await useTestBackend(LIMITS);
  await seedStore(store);
  token = await seedToken({ label: "w", agent_id: "graph-agent", scopes: ["write"] });
});
afterAll(async () => env?.cleanup());

const limitOf = (json: { error?: { details?: { limit?: string }[] } }) => json.error?.details?.[0]?.limit;
const wmUrl = (q = "") => `http://127.0.0.1/api/v1/stores/${store}/working-memory${q}`;

describe("working memory limits", () => {
  it("a value's limit counts UTF-8 bytes: 30,000 '€' (90 KB) is refused (400) though it is 30,000 characters", async () => {
    const r = await callRoute(putWorkingMemory, { method: "PUT", url: wmUrl(), token, params: { store }, body: { key: "euro", value: "€".repeat(30_000) } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.json)).toContain("bytes");
    const ok = await callRoute(putWorkingMemory, { method: "PUT", url: wmUrl(), token, params: { store }, body: { key: "euro", value: "€".repeat(20_000) } });
    expect(ok.status).toBe(200);
  });

  it("the list stops at DUALMIND_LIST_MAX_BYTES and pages with next_offset to every key; the key cap answers 422 naming DUALMIND_WORKING_MEMORY_MAX_KEYS", async () => {
    for (let i = 0; i < 11; i++) {
      const r = await callRoute(putWorkingMemory, { method: "PUT", url: wmUrl(), token, params: { store }, body: { key: `k${String(i).padStart(2, "0")}`, value: "x".repeat(6000) } });
      expect(r.status).toBe(200);
    }
    const full = await callRoute(putWorkingMemory, { method: "PUT", url: wmUrl(), token, params: { store }, body: { key: "one-more", value: 1 } });
    expect(full.status).toBe(422);
    expect(limitOf(full.json)).toBe("DUALMIND_WORKING_MEMORY_MAX_KEYS");

    const seen: string[] = [];
    let offset: number | null = 0;
    let pages = 0;
    while (offset !== null) {
      const page = await callRoute(listWorkingMemory, { url: wmUrl(`?offset=${offset}`), token, params: { store } });
      expect(page.status).toBe(200);
      expect(page.json.total).toBe(12);
      expect(JSON.stringify(page.json).length).toBeLessThan(16384 + 6100);
      seen.push(...page.json.entries.map((e: { key: string }) => e.key));
      offset = page.json.next_offset;
      pages++;
    }
    expect(pages).toBeGreaterThan(2);
    expect(seen).toHaveLength(12);
    expect(new Set(seen).size).toBe(12);

    const html = renderToStaticMarkup(await WorkingMemoryPage({ params: Promise.resolve({ store }), searchParams: Promise.resolve({}) }));
    expect(html.length).toBeLessThan(3 * 16384);
    expect(html).toContain("more keys");
  });
});

/** Every row of a list, page by page via next_offset; each answer within the budget (one row may be up to 8 KB here). */
async function pageAll(route: typeof listNodes, path: string, key: string): Promise<{ rows: unknown[]; pages: number }> {
  const rows: unknown[] = [];
  let offset: number | null = 0;
  let pages = 0;
  while (offset !== null) {
    const page = await callRoute(route, { url: `http://127.0.0.1/api/v1/stores/${store}/${path}?limit=200&offset=${offset}`, token, params: { store } });
    expect(page.status).toBe(200);
    expect(Buffer.byteLength(JSON.stringify(page.json))).toBeLessThan(16384 + 8192);
    rows.push(...page.json[key]);
    offset = page.json.next_offset;
    pages++;
  }
  return { rows, pages };
}

describe("graph list budgets", () => {
  it("node attributes' 64 KiB counts UTF-8 bytes: 30,000 '€' (90 KB) is refused (400) though it is 30,000 characters", async () => {
    const r = await callRoute(createNode, { token, params: { store }, body: { name: "too-big", display_name: "too-big", entity_type: "concept", attributes: { a: "€".repeat(30_000) } } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.json)).toContain("64 KiB");
  });

  it("nodes and thoughts lists stop at DUALMIND_LIST_MAX_BYTES (counted in UTF-8 bytes) and page with next_offset to every row", async () => {
    for (let i = 0; i < 12; i++) {
      const r = await callRoute(createNode, { token, params: { store }, body: { name: `euro${i}`, display_name: `euro${i}`, entity_type: "concept", attributes: { a: "€".repeat(2000) } } });
      expect(r.status).toBe(201);
      expect((await callRoute(think, { token, params: { store }, body: { content: `thought ${i} ${"€".repeat(2000)}` } })).status).toBe(201);
    }
    const nodes = await pageAll(listNodes, "nodes", "nodes");
    expect(nodes.rows).toHaveLength(12);
    expect(nodes.pages).toBeGreaterThan(2);
    const thoughts = await pageAll(listThoughts, "thoughts", "thoughts");
    expect(thoughts.rows).toHaveLength(12);
    expect(thoughts.pages).toBeGreaterThan(2);
  });

  it("the tool answers of one MCP batch share DUALMIND_MCP_BATCH_MAX_BYTES: later calls past it are refused naming the limit", async () => {
    const call = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "node_list", arguments: { store, limit: 200 } } });
    const res = await handleMcpPost(
      new Request("http://127.0.0.1/api/mcp", {
        method: "POST",
        headers: { accept: "application/json, text/event-stream", "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify(Array.from({ length: 10 }, (_, i) => call(i))),
      }),
    );
    expect(res.status).toBe(200);
    const text = await res.text();
    const answers = JSON.parse(text) as { id: number; result: { isError?: boolean; content: { text: string }[] } }[];
    expect(answers).toHaveLength(10);
    const refused = answers.filter((a) => a.result.isError);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0].result.content[0].text).toContain("DUALMIND_MCP_BATCH_MAX_BYTES");
    const carried = answers.filter((a) => !a.result.isError).reduce((n, a) => n + Buffer.byteLength(a.result.content[0].text), 0);
    expect(carried).toBeLessThanOrEqual(65536 + 16384 + 8192);
  });
});

describe("memory trash", () => {
  it("keeps at most DUALMIND_MEMORY_TRASH_MAX_BYTES of deleted memories (plus the newest): the oldest are purged first, audited", async () => {
    for (let i = 0; i < 8; i++) {
      const path = `trash/m${i}.md`;
      expect((await callRoute(createMemory, { token, params: { store }, body: { path, body: `m${i} ${"w ".repeat(12_000)}` } })).status).toBe(201);
      expect((await callRoute(deleteMemory, { method: "DELETE", token, params: { store }, url: `http://127.0.0.1/x?path=${path}` })).status).toBeLessThan(300);
    }
    const trash = await callRoute(listTrash, { token, params: { store }, url: `http://127.0.0.1/api/v1/stores/${store}/memories/trash` });
    expect(trash.status).toBe(200);
    const paths = (trash.json.entries ?? trash.json.trash ?? trash.json.memories).map((e: { path: string }) => e.path);
    expect(paths.length).toBeLessThanOrEqual(4);
    expect(paths[0]).toBe("trash/m7.md");
    const audited = await governanceSql<{ n: unknown }>("select count(*) as n from audit_log where action = 'memory.purge' and actor = 'system'");
    expect(Number(audited[0].n)).toBe(8 - paths.length);
  });
});
