import { configDefaults, defineConfig } from "vitest/config";
import os from "node:os";
import path from "node:path";

export default defineConfig({
  resolve: { alias: { "@": path.resolve(__dirname) } },
  test: {
    include: ["tests/**/*.test.ts"],
    // The reliability and PostgreSQL suites start real servers; each has its own config and command.
    exclude: [...configDefaults.exclude, "tests/reliability/**", "tests/pg/**"],
    environment: "node",
    setupFiles: ["tests/setup.ts"],
    // Each file gets a fresh module graph and its own temp DATA_DIR.
    pool: "forks",
    // Vitest's default is one worker fewer than the cores (one on 2 cores); most files wait on
    // child processes, servers and disk as much as on the CPU, so two keep 2 cores busy.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    // Every API and MCP answer is checked against its declared response schema (lib/api/contract.ts).
    env: { DUALMIND_CHECK_RESPONSES: "true" },
    testTimeout: 30_000,
    // expect.poll waits for background work (webhooks with back-off, workers): on a loaded CI machine 1 s is not enough.
    expect: { poll: { timeout: 20_000 } },
  },
});
