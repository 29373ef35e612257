import { defineConfig } from "vitest/config";
import path from "node:path";

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
    // Files start their own `next start` processes; one at a time keeps 2 cores from thrashing.
    fileParallelism: false,
    globalSetup: ["tests/reliability/global-setup.ts"],
    testTimeout: 180_000,
    // expect.poll waits for background work (webhooks with back-off, workers): on a loaded CI machine 1 s is not enough.
    expect: { poll: { timeout: 20_000 } },
    hookTimeout: 120_000,
  },
});
