import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { backupDataDir, exportStoreBundle, importStoreBundle, restoreDataDir } from "@/lib/backup/backup";
import { exportLedgerSnapshot } from "@/lib/backup/ledger-export";
import { bootstrapApp } from "@/lib/bootstrap";
import { getGovernance, getStoreDb } from "@/lib/db/connection";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { getEmbeddingStatus } from "@/lib/embed/status";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { createTask } from "@/lib/governance/ledger";
import { createMemory } from "@/lib/index/memories";
import { searchInputSchema, searchStore } from "@/lib/index/search";
import { verifyStore } from "@/lib/index/verify";
import { createStore, openStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";
import { patience } from "./fixtures/patience";

const WRITER = path.join(process.cwd(), "tests", "fixtures", "agents-write-load.ts");

let env: ReturnType<typeof useTempDataDir>;
let scratch: string;
beforeEach(async () => {
  env = useTempDataDir();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-agents-"));
  await bootstrapApp();
});
afterEach(() => {
  env.cleanup();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function waitForFile(file: string): Promise<void> {
  while (!fs.existsSync(file)) await new Promise((r) => setTimeout(r, 20));
}

function memoryCount(store: string): number {
  return (getStoreDb({ store }).sqlite.prepare("select count(*) as n from memories").get() as { n: number }).n;
}

describe("online backup", () => {
  it("taken while another process writes, restores to a store that passes integrity_check and verify", async () => {
    const handle = openStore({ store: "default" });
    for (let i = 0; i < 10; i++) createMemory({ handle, input: { path: `seed/note-${i}`, body: `seed note ${i}` }, actor: "test" });
    createTask({ input: { task_id: "t-backup", intent: "back up the data dir", spec: { why: "test" } }, requestedBy: "tester" });

    const stopFile = path.join(scratch, "stop");
    const readyFile = path.join(scratch, "ready");
    const writer = spawn(process.execPath, ["--import", "tsx", WRITER], { env: { ...process.env, STORE: "default", STOP_FILE: stopFile, READY_FILE: readyFile }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    writer.stdout.on("data", (d) => (out += d));
    writer.stderr.on("data", (d) => (err += d));
    const exited = new Promise<number | null>((resolve) => writer.on("close", resolve));
    await waitForFile(readyFile);

    const backupDir = path.join(scratch, "backup");
    let manifest: Awaited<ReturnType<typeof backupDataDir>>;
    try {
      manifest = await backupDataDir({ outDir: backupDir, actor: "test" });
    } finally {
      // Even when the backup throws: a writer left running would write forever into a deleted data dir.
      fs.writeFileSync(stopFile, "stop");
    }
    expect(await exited, err).toBe(0);
    const wrote = JSON.parse(out.trim()) as { memories: number };
    const backedUp = manifest.stores.find((s) => s.name === "default")!;
    // The writer was running before the snapshot began and stopped only after it ended.
    expect(wrote.memories).toBeGreaterThan(20);

    const restoredEnv = useTempDataDir();
    try {
      const restored = restoreDataDir({ backupDir });
      expect(restored.stores).toContain("default");
      expect(getStoreDb({ store: "default" }).sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
      expect(getGovernance().sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
      const report = verifyStore({ handle: getStoreDb({ store: "default" }) });
      expect(report.ok).toBe(true);
      const restoredMemories = memoryCount("default");
      expect(restoredMemories).toBe(backedUp.memoryFiles);
      expect(restoredMemories).toBeGreaterThanOrEqual(10 + 20);
      expect((await exportLedgerSnapshot()).tasks.map((t) => t.task.task_id)).toContain("t-backup");
    } finally {
      restoredEnv.cleanup();
    }
  }, patience(120_000));

  it("refuses to restore over a DATA_DIR that already holds data", async () => {
    const backupDir = path.join(scratch, "backup");
    await backupDataDir({ outDir: backupDir, actor: "test" });
    expect(() => restoreDataDir({ backupDir })).toThrow(/already holds data/);
  });
});

describe("store bundles", () => {
  const queries = ["sqlite backup api", "restic nightly", "wal checkpoint"];

  async function searchAll(store: string) {
    const results = [];
    for (const q of queries) {
      for (const mode of ["fts", "vector", "hybrid"] as const) {
        const r = await searchStore({ handle: openStore({ store }), core: null, input: searchInputSchema.parse({ q, mode }) });
        results.push(r.results.map((h) => h.chunk_id));
      }
    }
    return results;
  }

  it("export → import into a fresh DATA_DIR reproduces search results, with or without re-embed", async () => {
    createStore({ input: { name: "docs" }, actor: "test" });
    const handle = openStore({ store: "docs" });
    const bodies = [
      "The SQLite backup API copies a live database page by page.",
      "Restic runs nightly and keeps 14 daily snapshots.",
      "A WAL checkpoint moves pages from the write-ahead log into the database file.",
      "Backups are tested by restoring them every month.",
    ];
    bodies.forEach((body, i) => createMemory({ handle, input: { path: `ops/doc-${i}`, body, tags: ["ops"] }, actor: "test" }));
    await drainEmbedQueues({ stores: ["docs"] });
    const before = await searchAll("docs");
    expect(before.flat().length).toBeGreaterThan(0);

    const bundleDir = path.join(scratch, "bundle");
    const manifest = await exportStoreBundle({ handle: openStore({ store: "docs" }), outDir: bundleDir });
    expect(manifest.memoryFiles).toBe(4);
    expect((manifest.fingerprint as { provider: string }).provider).toBe("builtin");

    const fresh = useTempDataDir();
    try {
      await bootstrapApp();
      const kept = await importStoreBundle({ bundleDir, reembed: false, actor: "test" });
      expect(kept).toMatchObject({ store: "docs", memoryFiles: 4, reembed: null, fingerprintMatches: true });
      expect(verifyStore({ handle: getStoreDb({ store: "docs" }) }).ok).toBe(true);
      expect(await searchAll("docs")).toEqual(before);

      await expect(importStoreBundle({ bundleDir, reembed: false, actor: "test" })).rejects.toThrow(/already exists/);
    } finally {
      fresh.cleanup();
    }

    // A DATA_DIR configured for another model: --reembed rebuilds the vectors for it.
    const otherModel = useTempDataDir({ DUALMIND_EMBED_DIM: "256" });
    resetEmbedderForTests();
    try {
      await bootstrapApp();
      const r = await importStoreBundle({ bundleDir, as: "docs-256", reembed: true, actor: "test" });
      expect(r.fingerprintMatches).toBe(false);
      expect(r.reembed!.toEmbed).toBeGreaterThanOrEqual(4);
      await drainEmbedQueues({ stores: ["docs-256"] });
      const status = await getEmbeddingStatus({ handle: getStoreDb({ store: "docs-256" }) });
      expect(status.active?.dimension).toBe(256);
      expect(status.drift?.drifted).toBe(0);
      const fts = await searchStore({ handle: openStore({ store: "docs-256" }), core: null, input: searchInputSchema.parse({ q: "restic nightly", mode: "fts" }) });
      expect(fts.results.map((h) => h.chunk_id)).toEqual(before[3]);
    } finally {
      otherModel.cleanup();
      resetEmbedderForTests();
    }
  }, patience(60_000));
});
