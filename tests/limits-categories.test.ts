import { afterEach, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { createMemorySchema, memoryFilterSchema, setCategorySchema } from "@/lib/index/memories";
import { stores } from "@/lib/stores/backend";
import { openStore } from "@/lib/stores/stores";
import { GET as listMemoriesRoute } from "@/app/api/v1/stores/[store]/memories/route";
import { itSqliteOnly, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

let env: TestEnv;
afterEach(async () => env?.cleanup());
const store = "cats";

const remember = (path: string) => stores().createMemory({ store, input: createMemorySchema.parse({ path, body: `about ${path}` }), actor: "user:ed" });
const describeCategory = (path: string, description: string) => stores().setCategoryDescription({ store, input: setCategorySchema.parse({ path, description }), actor: "user:ed" });

describe("categories per store", () => {
  it("a memory or a describe that would add a category past DUALMIND_MAX_CATEGORIES_PER_STORE is refused with 422 naming it; existing ones still take writes", async () => {
    env = await useTestBackend({ DUALMIND_MAX_CATEGORIES_PER_STORE: "3" });
    await seedStore(store);
    await remember("ops/oncall/pager");
    await describeCategory("notes", "mine");
    await expect(remember("ideas/one")).rejects.toMatchObject({ status: 422, message: expect.stringContaining("DUALMIND_MAX_CATEGORIES_PER_STORE") });
    await expect(describeCategory("ideas", "x")).rejects.toMatchObject({ status: 422, message: expect.stringContaining("DUALMIND_MAX_CATEGORIES_PER_STORE") });
    await expect(remember("ops/oncall/runbook")).resolves.toMatchObject({ path: "ops/oncall/runbook" });
    await expect(describeCategory("ops", "Operations")).resolves.toMatchObject({ path: "ops", description: "Operations", memories: 2, children: 1 });
    // Nothing of the refused memory was kept.
    expect((await stores().listCategoryChildren({ store, parent: null, limit: 100, offset: 0 })).categories.map((c) => c.path)).toEqual(["notes", "ops"]);
    await expect(stores().getMemory({ store, memoryPath: "ideas/one" })).rejects.toMatchObject({ code: "not_found" });
  });
});

describe("category listing", () => {
  it("answers a page with total and next_offset, within DUALMIND_LIST_MAX_BYTES, with recursive counts", async () => {
    env = await useTestBackend({ DUALMIND_LIST_MAX_BYTES: String(16 * 1024) });
    await seedStore(store);
    for (const c of ["a", "b", "c", "d", "e"]) await describeCategory(c, c.repeat(2000));
    await remember("b/x/one");
    await remember("b/two");
    await remember("b-side/not-under-b");
    const first = await stores().listCategoryChildren({ store, parent: null, limit: 3, offset: 0 });
    // Three descriptions of 2,000 bytes fit in 16 KiB: the page stops at its limit.
    expect(first.categories.map((c) => [c.path, c.memories, c.children])).toEqual([["a", 0, 0], ["b", 2, 1], ["b-side", 1, 0]]);
    expect(first).toMatchObject({ total: 6, next_offset: 3 });
    const rest = await stores().listCategoryChildren({ store, parent: null, limit: 3, offset: 3 });
    expect(rest.categories.map((c) => c.path)).toEqual(["c", "d", "e"]);
    expect(rest.next_offset).toBeNull();

    for (const c of ["f", "g", "h", "i", "j", "k"]) await describeCategory(c, c.repeat(2000));
    // Twelve of 2,000 bytes do not: the budget cuts the page before its limit, and next_offset continues it.
    const cut = await stores().listCategoryChildren({ store, parent: null, limit: 100, offset: 0 });
    expect(cut.categories.length).toBeLessThan(12);
    expect(Buffer.byteLength(JSON.stringify(cut.categories))).toBeLessThanOrEqual(16 * 1024);
    expect(cut.next_offset).toBe(cut.categories.length);

    const all = await stores().listAllCategories({ store, limit: 4 });
    expect(all.total).toBe(13);
    expect(all.categories.map((c) => c.path)).toEqual(["a", "b", "b-side", "b/x"]);
    expect(await stores().getCategory({ store, path: "b/x" })).toMatchObject({ memories: 1, children: 0 });
  });

  itSqliteOnly("reads the memories once per listing, over the category index, whatever the number of categories", "the statement plans are SQLite's (EXPLAIN QUERY PLAN)", async () => {
    env = await useTestBackend();
    await seedStore(store);
    const db = openStore({ store }).sqlite;
    const seen: string[] = [];
    const prepare = db.prepare.bind(db);
    db.prepare = ((source: string) => {
      seen.push(source);
      return prepare(source);
    }) as typeof db.prepare;
    const readsOfMemories = async (run: () => Promise<unknown>) => {
      seen.length = 0;
      await run();
      const statements = seen.filter((s) => /\bmemories\b/.test(s) && /^\s*(select|delete)/i.test(s));
      const plans = statements.map((s) => (prepare(`explain query plan ${s}`).all(...Array.from({ length: (s.match(/\?/g) ?? []).length }, () => "x")) as { detail: string }[]).map((r) => r.detail));
      return { statements: statements.length, plans };
    };
    for (let i = 0; i < 5; i++) await remember(`c${i}/m`);
    const few = await readsOfMemories(() => stores().listCategoryChildren({ store, parent: null, limit: 200, offset: 0 }));
    for (let i = 5; i < 40; i++) await remember(`c${i}/m`);
    const many = await readsOfMemories(() => stores().listCategoryChildren({ store, parent: null, limit: 200, offset: 0 }));
    const describeOne = await readsOfMemories(() => describeCategory("c7", "seven"));
    const filtered = await readsOfMemories(() => stores().listMemories({ store, filter: memoryFilterSchema.parse({ category: "c7" }) }));
    expect(many.statements).toBe(few.statements);
    for (const { plans } of [few, many, describeOne, filtered]) {
      for (const plan of plans) {
        // No count per category: nothing correlated scans the memories, and no memories scan outside the index.
        expect(plan.join("\n")).not.toMatch(/CORRELATED/);
        expect(plan.filter((d) => /^SCAN (memories|m)\b/.test(d) && !/COVERING INDEX/.test(d))).toEqual([]);
      }
    }
  });
});

describe("memory filter tags", () => {
  it("more than 32 tags answer 400 before any query; the filter (REST and MCP query_memories) names the field", async () => {
    env = await useTestBackend();
    await seedStore(store);
    const token = await seedToken({ label: "r", agent_id: "reader", scopes: ["read"] });
    await remember("ops/pager");
    const tags = Array.from({ length: 1500 }, (_, i) => `t${i}`).join(",");
    const rest = await callRoute(listMemoriesRoute, { token, url: `http://127.0.0.1/api/v1/stores/${store}/memories?tags=${tags}`, params: { store } });
    expect(rest.status).toBe(400);
    expect(rest.json.error.code).toBe("invalid_request");
    const ok = await callRoute(listMemoriesRoute, { token, url: `http://127.0.0.1/api/v1/stores/${store}/memories?tags=${Array.from({ length: 32 }, (_, i) => `t${i}`).join(",")}`, params: { store } });
    expect(ok.status).toBe(200);
    expect(memoryFilterSchema.safeParse({ tags: Array.from({ length: 40_000 }, (_, i) => `t${i}`) }).error?.issues[0]?.path).toEqual(["tags"]);
  });
});

describe("memory trash entries", () => {
  it("keeps at most DUALMIND_MEMORY_TRASH_MAX_ENTRIES deleted memories however small: the oldest are purged first, audited naming the limit", async () => {
    env = await useTestBackend({ DUALMIND_MEMORY_TRASH_MAX_ENTRIES: "3" });
    await seedStore(store);
    for (let i = 0; i < 6; i++) {
      await remember(`t/m${i}`);
      await stores().deleteMemory({ store, memoryPath: `t/m${i}`, actor: "user:ed" });
    }
    expect((await stores().listMemoryTrash({ store })).map((t) => t.path)).toEqual(["t/m5", "t/m4", "t/m3"]);
    const purges = (await governance().listAuditTail({ limit: 100 })).filter((a) => a.action === "memory.purge");
    expect(purges.length).toBe(3);
    expect(purges.every((a) => JSON.stringify(a.details).includes("DUALMIND_MEMORY_TRASH_MAX_ENTRIES"))).toBe(true);
  });
});
