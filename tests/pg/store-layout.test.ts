import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { listAuditTail, verifyAuditChain, pgLedger } from "@/lib/governance/audit";
import { putDocuments } from "@/lib/index/ingest";
import { storeSchemaName, storeSchemaVersion, withStoreTx } from "@/lib/db/pg-store";
import { createStorePg, describeStorePg, ensureCoreStorePg, ensureDefaultStorePg, listStoreNamesPg, openCoreForPg, openStorePg } from "@/lib/stores/engines/pg";
import { createTestDatabase } from "./helpers";

let pg: PgHandle;
beforeAll(async () => {
  pg = await openPgHandle({ url: await createTestDatabase(), max: 6 });
});
afterAll(async () => {
  await closePgHandle(pg);
});

const storeMigrationCount = () => (JSON.parse(fs.readFileSync(path.join(process.cwd(), "drizzle", "pg", "store", "meta", "_journal.json"), "utf8")) as { entries: unknown[] }).entries.length;

const tablesIn = async (schema: string) =>
  ((await pg.db.execute(sql`select table_name as t from information_schema.tables where table_schema = ${schema} order by 1`)).rows as { t: string }[]).map((r) => r.t);

describe("PostgreSQL stores: one schema per store", () => {
  it("creating a store makes its schema with the index tables, a full-text column, and an audit row", async () => {
    const summary = await createStorePg({ pg, input: { name: "photo-2024", description: "pictures" }, actor: "user:alice" });
    expect(summary).toMatchObject({ name: "photo-2024", description: "pictures", schema_version: storeSchemaVersion(), files: null });
    expect(summary.counts).toEqual({ categories: 0, chains: 0, chunk_embeddings: 0, chunks: 0, documents: 0, embeddings: 0, kg_frame: 0, kg_node: 0, kg_relation: 0, learnings: 0, memories: 0, reasoning_traces: 0, thoughts: 0, working_memory: 0 });
    expect(await tablesIn("store_photo-2024")).toEqual([
      "categories",
      "chains",
      "chunk_embeddings",
      "chunks",
      "documents",
      "embed_queue",
      "embedding_cache",
      "embeddings",
      "forget_policy",
      "forget_retired",
      "forget_run",
      "fts_postings",
      "fts_terms",
      "fts_totals",
      "item_contradictions",
      "item_state",
      "kg_frame",
      "kg_frame_evidence",
      "kg_node",
      "kg_relation",
      "kg_relation_evidence",
      "learnings",
      "memories",
      "memory_trash",
      "proposals",
      "reasoning_traces",
      "recall_event_hits",
      "recall_events",
      "reflection_settings",
      "search_log",
      "store_meta",
      "store_migrations",
      "store_usage",
      "thoughts",
      "word_postings",
      "word_terms",
      "word_totals",
      "working_memory",
      "write_policy",
    ]);
    const tsv = (await pg.db.execute(sql`select generation_expression as g from information_schema.columns where table_schema = 'store_photo-2024' and table_name = 'chunks' and column_name = 'tsv'`)).rows as { g: string }[];
    expect(tsv[0].g).toContain("to_tsvector('english'");
    const [audit] = await listAuditTail({ handle: pgLedger(pg.db), limit: 1 });
    expect(audit).toMatchObject({ actor: "user:alice", action: "store.create", target: "store:photo-2024" });
    expect((await verifyAuditChain({ handle: pgLedger(pg.db) })).ok).toBe(true);
  });

  it("a second create of the same name is a conflict, also when two replicas create it at the same moment", async () => {
    await expect(createStorePg({ pg, input: { name: "photo-2024" }, actor: "user:bob" })).rejects.toMatchObject({ code: "conflict" });
    const other = await openPgHandle({ url: pg.url, max: 2 });
    try {
      const outcomes = await Promise.allSettled([createStorePg({ pg, input: { name: "raced" }, actor: "a" }), createStorePg({ pg: other, input: { name: "raced" }, actor: "b" })]);
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      expect(outcomes.find((o) => o.status === "rejected")).toMatchObject({ reason: { code: "conflict" } });
    } finally {
      await closePgHandle(other);
    }
  });

  it("store names reach SQL only validated and quoted; names too long for an identifier get distinct hashed schemas", async () => {
    expect(() => storeSchemaName('x"; drop schema public cascade; --')).toThrow(/invalid store name/);
    await expect(openStorePg({ pg, store: "nope'; select 1" })).rejects.toMatchObject({ code: "not_found" });
    await expect(createStorePg({ pg, input: { name: "Bad Name" }, actor: "a" })).rejects.toThrow();
    const a = `${"a".repeat(55)}-one`;
    const b = `${"a".repeat(55)}-two`;
    expect(storeSchemaName(a)).not.toBe(storeSchemaName(b));
    expect(storeSchemaName(a).length).toBeLessThanOrEqual(63);
    await createStorePg({ pg, input: { name: a }, actor: "a" });
    await createStorePg({ pg, input: { name: b }, actor: "a" });
    expect(await listStoreNamesPg({ pg })).toEqual(expect.arrayContaining([a, b, "photo-2024", "raced"]));
  });

  it("a short name that spells a long name's hashed schema does not open that store (a token for one never reaches the other)", async () => {
    const long = "acme-production-knowledge-base-eu-west-1-tenant-0001-archive";
    const schema = storeSchemaName(long);
    const impostor = schema.slice("store_".length);
    expect(storeSchemaName(impostor)).toBe(schema);
    const made = await createStorePg({ pg, input: { name: long }, actor: "a" });
    await putDocuments({ handle: await openStorePg({ pg, store: long }), input: { path: "secret.md", content: "# Secret\n\nonly for the long-named store" }, actor: "a" });
    expect(made.name).toBe(long);
    // Opened after the real one (its schema is then known to this pool) and before: not found either way.
    await expect(openStorePg({ pg, store: impostor })).rejects.toMatchObject({ code: "not_found" });
    const fresh = await openPgHandle({ url: pg.url, max: 1 });
    try {
      await expect(openStorePg({ pg: fresh, store: impostor })).rejects.toMatchObject({ code: "not_found" });
      await expect(createStorePg({ pg: fresh, input: { name: impostor }, actor: "a" })).rejects.toMatchObject({ code: "conflict" });
    } finally {
      await closePgHandle(fresh);
    }
    expect(await listStoreNamesPg({ pg })).not.toContain(impostor);
  });

  it("an unknown store is not found, never created on open", async () => {
    await expect(openStorePg({ pg, store: "ghost" })).rejects.toMatchObject({ code: "not_found" });
    expect(await listStoreNamesPg({ pg })).not.toContain("ghost");
  });

  it("no store table shares a name with a governance table (store transactions resolve names store first, then public)", async () => {
    const store = await tablesIn("store_photo-2024");
    const governance = await tablesIn("public");
    expect(governance.length).toBeGreaterThan(10);
    expect(store.filter((t) => governance.includes(t))).toEqual([]);
  });

  it("core and default exist after start-up; a removed default stays removed", async () => {
    await ensureCoreStorePg({ pg });
    expect(await ensureDefaultStorePg({ pg })).toBe(true);
    expect(await ensureDefaultStorePg({ pg })).toBe(false);
    const names = await listStoreNamesPg({ pg });
    expect(names[0]).toBe("core");
    expect(names).toContain("default");
    await pg.db.execute(sql`drop schema "store_default" cascade`);
    expect(await ensureDefaultStorePg({ pg })).toBe(false);
  });

  it("core read beside another store goes through a read-only path: a write through it fails, core is unchanged", async () => {
    await ensureCoreStorePg({ pg });
    const core = await openStorePg({ pg, store: "core" });
    await putDocuments({ handle: core, input: { path: "who.md", content: "# Identity\nI prefer short answers." }, actor: "a" });
    const photo = await openStorePg({ pg, store: "photo-2024" });
    const coreReader = await openCoreForPg({ pg, handle: photo, includeCore: true });
    expect(coreReader?.readOnly).toBe(true);
    // Reads work.
    const n = await withStoreTx({ handle: coreReader!, work: async (tx) => ((await tx.execute(sql`select count(*)::int as n from documents`)).rows[0] as { n: number }).n });
    expect(n).toBe(1);
    // Every kind of write is refused by PostgreSQL itself (25006 read_only_sql_transaction).
    for (const write of [sql`insert into store_meta (key, value) values ('x', 'y')`, sql`delete from documents`, sql`update chunks set text = ''`, sql`create table evil (x int)`]) {
      await expect(withStoreTx({ handle: coreReader!, work: (tx) => tx.execute(write) })).rejects.toMatchObject({ cause: { code: "25006" } });
    }
    // Even a caller asking for a writable transaction on the core reader gets a read-only one.
    await expect(putDocuments({ handle: coreReader!, input: { path: "x.md", content: "x" }, actor: "a" })).rejects.toMatchObject({ cause: { code: "25006" } });
    expect((await describeStorePg({ handle: core })).counts.documents).toBe(1);
    expect(await openCoreForPg({ pg, handle: photo, includeCore: false })).toBeNull();
    expect(await openCoreForPg({ pg, handle: core, includeCore: true })).toBeNull();
  });

  it("a store behind the current schema version is migrated when opened; migrations are applied once", async () => {
    const other = await openPgHandle({ url: pg.url, max: 2 });
    try {
      await pg.db.execute(sql`update "store_raced".store_meta set value = 'old' where key = 'schema_version'`);
      // A fresh handle (another replica) has not seen the store yet, so it checks and re-stamps the version.
      const h = await openStorePg({ pg: other, store: "raced" });
      expect((await describeStorePg({ handle: h })).schema_version).toBe(storeSchemaVersion());
      const applied = (await pg.db.execute(sql`select count(*)::int as n from "store_raced".store_migrations`)).rows[0] as { n: number };
      // Each migration of drizzle/pg/store once, however many replicas opened the store.
      expect(applied.n).toBe(storeMigrationCount());
    } finally {
      await closePgHandle(other);
    }
  });
});
