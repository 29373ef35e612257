import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GET as listStoresRoute, POST as createStoreRoute } from "@/app/api/v1/stores/route";
import { DELETE as deleteStoreRoute, GET as getStoreRoute } from "@/app/api/v1/stores/[store]/route";
import { POST as archiveRoute } from "@/app/api/v1/stores/[store]/archive/route";
import { POST as unarchiveRoute } from "@/app/api/v1/stores/[store]/unarchive/route";
import { POST as createMemoryRoute } from "@/app/api/v1/stores/[store]/memories/route";
import { POST as searchRoute } from "@/app/api/v1/stores/[store]/search/route";
import { POST as thinkRoute } from "@/app/api/v1/stores/[store]/thoughts/route";
import { ageStoreHandlesForTests, getStoreDb, openStoreHandles } from "@/lib/db/connection";
import { isAppError } from "@/lib/errors";
import { createMemorySchema, memoryFilterSchema } from "@/lib/index/memories";
import { startMemoryWatch, stopMemoryWatch } from "@/lib/index/watch";
import { runTool } from "@/lib/mcp/server";
import { snapshotAllStores } from "@/lib/metrics/snapshots";
import { getEmbedBacklog } from "@/lib/embed/queue";
import { startEmbedWorker } from "@/lib/embed/worker";
import { stores } from "@/lib/stores/backend";
import { activeStoreNames, archivedStores, LAST_LIFECYCLE_SQL } from "@/lib/db/store-lifecycle";
import { openStore } from "@/lib/stores/stores";
import { governanceSql, onPg, principalOf, seedDocument, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";
import { getSelfRecall, startEvaluation } from "@/lib/eval/self-recall";
import { graphBackend } from "@/lib/graph/backend";
import { recallBackend } from "@/lib/recall/backend";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";

/**
 * The store lifecycle beside delete: archive (read-only, closed to
 * background work, listed as archived everywhere) and unarchive; delete
 * needs its name repeated; a deleted name is taken out of token allow-lists.
 */
let env: TestEnv;
const tok = { admin: "", writer: "", reader: "" };

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_MAX_OPEN_STORES: "3" });
  tok.admin = await seedToken({ label: "a", agent_id: "life-admin", scopes: ["admin"] });
  tok.writer = await seedToken({ label: "w", agent_id: "life-writer", scopes: ["write"] });
  tok.reader = await seedToken({ label: "r", agent_id: "life-reader", scopes: ["read"] });
  await seedStore("attic");
  await seedDocument("attic", "notes/old.md", "# Old\n\nThe attic holds an old lantern.");
});
afterAll(async () => env?.cleanup());

const archive = (token: string, store: string) => callRoute(archiveRoute, { token, params: { store }, url: `http://x/api/v1/stores/${store}/archive`, method: "POST" });
const unarchive = (token: string, store: string) => callRoute(unarchiveRoute, { token, params: { store }, url: `http://x/api/v1/stores/${store}/unarchive`, method: "POST" });
const del = (store: string, confirm: string) => callRoute(deleteStoreRoute, { method: "DELETE", token: tok.admin, params: { store }, url: `http://x/api/v1/stores/${store}?confirm=${confirm}` });
const writeMemory = (store: string) => callRoute(createMemoryRoute, { token: tok.writer, params: { store }, body: { path: `notes/n-${Math.random().toString(36).slice(2)}`, body: "a new note" } });

