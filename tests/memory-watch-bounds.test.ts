import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GET as healthRoute } from "@/app/api/v1/health/route";
import { storeDir } from "@/lib/db/connection";
import { memoryWatchStatus, startMemoryWatch, stopMemoryWatch } from "@/lib/index/watch";
import { onPg, searchHere, seedStore, useTestBackend, type TestEnv } from "./backend";
import { callRoute, until } from "./helpers";

let env: TestEnv;
const store = "many";
afterEach(async () => {
  await stopMemoryWatch();
  await env?.cleanup();
});

/** The inotify watches this process holds, as the kernel counts them (one `inotify wd:` line per watch in fdinfo). */
function inotifyWatches(): number {
  let n = 0;
  for (const fd of fs.readdirSync("/proc/self/fd")) {
    let target = "";
    try {
      target = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    if (target !== "anon_inode:inotify") continue;
    try {
      n += fs.readFileSync(`/proc/self/fdinfo/${fd}`, "utf8").split("\n").filter((l) => l.startsWith("inotify wd:")).length;
    } catch {
      // Closed meanwhile.
    }
  }
  return n;
}

const root = () => path.join(storeDir(store), "memory");
const writeOnDisk = (rel: string, content: string) => {
  const abs = path.join(root(), rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, content);
};

const hitPaths = async (q: string) => (await searchHere(store, { q, mode: "fts" })).results.map((h) => h.path);

describe.skipIf(onPg)("the memory watcher's watches", () => {
  it("holds one watch per folder, none per file: 300 memories in 3 new folders add 3 watches, and a file in a new folder is indexed", async () => {
    env = await useTestBackend();
    await seedStore(store);
    fs.mkdirSync(root(), { recursive: true });
    startMemoryWatch({ scanMs: 60_000, batchMs: 20 });
    // The other stores' folders and this store's (empty) memory/ once the start-up scan settles.
    await until("start-up scan settled", () => memoryWatchStatus().watched_dirs, (n) => n > 0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const dirs = memoryWatchStatus().watched_dirs;
    const before = inotifyWatches();
    for (let i = 0; i < 300; i++) writeOnDisk(`f${i % 3}/m${i}.md`, `memory ${i} zebroid\n`);
    await until("the 3 new folders watched", () => memoryWatchStatus().watched_dirs, (n) => n === dirs + 3);
    expect(inotifyWatches() - before).toBeLessThanOrEqual(3);

    // A file in a watched folder is indexed through its folder's watch; a new folder gets its own.
    writeOnDisk("f1/late.md", "xylophonic late words\n");
    await until("file in a watched folder indexed", () => hitPaths("xylophonic"), (p) => p.includes("memory/f1/late.md"));
    writeOnDisk("fresh/first.md", "quokkaish first words\n");
    await until("file in a new folder indexed", () => hitPaths("quokkaish"), (p) => p.includes("memory/fresh/first.md"));
    await until("the new folder watched", () => memoryWatchStatus().watched_dirs, (n) => n === dirs + 4);
    writeOnDisk("fresh/second.md", "wombatty second words\n");
    await until("the next file there indexed by its folder's watch", () => hitPaths("wombatty"), (p) => p.includes("memory/fresh/second.md"));
    expect(inotifyWatches() - before).toBeLessThanOrEqual(4);
  });

  it("past DUALMIND_MAX_WATCHED_DIRS a store is left to the periodic scan, and /health says so", async () => {
    env = await useTestBackend({ DUALMIND_MAX_WATCHED_DIRS: "3" });
    await seedStore(store);
    for (let i = 0; i < 20; i++) writeOnDisk(`f${i % 5}/m${i}.md`, `memory ${i}\n`);
    const before = inotifyWatches();
    startMemoryWatch({ scanMs: 200, batchMs: 20 });
    await until("store left to the scan", () => memoryWatchStatus().scan_only_stores, (n) => n >= 1);
    expect(memoryWatchStatus().watched_dirs).toBeLessThanOrEqual(3);
    expect(inotifyWatches() - before).toBeLessThanOrEqual(3);
    const health = await callRoute(healthRoute, { url: "http://127.0.0.1/api/v1/health" });
    expect(health.status).toBe(200);
    expect(health.json.memory_watch).toMatchObject({ max_watched_dirs: 3, scan_only_stores: memoryWatchStatus().scan_only_stores });
    // The periodic scan still picks changes up.
    writeOnDisk("f2/scanned.md", "narwhalish scanned words\n");
    await until("file picked up by the scan", () => hitPaths("narwhalish"), (p) => p.includes("memory/f2/scanned.md"));
  });
});
