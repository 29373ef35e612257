import { defineConfig } from "vitest/config";
import os from "node:os";
import path from "node:path";
import { patience } from "./tests/fixtures/patience";

/** `npm run test:reliability`: load, faults and bad input against real servers and SQLite files. */
export default defineConfig({
  resolve: { alias: { "@": path.resolve(__dirname) } },
  test: {
    include: ["tests/reliability/**/*.test.ts"],
    environment: "node",
    setupFiles: ["tests/setup.ts"],
    pool: "forks",
    // Every API and MCP answer is checked against its declared response schema (lib/api/contract.ts).
    env: { DUALMIND_CHECK_RESPONSES: "true" },
    // Each file starts its own `next start` processes on free ports over its own data dir (and, on PostgreSQL,
    // its own database), so files can run side by side. They spend much of their time waiting (servers
    // starting, timed load, killed processes coming back): two at a time keep 2 cores busy.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    globalSetup: ["tests/reliability/global-setup.ts"],
    testTimeout: patience(180_000),
    // expect.poll waits for background work (webhooks with back-off, workers): on a loaded CI machine 1 s is not enough.
    expect: { poll: { timeout: 20_000 } },
    hookTimeout: patience(120_000),
  },
});
