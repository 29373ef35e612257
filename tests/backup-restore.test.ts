import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backupDataDir, exportStoreBundle, importStoreBundle, restoreDataDir } from "@/lib/backup/backup";
import { bootstrapApp } from "@/lib/bootstrap";
import { closeAllDatabases, getStoreDb } from "@/lib/db/connection";
import { storeExists } from "@/lib/db/store-names";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { createMemory } from "@/lib/index/memories";
import { reindexStore } from "@/lib/index/reindex";
import { createStore, openStore } from "@/lib/stores/stores";
import { spawnCli } from "./fixtures/cli";
import { useTempDataDir } from "./helpers";
import { patience } from "./fixtures/patience";

const WRITER = path.join(process.cwd(), "tests", "fixtures", "backup-consistency-writer.ts");

let scratch: string;
let envs: { cleanup: () => void }[];
let children: ChildProcess[];
beforeEach(() => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-restore-"));
  envs = [];
  children = [];
});
afterEach(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  for (const e of envs.reverse()) e.cleanup();
  fs.rmSync(scratch, { recursive: true, force: true });
});

/** A fresh DATA_DIR; DUALMIND_SOURCE_ROOTS is unset unless given (the previous one's stays in process.env until cleanup). */
function dataDir(extra: Record<string, string> = {}) {
  const env = useTempDataDir({ DUALMIND_SOURCE_ROOTS: "", ...extra });
  envs.push(env);
  return env;
}

const count = (store: string, sql: string) => getStoreDb({ store }).sqlite.prepare(sql).pluck().get() as number;

/**
 * A data dir whose default store indexes 60 documents from a source root (`dir`/docs), embedded, backed up
 * to `dir`/backup; the data dir is removed once the backup is made.
 */
async function backupWithSourceRoot(dir: string): Promise<{ backupDir: string; docs: string; chunks: number; vectors: number }> {
  const docs = path.join(dir, "docs");
  fs.mkdirSync(docs);
  for (let i = 0; i < 60; i++) fs.writeFileSync(path.join(docs, `page-${i}.md`), `# Page ${i}\n\nRunbook page ${i} about restoring backups.\n`);
  const env = useTempDataDir({ DUALMIND_SOURCE_ROOTS: `default=${docs}` });
  try {
    await bootstrapApp();
    const handle = openStore({ store: "default" });
    createMemory({ handle, input: { path: "ops/keep", body: "a memory beside the source documents" }, actor: "test" });
    reindexStore({ handle });
    await drainEmbedQueues({ stores: ["default"] });
    expect(count("default", "select count(*) from documents where path like 'source/%'")).toBe(60);
    const chunks = count("default", "select count(*) from chunks c join documents d using (doc_id) where d.path like 'source/%'");
    const vectors = count("default", "select count(*) from embeddings where kind = 'chunk'");
    const backupDir = path.join(dir, "backup");
    await backupDataDir({ outDir: backupDir, actor: "test" });
    return { backupDir, docs, chunks, vectors };
  } finally {
    env.cleanup();
  }
}

