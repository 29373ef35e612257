import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import type { PgStoreHandle } from "@/lib/db/pg-store";
import { runWithinBudgetPg, startQueryBudget } from "@/lib/db/query-budget";
import { putDocuments } from "@/lib/index/ingest";
import { putDocumentsSchema } from "@/lib/index/ingest";
import { searchInputSchema } from "@/lib/index/search";
import { searchStorePg } from "@/lib/index/search-pg";
import { createStorePg, openStorePg } from "@/lib/stores/engines/pg";
import { caught, createTestDatabase } from "./helpers";
import { patience } from "../fixtures/patience";

let pg: PgHandle;
let store: PgStoreHandle;
const WORDS = ["proxy", "timeout", "route", "cache", "server", "client", "retry", "budget", "index", "query", "vector", "token"];

beforeAll(async () => {
  pg = await openPgHandle({ url: await createTestDatabase(), max: 3 });
  await createStorePg({ pg, input: { name: "big" }, actor: "a" });
  store = await openStorePg({ pg, store: "big" });
  // 3,000 documents that every query word below matches, so ranking them is real work.
  for (let at = 0; at < 3_000; at += 500) {
    const documents = Array.from({ length: 500 }, (_, i) => ({
      path: `notes/${at + i}.md`,
      content: Array.from({ length: 40 }, (_, j) => WORDS[(at + i + j) % WORDS.length]).join(" ") + ` note ${at + i}`,
    }));
    await putDocuments({ handle: store, input: putDocumentsSchema.parse({ documents }), actor: "agent:a" });
  }
}, patience(120_000));
afterAll(async () => {
  await closePgHandle(pg);
});

const input = searchInputSchema.parse({ q: WORDS.join(" "), mode: "fts", match: "any", group: "chunk", limit: 20 });

describe("full-text search on PostgreSQL", () => {
  it("finds documents whose path is shorter than 'memory/x.md' (the memory filter once failed every search of such a store)", async () => {
    await putDocuments({ handle: store, input: putDocumentsSchema.parse({ documents: [{ path: "a.md", content: "the axolotl regrows its limbs" }] }), actor: "agent:a" });
    const r = await searchStorePg({ handle: store, core: null, input: searchInputSchema.parse({ q: "axolotl", mode: "fts", group: "chunk" }) });
    expect(r.results.map((h) => h.path)).toEqual(["a.md"]);
  });
});

describe("full-text search on PostgreSQL has a query budget", () => {
  it("a query over its budget is answered 422 query_too_expensive with a hint, not a 500 or a hang", async () => {
    const e = await caught(searchStorePg({ handle: store, core: null, input, budgetMs: 1 }));
    expect(e).toMatchObject({ code: "query_too_expensive", status: 422 });
    expect((e as Error).message).toMatch(/1 ms query budget \(DUALMIND_QUERY_BUDGET_MS\); narrow it/);
  });

  it("within the budget the same query answers, and the connection's own limit is back afterwards", async () => {
    const r = await searchStorePg({ handle: store, core: null, input, budgetMs: 60_000 });
    expect(r.results).toHaveLength(20);
    expect(r.reason).toBeNull();
    const client = await pg.pool.connect();
    try {
      expect((await client.query("show statement_timeout")).rows[0].statement_timeout).toBe("30s");
    } finally {
      client.release();
    }
  });
});

describe("the search budget never loosens the pool's own statement limit", () => {
  it("a budget larger than DUALMIND_PG_STATEMENT_TIMEOUT_MS still stops a statement at the pool's limit", async () => {
    const tight = await openPgHandle({ url: pg.url, max: 1, timeouts: { statementMs: 200, lockMs: 10_000, idleInTransactionMs: 60_000 } });
    try {
      const e = await caught(
        tight.db.transaction((tx) => runWithinBudgetPg({ tx, budget: startQueryBudget({ hint: "narrow it", budgetMs: 60_000 }), fn: () => tx.execute(sql`select pg_sleep(2)`) })),
      );
      expect(e).toMatchObject({ code: "query_too_expensive" });
    } finally {
      await closePgHandle(tight);
    }
  });
});