describe("archive", () => {
  it("only an admin archives; core and default cannot be archived", async () => {
    expect((await archive(tok.writer, "attic")).status).toBe(403);
    expect((await archive(tok.admin, "core")).status).toBe(422);
    expect((await archive(tok.admin, "default")).status).toBe(422);
    expect((await archive(tok.admin, "nowhere")).status).toBe(404);
  });

  it("makes a store read-only: REST, MCP and the dashboard's backend writes answer 409 store_archived; reads still answer", async () => {
    const archived = await archive(tok.admin, "attic");
    expect(archived.status).toBe(200);
    expect(archived.json).toEqual({ store: "attic", archived: true });
    expect((await archive(tok.admin, "attic")).status).toBe(409);

    const refused = await writeMemory("attic");
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe("store_archived");
    expect(refused.json.error.message).toContain("attic");
    expect((await callRoute(thinkRoute, { token: tok.writer, params: { store: "attic" }, body: { content: "a thought" } })).json.error?.code).toBe("store_archived");

    const principal = await principalOf(tok.writer);
    const viaMcp = await runTool({ name: "write_memory", args: { store: "attic", path: "notes/mcp", body: "x" }, options: { principal } }).catch((e: unknown) => e);
    expect(isAppError(viaMcp) && viaMcp.code).toBe("store_archived");
    // The dashboard's memory editor writes through the stores backend.
    const viaBackend = await stores().createMemory({ store: "attic", input: createMemorySchema.parse({ path: "notes/ui", body: "x" }), actor: "user:ui" }).catch((e: unknown) => e);
    expect(isAppError(viaBackend) && viaBackend.code).toBe("store_archived");

    const found = await callRoute(searchRoute, { token: tok.reader, params: { store: "attic" }, body: { q: "lantern", mode: "fts" } });
    expect(found.status).toBe(200);
    expect(found.json.results.length).toBeGreaterThan(0);
    // Other stores are untouched.
    expect((await writeMemory("default")).status).toBe(201);
  });

  it("is listed as archived on the API and MCP, and audited", async () => {
    const listed = await callRoute(listStoresRoute, { token: tok.reader });
    const byName = Object.fromEntries(listed.json.stores.map((s: { name: string; archived: boolean }) => [s.name, s.archived]));
    expect(byName).toMatchObject({ attic: true, default: false, core: false });
    expect((await callRoute(getStoreRoute, { token: tok.reader, params: { store: "attic" } })).json.archived).toBe(true);
    const viaMcp = (await runTool({ name: "list_stores", args: {}, options: { principal: await principalOf(tok.reader) } })) as { stores: { name: string; archived: boolean }[] };
    expect(viaMcp.stores.find((s) => s.name === "attic")?.archived).toBe(true);
    // What background work asks of every store at once.
    expect([...(await archivedStores(["core", "default", "attic", "nowhere"]))]).toEqual(["attic"]);
    const audit = await governanceSql<{ actor: string }>("select actor from audit_log where action = 'store.archive' and target = 'store:attic'");
    expect(audit.map((r) => r.actor)).toEqual(["agent:life-admin"]);
  });

  it("unarchive makes it writable again (audited); a second unarchive is a conflict", async () => {
    expect((await unarchive(tok.writer, "attic")).status).toBe(403);
    const back = await unarchive(tok.admin, "attic");
    expect(back.json).toEqual({ store: "attic", archived: false });
    expect((await writeMemory("attic")).status).toBe(201);
    expect((await unarchive(tok.admin, "attic")).status).toBe(409);
    expect((await governanceSql("select id from audit_log where action = 'store.unarchive' and target = 'store:attic'")).length).toBe(1);
  });
});

describe.skipIf(onPg)("an archived SQLite store costs no open files", () => {
  it("its connection is closed on archive, background work leaves it closed, and a read's handle is closed once idle", async () => {
    await seedStore("cellar");
    getStoreDb({ store: "cellar", create: false });
    expect(openStoreHandles().map((h) => h.store)).toContain("cellar");
    expect((await archive(tok.admin, "cellar")).status).toBe(200);
    expect(openStoreHandles().map((h) => h.store)).not.toContain("cellar");

    // The embed worker, the memory watch, the job sweeper and the metrics loop walk the active stores only.
    expect(activeStoreNames(["core", "default", "cellar"])).toEqual(["core", "default"]);
    await snapshotAllStores();
    expect(openStoreHandles().map((h) => h.store)).not.toContain("cellar");
    const measured = await governanceSql<{ store: string }>("select distinct store from metric_snapshots");
    expect(measured.map((r) => r.store)).not.toContain("cellar");

    // A read opens it; once idle it is closed at the next open, below the open-store limit.
    expect((await callRoute(getStoreRoute, { token: tok.reader, params: { store: "cellar" } })).status).toBe(200);
    expect(openStoreHandles().map((h) => h.store)).toContain("cellar");
    ageStoreHandlesForTests();
    openStore({ store: "default" });
    expect(openStoreHandles().map((h) => h.store)).not.toContain("cellar");
    expect(openStoreHandles().length).toBeLessThanOrEqual(3);
  });
});

describe.skipIf(onPg)("the memory folder watch", () => {
  afterEach(async () => stopMemoryWatch());

  it("leaves an archived store closed, files edited there unindexed, and picks them up once it is unarchived", async () => {
    await seedStore("loft");
    expect((await archive(tok.admin, "loft")).status).toBe(200);
    startMemoryWatch({ scanMs: 50, batchMs: 10 });
    fs.mkdirSync(path.join(env.dataDir, "stores", "loft", "memory", "notes"));
    fs.writeFileSync(path.join(env.dataDir, "stores", "loft", "memory", "notes", "by-hand.md"), "written beside the app\n");
    // Several scans of every store pass.
    await new Promise((r) => setTimeout(r, 400));
    expect(openStoreHandles().map((h) => h.store)).not.toContain("loft");
    // Reading is allowed: the file is there, not indexed.
    expect((await stores().verifyStore({ store: "loft" })).not_indexed).toHaveLength(1);
    expect((await unarchive(tok.admin, "loft")).status).toBe(200);
    const indexed = async () => (await stores().listMemories({ store: "loft", filter: memoryFilterSchema.parse({}) })).memories.map((m) => m.path);
    await expect.poll(indexed, { timeout: 10_000 }).toContain("notes/by-hand");
  });
});

