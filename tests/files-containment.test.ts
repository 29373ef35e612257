import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as categoriesRoute from "@/app/api/v1/stores/[store]/categories/route";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import { createApiToken } from "@/lib/auth/tokens";
import { exportStoreBundle, importStoreBundle } from "@/lib/backup/backup";
import { bootstrapApp } from "@/lib/bootstrap";
import { AppError } from "@/lib/errors";
import { createMemory, deleteMemory, getMemoryByPath, updateMemory } from "@/lib/index/memories";
import { reindexStore } from "@/lib/index/reindex";
import { createStore, openStore } from "@/lib/stores/stores";
import { storeExists } from "@/lib/db/store-names";
import { callRoute, useTempDataDir } from "./helpers";

// Issue 14 finding 11: links in a memory folder must never lead a read, write, move or delete outside it.
const store = "notes";
const params = { store };
let env: ReturnType<typeof useTempDataDir>;
let outside: string;
let token: string;

beforeEach(async () => {
  env = useTempDataDir();
  await bootstrapApp();
  createStore({ input: { name: store }, actor: "test" });
  token = createApiToken({ input: { label: "agent", agent_id: "claude", scopes: ["read", "write"] }, actor: "test" }).token;
  // A folder outside DATA_DIR with a file an attacker would like to read, overwrite or delete.
  outside = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-outside-"));
  fs.writeFileSync(path.join(outside, "victim.md"), "outside secret\n");
  fs.writeFileSync(path.join(outside, "passwd.md"), "root:x:0:0\n");
});
afterEach(() => {
  env.cleanup();
  fs.rmSync(outside, { recursive: true, force: true });
});

const memoryDir = () => path.join(env.dataDir, "stores", store, "memory");
const outsideUntouched = () => {
  expect(fs.readdirSync(outside).sort()).toEqual(["passwd.md", "victim.md"]);
  expect(fs.readFileSync(path.join(outside, "victim.md"), "utf8")).toBe("outside secret\n");
  expect(fs.readFileSync(path.join(outside, "passwd.md"), "utf8")).toBe("root:x:0:0\n");
};

function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    return e as AppError;
  }
  throw new Error("expected the operation to be refused");
}

describe("memory files never follow a symbolic link", () => {
  it("a linked folder: read, write, update, move and delete are refused (422) over REST, and nothing outside is touched", async () => {
    fs.symlinkSync(outside, path.join(memoryDir(), "linked"));
    const url = (p: string) => `http://127.0.0.1/api/v1/stores/${store}/memories?path=${encodeURIComponent(p)}`;

    const read = await callRoute(memoriesRoute.GET, { token, params, url: url("linked/victim") });
    expect(read.status).toBe(422);
    expect(read.json.error.message).toContain("symbolic link (linked)");
    expect(JSON.stringify(read.json)).not.toContain("outside secret");

    const create = await callRoute(memoriesRoute.POST, { token, params, body: { path: "linked/planted", body: "written through a link" } });
    expect(create.status).toBe(422);
    const overwrite = await callRoute(memoriesRoute.POST, { token, params, body: { path: "linked/fresh/deep", body: "x" } });
    expect(overwrite.status).toBe(422);
    const update = await callRoute(memoriesRoute.PUT, { method: "PUT", token, params, body: { path: "linked/victim", body: "overwritten" } });
    expect(update.status).toBe(422);
    const del = await callRoute(memoriesRoute.DELETE, { method: "DELETE", token, params, url: url("linked/victim") });
    expect(del.status).toBe(422);

    // A move out of the store's own folder into the link is refused too, and the memory stays where it was.
    expect((await callRoute(memoriesRoute.POST, { token, params, body: { path: "inbox/mine", body: "mine" } })).status).toBe(201);
    const move = await callRoute(memoriesRoute.PUT, { method: "PUT", token, params, body: { path: "inbox/mine", move_to: "linked/mine" } });
    expect(move.status).toBe(422);
    expect(fs.readFileSync(path.join(memoryDir(), "inbox", "mine.md"), "utf8")).toContain("mine");

    const described = await callRoute(categoriesRoute.PUT, { method: "PUT", token, params, body: { path: "linked", description: "planted" } });
    expect(described.status).toBe(422);
    outsideUntouched();
  });

  it("a linked file: read, overwrite and delete are refused by the domain functions, and nothing outside is touched", () => {
    const handle = openStore({ store });
    fs.mkdirSync(path.join(memoryDir(), "etc"));
    fs.symlinkSync(path.join(outside, "passwd.md"), path.join(memoryDir(), "etc", "passwd.md"));

    const read = refusal(() => getMemoryByPath({ handle, memoryPath: "etc/passwd" }));
    expect(read).toMatchObject({ code: "unprocessable", status: 422 });
    expect(read.message).toBe("memory etc/passwd goes through a symbolic link (etc/passwd.md) that leads outside it; links in a memory folder are never followed");
    expect(refusal(() => createMemory({ handle, input: { path: "etc/passwd", body: "owned" }, actor: "test" })).status).toBe(422);
    expect(refusal(() => updateMemory({ handle, input: { path: "etc/passwd", body: "owned" }, actor: "test" })).status).toBe(422);
    expect(refusal(() => deleteMemory({ handle, memoryPath: "etc/passwd", actor: "test" })).status).toBe(422);
    outsideUntouched();
    // The link itself is still there: nothing was replaced or unlinked.
    expect(fs.lstatSync(path.join(memoryDir(), "etc", "passwd.md")).isSymbolicLink()).toBe(true);
  });

  it("a link that stays inside the folder or leads nowhere is refused as well; ordinary memories still work", () => {
    const handle = openStore({ store });
    createMemory({ handle, input: { path: "real/note", body: "real" }, actor: "test" });
    fs.symlinkSync(path.join(memoryDir(), "real"), path.join(memoryDir(), "alias"));
    fs.symlinkSync(path.join(outside, "missing"), path.join(memoryDir(), "dangling"));
    expect(refusal(() => getMemoryByPath({ handle, memoryPath: "alias/note" })).message).toContain("leads to another place inside it");
    expect(refusal(() => createMemory({ handle, input: { path: "dangling/x", body: "x" }, actor: "test" })).message).toContain("leads nowhere");
    expect(fs.existsSync(path.join(outside, "missing"))).toBe(false);
    expect(getMemoryByPath({ handle, memoryPath: "real/note" }).body).toContain("real");
  });

  it("reindex skips links, says so and names the ones that leave the folder; nothing outside is indexed", () => {
    const handle = openStore({ store });
    const { sqlite } = handle;
    createMemory({ handle, input: { path: "real/note", body: "real" }, actor: "test" });
    createMemory({ handle, input: { path: "real/swapped", body: "was a memory" }, actor: "test" });
    fs.symlinkSync(outside, path.join(memoryDir(), "linked"));
    fs.symlinkSync(path.join(outside, "victim.md"), path.join(memoryDir(), "real", "victim.md"));
    fs.symlinkSync(path.join(memoryDir(), "real", "note.md"), path.join(memoryDir(), "real", "alias.md"));
    // A memory file replaced by a link: its row goes, the link's target is not read.
    fs.rmSync(path.join(memoryDir(), "real", "swapped.md"));
    fs.symlinkSync(path.join(outside, "passwd.md"), path.join(memoryDir(), "real", "swapped.md"));
    const r = reindexStore({ handle });
    expect(r.skipped_by.symlink).toBe(4);
    expect(r.links_outside_root).toEqual(["memory/linked", "memory/real/swapped.md", "memory/real/victim.md"]);
    const paths = (sqlite.prepare("select path from memories order by path").all() as { path: string }[]).map((m) => m.path);
    expect(paths).toEqual(["real/note"]);
    const text = (sqlite.prepare("select group_concat(text, ' ') as t from chunks").get() as { t: string }).t;
    expect(text).not.toContain("outside secret");
    expect(text).not.toContain("root:x");
  });
});

