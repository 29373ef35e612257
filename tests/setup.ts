/**
 * Tests are an entry point like the server and the CLI: they call domain
 * functions directly, so they register the embeddable kinds the way
 * bootstrapApp() and runCli() do (tests/embeddable-kinds.test.ts checks those).
 *
 * Test files share a worker process (tests/shared-process.ts): this runs before
 * each file and gives it the state a fresh process would have — the
 * environment and working directory the worker started with, no process-wide
 * registry or timer left by the file before (they live on globalThis under
 * `__dualmind…`), and the configuration read again.
 */
import fs from "node:fs";
import { afterAll } from "vitest";
import { resetConfigForTests } from "@/lib/config";
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
