import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { z } from "zod";
import { governance } from "@/lib/backend/governance";
import { createMemorySchema, diffMemoryBodies, memoryDir, memoryFilterSchema, MEMORY_DIFF_MAX_CHARS, updateMemorySchema } from "@/lib/index/memories";
import { searchInputSchema } from "@/lib/index/search";
import { stores } from "@/lib/stores/backend";
import { openStore } from "@/lib/stores/stores";
import { itSqliteOnly, seedStore, sqliteOnlyCheck, useTestBackend, type TestEnv } from "./backend";

let env: TestEnv;
const store = "team";
const handle = () => openStore({ store });

const seed = () => seedStore(store);
beforeEach(async () => {
  env = await useTestBackend({}, { seed });
});
afterEach(async () => env.cleanup());

// The memory writes as PUT/POST/DELETE /stores/{store}/memories make them (a move is an update with move_to).
const create = async (input: z.input<typeof createMemorySchema>, actor: string) => stores().createMemory({ store, input: createMemorySchema.parse(input), actor });
const update = async (input: z.input<typeof updateMemorySchema>, actor: string) => stores().updateMemory({ store, input: updateMemorySchema.parse(input), actor });
const move = (from: string, to: string, actor: string) => update({ path: from, move_to: to }, actor);
const remove = (memoryPath: string, actor: string) => stores().deleteMemory({ store, memoryPath, actor });
const listPaths = async () => (await stores().listMemories({ store, filter: memoryFilterSchema.parse({}) })).memories.map((m) => m.path);
const lastAudit = async () => (await governance().listAuditTail({ limit: 1 }))[0];

const fileOf = (p: string) => path.join(memoryDir({ handle: handle() }), `${p}.md`);
const searchMemories = async (q: string) => (await stores().search({ store, input: searchInputSchema.parse({ q, mode: "fts", kind: "memory" }) })).results.map((r) => r.path);

