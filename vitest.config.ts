import { defineConfig } from "vitest/config";
import os from "node:os";
import path from "node:path";
import { sharedAndIsolated, testFilesUnder } from "./tests/shared-process";
import { patience } from "./tests/fixtures/patience";

export default defineConfig({
  resolve: { alias: { "@": path.resolve(__dirname) } },
  test: {
    // The reliability and PostgreSQL suites start real servers; each has its own config and command.
    // Files share worker processes, except those that replace modules (tests/shared-process.ts).
    projects: sharedAndIsolated(testFilesUnder("tests").filter((f) => !f.startsWith("tests/reliability/") && !f.startsWith("tests/pg/"))),
    environment: "node",
    setupFiles: ["tests/setup.ts"],
    pool: "forks",
    // Vitest's default is one worker fewer than the cores (one on 2 cores); most files wait on
    // child processes, servers and disk as much as on the CPU, so two keep 2 cores busy.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    // Every API and MCP answer is checked against its declared response schema (lib/api/contract.ts).
    env: { DUALMIND_CHECK_RESPONSES: "true" },
    testTimeout: patience(30_000),
    // expect.poll waits for background work (webhooks with back-off, workers): on a loaded CI machine 1 s is not enough.
    expect: { poll: { timeout: 20_000 } },
  },
});
