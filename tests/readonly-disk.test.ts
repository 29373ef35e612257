/**
 * Read-only disks, made for real: the file or folder is bind-mounted onto
 * itself and remounted read-only (root's write permission ignores chmod, a
 * read-only mount it cannot). Needs permission to mount (root with
 * CAP_SYS_ADMIN, as in this project's CI container); without it the file is
 * skipped and says why. SQLite only: with DATABASE_URL DATA_DIR holds no data.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as healthRoute from "@/app/api/v1/health/route";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import * as tasksRoute from "@/app/api/v1/tasks/route";
import { bootstrapApp } from "@/lib/bootstrap";
import { closeAllDatabases, getGovernance } from "@/lib/db/connection";
import { callRoute, useTempDataDir } from "./helpers";
import { onPg, seedStore, seedToken } from "./backend";

function canMount(): string | null {
  if (onPg) return "SQLite only: with DATABASE_URL DATA_DIR holds none of the data";
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-ro-probe-"));
  const r = spawnSync("mount", ["--bind", dir, dir], { encoding: "utf8" });
  if (r.status === 0) spawnSync("umount", [dir]);
  fs.rmdirSync(dir);
  return r.status === 0 ? null : `cannot bind-mount here (${(r.stderr || r.error?.message || "").trim()})`;
}
const whyNot = canMount();
if (whyNot) process.stderr.write(`readonly-disk.test.ts skipped: ${whyNot}\n`);

const mounted: string[] = [];
/** `target` (a file or a folder) read-only from now on, for every process. */
function mountReadOnly(target: string): void {
  for (const args of [["--bind", target, target], ["-o", "remount,bind,ro", target]]) {
    const r = spawnSync("mount", args, { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`mount ${args.join(" ")}: ${r.stderr}`);
  }
  mounted.push(target);
}

let env: ReturnType<typeof useTempDataDir>;
let admin: string;
beforeEach(async () => {
  env = useTempDataDir();
  await bootstrapApp();
  await seedStore("notes");
  admin = await seedToken({ label: "ro", agent_id: "ro-agent", scopes: ["read", "write", "admin"] });
  const created = await callRoute(memoriesRoute.POST, { token: admin, params: { store: "notes" }, body: { path: "ops/restic", body: "restic runs nightly and keeps snapshots" } });
  expect(created.status).toBe(201);
  expect((await callRoute(tasksRoute.POST, { token: admin, body: { task_id: "t-ro", intent: "survive a read-only disk", spec: {} } })).status).toBe(201);
  // A clean stop, as before an operator remounts: the WAL is folded in and -wal/-shm removed.
  closeAllDatabases();
});
afterEach(() => {
  closeAllDatabases();
  for (const m of mounted.splice(0).reverse()) spawnSync("umount", [m]);
  env.cleanup();
});

const listMemories = () => callRoute(memoriesRoute.GET, { token: admin, params: { store: "notes" }, url: "http://127.0.0.1/api/v1/stores/notes/memories" });
const search = () => callRoute(searchRoute.GET, { token: admin, params: { store: "notes" }, url: "http://127.0.0.1/api/v1/stores/notes/search?q=restic&mode=fts" });

describe.skipIf(whyNot !== null)("read-only disks: reads keep working, writes answer 503, /health says what is read-only", () => {
  it("a read-only index.db: the store's reads answer 200, its writes 503 with the reason; other stores still write", async () => {
    mountReadOnly(path.join(env.dataDir, "stores", "notes", "index.db"));
    const listed = await listMemories();
    expect(listed.status, JSON.stringify(listed.json)).toBe(200);
    expect(JSON.stringify(listed.json)).toContain("ops/restic");
    const found = await search();
    expect(found.status, JSON.stringify(found.json)).toBe(200);
    expect(JSON.stringify(found.json)).toContain("restic");

    const write = await callRoute(memoriesRoute.POST, { token: admin, params: { store: "notes" }, body: { path: "ops/new", body: "cannot land" } });
    expect(write.status).toBe(503);
    expect(write.json.error.message).toMatch(/read-only/);
    expect(fs.existsSync(path.join(env.dataDir, "stores", "notes", "memory", "ops", "new.md"))).toBe(false);
    const other = await callRoute(memoriesRoute.POST, { token: admin, params: { store: "default" }, body: { path: "ops/new", body: "lands" } });
    expect(other.status).toBe(201);

    const health = await callRoute(healthRoute.GET);
    expect(health.status).toBe(200);
    // Public: how many stores, never their names or paths.
    expect(health.json.read_only).toEqual([{ part: "stores", reason: expect.stringMatching(/^1 of 3 store\(s\) cannot be written/) }]);
    expect(JSON.stringify(health.json)).not.toContain(env.dataDir);
  });

  it("a read-only DATA_DIR: start-up succeeds, the ledger and stores are read, every write answers 503, /health and the log say what is read-only", async () => {
    mountReadOnly(env.dataDir);
    const logged: string[] = [];
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
      logged.push(String(chunk));
      return true;
    });
    try {
      await bootstrapApp();
    } finally {
      spy.mockRestore();
    }
    expect(logged.join("")).toMatch(/starting with read-only data.*"part":"DATA_DIR".*"part":"store:notes"/);
    expect(getGovernance().readOnly).toBe("the file is on a read-only file system");
    expect((await listMemories()).status).toBe(200);
    expect((await search()).status).toBe(200);
    const tasks = await callRoute(tasksRoute.GET, { token: admin, url: "http://127.0.0.1/api/v1/tasks" });
    expect(tasks.status).toBe(200);
    expect(JSON.stringify(tasks.json)).toContain("t-ro");

    const task = await callRoute(tasksRoute.POST, { token: admin, body: { task_id: "t-ro-2", intent: "cannot land", spec: {} } });
    expect(task.status).toBe(503);
    expect(task.json.error.message).toMatch(/read-only/);
    const memory = await callRoute(memoriesRoute.POST, { token: admin, params: { store: "notes" }, body: { path: "ops/new", body: "cannot land" } });
    expect(memory.status).toBe(503);

    const health = await callRoute(healthRoute.GET);
    expect(health.status).toBe(200);
    expect(health.json.read_only).toEqual([
      { part: "DATA_DIR", reason: "the folder is on a read-only file system" },
      { part: "governance.db", reason: "the file is on a read-only file system" },
      { part: "stores", reason: expect.stringMatching(/^3 of 3 store\(s\)/) },
    ]);
  });

  it("a read-only governance.db whose migrations are pending is refused with the reason, not a raw SqliteError", async () => {
    const file = path.join(env.dataDir, "governance.db");
    const db = new Database(file);
    // As if this version brought one migration the file has not had yet.
    db.exec("delete from __drizzle_migrations where created_at = (select max(created_at) from __drizzle_migrations)");
    db.close();
    mountReadOnly(file);
    await expect(bootstrapApp()).rejects.toThrow(/governance.db is read-only \(.*read-only file system\) and needs migrations this version of dualmind applies/);
  });
});
