import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { listAuditTail, pgLedger } from "@/lib/governance/audit";
import { createMemory, createMemorySchema, memoryDir, setCategoryDescription, updateMemorySchema } from "@/lib/index/memories";
import { createMemoryPg, deleteMemoryPg, exportMemoriesPg, getMemoryByPathPg, importMemoriesPg, updateMemoryPg } from "@/lib/index/memories-pg";
import { searchInputSchema } from "@/lib/index/search";
import { searchStorePg } from "@/lib/index/search-pg";
import { createStore, openStore } from "@/lib/stores/stores";
import type { PgStoreHandle } from "@/lib/db/pg-store";
import { createStorePg, describeStorePg, openStorePg } from "@/lib/stores/engines/pg";
import { useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

let pg: PgHandle;
let tmp: string;
beforeAll(async () => {
  pg = await openPgHandle({ url: await createTestDatabase(), max: 6 });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dm-pg-memories-"));
});
afterAll(async () => {
  await closePgHandle(pg);
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function newStore(name: string): Promise<PgStoreHandle> {
  await createStorePg({ pg, input: { name }, actor: "test" });
  return openStorePg({ pg, store: name });
}

/** Every file below `dir`, relative path → bytes. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const abs = path.join(e.parentPath, e.name);
    out[path.relative(dir, abs).split(path.sep).join("/")] = fs.readFileSync(abs).toString("base64");
  }
  return out;
}

const searchPaths = async (handle: PgStoreHandle, q: string) =>
  (await searchStorePg({ handle, core: null, input: searchInputSchema.parse({ q, mode: "fts", group: "chunk" }) })).results.map((r) => r.path);

describe("memories on PostgreSQL: the table is the truth", () => {
  it("create, update, move and delete keep the row, its index and the audit log together", async () => {
    const h = await newStore("mem");
    const created = await createMemoryPg({ handle: h, input: createMemorySchema.parse({ path: "decisions/db", body: "We chose postgres for the zebrafish team.", tags: ["db"], summary: "db choice" }), actor: "user:ed", now: Date.UTC(2026, 0, 2) });
    expect(created).toMatchObject({ path: "decisions/db", category: "decisions", tags: ["db"], summary: "db choice", created_at: Date.UTC(2026, 0, 2) });
    expect(await searchPaths(h, "zebrafish")).toEqual(["memory/decisions/db.md"]);
    await expect(createMemoryPg({ handle: h, input: createMemorySchema.parse({ path: "decisions/db", body: "again" }), actor: "user:ed" })).rejects.toMatchObject({ code: "conflict" });

    const updated = await updateMemoryPg({ handle: h, input: updateMemorySchema.parse({ path: "decisions/db", body: "We chose postgres for the axolotl team.", tags: ["db", "infra"] }), actor: "user:ed", now: Date.UTC(2026, 0, 3) });
    expect(updated).toMatchObject({ tags: ["db", "infra"], created_at: Date.UTC(2026, 0, 2), updated_at: Date.UTC(2026, 0, 3) });
    expect(await searchPaths(h, "zebrafish")).toEqual([]);
    expect(await searchPaths(h, "axolotl")).toEqual(["memory/decisions/db.md"]);
    expect((await getMemoryByPathPg({ handle: h, memoryPath: "decisions/db" })).body).toBe("We chose postgres for the axolotl team.");

    await updateMemoryPg({ handle: h, input: updateMemorySchema.parse({ path: "decisions/db", move_to: "archive/2026/db" }), actor: "user:ed" });
    expect(await searchPaths(h, "axolotl")).toEqual(["memory/archive/2026/db.md"]);
    await expect(getMemoryByPathPg({ handle: h, memoryPath: "decisions/db" })).rejects.toMatchObject({ code: "not_found" });

    await deleteMemoryPg({ handle: h, memoryPath: "archive/2026/db", actor: "user:ed" });
    expect(await searchPaths(h, "axolotl")).toEqual([]);
    expect((await describeStorePg({ handle: h })).counts).toMatchObject({ memories: 0, documents: 0, chunks: 0, categories: 0 });
    const actions = (await listAuditTail({ handle: pgLedger(pg.db), limit: 4 })).map((r) => r.action).reverse();
    expect(actions).toEqual(["memory.create", "memory.update", "memory.move", "memory.delete"]);
  });

  it("export → import into a fresh store → export again is byte-identical", async () => {
    const h = await newStore("source");
    const day = Date.UTC(2026, 5, 1);
    await createMemoryPg({ handle: h, input: createMemorySchema.parse({ path: "people/ada", body: "# Ada\nLikes precise specs.\n\nÜmlauts, emoji 🦎 and \"quotes\".\n", tags: ["team", "eng"], source: "chat", summary: "Ada's preferences" }), actor: "a", now: day });
    await createMemoryPg({ handle: h, input: createMemorySchema.parse({ path: "projects/2026/q3/plan", body: "Ship the postgres backend.", expires_at: day + 86_400_000 }), actor: "a", now: day });
    await createMemoryPg({ handle: h, input: createMemorySchema.parse({ path: "misc/empty-body", body: "" }), actor: "a", now: day });

    const first = path.join(tmp, "first");
    const out1 = await exportMemoriesPg({ handle: h, dir: first });
    expect(out1).toMatchObject({ memories: 3, written: 3, unchanged: 0 });
    expect(Object.keys(snapshot(first)).sort()).toEqual(["misc/empty-body.md", "people/ada.md", "projects/2026/q3/plan.md"]);
    expect(fs.readFileSync(path.join(first, "people/ada.md"), "utf8")).toBe(
      `---\ntags: ["team", "eng"]\ncreated_at: "2026-06-01T00:00:00.000Z"\nupdated_at: "2026-06-01T00:00:00.000Z"\nsource: "chat"\nsummary: "Ada's preferences"\n---\n# Ada\nLikes precise specs.\n\nÜmlauts, emoji 🦎 and "quotes".\n`,
    );

    const fresh = await newStore("copy");
    const imported = await importMemoriesPg({ handle: fresh, dir: first, actor: "a" });
    expect(imported).toMatchObject({ added: 3, changed: 0, unchanged: 0, skipped: [] });
    const second = path.join(tmp, "second");
    await exportMemoriesPg({ handle: fresh, dir: second });
    expect(snapshot(second)).toEqual(snapshot(first));

    // The imported store searches like the original, and a second import changes nothing.
    expect(await searchPaths(fresh, "precise specs")).toEqual(["memory/people/ada.md"]);
    expect(await importMemoriesPg({ handle: fresh, dir: first, actor: "a" })).toMatchObject({ added: 0, changed: 0, unchanged: 3 });
    // Exporting again over the same folder rewrites nothing.
    expect(await exportMemoriesPg({ handle: fresh, dir: second })).toMatchObject({ written: 0, unchanged: 3 });
  });

  it("imports a SQLite store's memory/ folder (the format lib/index/memories.ts writes) and exports it back unchanged, category descriptions included", async () => {
    const env = useTempDataDir();
    try {
      createStore({ input: { name: "lite" }, actor: "test" });
      const lite = openStore({ store: "lite" });
      createMemory({ handle: lite, input: { path: "howto/deploy", body: "Run the deploy script, then check the dashboard.", tags: ["ops"] }, actor: "user:ed" });
      createMemory({ handle: lite, input: { path: "howto/rollback", body: "Rollback: revert the tag.", summary: "how to roll back" }, actor: "user:ed" });
      setCategoryDescription({ handle: lite, input: { path: "howto", description: "Runbooks for the on-call." }, actor: "user:ed" });
      const folder = memoryDir({ handle: lite });

      const h = await newStore("from-sqlite");
      expect(await importMemoriesPg({ handle: h, dir: folder, actor: "a" })).toMatchObject({ added: 2, categories: 1, skipped: [] });
      const exported = path.join(tmp, "from-sqlite");
      await exportMemoriesPg({ handle: h, dir: exported });
      expect(snapshot(exported)).toEqual(snapshot(folder));
      expect(await searchPaths(h, "dashboard")).toEqual(["memory/howto/deploy.md"]);
    } finally {
      env.cleanup();
    }
  });

  it("import skips files whose names are not memory paths and says which", async () => {
    const dir = path.join(tmp, "odd");
    fs.mkdirSync(path.join(dir, "ok"), { recursive: true });
    fs.writeFileSync(path.join(dir, "ok", "fine.md"), "fine");
    fs.writeFileSync(path.join(dir, "top-level.md"), "no category");
    fs.writeFileSync(path.join(dir, "ok", "bad..name.md"), "two dots in a row");
    fs.writeFileSync(path.join(dir, "ok", "notes.txt"), "not markdown");
    const h = await newStore("odd");
    const r = await importMemoriesPg({ handle: h, dir, actor: "a" });
    expect(r.added).toBe(1);
    expect(r.skipped.map((s) => s.path).sort()).toEqual(["ok/bad..name.md", "top-level.md"]);
    await expect(importMemoriesPg({ handle: h, dir: path.join(tmp, "missing"), actor: "a" })).rejects.toMatchObject({ code: "invalid_request" });
  });
});
