import { expect, test } from "@playwright/test";
import { DASHBOARD_ROUTES, seedDashboardContent, type RouteRow } from "./dashboard-routes";
import { E2E, seriousViolations, signIn } from "./fixtures";

/**
 * An accessibility check (axe-core, the engine behind Lighthouse's and the
 * browser extensions' audits) on every dashboard page with real content, as an
 * admin sees it (the most controls), at a desktop and a phone width. Serious
 * and critical violations fail: they block someone using a screen reader or a
 * keyboard, or make text unreadable.
 */

const WIDTHS = [
  { name: "desktop", width: 1440, height: 900 },
  { name: "phone", width: 390, height: 844 },
];

test.describe("accessibility (axe-core): no serious or critical violation on any page", () => {
  let rows: [string, RouteRow][];

  test.beforeAll(async ({ playwright }) => {
    const api = await playwright.request.newContext({ baseURL: E2E.baseURL });
    const seeded = await seedDashboardContent(api);
    await api.dispose();
    // The session export is a JSON download, not a page.
    rows = Object.entries(DASHBOARD_ROUTES)
      .filter(([route]) => !route.endsWith("/export"))
      .map(([route, fill]) => [route, fill(seeded)]);
  });

  for (const size of WIDTHS) {
    test(`every dashboard page at ${size.width} px (${size.name})`, async ({ page }) => {
      test.setTimeout(240_000);
      await page.setViewportSize({ width: size.width, height: size.height });
      await signIn(page, "admin", E2E.adminPassword);
      const found: string[] = [];
      for (const [route, row] of rows) {
        const res = await page.goto(row.url, { waitUntil: "load" });
        expect(res?.status(), route).toBe(200);
        for (const v of await seriousViolations(page)) {
          found.push(`${route}: ${v.impact} ${v.id} (${v.help}) at ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}${v.nodes.length > 3 ? ` and ${v.nodes.length - 3} more` : ""}`);
        }
      }
      expect(found).toEqual([]);
    });
  }

  test("a chart range that cannot be shown: the alert and the marked fields beside the picker", async ({ page }) => {
    await signIn(page, "admin", E2E.adminPassword);
    for (const url of ["/health?from=2020-01-01T00:00&to=2020-01-02T00:00", "/observability?from=2026-01-01T00:00&to=nonsense"]) {
      await page.goto(url);
      await expect(page.getByTestId("range-error")).toBeVisible();
      expect((await seriousViolations(page)).map((v) => `${url}: ${v.impact} ${v.id}: ${v.help}`)).toEqual([]);
    }
  });

  test("the sign-in page", async ({ page }) => {
    await page.goto("/login");
    expect((await seriousViolations(page)).map((v) => `${v.impact} ${v.id}: ${v.help}`)).toEqual([]);
  });
});
