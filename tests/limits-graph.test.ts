import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { renderToStaticMarkup } from "react-dom/server";
import { GET as listWorkingMemory, PUT as putWorkingMemory } from "@/app/api/v1/stores/[store]/working-memory/route";
import WorkingMemoryPage from "@/app/(dashboard)/reflection/[store]/working-memory/page";
import { seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

vi.mock("server-only", () => ({}));
vi.mock("@/app/_server/session", () => ({ requireUser: async () => ({ id: 1, username: "viewer", role: "viewer" }) }));

/** Graph and working-memory answers stay within their byte budgets; "bytes" limits count UTF-8 bytes. */
let env: TestEnv;
let token = "";
const store = "lim";
const LIMITS = { DUALMIND_LIST_MAX_BYTES: "16384", DUALMIND_WORKING_MEMORY_MAX_KEYS: "12" };

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