describe("bundle import refuses symbolic links", () => {
  let scratch: string;
  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bundle-"));
  });
  afterEach(() => fs.rmSync(scratch, { recursive: true, force: true }));

  async function exportBundle(): Promise<string> {
    createMemory({ handle: openStore({ store }), input: { path: "real/note", body: "real" }, actor: "test" });
    const dir = path.join(scratch, "bundle");
    await exportStoreBundle({ handle: openStore({ store }), outDir: dir });
    return dir;
  }

  it("a bundle whose memory/ is a link is refused (422) before anything is created", async () => {
    const dir = await exportBundle();
    fs.rmSync(path.join(dir, "memory"), { recursive: true });
    fs.symlinkSync(outside, path.join(dir, "memory"));
    let error: unknown;
    await importStoreBundle({ bundleDir: dir, as: "imported", reembed: false, actor: "test" }).catch((e) => (error = e));
    expect(error).toMatchObject({ code: "unprocessable", status: 422 });
    expect((error as AppError).message).toContain("symbolic links (memory)");
    expect(storeExists("imported")).toBe(false);
    expect(fs.existsSync(path.join(env.dataDir, "stores", "imported"))).toBe(false);
    outsideUntouched();
  });

  it("a bundle with a linked file deep in memory/ is refused, and so is a linked index.db", async () => {
    const dir = await exportBundle();
    fs.symlinkSync(path.join(outside, "victim.md"), path.join(dir, "memory", "real", "victim.md"));
    let error: unknown;
    await importStoreBundle({ bundleDir: dir, as: "imported", reembed: false, actor: "test" }).catch((e) => (error = e));
    expect((error as AppError).message).toContain("memory/real/victim.md");
    expect(storeExists("imported")).toBe(false);

    fs.rmSync(path.join(dir, "memory", "real", "victim.md"));
    fs.renameSync(path.join(dir, "index.db"), path.join(scratch, "index.db"));
    fs.symlinkSync(path.join(scratch, "index.db"), path.join(dir, "index.db"));
    error = undefined;
    await importStoreBundle({ bundleDir: dir, as: "imported", reembed: false, actor: "test" }).catch((e) => (error = e));
    expect((error as AppError).message).toContain("symbolic links (index.db)");
    expect(storeExists("imported")).toBe(false);

    // The same bundle with plain files imports.
    fs.rmSync(path.join(dir, "index.db"));
    fs.renameSync(path.join(scratch, "index.db"), path.join(dir, "index.db"));
    const ok = await importStoreBundle({ bundleDir: dir, as: "imported", reembed: false, actor: "test" });
    expect(ok).toMatchObject({ store: "imported", memoryFiles: 1 });
  });
});
