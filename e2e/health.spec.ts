import { execFileSync } from "node:child_process";
import { expect, test, type Locator } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

// Unique per run: specs share one server and DATA_DIR.
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

/** Seed a day of demo metrics into the server's DATA_DIR the way an operator would: the CLI. */
function seedDemoMetrics(stores: string[]): void {
  execFileSync(process.execPath, ["node_modules/tsx/dist/cli.mjs", "scripts/cli.ts", "metrics", "demo", ...stores, "--hours", "24"], {
    env: { ...process.env, DATA_DIR: process.env.E2E_DATA_DIR, DUALMIND_LOG_LEVEL: "warn" },
    stdio: "pipe",
  });
}

/** The chart's first line as drawn: how many measured buckets, and how many separate runs (gaps split a line). */
async function drawnLine(chart: Locator): Promise<{ measured: number; runs: number }> {
  const path = chart.locator("svg .recharts-line path.recharts-line-curve").first();
  await expect(path).toHaveAttribute("d", /L/);
  const d = (await path.getAttribute("d")) ?? "";
  return { measured: Number(await chart.getAttribute("data-points")), runs: (d.match(/M/g) ?? []).length };
}

test("Health shows seeded metrics as charts with gaps, and the range and store pickers live in the URL", async ({ request, page }) => {
  const stores = [`health-a-${RUN}`, `health-b-${RUN}`];
  for (const name of stores) expect((await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name } })).status()).toBe(201);
  seedDemoMetrics(stores);

  await signIn(page, "admin", E2E.adminPassword);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Health" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Health" })).toBeVisible();
  await page.getByRole("navigation", { name: "Store" }).getByRole("link", { name: stores[0] }).click();
  await expect(page).toHaveURL(new RegExp(`store=${stores[0]}`));
  await expect(page.getByTestId("store-status")).toBeVisible();

  const backlog = page.getByTestId("chart-backlog");
  const day = await drawnLine(backlog);
  expect(day.measured).toBeGreaterThan(60); // 96 quarter-hours minus the demo outage
  expect(day.runs).toBeGreaterThan(1); // the outage is a gap, not a zero
  await expect(page.getByTestId("chart-drift").locator("svg .recharts-reference-line")).toHaveCount(1); // the model change
  expect((await drawnLine(page.getByTestId("chart-recall-quality"))).measured).toBeGreaterThan(60);
  expect((await drawnLine(page.getByTestId("chart-search-latency"))).measured).toBeGreaterThan(60);
  await expect(page.getByTestId("store-embeddings")).toBeVisible();
  await page.screenshot({ path: "e2e/screenshots/health.png", fullPage: true });

  await page.getByRole("navigation", { name: "Time range" }).getByRole("link", { name: "7d" }).click();
  await expect(page).toHaveURL(/range=7d/);
  await expect(page.getByRole("navigation", { name: "Time range" }).getByRole("link", { name: "7d" })).toHaveAttribute("aria-current", "true");
  const week = await drawnLine(page.getByTestId("chart-backlog"));
  expect(week.measured).toBeGreaterThanOrEqual(20); // a day of hour rows in a 168-hour range
  expect(week.measured).toBeLessThanOrEqual(26);

  await page.getByRole("navigation", { name: "Store" }).getByRole("link", { name: stores[1] }).click();
  await expect(page).toHaveURL(new RegExp(`range=7d&store=${stores[1]}`));
  await expect(page.getByRole("navigation", { name: "Store" }).getByRole("link", { name: stores[1] })).toHaveAttribute("aria-current", "true");
  await expect(page.getByTestId("store-embeddings")).toBeVisible();
  expect((await drawnLine(page.getByTestId("chart-backlog"))).measured).toBeGreaterThanOrEqual(20);

  // A shared link opens the same view.
  await page.goto(`/health?range=1h&store=${stores[0]}`);
  await expect(page.getByRole("navigation", { name: "Time range" }).getByRole("link", { name: "1h" })).toHaveAttribute("aria-current", "true");
  expect((await drawnLine(page.getByTestId("chart-backlog"))).measured).toBeGreaterThan(30);
});

test("Overview links its key numbers to their pages; Observability shows routes, dialectic metrics and the audit tail", async ({ page, request }) => {
  // Some API traffic so the route table has rows of its own.
  for (let i = 0; i < 3; i++) expect((await request.get("/api/v1/stores", { headers: bootstrapHeaders() })).status()).toBe(200);
  expect((await request.get("/api/v1/stores/does-not-exist-" + RUN, { headers: bootstrapHeaders() })).status()).toBe(404);

  await signIn(page, "admin", E2E.adminPassword);
  await page.getByRole("link", { name: "Overview" }).click();
  await expect(page.getByTestId("stores-table")).toBeVisible();
  await expect(page.getByTestId("stat-requests")).toHaveAttribute("href", "/observability");
  await expect(page.getByTestId("stat-health")).toHaveAttribute("href", "/health");
  await page.screenshot({ path: "e2e/screenshots/overview.png", fullPage: true });

  await page.getByTestId("stat-requests").click();
  await expect(page.getByRole("heading", { level: 1, name: "Observability" })).toBeVisible();
  await page.getByRole("navigation", { name: "Time range" }).getByRole("link", { name: "1h" }).click();
  await expect(page).toHaveURL(/range=1h/);
  await expect(page.getByTestId("dialectic-metrics")).toContainText("Active sessions");
  await expect(page.getByTestId("db-files")).toContainText("governance.db");
  await expect(page.getByTestId("audit-tail")).toContainText("store.create");
  await page.screenshot({ path: "e2e/screenshots/observability.png", fullPage: true });
});

test("Prometheus metrics need a token from outside, and carry the stores' health gauges", async ({ request }) => {
  const anonymous = await request.get("/api/metrics", { headers: { "x-forwarded-for": "198.51.100.7" } });
  expect(anonymous.status()).toBe(401);
  const scraped = await request.get("/api/metrics", { headers: bootstrapHeaders() });
  expect(scraped.status()).toBe(200);
  expect(await scraped.text()).toMatch(/^dualmind_store_embed_backlog\{store="[a-z0-9-]+"\} \d+/m);
});