describe.skipIf(onPg)("the embed worker", () => {
  it("leaves an archived store's queue and connection alone, and embeds it once unarchived", async () => {
    await seedStore("bin");
    await seedDocument("bin", "notes/b.md", "# Bin\n\nWaiting to be embedded.");
    await seedDocument("default", "notes/d.md", "# Default\n\nEmbedded by the same worker.");
    expect((await archive(tok.admin, "bin")).status).toBe(200);
    const stop = new AbortController();
    const worker = startEmbedWorker({ idleMs: 20, signal: stop.signal, mode: "separate" });
    try {
      const pending = (store: string) => getEmbedBacklog({ handle: openStore({ store }) }).pending;
      // The worker has gone round: the active store's queue is empty.
      await expect.poll(() => pending("default"), { timeout: 20_000 }).toBe(0);
      expect(openStoreHandles().map((h) => h.store)).not.toContain("bin");
      expect(pending("bin")).toBeGreaterThan(0);
      expect((await unarchive(tok.admin, "bin")).status).toBe(200);
      await expect.poll(() => pending("bin"), { timeout: 20_000 }).toBe(0);
    } finally {
      stop.abort();
      await worker;
    }
  });
});

describe("the lifecycle lookup", () => {
  it("reads the partial index of lifecycle rows, however many other rows name the store", async () => {
    if (onPg) {
      const [index] = await governanceSql<{ indexdef: string }>("select indexdef from pg_indexes where indexname = 'audit_log_store_lifecycle_idx'");
      expect(index.indexdef).toContain("WHERE");
      return;
    }
    const plan = (await governanceSql<{ detail: string }>(`explain query plan ${LAST_LIFECYCLE_SQL}`, ["store:attic"])).map((r) => r.detail).join(" ");
    expect(plan).toContain("audit_log_store_lifecycle_idx");
  });
});

describe("archive and delete", () => {
  it("an archived store can be deleted, and its name made again is a fresh, writable store", async () => {
    await seedStore("barn");
    expect((await archive(tok.admin, "barn")).status).toBe(200);
    expect((await del("barn", "barn")).status).toBe(200);
    expect((await callRoute(createStoreRoute, { token: tok.admin, body: { name: "barn" } })).json.archived).toBe(false);
    expect((await writeMemory("barn")).status).toBe(201);
  });

  it("a store's self-recall runs, probes and evaluation jobs go with it: a store made later under its name starts with none", async () => {
    await seedStore("granary");
    await seedDocument("granary", "notes/lamp.md", "# Lamp\n\nThe loft keeps a brass lamp beside the window for reading at night.");
    await startEvaluation({ store: "granary", actor: "user:admin", input: {}, wait: true });
    expect((await getSelfRecall({ store: "granary" })).latest).not.toBeNull();
    expect((await del("granary", "granary")).status).toBe(200);
    for (const table of ["self_recall_runs", "self_recall_probe_sets"]) expect(await governanceSql(`select store from ${table} where store = ?`, ["granary"])).toEqual([]);
    expect(await governanceSql("select id from admin_jobs where store = ? and kind = 'evaluate'", ["granary"])).toEqual([]);
    await callRoute(createStoreRoute, { token: tok.admin, body: { name: "granary" } });
    expect((await getSelfRecall({ store: "granary" })).latest).toBeNull();
  });
});

describe("archive holds on every surface", () => {
  it("the dashboard's backends (graph, recall, re-embed) and an evaluation by any surface refuse an archived store; reads answer", async () => {
    await seedStore("shed");
    expect((await archive(tok.admin, "shed")).status).toBe(200);
    const refused = async (p: Promise<unknown>) => {
      const e = await p.then(
        () => null,
        (err: unknown) => err,
      );
      expect(isAppError(e) && e.code, String(e)).toBe("store_archived");
    };
    await refused(graphBackend().createNode({ store: "shed", input: { name: "rake", entity_type: "tool" }, actor: "user:admin" }));
    await refused(recallBackend().updateReflectionSettings({ store: "shed", input: { settings: { top_k: 7 }, reason: "test" }, actor: "user:admin" }));
    await refused(embeddingsBackend().retryParkedEmbeddings({ store: "shed", actor: "user:admin" }));
    await refused(startEvaluation({ store: "shed", actor: "user:admin", input: {} }));
    // The MCP tool runs the same evaluation: refused the same way (an admin tool, not a write tool).
    const mcp = await runTool({ name: "evaluate_store", args: { store: "shed" }, options: { principal: await principalOf(tok.admin) } }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isAppError(mcp) && mcp.code).toBe("store_archived");
    expect((await graphBackend().listNodes({ store: "shed", filter: {} })).nodes).toEqual([]);
    expect(await governanceSql("select id from admin_jobs where store = ? and kind = 'evaluate'", ["shed"])).toEqual([]);
  });
});
