import { pgEngine } from "@/lib/db/engine";
import { sql } from "drizzle-orm";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as documentsRoute from "@/app/api/v1/stores/[store]/documents/route";
import * as tracesRoute from "@/app/api/v1/stores/[store]/traces/route";
import * as rememberRoute from "@/app/api/v1/stores/[store]/remember/route";
import { governance } from "@/lib/backend/governance";
import { closePg, closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { withStoreTx } from "@/lib/db/pg-store";
import { inCallerTx } from "@/lib/db/port";
import { storeParams } from "@/lib/api/params";
import { defineRoute } from "@/lib/api/route";
import { ingestDocumentsOp, putDocumentsSchema } from "@/lib/index/ingest";
import { createMemorySchema, memoryFilterSchema, updateMemorySchema } from "@/lib/index/memories";
import { searchInputSchema } from "@/lib/index/search";
import { storesOn, stores, type StoresBackend } from "@/lib/stores/backend";
import { openStorePg } from "@/lib/stores/engines/pg";
import { openStore } from "@/lib/stores/stores";
import { callRoute, useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

/**
 * stores() on PostgreSQL in-process: what the ported routes call, down to
 * the database (the HTTP suite, http-stores.test.ts, covers the wire).
 */
let pg: PgHandle;
let backend: StoresBackend;
beforeAll(async () => {
  pg = await openPgHandle({ url: await createTestDatabase(), max: 4 });
  backend = storesOn(pgEngine(pg));
  expect(await backend.ensureStartupStores()).toEqual({ createdDefault: true });
  // Once: a second start (or replica) finds them.
  expect(await backend.ensureStartupStores()).toEqual({ createdDefault: false });
  await backend.createStore({ input: { name: "kb" }, actor: "test" });
});
afterAll(async () => {
  await closePgHandle(pg);
});

describe("the PostgreSQL stores backend", () => {
  it("lists core first, describes a store without files, and 404s an unknown one", async () => {
    expect((await backend.listStores()).map((s) => s.name)).toEqual(["core", "default", "kb"]);
    expect(await backend.describeStore({ store: "kb" })).toMatchObject({ name: "kb", files: null, vectors: { available: true } });
    await expect(backend.describeStore({ store: "nope" })).rejects.toMatchObject({ code: "not_found" });
    await expect(backend.search({ store: "nope", input: searchInputSchema.parse({ q: "x" }) })).rejects.toMatchObject({ code: "not_found" });
  });

  it("puts, lists, reads and deletes documents; search finds them with every mode, vectors saying why they could not answer", async () => {
    // Paths of 10+ characters: search-pg.ts's memory filter takes substr(path, 8, length - 10), which PostgreSQL refuses below 0 (reported to its owner).
    await backend.putDocuments({ store: "kb", input: putDocumentsSchema.parse({ documents: [{ path: "notes/one.md", content: "The marmot burrow is deep." }, { path: "notes/two.md", content: "Two" }] }), actor: "t" });
    const listed = await backend.listDocuments({ store: "kb", prefix: "notes/", limit: 10, offset: 0 });
    expect(listed).toMatchObject({ total: 2, documents: [{ path: "notes/one.md", chunks: 1 }, { path: "notes/two.md", chunks: 1 }] });
    const fts = await backend.search({ store: "kb", input: searchInputSchema.parse({ q: "marmot", mode: "fts" }) });
    expect(fts.results.map((r) => r.path)).toEqual(["notes/one.md"]);
    expect((await backend.getChunk({ store: "kb", chunkId: fts.results[0].chunk_id })).text).toContain("marmot burrow");
    const vector = await backend.search({ store: "kb", input: searchInputSchema.parse({ q: "marmot", mode: "vector" }) });
    expect(vector).toMatchObject({ effective_mode: "fts", fallback: { reason: "backlog" } });
    expect(vector.results.map((r) => r.path)).toEqual(["notes/one.md"]);
    await backend.deleteDocument({ store: "kb", path: "notes/two.md", actor: "t" });
    await expect(backend.deleteDocument({ store: "kb", path: "notes/two.md", actor: "t" })).rejects.toMatchObject({ code: "not_found" });
    await expect(backend.getChunk({ store: "kb", chunkId: "0".repeat(32) })).rejects.toMatchObject({ code: "not_found" });
  });

  it("creates, filters, browses, updates and deletes memories; writes answer with the body", async () => {
    const made = await backend.createMemory({ store: "kb", input: createMemorySchema.parse({ path: "ops/deploy/friday", body: "No deploys on friday.", tags: ["rule"] }), actor: "t" });
    expect(made).toMatchObject({ path: "ops/deploy/friday", tags: ["rule"], body: expect.stringContaining("No deploys") });
    await backend.createMemory({ store: "kb", input: createMemorySchema.parse({ path: "ops/other", body: "Other." }), actor: "t" });
    expect((await backend.listMemories({ store: "kb", filter: memoryFilterSchema.parse({ category: "ops/deploy" }) })).memories.map((m) => m.path)).toEqual(["ops/deploy/friday"]);
    expect((await backend.listMemories({ store: "kb", filter: memoryFilterSchema.parse({ tags: "rule,none" }) })).total).toBe(1);
    expect((await backend.listMemories({ store: "kb", filter: memoryFilterSchema.parse({ category: "ops", sort: "created_at", order: "asc" }) })).total).toBe(2);
    expect((await backend.listCategoryChildren({ store: "kb", parent: null, limit: 100, offset: 0 })).categories).toMatchObject([{ path: "ops", memories: 2, children: 1 }]);
    expect(await backend.setCategoryDescription({ store: "kb", input: { path: "ops", description: "Operations" }, actor: "t" })).toMatchObject({ path: "ops", description: "Operations" });
    const updated = await backend.updateMemory({ store: "kb", input: updateMemorySchema.parse({ path: "ops/deploy/friday", body: "Deploys on friday need two reviewers." }), actor: "t" });
    expect(updated.body).toContain("two reviewers");
    expect((await backend.getMemory({ store: "kb", memoryPath: "ops/deploy/friday" })).body).toContain("two reviewers");
    await backend.deleteMemory({ store: "kb", memoryPath: "ops/other", actor: "t" });
    await expect(backend.getMemory({ store: "kb", memoryPath: "ops/other" })).rejects.toMatchObject({ code: "not_found" });
  });

  it("verifies the index against the memories table, and a reindex job rebuilds what was lost", async () => {
    expect(await backend.verifyStore({ store: "kb" })).toMatchObject({ ok: true, counts: { memories: 1, api_documents: 1 }, not_indexed: [], hash_mismatches: [], missing_files: [] });
    const handle = await openStorePg({ pg, store: "kb" });
    // Lose a memory's document and leave a stray memory document behind.
    await withStoreTx({ handle, work: async (tx) => {
      await tx.execute(sql`delete from documents where path = 'memory/ops/deploy/friday.md'`);
      await tx.execute(sql`insert into documents (path, origin, kind, sha256, bytes, mtime, indexed_at) values ('memory/gone/stray.md', 'file', 'memory', 'x', 1, 1, 1)`);
    } });
    const broken = await backend.verifyStore({ store: "kb" });
    expect(broken).toMatchObject({ ok: false, not_indexed: ["memory/ops/deploy/friday.md"], memories_without_document: ["ops/deploy/friday"], missing_files: ["memory/gone/stray.md"] });
    expect((await backend.search({ store: "kb", input: searchInputSchema.parse({ q: "reviewers", mode: "fts" }) })).results).toEqual([]);

    let job = await backend.startReindex({ store: "kb", actor: "admin" });
    for (const until = Date.now() + 60_000; Date.now() < until && job.status === "running"; ) {
      await new Promise((r) => setTimeout(r, 50));
      job = (await backend.getJob({ id: job.id, stores: null }))!;
    }
    expect(job).toMatchObject({ status: "succeeded", result: { counts: { scanned: 1, added: 1, removed: 1 } } });
    expect(await backend.getJob({ id: job.id, stores: ["other"] })).toBeNull();
    expect((await backend.verifyStore({ store: "kb" })).ok).toBe(true);
    expect((await backend.search({ store: "kb", input: searchInputSchema.parse({ q: "reviewers", mode: "fts" }) })).results.map((r) => r.path)).toEqual(["memory/ops/deploy/friday.md"]);
    // The API document is kept as it is.
    expect((await backend.listDocuments({ store: "kb", prefix: "notes/", limit: 10, offset: 0 })).total).toBe(1);
  });

  it("a reindex that recounts while a document write is still in flight leaves the store's total equal to a recount (verify consistent)", async () => {
    const handle = await openStorePg({ pg, store: "kb" });
    let release = () => {};
    const released = new Promise<void>((r) => (release = r));
    let counted = () => {};
    const inFlight = new Promise<void>((r) => (counted = r));
    // A write that has counted its rows (its trigger holds the usage row) and has not committed yet.
    const writer = withStoreTx({ handle, work: async (tx) => {
      await inCallerTx(tx, ingestDocumentsOp({ docs: [{ path: "notes/in-flight.md", origin: "api", text: "Written while the reindex recounts.", mtime: Date.now() }] }));
      counted();
      await released;
    } });
    await inFlight;
    const reindex = backend.runReindex({ store: "kb", actor: "admin" });
    try {
      // The reindex reaches its recount and waits for the writer.
      const lockWaits = async () => Number((await pg.pool.query("select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'")).rows[0].n);
      await expect.poll(lockWaits).toBeGreaterThan(0);
    } finally {
      release();
    }
    await writer;
    expect(await reindex).toMatchObject({ status: "succeeded" });
    const verified = await backend.verifyStore({ store: "kb" });
    expect(verified.usage).toEqual({ bytes: verified.usage.recounted_bytes, documents: 3, recounted_bytes: verified.usage.recounted_bytes, recounted_documents: 3 });
    expect(verified).toMatchObject({ ok: true, consistent: true });
  });
});

describe("the route wrapper with DATABASE_URL, in-process", () => {
  it("serves the store routes from PostgreSQL, and a route that reached for a local SQLite store would answer 501, after the store allow-list", async () => {
    const env = useTempDataDir({ DATABASE_URL: await createTestDatabase() });
    try {
      expect(stores().kind).toBe("postgres");
      await stores().ensureStartupStores();
      const token = (await governance().createApiToken({ input: { label: "w", agent_id: "w", scopes: ["write"], stores: ["default"] }, actor: "test" })).token;
      const put = await callRoute(documentsRoute.PUT, { method: "PUT", token, params: { store: "default" }, body: { path: "notes/route.md", content: "routed through the wrapper" } });
      expect(put.status).toBe(200);
      const listed = await callRoute(documentsRoute.GET, { token, params: { store: "default" }, url: "http://127.0.0.1/api/v1/stores/default/documents" });
      expect(listed.json.documents.map((d: { path: string }) => d.path)).toEqual(["notes/route.md"]);
      const traced = await callRoute(tracesRoute.POST, { token, params: { store: "default" }, body: { intent: { verb: "route", target: "a trace" }, shard_type: "api", outcome: "success" } });
      expect(traced).toMatchObject({ status: 201, json: { deduped: false, embedding: "queued" } });
      const remembered = await callRoute(rememberRoute.POST, { method: "POST", token, params: { store: "default" }, body: { query: "a trace routed" } });
      expect(remembered).toMatchObject({ status: 200, json: { store: "default", results: [] } });
      // A store route that opened the local SQLite store (none does: every one goes through stores()) answers 501 naming
      // the store, never data from a local index.db — after the token's checks.
      const notYet = defineRoute({ name: "POST /stores/{store}/not-ported-example", auth: "write", params: storeParams, response: z.object({}), handler: ({ params }) => openStore({ store: params.store }) && {} });
      const unported = await callRoute(notYet, { method: "POST", token, params: { store: "default" } });
      expect(unported).toMatchObject({ status: 501, json: { error: { code: "not_implemented" } } });
      expect(unported.json.error.message).toContain("The local SQLite store default");
      expect((await callRoute(notYet, { method: "POST", token, params: { store: "core" } })).status).toBe(403);
      expect((await callRoute(tracesRoute.POST, { token, params: { store: "core" }, body: {} })).status).toBe(403);
      expect((await callRoute(rememberRoute.POST, { method: "POST", token, params: { store: "core" }, body: { query: "x" } })).status).toBe(403);
    } finally {
      await closePg();
      env.cleanup();
    }
  });
});
