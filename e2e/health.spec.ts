import { expect, test, type Locator } from "@playwright/test";
import { bootstrapHeaders, E2E, screenshot, seedDemoMetrics, signIn } from "./fixtures";

// Unique per run: specs share one server and DATA_DIR.
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

/** The chart's first line as drawn: how many measured buckets, and how many separate runs (gaps split a line). */
async function drawnLine(chart: Locator): Promise<{ measured: number; runs: number }> {
  const path = chart.locator("svg .recharts-line path.recharts-line-curve").first();
  await expect(path).toHaveAttribute("d", /L/);
  const d = (await path.getAttribute("d")) ?? "";
  return { measured: Number(await chart.getAttribute("data-points")), runs: (d.match(/M/g) ?? []).length };
}

test("Health shows seeded metrics as charts with gaps, and the range and store pickers live in the URL", async ({ request, page }) => {
  // Five page loads of four charts each: on a loaded machine one minute is not enough.
  test.slow();
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
  await screenshot(page, "health.png");

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
  await screenshot(page, "overview.png");

  await page.getByTestId("stat-requests").click();
  await expect(page.getByRole("heading", { level: 1, name: "Observability" })).toBeVisible();
  await page.getByRole("navigation", { name: "Time range" }).getByRole("link", { name: "1h" }).click();
  await expect(page).toHaveURL(/range=1h/);
  await expect(page.getByTestId("dialectic-metrics")).toContainText("Active sessions");
  await expect(page.getByTestId("db-files")).toContainText("governance.db");
  await expect(page.getByTestId("audit-tail")).toContainText("store.create");
  await screenshot(page, "observability.png");
});

/** The time axis's tick labels as drawn. */
async function tickLabels(chart: Locator): Promise<string[]> {
  await expect(chart.locator("svg .recharts-xAxis-tick-labels .recharts-cartesian-axis-tick-value").first()).toBeVisible();
  return chart.locator("svg .recharts-xAxis-tick-labels .recharts-cartesian-axis-tick-value").allTextContents();
}

test("A custom from/to range narrows the charts on Health and Observability, lives in the URL, and a range the rollups cannot answer says so", async ({ request, page }) => {
  // Page after page of the two heaviest dashboards: more than the default minute on a loaded machine.
  test.slow();
  const store = `range-${RUN}`;
  expect((await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name: store } })).status()).toBe(201);
  seedDemoMetrics([store]);
  await signIn(page, "admin", E2E.adminPassword);
  await page.goto(`/health?range=24h&store=${store}`);
  const backlog = page.getByTestId("chart-backlog");
  const day = await drawnLine(backlog);
  expect(day.measured).toBeGreaterThan(60);
  await expect(backlog).toContainText("of 96 buckets measured");
  const dayTicks = await tickLabels(backlog);

  // Two hours ending three hours ago, typed into the picker (UTC, as the page says).
  const minute = 60_000;
  const end = Math.floor(Date.now() / minute) * minute - 3 * 60 * minute;
  const start = end - 120 * minute;
  const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
  const readable = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ");
  // The label names the day once when both ends fall on the same UTC day, and both days when the range crosses midnight.
  const shownRange = `${readable(start)} – ${readable(start).slice(0, 10) === readable(end).slice(0, 10) ? hhmm(end) : readable(end)} UTC`;
  const minuteOfDay = (hm: string) => Number(hm.slice(0, 2)) * 60 + Number(hm.slice(3, 5));
  const onTheClockWithin = (t: string) => {
    const [m, a, b] = [minuteOfDay(t), minuteOfDay(hhmm(start)), minuteOfDay(hhmm(end))];
    return a <= b ? m >= a && m <= b : m >= a || m <= b;
  };
  const picker = page.getByRole("form", { name: "Custom time range" });
  await picker.getByLabel("From (UTC)").fill(new Date(start).toISOString().slice(0, 16));
  await picker.getByLabel("To (UTC)").fill(new Date(end).toISOString().slice(0, 16));
  await picker.getByRole("button", { name: "Show range" }).click();
  await expect(page).toHaveURL(new RegExp(`store=${store}&from=.+&to=`));
  await expect(page.getByTestId("range-shown")).toContainText(`${shownRange} in buckets of 1 minute`);
  for (const preset of ["1h", "24h", "7d", "30d"]) await expect(page.getByRole("navigation", { name: "Time range" }).getByRole("link", { name: preset })).not.toHaveAttribute("aria-current", "true");

  // The data and the axis follow: 120 minute buckets, measured ones drawn, ticks inside the two hours.
  await expect(backlog).toContainText("of 120 buckets measured");
  const narrow = await drawnLine(backlog);
  expect(narrow.measured).toBeGreaterThan(100);
  expect(narrow.measured).toBeLessThanOrEqual(120);
  const ticks = await tickLabels(backlog);
  expect(ticks).not.toEqual(dayTicks);
  for (const t of ticks) expect(onTheClockWithin(t), `${t} within ${hhmm(start)}–${hhmm(end)}`).toBe(true);

  // The link reproduces the view, and the store picker keeps the range.
  const shared = page.url();
  await page.goto(shared);
  await expect(page.getByTestId("chart-backlog")).toContainText("of 120 buckets measured");
  await expect(page.getByRole("navigation", { name: "Store" }).getByRole("link", { name: "all stores" })).toHaveAttribute("href", /from=.+&to=/);

  // Observability takes the same range.
  await page.goto(`/observability?${new URL(shared).search.slice(1).replace(`store=${store}&`, "")}`);
  await expect(page.getByTestId("chart-route-latency")).toContainText("of 120 buckets measured");
  await expect(page.getByRole("heading", { name: /^Routes \(/ })).toContainText(shownRange);

  // Older than the hour rollups keep: said, and the preset shown instead.
  await page.goto(`/health?store=${store}&from=2020-01-01T00:00&to=2020-01-02T00:00`);
  await expect(page.getByTestId("range-error")).toContainText("Metrics are kept for 365 days");
  await expect(page.getByRole("navigation", { name: "Time range" }).getByRole("link", { name: "24h" })).toHaveAttribute("aria-current", "true");
  await expect(page.getByTestId("chart-backlog")).toContainText("of 96 buckets measured");

  // On a phone the picker and the chart fit the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(shared);
  await expect(page.getByTestId("chart-backlog")).toContainText("of 120 buckets measured");
  const box = await page.getByRole("form", { name: "Custom time range" }).boundingBox();
  expect(box!.x + box!.width).toBeLessThanOrEqual(390);
  expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(390);
});

test("Prometheus metrics need a token from outside, and carry the stores' health gauges", async ({ request }) => {
  const anonymous = await request.get("/api/metrics", { headers: { "x-forwarded-for": "198.51.100.7" } });
  expect(anonymous.status()).toBe(401);
  const scraped = await request.get("/api/metrics", { headers: bootstrapHeaders() });
  expect(scraped.status()).toBe(200);
  expect(await scraped.text()).toMatch(/^dualmind_store_embed_backlog\{store="[a-z0-9-]+"\} \d+/m);
});