describe("restore keeps what it holds", () => {
  // One backup for every test here: each restores it into a fresh DATA_DIR; none writes to it or to its source root.
  let shared: string;
  let built: Awaited<ReturnType<typeof backupWithSourceRoot>>;
  beforeAll(async () => {
    shared = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-restore-shared-"));
    built = await backupWithSourceRoot(shared);
  }, patience(120_000));
  afterAll(() => fs.rmSync(shared, { recursive: true, force: true }));

  it("refuses (nothing written, CLI exit 2) a restore that would drop source documents DUALMIND_SOURCE_ROOTS cannot read again", async () => {
    const { backupDir } = built;
    const fresh = dataDir();
    expect(() => restoreDataDir({ backupDir })).toThrow(/60 source document\(s\) under source\/docs\/.*DUALMIND_SOURCE_ROOTS.*--keep-stale-sources/);
    expect(fs.readdirSync(fresh.dataDir)).toEqual([]);

    const r = spawnCli({ args: ["restore", backupDir], env: { DATA_DIR: fresh.dataDir, DUALMIND_SOURCE_ROOTS: "", DUALMIND_LOG_LEVEL: "warn" } });
    expect(r.code, r.stdout).toBe(2);
    expect(r.stderr).toMatch(/would lose source documents/);
    expect(fs.readdirSync(fresh.dataDir)).toEqual([]);
  }, patience(60_000));

  it("also refuses when the root is configured but its folder cannot be read", async () => {
    const { backupDir } = built;
    dataDir({ DUALMIND_SOURCE_ROOTS: `default=${path.join(scratch, "moved", "docs")}` });
    expect(() => restoreDataDir({ backupDir })).toThrow(/cannot be read/);
  }, patience(60_000));

  it("with --keep-stale-sources keeps every source document, chunk and vector as backed up, and says they were not re-read", async () => {
    const { backupDir, chunks, vectors } = built;
    dataDir();
    const r = restoreDataDir({ backupDir, keepStaleSources: true });
    expect(count("default", "select count(*) from documents where path like 'source/%'")).toBe(60);
    expect(count("default", "select count(*) from chunks c join documents d using (doc_id) where d.path like 'source/%'")).toBe(chunks);
    expect(count("default", "select count(*) from embeddings where kind = 'chunk'")).toBe(vectors);
    expect(r.restored.stores.default).toMatchObject({ documents: 60, memories: 1, vectors });
    expect(r.notRestored).toEqual([expect.objectContaining({ store: "default", kind: "source documents re-read", count: 60, reason: expect.stringMatching(/DUALMIND_SOURCE_ROOTS/) })]);
  }, patience(60_000));

  it("never deletes a source document whose file is gone from a configured root: kept as backed up, and said so", async () => {
    const { backupDir } = built;
    // The source root as configured now: a folder of the same name, holding all but ten of its files.
    const docs = path.join(scratch, "docs");
    fs.cpSync(built.docs, docs, { recursive: true });
    for (let i = 0; i < 10; i++) fs.rmSync(path.join(docs, `page-${i}.md`));
    dataDir({ DUALMIND_SOURCE_ROOTS: `default=${docs}` });
    const r = restoreDataDir({ backupDir });
    expect(count("default", "select count(*) from documents where path like 'source/%'")).toBe(60);
    expect(r.notRestored).toEqual([{ store: "default", kind: "source documents re-read", count: 10, reason: `kept as backed up, not re-read: their files are not in ${docs}` }]);
  }, patience(60_000));

  it("with the same source roots restores everything and says nothing was left out (CLI counts by kind)", async () => {
    const { backupDir, docs, vectors } = built;
    const manifest = JSON.parse(fs.readFileSync(path.join(backupDir, "manifest.json"), "utf8"));
    expect(manifest.stores.find((s: { name: string }) => s.name === "default").sourceRoots).toEqual([{ name: "docs", dir: docs, documents: 60 }]);
    const fresh = dataDir({ DUALMIND_SOURCE_ROOTS: `default=${docs}` });
    closeAllDatabases();
    const r = spawnCli({ args: ["restore", backupDir, "--json"], env: { DATA_DIR: fresh.dataDir, DUALMIND_LOG_LEVEL: "warn" } });
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.restored.stores.default).toMatchObject({ documents: 60, memories: 1, vectors });
    expect(summary.restored.ledger.audit_log).toBeGreaterThan(0);
    expect(summary.notRestored).toEqual([]);
  }, patience(60_000));
});

async function waitForFile(file: string): Promise<void> {
  while (!fs.existsSync(file)) await new Promise((r) => setTimeout(r, 20));
}

describe("one consistent backup", () => {
  it("under concurrent writes and embedding, every restored vector has its provenance row and every memory its audit row", async () => {
    dataDir();
    await bootstrapApp();
    const stopFile = path.join(scratch, "stop");
    const readyFile = path.join(scratch, "ready");
    const writer = spawn(process.execPath, ["--import", "tsx", WRITER], { env: { ...process.env, STORE: "default", STOP_FILE: stopFile, READY_FILE: readyFile }, stdio: ["ignore", "pipe", "pipe"] });
    children.push(writer);
    let err = "";
    writer.stderr.on("data", (d) => (err += d));
    const exited = new Promise<number | null>((resolve) => writer.on("close", resolve));
    await waitForFile(readyFile);
    const backups: string[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        const dir = path.join(scratch, `backup-${i}`);
        await backupDataDir({ outDir: dir, actor: "test" });
        backups.push(dir);
      }
    } finally {
      fs.writeFileSync(stopFile, "stop");
    }
    expect(await exited, err).toBe(0);

    for (const backupDir of backups) {
      const restored = dataDir();
      restoreDataDir({ backupDir });
      const db = new Database(path.join(restored.dataDir, "stores", "default", "index.db"), { readonly: true });
      try {
        db.prepare("attach database ? as gov").run(path.join(restored.dataDir, "governance.db"));
        const vectors = db.prepare("select count(*) from embeddings").pluck().get() as number;
        const withoutProvenance = db
          .prepare("select count(*) from embeddings e where not exists (select 1 from gov.provenance p where p.store = 'default' and p.artifact_id = cast(e.ref_id as text) and p.input_hash = e.input_hash)")
          .pluck()
          .get();
        const memories = db.prepare("select count(*) from memories").pluck().get() as number;
        const withoutAudit = db.prepare("select count(*) from memories m where not exists (select 1 from gov.audit_log a where a.target = 'store:default/memory:' || m.path)").pluck().get();
        expect(vectors).toBeGreaterThan(0);
        expect(memories).toBeGreaterThan(20);
        expect({ withoutProvenance, withoutAudit }).toEqual({ withoutProvenance: 0, withoutAudit: 0 });
      } finally {
        db.close();
      }
      closeAllDatabases();
    }
  }, 180_000);
});