describe("memory move", () => {
  it("moves the memory and every index row in one go: the old path is gone from list, categories and search; the new one is found", async () => {
    await create({ path: "decisions/db-choice", body: "We picked sqlite for zebrafish reasons.", tags: ["db"] }, "user:ed");
    const moved = await move("decisions/db-choice", "archive/2026/db-choice", "user:ed");

    expect(moved.path).toBe("archive/2026/db-choice");
    expect(moved.tags).toEqual(["db"]);
    expect((await stores().getMemory({ store, memoryPath: "archive/2026/db-choice" })).body).toContain("zebrafish");
    await expect(stores().getMemory({ store, memoryPath: "decisions/db-choice" })).rejects.toMatchObject({ code: "not_found" });
    await sqliteOnlyCheck("memory-manage: the memory files (the truth on SQLite; on PostgreSQL the memories table, read above)", () => {
      expect(fs.existsSync(fileOf("decisions/db-choice"))).toBe(false);
      expect(fs.readFileSync(fileOf("archive/2026/db-choice"), "utf8")).toContain("zebrafish");
    });
    expect(await listPaths()).toEqual(["archive/2026/db-choice"]);
    // The emptied category is pruned; the new one and its parent exist.
    expect((await stores().listAllCategories({ store, limit: 100 })).categories.map((c) => c.path)).toEqual(["archive", "archive/2026"]);
    expect(await searchMemories("zebrafish")).toEqual(["memory/archive/2026/db-choice.md"]);
    const row = await lastAudit();
    expect(row).toMatchObject({ actor: "user:ed", action: "memory.move", target: `store:${store}/memory:archive/2026/db-choice` });
    expect(JSON.parse(row.details!)).toMatchObject({ movedFrom: "decisions/db-choice", fields: [] });
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
  });

  it("refuses to move onto an existing memory, from a missing one or out of the folder, and changes nothing", async () => {
    await create({ path: "a/one", body: "one" }, "user:ed");
    await create({ path: "b/two", body: "two" }, "user:ed");
    const audits = (await governance().listAuditTail({ limit: 100 })).length;
    await expect(move("a/one", "b/two", "user:ed")).rejects.toThrow(/already exists/);
    await expect(move("a/nope", "c/three", "user:ed")).rejects.toThrow(/no memory/);
    await expect(move("a/one", "../escape", "user:ed")).rejects.toThrow();
    expect((await stores().getMemory({ store, memoryPath: "a/one" })).body.trim()).toBe("one");
    expect((await stores().getMemory({ store, memoryPath: "b/two" })).body.trim()).toBe("two");
    expect((await governance().listAuditTail({ limit: 100 })).length).toBe(audits);
  });

  itSqliteOnly("a failed index write leaves both the old file and the old index rows (nothing half-moved)", "the memory file and index.db must agree; on PostgreSQL a move is one transaction on the memories table", async () => {
    await create({ path: "a/one", body: "one" }, "user:ed");
    // A trigger makes the index insert of the new path fail inside the move's transaction.
    handle().sqlite.exec("create trigger fail_insert before insert on memories when new.path = 'b/one' begin select raise(abort, 'disk says no'); end");
    await expect(move("a/one", "b/one", "user:ed")).rejects.toThrow(/disk says no/);
    expect(fs.existsSync(fileOf("a/one"))).toBe(true);
    expect(fs.existsSync(fileOf("b/one"))).toBe(false);
    expect(fs.readdirSync(path.dirname(fileOf("b/one"))).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    expect(await listPaths()).toEqual(["a/one"]);
  });
});

describe("memory delete", () => {
  it("removes the memory, the index rows and the search hits, audited; a second delete is a 404", async () => {
    await create({ path: "ops/backup", body: "Nightly quokka backups." }, "user:ed");
    expect(await searchMemories("quokka")).toEqual(["memory/ops/backup.md"]);
    await remove("ops/backup", "user:ed");
    await sqliteOnlyCheck("memory-manage: the memory file is gone (the truth on SQLite)", () => expect(fs.existsSync(fileOf("ops/backup"))).toBe(false));
    await expect(stores().getMemory({ store, memoryPath: "ops/backup" })).rejects.toMatchObject({ code: "not_found" });
    expect(await searchMemories("quokka")).toEqual([]);
    expect(await lastAudit()).toMatchObject({ actor: "user:ed", action: "memory.delete", target: `store:${store}/memory:ops/backup` });
    await expect(remove("ops/backup", "user:ed")).rejects.toThrow(/no memory/);
  });
});

describe("memory history", () => {
  it("shows who changed what, newest first, with the body diff of each edit, and follows a move back to the old path", async () => {
    await create({ path: "notes/plan", body: "line one\nline two\n", tags: ["a"] }, "user:alice");
    await update({ path: "notes/plan", body: "line one\nline 2\n", summary: "the plan" }, "user:bob");
    await move("notes/plan", "plans/q3", "user:carol");
    await update({ path: "plans/q3", tags: ["a", "b"] }, "agent:bot");

    const history = await stores().listMemoryHistory({ store, memoryPath: "plans/q3", limit: 50 });
    expect(history.map((e) => [e.action, e.actor, e.path])).toEqual([
      ["memory.update", "agent:bot", "plans/q3"],
      ["memory.move", "user:carol", "plans/q3"],
      ["memory.update", "user:bob", "notes/plan"],
      ["memory.create", "user:alice", "notes/plan"],
    ]);
    expect(history[0].fields).toEqual(["tags"]);
    expect(history[0].changed.tags).toEqual({ before: ["a"], after: ["a", "b"] });
    expect(history[0].diff).toBeNull();
    expect(history[1].movedFrom).toBe("notes/plan");
    expect(history[2].fields).toEqual(["body", "summary"]);
    expect(history[2].diff).toContain("-line two");
    expect(history[2].diff).toContain("+line 2");
    expect(history[2].diffTruncated).toBe(false);
  });

  it("does not borrow the history of an earlier memory that had the same path and was deleted", async () => {
    await create({ path: "x/same", body: "first life" }, "user:alice");
    await remove("x/same", "user:alice");
    await create({ path: "x/same", body: "second life" }, "user:bob");
    expect((await stores().listMemoryHistory({ store, memoryPath: "x/same", limit: 50 })).map((e) => [e.action, e.actor])).toEqual([["memory.create", "user:bob"]]);
  });

  it("keeps a bounded diff: a huge edit is cut at the limit and says so", () => {
    const before = Array.from({ length: 3000 }, (_, i) => `old line ${i} ${"x".repeat(20)}`).join("\n");
    const after = Array.from({ length: 3000 }, (_, i) => `new line ${i} ${"y".repeat(20)}`).join("\n");
    const d = diffMemoryBodies({ before, after, from: "a/b", to: "a/b" });
    expect(d.diffTruncated).toBe(true);
    expect((d.diff ?? "").length).toBeLessThanOrEqual(MEMORY_DIFF_MAX_CHARS);
    const small = diffMemoryBodies({ before: "a\nb\n", after: "a\nc\n", from: "a/b", to: "a/b" });
    expect(small).toEqual({ diff: expect.stringContaining("-b\n+c"), diffTruncated: false });
    // Bodies without a final newline (an API write of "nightly") read as lines: no "\ No newline at end of file" in the history.
    const bare = diffMemoryBodies({ before: "nightly", after: "hourly", from: "a/b", to: "a/b" });
    expect(bare.diff).toContain("-nightly\n+hourly\n");
    expect(bare.diff).not.toContain("No newline");
  });
});
