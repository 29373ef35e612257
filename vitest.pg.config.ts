import { defineConfig } from "vitest/config";
import os from "node:os";
import path from "node:path";
import { BOTH_BACKEND_SUITES } from "./tests/pg/both-backends";
import { sharedAndIsolated, testFilesUnder } from "./tests/shared-process";
import { patience } from "./tests/fixtures/patience";

/**
 * `npm run test:pg`: the PostgreSQL backend against a real server that the
 * global setup starts in a temp dir (Debian's postgresql package; see tests/pg/harness.ts):
 * the PostgreSQL-only files under tests/pg, and the shared suites of
 * tests/pg/both-backends.ts, which run here with DM_TEST_BACKEND=pg (tests/backend.ts).
 * Files share worker processes as in the unit suite (tests/shared-process.ts, tests/setup.ts),
 * except those that replace modules.
 */
export default defineConfig({
  resolve: { alias: { "@": path.resolve(__dirname) } },
  test: {
    projects: sharedAndIsolated([...testFilesUnder("tests/pg"), ...BOTH_BACKEND_SUITES]),
    environment: "node",
    setupFiles: ["tests/setup.ts"],
    pool: "forks",
    // Each file makes its own database on the one server, so files can run side by side. Vitest's
    // default is one worker fewer than the cores (one on 2 cores); the files wait on PostgreSQL,
    // servers and child processes as much as on the CPU, so two keep 2 cores busy.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    globalSetup: ["tests/pg/global-setup.ts"],
    // Read by tests/backend.ts only: the shared suites seed and assert for PostgreSQL.
    env: { DM_TEST_BACKEND: "pg" },
    // The table-driven and two-process tests make hundreds of requests each: a loaded machine needs minutes, a quiet one seconds.
    testTimeout: patience(180_000),
    // expect.poll waits for background work (webhooks with back-off, workers): on a loaded CI machine 1 s is not enough.
    expect: { poll: { timeout: 20_000 } },
    hookTimeout: patience(60_000),
  },
});
