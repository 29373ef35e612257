import { defineConfig } from "vitest/config";
import path from "node:path";

/**
 * `npm run test:pg`: the PostgreSQL backend against a real server that the
 * global setup starts in a temp dir (Debian's postgresql package; see tests/pg/harness.ts).
 */
export default defineConfig({
  resolve: { alias: { "@": path.resolve(__dirname) } },
  test: {
    include: ["tests/pg/**/*.test.ts"],
    environment: "node",
    setupFiles: ["tests/setup.ts"],
    pool: "forks",
    globalSetup: ["tests/pg/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
