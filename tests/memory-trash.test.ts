import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { z } from "zod";
import { resetConfigForTests } from "@/lib/config";
import { governance } from "@/lib/backend/governance";
import { createMemorySchema, findMemoryRedirect, memoryDir, memoryFilterSchema, MEMORY_TRASH_DIR, restoreMemorySchema, updateMemorySchema } from "@/lib/index/memories";
import { searchInputSchema } from "@/lib/index/search";
import { stores } from "@/lib/stores/backend";
import { openStore } from "@/lib/stores/stores";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import * as trashRoute from "@/app/api/v1/stores/[store]/memories/trash/route";
import { governanceSql, seedStore, seedToken, sqliteOnlyCheck, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

let env: TestEnv;
const store = "team";

const seed = () => seedStore(store);
beforeEach(async () => {
  env = await useTestBackend({}, { seed });
});
afterEach(async () => {
  delete process.env.DUALMIND_MEMORY_TRASH_DAYS;
  resetConfigForTests();
  await env.cleanup();
});

const create = async (input: z.input<typeof createMemorySchema>, actor = "user:ed") => stores().createMemory({ store, input: createMemorySchema.parse(input), actor });
const remove = (memoryPath: string, actor = "user:ed") => stores().deleteMemory({ store, memoryPath, actor });
const restore = (input: z.input<typeof restoreMemorySchema>, actor = "user:ann") => stores().restoreMemory({ store, input: restoreMemorySchema.parse(input), actor });
const listPaths = async () => (await stores().listMemories({ store, filter: memoryFilterSchema.parse({}) })).memories.map((m) => m.path);
const found = async (q: string) => (await stores().search({ store, input: searchInputSchema.parse({ q, mode: "fts", kind: "memory" }) })).results.map((r) => r.path);
const setRetentionDays = (days: number) => {
  process.env.DUALMIND_MEMORY_TRASH_DAYS = String(days);
  resetConfigForTests();
};

describe("memory trash", () => {
  it("keeps a deleted memory, lists it with who deleted it, and restores it byte for byte into the list, search and history", async () => {
    const created = await create({ path: "ops/backups", body: "Nightly backups go to the quokka bucket.\n", tags: ["ops"], summary: "where backups go" });
    const before = await stores().getMemory({ store, memoryPath: "ops/backups" });
    await remove("ops/backups");

    expect(await listPaths()).toEqual([]);
    expect(await found("quokka")).toEqual([]);
    const trash = await stores().listMemoryTrash({ store });
    expect(trash).toHaveLength(1);
    expect(trash[0]).toMatchObject({ path: "ops/backups", deleted_by: "user:ed", summary: "where backups go", tags: ["ops"] });
    expect(trash[0].purge_at - trash[0].deleted_at).toBe(30 * 86_400_000);
    expect((await stores().getTrashedMemory({ store, id: trash[0].id })).body).toBe("Nightly backups go to the quokka bucket.\n");
    await sqliteOnlyCheck("memory-trash: the trashed file lives in the hidden memory/.trash folder, which verify does not count", async () => {
      const dir = path.join(memoryDir({ handle: openStore({ store }) }), MEMORY_TRASH_DIR);
      expect(fs.readdirSync(dir).sort()).toEqual([`${trash[0].id}.json`, `${trash[0].id}.md`]);
      expect((await stores().verifyStore({ store })).ok).toBe(true);
    });

    const restored = await restore({ id: trash[0].id });
    expect(restored).toMatchObject({ path: "ops/backups", tags: ["ops"], summary: "where backups go", created_at: created.created_at, updated_at: before.updated_at });
    expect((await stores().getMemory({ store, memoryPath: "ops/backups" })).body).toBe(before.body);
    expect(await listPaths()).toEqual(["ops/backups"]);
    expect(await found("quokka")).toEqual(["memory/ops/backups.md"]);
    expect(await stores().listMemoryTrash({ store })).toEqual([]);
    // The history goes on through the delete to the memory's creation.
    const history = await stores().listMemoryHistory({ store, memoryPath: "ops/backups", limit: 10 });
    expect(history.map((h) => [h.action, h.actor])).toEqual([
      ["memory.restore", "user:ann"],
      ["memory.delete", "user:ed"],
      ["memory.create", "user:ed"],
    ]);
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
  });

  it("reaches a deleted memory's history, and refuses to restore over a memory that took its path unless told where", async () => {
    await create({ path: "ops/runbook", body: "old runbook" });
    await stores().updateMemory({ store, input: updateMemorySchema.parse({ path: "ops/runbook", body: "old runbook, edited" }), actor: "user:ed" });
    await remove("ops/runbook", "agent:cleaner");
    expect((await stores().listMemoryHistory({ store, memoryPath: "ops/runbook", limit: 10 })).map((h) => h.action)).toEqual(["memory.delete", "memory.update", "memory.create"]);

    await create({ path: "ops/runbook", body: "new runbook" });
    const [entry] = await stores().listMemoryTrash({ store });
    await expect(restore({ id: entry.id })).rejects.toMatchObject({ code: "conflict", message: expect.stringContaining("ops/runbook already exists") });
    expect((await stores().getMemory({ store, memoryPath: "ops/runbook" })).body).toBe("new runbook");

    const elsewhere = await restore({ id: entry.id, to: "ops/old-runbook" });
    expect(elsewhere.path).toBe("ops/old-runbook");
    expect((await stores().getMemory({ store, memoryPath: "ops/old-runbook" })).body).toBe("old runbook, edited");
    expect((await listPaths()).sort()).toEqual(["ops/old-runbook", "ops/runbook"]);
    await expect(restore({ id: entry.id })).rejects.toMatchObject({ code: "not_found" });
  });

  it("purges by policy: an entry past the retention leaves the trash, and a retention of 0 keeps none", async () => {
    await create({ path: "tmp/one", body: "one" });
    await remove("tmp/one");
    expect(await stores().listMemoryTrash({ store })).toHaveLength(1);
    setRetentionDays(0);
    expect(await stores().listMemoryTrash({ store })).toEqual([]);
    await create({ path: "tmp/two", body: "two" });
    await remove("tmp/two");
    expect(await stores().listMemoryTrash({ store })).toEqual([]);
    await sqliteOnlyCheck("memory-trash: nothing is left in memory/.trash", () => {
      expect(fs.readdirSync(path.join(memoryDir({ handle: openStore({ store }) }), MEMORY_TRASH_DIR))).toEqual([]);
    });
  });

  it("purges one entry on request, audited, and an unknown or malformed id is not found", async () => {
    await create({ path: "secrets/oops", body: "a key pasted by mistake" });
    await remove("secrets/oops");
    const [entry] = await stores().listMemoryTrash({ store });
    await stores().purgeTrashedMemory({ store, id: entry.id, actor: "user:admin" });
    expect(await stores().listMemoryTrash({ store })).toEqual([]);
    expect((await governance().listAuditTail({ limit: 1 }))[0]).toMatchObject({ actor: "user:admin", action: "memory.purge", target: `store:${store}/memory:secrets/oops` });
    await expect(stores().getTrashedMemory({ store, id: entry.id })).rejects.toMatchObject({ code: "not_found" });
    await expect(stores().getTrashedMemory({ store, id: "../../etc/passwd" })).rejects.toMatchObject({ code: "not_found" });
  });
});

describe("a moved memory's old path", () => {
  it("points to where the memory went, along later moves, until a new memory takes the old path", async () => {
    await create({ path: "drafts/plan", body: "the plan" });
    await stores().updateMemory({ store, input: updateMemorySchema.parse({ path: "drafts/plan", move_to: "projects/plan" }), actor: "user:ed" });
    expect(await findMemoryRedirect({ store, memoryPath: "drafts/plan" })).toMatchObject({ path: "projects/plan", actor: "user:ed" });
    await stores().updateMemory({ store, input: updateMemorySchema.parse({ path: "projects/plan", move_to: "archive/plan", body: "the plan, done" }), actor: "user:ann" });
    expect(await findMemoryRedirect({ store, memoryPath: "drafts/plan" })).toMatchObject({ path: "archive/plan", actor: "user:ann" });
    expect(await findMemoryRedirect({ store, memoryPath: "projects/plan" })).toMatchObject({ path: "archive/plan" });
    expect(await findMemoryRedirect({ store, memoryPath: "archive/plan" })).toBeNull();
    expect(await findMemoryRedirect({ store, memoryPath: "never/there" })).toBeNull();

    await create({ path: "drafts/plan", body: "another plan" });
    await remove("drafts/plan");
    expect(await findMemoryRedirect({ store, memoryPath: "drafts/plan" })).toBeNull();
  });

  it("follows moves within the newest part of a long audit log only, so a 404 never walks the whole log", async () => {
    await create({ path: "old/note", body: "an old note" });
    await stores().updateMemory({ store, input: updateMemorySchema.parse({ path: "old/note", move_to: "kept/note" }), actor: "user:ed" });
    expect(await findMemoryRedirect({ store, memoryPath: "old/note" })).toMatchObject({ path: "kept/note" });
    // Another store's busy history since: 450,000 audit rows, past the lookup's windows of the log.
    await governanceSql(
      "with recursive n(i) as (select 1 union all select i + 1 from n where i < 450000) insert into audit_log (id, ts, actor, action, target, details, prev_hash, hash) select (select max(id) from audit_log) + i, 1, 'user:busy', 'memory.update', 'store:busy/memory:x', null, 'x', 'x' from n",
    );
    expect(await findMemoryRedirect({ store, memoryPath: "old/note" })).toBeNull();
    // A move inside the newest part of the log is still followed.
    await stores().updateMemory({ store, input: updateMemorySchema.parse({ path: "kept/note", move_to: "new/note" }), actor: "user:ed" });
    expect(await findMemoryRedirect({ store, memoryPath: "kept/note" })).toMatchObject({ path: "new/note" });
  });
});

describe("the trash over the API", () => {
  it("lists, reads, restores and purges with the store's token, and a moved memory's old path answers 404 naming where it went", async () => {
    const token = await seedToken({ label: "agent", agent_id: "claude", scopes: ["read", "write"] });
    const reader = await seedToken({ label: "viewer", agent_id: "viewer", scopes: ["read"] });
    const params = { store };
    const base = `http://127.0.0.1/api/v1/stores/${store}/memories`;
    await create({ path: "ops/a", body: "alpha" });
    await create({ path: "ops/b", body: "beta" });
    expect((await callRoute(memoriesRoute.DELETE, { method: "DELETE", token, params, url: `${base}?path=ops/a` })).status).toBe(200);
    expect((await callRoute(memoriesRoute.DELETE, { method: "DELETE", token, params, url: `${base}?path=ops/b` })).status).toBe(200);

    const listed = await callRoute(trashRoute.GET, { token: reader, params, url: `${base}/trash` });
    expect(listed.status).toBe(200);
    expect(listed.json.retention_days).toBe(30);
    expect(listed.json.trash.map((t: { path: string }) => t.path)).toEqual(["ops/b", "ops/a"]);
    const [b, a] = listed.json.trash as { id: string; deleted_by: string }[];
    expect(b.deleted_by).toBe("agent:claude");
    expect((await callRoute(trashRoute.GET, { token: reader, params, url: `${base}/trash?id=${a.id}` })).json).toMatchObject({ path: "ops/a", body: "alpha" });

    // A read token cannot restore; a write token restores, and a second restore finds nothing.
    expect((await callRoute(trashRoute.POST, { token: reader, params, body: { id: a.id } })).status).toBe(403);
    const restored = await callRoute(trashRoute.POST, { token, params, body: { id: a.id, to: "ops/a2" } });
    expect(restored.status).toBe(200);
    expect(restored.json).toMatchObject({ path: "ops/a2", body: "alpha" });
    expect((await callRoute(trashRoute.POST, { token, params, body: { id: a.id } })).status).toBe(404);
    expect((await callRoute(trashRoute.POST, { token, params, body: { id: "../../x" } })).status).toBe(400);

    const purged = await callRoute(trashRoute.DELETE, { method: "DELETE", token, params, url: `${base}/trash?id=${b.id}` });
    expect(purged).toMatchObject({ status: 200, json: { deleted: b.id } });
    expect((await callRoute(trashRoute.GET, { token, params, url: `${base}/trash` })).json.trash).toEqual([]);

    // ops/a was restored elsewhere: its old path names the new one.
    const gone = await callRoute(memoriesRoute.GET, { token, params, url: `${base}?path=ops/a` });
    expect(gone.status).toBe(404);
    expect(gone.json.error.message).toBe("no memory ops/a: it was moved to ops/a2");
    expect(gone.json.error.details[0]).toMatchObject({ moved_to: "ops/a2" });
  });
});
