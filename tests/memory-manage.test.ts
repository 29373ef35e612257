import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAuditTail, verifyAuditChain } from "@/lib/governance/audit";
import { createMemory, deleteMemory, diffMemoryBodies, getMemoryByPath, listAllCategories, listMemoriesByFilter, listMemoryHistory, memoryDir, memoryFilterSchema, moveMemory, MEMORY_DIFF_MAX_CHARS, updateMemory, updateMemorySchema } from "@/lib/index/memories";
import { searchInputSchema, searchStore } from "@/lib/index/search";
import { createStore, openStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";

let env: ReturnType<typeof useTempDataDir>;
const store = "team";
const handle = () => openStore({ store });

beforeEach(() => {
  env = useTempDataDir();
  createStore({ input: { name: store }, actor: "test" });
});
afterEach(() => env.cleanup());

const fileOf = (p: string) => path.join(memoryDir({ handle: handle() }), `${p}.md`);
const searchMemories = async (q: string) =>
  (await searchStore({ handle: handle(), core: null, input: searchInputSchema.parse({ q, mode: "fts", kind: "memory" }) })).results.map((r) => r.path);

describe("memory move", () => {
  it("moves the file and every index row in one go: the old path is gone from list, categories and search; the new one is found", async () => {
    createMemory({ handle: handle(), input: { path: "decisions/db-choice", body: "We picked sqlite for zebrafish reasons.", tags: ["db"] }, actor: "user:ed" });
    const moved = moveMemory({ handle: handle(), from: "decisions/db-choice", to: "archive/2026/db-choice", actor: "user:ed" });

    expect(moved.path).toBe("archive/2026/db-choice");
    expect(moved.tags).toEqual(["db"]);
    expect(fs.existsSync(fileOf("decisions/db-choice"))).toBe(false);
    expect(fs.readFileSync(fileOf("archive/2026/db-choice"), "utf8")).toContain("zebrafish");
    expect(listMemoriesByFilter({ handle: handle(), filter: memoryFilterSchema.parse({}) }).memories.map((m) => m.path)).toEqual(["archive/2026/db-choice"]);
    // The emptied category is pruned; the new one and its parent exist.
    expect(listAllCategories({ handle: handle() }).map((c) => c.path)).toEqual(["archive", "archive/2026"]);
    expect(await searchMemories("zebrafish")).toEqual(["memory/archive/2026/db-choice.md"]);
    const row = listAuditTail({ limit: 1 })[0];
    expect(row).toMatchObject({ actor: "user:ed", action: "memory.move", target: `store:${store}/memory:archive/2026/db-choice` });
    expect(JSON.parse(row.details!)).toMatchObject({ movedFrom: "decisions/db-choice", fields: [] });
    expect(verifyAuditChain().ok).toBe(true);
  });

  it("refuses to move onto an existing memory or onto itself, and changes nothing", () => {
    createMemory({ handle: handle(), input: { path: "a/one", body: "one" }, actor: "user:ed" });
    createMemory({ handle: handle(), input: { path: "b/two", body: "two" }, actor: "user:ed" });
    const audits = listAuditTail({ limit: 100 }).length;
    expect(() => moveMemory({ handle: handle(), from: "a/one", to: "b/two", actor: "user:ed" })).toThrow(/already exists/);
    expect(() => moveMemory({ handle: handle(), from: "a/one", to: "a/one", actor: "user:ed" })).toThrow(/already at that path/);
    expect(() => moveMemory({ handle: handle(), from: "a/nope", to: "c/three", actor: "user:ed" })).toThrow(/no memory/);
    expect(() => moveMemory({ handle: handle(), from: "a/one", to: "../escape", actor: "user:ed" })).toThrow();
    expect(getMemoryByPath({ handle: handle(), memoryPath: "a/one" }).body.trim()).toBe("one");
    expect(getMemoryByPath({ handle: handle(), memoryPath: "b/two" }).body.trim()).toBe("two");
    expect(listAuditTail({ limit: 100 }).length).toBe(audits);
  });

  it("a failed index write leaves both the old file and the old index rows (nothing half-moved)", () => {
    createMemory({ handle: handle(), input: { path: "a/one", body: "one" }, actor: "user:ed" });
    // A trigger makes the index insert of the new path fail inside the move's transaction.
    handle().sqlite.exec("create trigger fail_insert before insert on memories when new.path = 'b/one' begin select raise(abort, 'disk says no'); end");
    expect(() => moveMemory({ handle: handle(), from: "a/one", to: "b/one", actor: "user:ed" })).toThrow(/disk says no/);
    expect(fs.existsSync(fileOf("a/one"))).toBe(true);
    expect(fs.existsSync(fileOf("b/one"))).toBe(false);
    expect(fs.readdirSync(path.dirname(fileOf("b/one"))).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    expect(listMemoriesByFilter({ handle: handle(), filter: memoryFilterSchema.parse({}) }).memories.map((m) => m.path)).toEqual(["a/one"]);
  });
});

describe("memory delete", () => {
  it("removes the file, the index rows and the search hits, audited; a second delete is a 404", async () => {
    createMemory({ handle: handle(), input: { path: "ops/backup", body: "Nightly quokka backups." }, actor: "user:ed" });
    expect(await searchMemories("quokka")).toEqual(["memory/ops/backup.md"]);
    deleteMemory({ handle: handle(), memoryPath: "ops/backup", actor: "user:ed" });
    expect(fs.existsSync(fileOf("ops/backup"))).toBe(false);
    expect(await searchMemories("quokka")).toEqual([]);
    expect(listAuditTail({ limit: 1 })[0]).toMatchObject({ actor: "user:ed", action: "memory.delete", target: `store:${store}/memory:ops/backup` });
    expect(() => deleteMemory({ handle: handle(), memoryPath: "ops/backup", actor: "user:ed" })).toThrow(/no memory/);
  });
});

describe("memory history", () => {
  it("shows who changed what, newest first, with the body diff of each edit, and follows a move back to the old path", () => {
    const h = handle();
    createMemory({ handle: h, input: { path: "notes/plan", body: "line one\nline two\n", tags: ["a"] }, actor: "user:alice" });
    updateMemory({ handle: h, input: updateMemorySchema.parse({ path: "notes/plan", body: "line one\nline 2\n", summary: "the plan" }), actor: "user:bob" });
    moveMemory({ handle: h, from: "notes/plan", to: "plans/q3", actor: "user:carol" });
    updateMemory({ handle: h, input: updateMemorySchema.parse({ path: "plans/q3", tags: ["a", "b"] }), actor: "agent:bot" });

    const history = listMemoryHistory({ handle: h, memoryPath: "plans/q3" });
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

  it("does not borrow the history of an earlier memory that had the same path and was deleted", () => {
    const h = handle();
    createMemory({ handle: h, input: { path: "x/same", body: "first life" }, actor: "user:alice" });
    deleteMemory({ handle: h, memoryPath: "x/same", actor: "user:alice" });
    createMemory({ handle: h, input: { path: "x/same", body: "second life" }, actor: "user:bob" });
    expect(listMemoryHistory({ handle: h, memoryPath: "x/same" }).map((e) => [e.action, e.actor])).toEqual([["memory.create", "user:bob"]]);
  });

  it("keeps a bounded diff: a huge edit is cut at the limit and says so", () => {
    const before = Array.from({ length: 3000 }, (_, i) => `old line ${i} ${"x".repeat(20)}`).join("\n");
    const after = Array.from({ length: 3000 }, (_, i) => `new line ${i} ${"y".repeat(20)}`).join("\n");
    const d = diffMemoryBodies({ before, after, from: "a/b", to: "a/b" });
    expect(d.diffTruncated).toBe(true);
    expect((d.diff ?? "").length).toBeLessThanOrEqual(MEMORY_DIFF_MAX_CHARS);
    const small = diffMemoryBodies({ before: "a\nb\n", after: "a\nc\n", from: "a/b", to: "a/b" });
    expect(small).toEqual({ diff: expect.stringContaining("-b\n+c"), diffTruncated: false });
  });
});
