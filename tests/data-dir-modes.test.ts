import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { backupDataDir, exportStoreBundle, importStoreBundle } from "@/lib/backup/backup";
import { bootstrapApp } from "@/lib/bootstrap";
import { closeAllDatabases, getStoreDb } from "@/lib/db/connection";
import { createMemory, setCategoryDescription } from "@/lib/index/memories";
import { createStore, openStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";

// Issue 14 finding 12: DATA_DIR holds password hashes and memories; other local users must not read any of it.
const mode = (p: string) => (fs.statSync(p).mode & 0o777).toString(8);

/** Every folder and file under `root` (the root included) with its mode, sorted. */
function modes(root: string): Record<string, string> {
  const out: Record<string, string> = { ".": mode(root) };
  for (const rel of fs.readdirSync(root, { recursive: true }) as string[]) out[rel.split(path.sep).join("/")] = mode(path.join(root, rel));
  return out;
}

let env: ReturnType<typeof useTempDataDir>;
let scratch: string;
let savedUmask: number;
beforeEach(() => {
  // The usual umask: without explicit modes, folders would be 0755 and files 0644.
  savedUmask = process.umask(0o022);
  env = useTempDataDir();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-modes-"));
});
afterEach(() => {
  env.cleanup();
  fs.rmSync(scratch, { recursive: true, force: true });
  process.umask(savedUmask);
});

describe.skipIf(process.platform === "win32")("DATA_DIR modes", () => {
  it("a fresh start creates every folder 0700 and every file 0600 (databases with their -wal and -shm)", async () => {
    fs.rmSync(env.dataDir, { recursive: true });
    await bootstrapApp();
    const all = modes(env.dataDir);
    expect(Object.keys(all)).toEqual(expect.arrayContaining([".", ".auth-secret", "governance.db", "governance.db-wal", "governance.db-shm", "stores/core/index.db", "stores/core/memory"]));
    for (const [rel, m] of Object.entries(all)) expect(`${rel} ${m}`).toBe(`${rel} ${fs.statSync(path.join(env.dataDir, rel)).isDirectory() ? "700" : "600"}`);
  });

  it("after writes: stores, memories, category files, bundles and backups are 0700 folders of 0600 files", async () => {
    await bootstrapApp();
    createStore({ input: { name: "notes" }, actor: "test" });
    const handle = openStore({ store: "notes" });
    createMemory({ handle, input: { path: "projects/deep/plan", body: "# Plan\n" }, actor: "test" });
    setCategoryDescription({ handle, input: { path: "projects", description: "work" }, actor: "test" });
    getStoreDb({ store: "notes" }).sqlite.prepare("select 1").get();
    const check = (root: string) => {
      for (const [rel, m] of Object.entries(modes(root))) expect(`${rel} ${m}`).toBe(`${rel} ${fs.statSync(path.join(root, rel)).isDirectory() ? "700" : "600"}`);
    };
    check(env.dataDir);
    expect(modes(env.dataDir)).toMatchObject({ "stores/notes/memory/projects/deep/plan.md": "600", "stores/notes/memory/projects/_category.md": "600" });

    const bundle = path.join(scratch, "bundle");
    await exportStoreBundle({ handle: openStore({ store: "notes" }), outDir: bundle });
    check(bundle);
    expect(modes(bundle)).toMatchObject({ ".": "700", "bundle.json": "600", "index.db": "600", "memory/projects/deep/plan.md": "600" });
    // An imported bundle with loose modes lands private.
    for (const rel of fs.readdirSync(bundle, { recursive: true }) as string[]) {
      const p = path.join(bundle, rel);
      fs.chmodSync(p, fs.statSync(p).isDirectory() ? 0o755 : 0o644);
    }
    await importStoreBundle({ bundleDir: bundle, as: "copy", reembed: false, actor: "test" });
    check(path.join(env.dataDir, "stores", "copy"));

    const backup = path.join(scratch, "backup");
    await backupDataDir({ outDir: backup, actor: "test" });
    check(backup);
    expect(modes(backup)).toMatchObject({ ".": "700", "manifest.json": "600", "governance.db": "600", "stores/notes/index.db": "600" });
  });

  it("an existing 0755 data dir is tightened on start (logged), and its 0644 databases are made 0600 when opened", async () => {
    await bootstrapApp();
    closeAllDatabases();
    fs.chmodSync(env.dataDir, 0o755);
    for (const f of ["governance.db", "governance.db-wal", "governance.db-shm", "stores/core/index.db"]) {
      if (fs.existsSync(path.join(env.dataDir, f))) fs.chmodSync(path.join(env.dataDir, f), 0o644);
    }
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    let lines: string[];
    try {
      await bootstrapApp();
    } finally {
      lines = stderr.mock.calls.map((c) => String(c[0]));
      stderr.mockRestore();
    }
    expect(mode(env.dataDir)).toBe("700");
    expect(mode(path.join(env.dataDir, "governance.db"))).toBe("600");
    expect(mode(path.join(env.dataDir, "stores", "core", "index.db"))).toBe("600");
    const logged = lines.find((l) => l.includes("DATA_DIR was readable by other users"));
    expect(logged).toBeDefined();
    expect(JSON.parse(logged!)).toMatchObject({ level: "warn", dataDir: env.dataDir, from: "755", to: "700" });
  });
});
