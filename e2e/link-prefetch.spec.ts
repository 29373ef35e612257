import { expect, test, type Page, type Request } from "@playwright/test";
import { E2E, signIn } from "./fixtures";

/**
 * The dashboard's links prefetch a page when a person shows they may follow one (pointer, keyboard focus, touch),
 * not when it comes into view (components/link.tsx): a full page load no longer makes the server render every
 * page it links to, and a link a person reaches for is still prefetched before the click.
 */
const isPrefetch = (r: Request) => r.headers()["next-router-prefetch"] === "1";
const pathOf = (r: Request) => new URL(r.url()).pathname;

/** The prefetch requests the page makes from now on. */
function prefetchesOf(page: Page): Request[] {
  const seen: Request[] = [];
  page.on("request", (r) => {
    if (isPrefetch(r)) seen.push(r);
  });
  return seen;
}

test.describe("links prefetch on intent", () => {
  test("a full page load prefetches none of the links it shows", async ({ page }) => {
    await signIn(page, "admin", E2E.adminPassword);
    // The pointer away from every link (signing in left it where the button was).
    await page.mouse.move(0, 0);
    const prefetches = prefetchesOf(page);
    await page.goto("/");
    // The Overview links every page of the navigation and every store; on sight, each was a request the server rendered.
    await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link")).toHaveCount(12);
    await page.waitForLoadState("networkidle");
    expect(prefetches.map(pathOf)).toEqual([]);
  });

  test("a link under the pointer or in keyboard focus is prefetched before it is followed", async ({ page }) => {
    await signIn(page, "admin", E2E.adminPassword);
    await page.goto("/");
    await page.waitForLoadState("networkidle");
    const nav = page.getByRole("navigation", { name: "Main" });

    const ledger = page.waitForRequest((r) => isPrefetch(r) && pathOf(r) === "/ledger");
    await nav.getByRole("link", { name: "Ledger" }).hover();
    await ledger;

    const graph = page.waitForRequest((r) => isPrefetch(r) && pathOf(r) === "/graph");
    await nav.getByRole("link", { name: "Graph" }).focus();
    await graph;

    // Followed, the prefetched link navigates in place as before.
    await nav.getByRole("link", { name: "Ledger" }).click();
    await expect(page).toHaveURL(/\/ledger$/);
    await expect(nav.getByRole("link", { name: "Ledger" })).toHaveAttribute("aria-current", "page");
  });

  test("every page of the navigation answers its prefetch, with nothing wrong on the page", async ({ page }) => {
    await signIn(page, "admin", E2E.adminPassword);
    await page.goto("/");
    await page.waitForLoadState("networkidle");
    const problems: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(m.text());
    });
    page.on("pageerror", (e) => problems.push(e.message));
    const links = page.getByRole("navigation", { name: "Main" }).getByRole("link");
    const hrefs = await links.evaluateAll((as) => as.map((a) => new URL((a as HTMLAnchorElement).href).pathname));
    expect(hrefs).toHaveLength(12);
    for (const [i, href] of hrefs.entries()) {
      // The page the Overview is already on has nothing to prefetch.
      if (href === "/") continue;
      const answered = page.waitForResponse((r) => isPrefetch(r.request()) && pathOf(r.request()) === href);
      await links.nth(i).focus();
      expect((await answered).status(), href).toBe(200);
    }
    expect(problems).toEqual([]);
  });
});
