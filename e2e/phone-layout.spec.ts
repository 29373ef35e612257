import { expect, test, type Locator, type Page } from "@playwright/test";
import { DASHBOARD_ROUTES, listBuiltRoutes, MARK, seedDashboardContent, type Seeded } from "./dashboard-routes";
import { E2E, screenshot, signIn } from "./fixtures";

/**
 * On a phone (390 px), what a person came for is on screen: on every
 * dashboard page of the build the page does not scroll sideways and every
 * chart fits its box whole (so its newest points, at the right, are in sight);
 * the tables keep their key columns in view; an opened memory and search
 * results start on the first screen, before the filters.
 */

const PHONE = { width: 390, height: 844 };
const SHOT_ROUTES = new Set(["/", "/health", "/observability", "/sessions"]);

/** Key columns that must be on screen at 390 px, per table (by its test id): the column names as the cells carry them. */
const KEY_COLUMNS: Record<string, string[]> = {
  "sessions-table": ["Phase", "Status"],
  "health-stores": ["Status", "Backlog / watermark"],
  "worker-table": ["Last error"],
  "route-table": ["Route", "Requests", "p95 (est.)", "Error rate (5xx)"],
};

type Layout = { overflow: number; charts: { id: string; box: number; svg: number; right: number; scrolls: boolean }[]; hidden: string[] };

/** Measure the page as drawn: its sideways overflow, each chart against its box, and key columns out of sight. */
/** An element's top once it is laid out: a re-render between two reads can leave it without a box for a moment. */
async function topOf(locator: Locator): Promise<number> {
  let y: number | undefined;
  await expect.poll(async () => (y = (await locator.boundingBox())?.y), { message: "the element has a box" }).not.toBeUndefined();
  return y!;
}

async function measure(page: Page): Promise<Layout> {
  return page.evaluate(
    ({ keys, width }) => {
      const el = document.scrollingElement!;
      const charts = [...document.querySelectorAll<HTMLElement>(".chart-box")].map((box) => {
        const svg = box.querySelector("svg.recharts-surface") as SVGSVGElement | null;
        const b = box.getBoundingClientRect();
        return { id: box.dataset.testid ?? "?", box: Math.round(b.width), svg: Math.round(svg?.getBoundingClientRect().width ?? 0), right: Math.round(b.right), scrolls: box.scrollWidth > box.clientWidth + 1 };
      });
      const hidden: string[] = [];
      for (const [table, columns] of Object.entries(keys)) {
        const row = document.querySelector(`[data-testid="${table}"] tbody tr`);
        if (!row) continue;
        for (const column of columns) {
          const cell = row.querySelector<HTMLElement>(`td[data-label="${column}"]`);
          const r = cell?.getBoundingClientRect();
          if (!cell || !r || r.width === 0 || r.left < 0 || r.right > width + 1) hidden.push(`${table}: ${column} (${cell ? `${Math.round(r!.left)}–${Math.round(r!.right)} px` : "no cell"})`);
        }
      }
      return { overflow: el.scrollWidth - el.clientWidth, charts, hidden };
    },
    { keys: KEY_COLUMNS, width: PHONE.width },
  );
}

test.describe("every dashboard page on a 390 px phone", () => {
  let seeded: Seeded;
  let page: Page;

  test.beforeAll(async ({ browser, playwright }) => {
    test.setTimeout(120_000);
    const api = await playwright.request.newContext({ baseURL: E2E.baseURL });
    seeded = await seedDashboardContent(api);
    await api.dispose();
    const context = await browser.newContext({ baseURL: E2E.baseURL, viewport: PHONE, deviceScaleFactor: 1 });
    page = await context.newPage();
    await signIn(page, "admin", E2E.adminPassword);
  });

  test.afterAll(async () => {
    await page?.context().close();
  });

  test("no page scrolls sideways, every chart fits its box, key table columns are in view", async () => {
    test.setTimeout(300_000);
    const built = new Set(listBuiltRoutes().filter((r) => r.kind === "page").map((r) => r.route));
    const wrong: string[] = [];
    let chartsSeen = 0;
    const tablesSeen = new Set<string>();
    for (const [route, fill] of Object.entries(DASHBOARD_ROUTES)) {
      if (!built.has(route)) continue;
      const { url } = fill(seeded);
      await page.goto(url, { waitUntil: "load" });
      await page.getByTestId("current-user").waitFor({ state: "attached" });
      // The charts are redrawn at their box's width once the page is interactive.
      for (const box of await page.locator(".chart-box").all()) await expect.poll(async () => box.evaluate((b) => Math.round(b.querySelector("svg")?.getBoundingClientRect().width ?? 0) <= Math.round(b.getBoundingClientRect().width))).toBe(true);
      let m = await measure(page);
      // A page that refreshes itself (auto-refresh) may be measured mid-render: measure again once the network is quiet.
      for (let i = 0; i < 2 && (m.hidden.length > 0 || m.overflow > 0); i++) {
        await page.waitForLoadState("networkidle");
        m = await measure(page);
      }
      if (m.overflow > 0) wrong.push(`${route}: the page scrolls sideways by ${m.overflow}px`);
      for (const c of m.charts) {
        chartsSeen++;
        if (c.svg > c.box || c.right > PHONE.width || c.scrolls) wrong.push(`${route}: chart ${c.id} is ${c.svg}px in a ${c.box}px box (right edge ${c.right}px${c.scrolls ? ", scrolls" : ""})`);
      }
      for (const h of m.hidden) wrong.push(`${route}: key column out of view: ${h}`);
      for (const t of Object.keys(KEY_COLUMNS)) if (await page.locator(`[data-testid="${t}"] tbody tr`).count()) tablesSeen.add(t);
      if (SHOT_ROUTES.has(route)) await screenshot(page, `phone/${route === "/" ? "overview" : route.slice(1)}-390.png`);
    }
    expect(wrong).toEqual([]);
    // The checks above looked at something: the Health and Observability charts, and the tables with rows
    // (the route table fills once the server's request minutes are flushed to the history: checked when it has rows).
    expect(chartsSeen).toBeGreaterThanOrEqual(8);
    expect([...tablesSeen].sort()).toEqual(expect.arrayContaining(["health-stores", "sessions-table", "worker-table"]));
  });

  test("an opened memory and search results start on the first screen, before the filters", async () => {
    await page.goto(`/memories?store=${seeded.store}&path=${encodeURIComponent(MARK.memoryPath)}`);
    const memory = page.getByTestId("memory-view");
    await expect(memory).toContainText(MARK.memory);
    const top = await topOf(memory);
    expect(top, "the opened memory's top, px from the top of the page").toBeLessThan(PHONE.height / 2);
    const filters = await topOf(page.getByRole("form", { name: "Memory filters" }));
    expect(filters).toBeGreaterThan(top);

    await page.goto(`/search?store=${seeded.store}&mode=fts&q=${encodeURIComponent(MARK.memory.replaceAll("-", " "))}`);
    const results = page.getByTestId("search-results");
    await expect(results).toContainText(MARK.memoryPath);
    const resultsTop = await topOf(results);
    expect(resultsTop, "the results' top, px from the top of the page").toBeLessThan(PHONE.height / 2);
    expect(await topOf(page.getByTestId("search-form"))).toBeGreaterThan(resultsTop);
  });
});
