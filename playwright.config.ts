import { defineConfig, devices } from "@playwright/test";
import fs from "node:fs";
import { nextStartArgs } from "./scripts/build-freshness";
import { chromiumPath } from "./scripts/chromium";
import { E2E, E2E_WORKERS, e2eServer } from "./e2e/fixtures";
import { patience } from "./tests/fixtures/patience";

// The headless shell where installed (scripts/chromium.ts).
const chromium = chromiumPath("shell");

export default defineConfig({
  testDir: "e2e",
  fullyParallel: false,
  // Much of a spec waits on the browser and the server: two workers, each with its own server and DATA_DIR
  // (e2e/fixtures.ts), so a spec's stores and counts are its worker's alone. A worker runs one spec at a time.
  workers: E2E_WORKERS,
  retries: 0,
  forbidOnly: !!process.env.CI,
  reporter: [["list"]],
  // Guards, not measures: wider under CI, where e2e runs beside the PostgreSQL suites (tests/fixtures/patience.ts).
  timeout: patience(60_000),
  expect: { timeout: patience(15_000) },
  use: {
    // This worker's server (Playwright loads this config again in each worker, where E2E is that worker's).
    baseURL: E2E.baseURL,
    trace: "off",
    launchOptions: {
      executablePath: chromium,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run"],
    },
  },
  projects: [{ name: "chromium", use: { ...devices["Desktop Chrome"] } }],
  webServer: Array.from({ length: E2E_WORKERS }, (_, slot) => e2eServer(slot)).map(({ port, baseURL, dataDir }) => (fs.mkdirSync(dataDir, { recursive: true }), {
    // The build is made by `npm run test:e2e` before this runs (when stale: scripts/build-if-stale.ts).
    command: ["node", ...nextStartArgs({ host: "127.0.0.1", port })].map((a) => JSON.stringify(a)).join(" "),
    url: `${baseURL}/api/v1/health`,
    reuseExistingServer: false,
    timeout: 120_000,
    stdout: "ignore",
    stderr: "pipe",
    env: {
      DATA_DIR: dataDir,
      NEXTAUTH_URL: baseURL,
      DUALMIND_ADMIN_PASSWORD: E2E.adminPassword,
      DUALMIND_BOOTSTRAP_TOKEN: E2E.bootstrapToken,
      NEXT_TELEMETRY_DISABLED: "1",
      // No self-recall runs nobody asked for: they would search the stores the specs count on.
      DUALMIND_EVALUATE_EVERY: "off",
      // Every spec makes its stores with the one bootstrap token: the per-token quota (its own tests are in
      // tests/limits-stores.test.ts) is raised so the suite's stores fit.
      DUALMIND_MAX_STORES_PER_TOKEN: "500",
    },
  })),
});
