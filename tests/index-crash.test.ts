import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { closeAllDatabases, getStoreDb } from "@/lib/db/connection";
import { reindexStore } from "@/lib/index/reindex";
import { verifyStore } from "@/lib/index/verify";
import { createStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";
import { patience } from "./fixtures/patience";

let env: ReturnType<typeof useTempDataDir>;
beforeEach(() => {
  env = useTempDataDir();
  createStore({ input: { name: "big" }, actor: "test" });
});
afterEach(() => env.cleanup());

function writeMemories(from: number, to: number): void {
  const dir = path.join(env.dataDir, "stores", "big", "memory", "bulk");
  fs.mkdirSync(dir, { recursive: true });
  for (let i = from; i < to; i++) {
    fs.writeFileSync(path.join(dir, `note-${String(i).padStart(5, "0")}.md`), `---\ntags: ["t${i % 7}"]\n---\n# Note ${i}\n\n${"word ".repeat(200 + (i % 50))}\n`);
  }
}

function docPaths(): string[] {
  const { sqlite } = getStoreDb({ store: "big" });
  return (sqlite.prepare("select path from documents order by path").all() as { path: string }[]).map((r) => r.path);
}

it("a reindex killed (SIGKILL) mid-transaction leaves the previous index whole and consistent", async () => {
  writeMemories(0, 20);
  reindexStore({ handle: getStoreDb({ store: "big" }) });
  const before = docPaths();
  expect(before).toHaveLength(20);
  writeMemories(20, 1500);
  closeAllDatabases();

  // One process (tsx as a loader, not its CLI wrapper), so SIGKILL hits the process holding the transaction.
  const child = spawn(process.execPath, ["--import", "tsx", path.join("tests", "fixtures", "reindex-child.ts"), "big"], {
    cwd: process.cwd(),
    env: { ...process.env, DATA_DIR: env.dataDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("MIDWAY")) resolve();
    });
    child.on("exit", () => reject(new Error(`child exited before MIDWAY: ${out}`)));
  });
  child.kill("SIGKILL");
  expect(await exited).toBe("SIGKILL");
  expect(out).not.toContain("FINISHED");

  const { sqlite } = getStoreDb({ store: "big" });
  expect(sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
  expect(docPaths()).toEqual(before);
  const v = verifyStore({ handle: getStoreDb({ store: "big" }) });
  expect(v.consistent).toBe(true);
  expect(v.counts.file_documents).toBe(20);
  expect(v.not_indexed.length).toBeGreaterThan(0);

  const r = reindexStore({ handle: getStoreDb({ store: "big" }) });
  expect(r.counts).toMatchObject({ added: 1480, unchanged: 20 });
  expect(verifyStore({ handle: getStoreDb({ store: "big" }) }).ok).toBe(true);
}, patience(60_000));
