import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgEngine } from "@/lib/db/engine";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { withStoreTx, type PgStoreTx } from "@/lib/db/pg-store";
import { checkStoreUsagePg, STORE_USAGE_SQL } from "@/lib/db/store-usage";
import { STORE_BYTES_SQLSTATE } from "@/lib/errors";
import { storesOn } from "@/lib/stores/backend";
import { openStorePg } from "@/lib/stores/engines/pg";
import { createTestDatabase } from "./helpers";

/**
 * A PostgreSQL store's byte total follows statements that write thousands of
 * rows at once (an import, a bulk delete, a rewrite): counted once a statement,
 * so the write costs what its rows cost, and the total still equals a recount.
 */
let pg: PgHandle;
beforeAll(async () => {
  pg = await openPgHandle({ url: await createTestDatabase(), max: 2 });
  const backend = storesOn(pgEngine(pg));
  await backend.ensureStartupStores();
  await backend.createStore({ input: { name: "bulk" }, actor: "test" });
});
afterAll(async () => closePgHandle(pg));

const ROWS = 5_000;
const rows = async <T,>(tx: PgStoreTx, q: ReturnType<typeof sql>) => (await tx.execute(q)).rows as T[];
/** How many times this transaction has updated the usage row so far (PostgreSQL's own per-transaction counter). */
const usageUpdates = async (tx: PgStoreTx) =>
  Number((await rows<{ n: string }>(tx, sql`select n_tup_upd as n from pg_stat_xact_user_tables where schemaname = current_schema() and relname = 'store_usage'`))[0]?.n ?? 0);

describe("the byte total over bulk statements on PostgreSQL", () => {
  it("an insert, an update and a delete of thousands of thoughts each update the total once, and it equals a recount after each", async () => {
    const handle = await openStorePg({ pg, store: "bulk" });
    await withStoreTx({
      handle,
      work: async (tx) => {
        const check = async () => {
          const u = await checkStoreUsagePg({ tx, schema: handle.schema });
          expect(u.bytes).toBe(u.recounted_bytes);
          return u.bytes;
        };
        const empty = await check();
        const start = await usageUpdates(tx);
        await tx.execute(sql`insert into thoughts (id, content, framework, timestamp, tags, content_hash, created_by)
          select 'b' || g, repeat('word ', 20) || g, 'conversation', 1790000000000 + g, '[]', md5(g::text), 'bulk' from generate_series(1, ${ROWS}::int) g`);
        expect(await usageUpdates(tx)).toBe(start + 1);
        const full = await check();
        expect(full).toBeGreaterThan(empty + ROWS * 100);
        // Longer content everywhere: the total grows by the added bytes (and their full-text copies), once.
        await tx.execute(sql`update thoughts set content = content || ' more' where id like 'b%'`);
        expect(await usageUpdates(tx)).toBe(start + 2);
        expect(await check()).toBeGreaterThan(full);
        await tx.execute(sql`delete from thoughts where id like 'b%'`);
        expect(await usageUpdates(tx)).toBe(start + 3);
        expect(await check()).toBe(empty);
      },
    });
    const [after] = await withStoreTx({ handle, readOnly: true, work: (tx) => rows<{ bytes: string }>(tx, sql.raw(STORE_USAGE_SQL)) });
    expect(Number(after.bytes)).toBe((await withStoreTx({ handle, readOnly: true, work: (tx) => checkStoreUsagePg({ tx, schema: handle.schema }) })).recounted_bytes);
  });

  it("a bulk insert past the limit is refused whole: no row of it stays and the total is unchanged", async () => {
    const handle = await openStorePg({ pg, store: "bulk" });
    const before = await withStoreTx({ handle, readOnly: true, work: (tx) => checkStoreUsagePg({ tx, schema: handle.schema }) });
    const refusal = await withStoreTx({
      handle,
      work: async (tx) => {
        await tx.execute(sql`select set_config('dualmind.max_store_bytes', ${String(before.bytes + 50_000)}, true)`);
        await tx.execute(sql`insert into thoughts (id, content, framework, timestamp, tags, content_hash, created_by)
          select 'r' || g, repeat('word ', 20), 'conversation', 1790000000000 + g, '[]', md5(g::text), 'bulk' from generate_series(1, ${ROWS}::int) g`);
      },
    }).then(
      () => null,
      (e: { cause?: { code?: string } }) => e.cause?.code,
    );
    expect(refusal).toBe(STORE_BYTES_SQLSTATE);
    const after = await withStoreTx({ handle, readOnly: true, work: (tx) => checkStoreUsagePg({ tx, schema: handle.schema }) });
    expect(after).toEqual(before);
    const [{ n }] = await withStoreTx({ handle, readOnly: true, work: (tx) => rows<{ n: string }>(tx, sql`select count(*) as n from thoughts where id like 'r%'`) });
    expect(Number(n)).toBe(0);
  });
});
