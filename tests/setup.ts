/**
 * Tests are an entry point like the server and the CLI: they call domain
 * functions directly, so they register the embeddable kinds the way
 * bootstrapApp() and runCli() do (tests/embeddable-kinds.test.ts checks those).
 */
import fs from "node:fs";
import { afterAll } from "vitest";
import { registerEmbeddableKinds } from "@/lib/embeddable-kinds";

registerEmbeddableKinds();

// `npm test -- --timings` (scripts/vitest-file-times.ts): the file's CPU seconds, its worker's and the children it
// waited for (/proc/self/stat's utime, stime, cutime, cstime, in clock ticks of 1/100 s).
if (process.env.DM_TEST_FILE_TIMES) {
  afterAll(({}, suite) => {
    const ticks = fs.readFileSync("/proc/self/stat", "utf8").replace(/^.*\) /, "").split(" ").slice(11, 15).map(Number);
    (suite.file.meta as { cpuSeconds?: number }).cpuSeconds = ticks.reduce((a, b) => a + b, 0) / 100;
  });
}
