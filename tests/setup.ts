/**
 * Tests are an entry point like the server and the CLI: they call domain
 * functions directly, so they register the embeddable kinds the way
 * bootstrapApp() and runCli() do (tests/embeddable-kinds.test.ts checks those).
 *
 * Test files share a worker process (tests/shared-process.ts): this runs before
 * each file and gives it the state a fresh process would have — the
 * environment and working directory the worker started with, no PostgreSQL
 * pool or process-wide registry or timer left by the file before (they live on
 * globalThis under `__dualmind…`), the configuration read again and the
 * embeddable kinds registered again.
 */
import fs from "node:fs";
import { afterAll } from "vitest";
import { resetConfigForTests } from "@/lib/config";
import { closePgHandle, type PgHandle } from "@/lib/db/pg";
import { registerEmbeddableKinds } from "@/lib/embeddable-kinds";

type Start = { env: Record<string, string | undefined>; cwd: string };
const held = globalThis as unknown as { __testProcessStart?: Start; [key: string]: unknown };
if (held.__testProcessStart) {
  // Not this process's first file: put back what a fresh process would have.
  const start = held.__testProcessStart;
  // Vitest's own variables (the worker's and the file's ids) are set per file: left as they are.
  const ours = (key: string) => !key.startsWith("VITEST");
  for (const key of Object.keys(process.env)) if (ours(key) && !(key in start.env)) delete process.env[key];
  for (const [key, value] of Object.entries(start.env)) if (ours(key) && value !== undefined) process.env[key] = value;
  if (process.cwd() !== start.cwd) process.chdir(start.cwd);
  // A PostgreSQL pool the file before left open (its database is not this file's): its sessions are ended, and
  // work of that file still running on it fails there instead of reaching this file's database.
  const pg = held.__dualmindPg as { handle: Promise<PgHandle> } | undefined;
  if (pg) await pg.handle.then(closePgHandle, () => undefined);
  for (const key of Object.keys(globalThis)) {
    if (!key.startsWith("__dualmind")) continue;
    const value = held[key];
    // A registry's timer (a flush, a sweep, a loop) would run on into this file.
    if (value && typeof value === "object" && "unref" in value && "hasRef" in value) clearTimeout(value as NodeJS.Timeout);
    delete held[key];
  }
} else {
  held.__testProcessStart = { env: { ...process.env }, cwd: process.cwd() };
}
resetConfigForTests();

registerEmbeddableKinds();

// `npm test -- --timings` (scripts/vitest-file-times.ts): the file's CPU seconds, its worker's and the children it
// waited for (/proc/self/stat's utime, stime, cutime, cstime, in clock ticks of 1/100 s), from this file's start.
if (process.env.DM_TEST_FILE_TIMES) {
  const ticks = () => fs.readFileSync("/proc/self/stat", "utf8").replace(/^.*\) /, "").split(" ").slice(11, 15).map(Number).reduce((a, b) => a + b, 0);
  const before = ticks();
  afterAll(({}, suite) => {
    (suite.file.meta as { cpuSeconds?: number }).cpuSeconds = (ticks() - before) / 100;
  });
}