describe("bundle and backup files are read from the descriptor that was checked", () => {
  /** A FIFO in place of `name`: whoever opens it for reading lets a shell swap index.db for a link to `secret`, then feed the real JSON. */
  function fifoSwap({ dir, name, json, target, secret }: { dir: string; name: string; json: string; target: string; secret: string }): void {
    fs.rmSync(path.join(dir, name));
    const saved = path.join(scratch, `${name}.saved`);
    fs.writeFileSync(saved, json);
    expect(spawnSync("mkfifo", [path.join(dir, name)]).status).toBe(0);
    const sh = spawn("sh", ["-c", 'exec 3>"$FIFO"; rm -f "$TARGET"; ln -s "$SECRET" "$TARGET"; cat "$SAVED" >&3'], {
      env: { ...process.env, FIFO: path.join(dir, name), TARGET: target, SECRET: secret, SAVED: saved },
      stdio: "ignore",
    });
    children.push(sh);
  }

  async function privateStore(): Promise<string> {
    createStore({ input: { name: "private" }, actor: "test" });
    createMemory({ handle: openStore({ store: "private" }), input: { path: "secret/key", body: "the private store's secret" }, actor: "test" });
    return getStoreDb({ store: "private" }).file;
  }

  it("import bundle: a FIFO bundle.json is refused at once, and a swapped index.db is never imported", async () => {
    dataDir();
    await bootstrapApp();
    createStore({ input: { name: "docs" }, actor: "test" });
    createMemory({ handle: openStore({ store: "docs" }), input: { path: "a/b", body: "public text" }, actor: "test" });
    const bundleDir = path.join(scratch, "bundle");
    await exportStoreBundle({ handle: openStore({ store: "docs" }), outDir: bundleDir });
    const secret = await privateStore();
    fifoSwap({ dir: bundleDir, name: "bundle.json", json: fs.readFileSync(path.join(bundleDir, "bundle.json"), "utf8"), target: path.join(bundleDir, "index.db"), secret });
    await expect(importStoreBundle({ bundleDir, as: "stolen", reembed: false, actor: "test" })).rejects.toThrow(/bundle.json is a FIFO/);
    expect(storeExists("stolen")).toBe(false);
  }, patience(60_000));

  it("import bundle: an index.db larger than bundle.json records is refused, and no store is left behind", async () => {
    dataDir();
    await bootstrapApp();
    const bundleDir = path.join(scratch, "bundle");
    await exportStoreBundle({ handle: openStore({ store: "default" }), outDir: bundleDir });
    fs.appendFileSync(path.join(bundleDir, "index.db"), Buffer.alloc(4096));
    await expect(importStoreBundle({ bundleDir, as: "grown", reembed: false, actor: "test" })).rejects.toThrow(/over its limit the size bundle.json records/);
    expect(storeExists("grown")).toBe(false);
  }, patience(60_000));

  it("restore: a FIFO manifest.json is refused at once and nothing is restored", async () => {
    dataDir();
    await bootstrapApp();
    const backupDir = path.join(scratch, "backup");
    await backupDataDir({ outDir: backupDir, actor: "test" });
    const secret = await privateStore();
    fifoSwap({ dir: backupDir, name: "manifest.json", json: fs.readFileSync(path.join(backupDir, "manifest.json"), "utf8"), target: path.join(backupDir, "stores", "default", "index.db"), secret });
    const fresh = dataDir();
    expect(() => restoreDataDir({ backupDir })).toThrow(/manifest.json is a FIFO/);
    expect(fs.readdirSync(fresh.dataDir)).toEqual([]);
  }, patience(60_000));
});
