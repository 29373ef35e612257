import { defineConfig } from "vitest/config";
import path from "node:path";

export default defineConfig({
  resolve: { alias: { "@": path.resolve(__dirname) } },
  test: {
    include: ["tests/**/*.test.ts"],
    environment: "node",
    // Each file gets a fresh module graph and its own temp DATA_DIR.
    pool: "forks",
    testTimeout: 30_000,
  },
});
