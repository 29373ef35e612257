import { expect, test, type APIRequestContext, type Page } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

/**
 * The dashboard's Search as a person uses it: the search lives in the URL
 * (share it, page through it, go back), Inspect shows the legs side by side,
 * and every hit opens a reader with the chunk marked in its document and its
 * vector's provenance. Data is seeded through the agent API.
 */

const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const STORE = `e2e-search-${RUN}`;
const OTHER = `e2e-search-other-${RUN}`;

/** 26 short notes that all mention the lighthouse: two pages of results. */
const NOTES = Array.from({ length: 26 }, (_, i) => ({
  path: `notes/lighthouse-${String(i).padStart(2, "0")}.md`,
  content: `# Lighthouse log ${i}\n\nThe lighthouse keeper wrote entry ${i}${" about the lighthouse lamp".repeat(1 + (i % 5))}.`,
}));

/** A guide of several sections: a hit in its middle has neighbours on both sides. */
const GUIDE = {
  path: "guides/harbour.md",
  content: Array.from({ length: 6 }, (_, i) => `## Harbour section ${i}\n\n${(i === 3 ? "The zeppelin mooring mast stands at the north pier. " : `Routine harbour chores for day ${i}: ropes, buoys and tides. `).repeat(9)}\n`).join("\n"),
};

/** Markup in documents: it must be shown as the characters it is made of, never become elements or run. */
const HTML_DOC = { path: "pages/banner.html", content: `<h1 id="injected-heading">Injected</h1><script>window.__xss = 1</script>\n<p>quayside banner text</p>\n` };
const MARKDOWN_WITH_HTML = { path: "notes/raw.md", content: `# Raw\n\nquayside note <div id="injected-div">markup</div> <img src=x onerror="window.__xss = 1">\n` };

async function seed(request: APIRequestContext): Promise<void> {
  for (const name of [STORE, OTHER]) expect((await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name } })).status()).toBe(201);
  const put = await request.put(`/api/v1/stores/${STORE}/documents`, { headers: bootstrapHeaders(), data: { documents: [...NOTES, GUIDE, HTML_DOC, MARKDOWN_WITH_HTML] } });
  expect(put.status(), await put.text()).toBe(200);
  // The in-server worker embeds them: wait for the backlog to drain (a state, not a sleep).
  await expect
    .poll(async () => (await (await request.get(`/api/v1/stores/${STORE}/health`, { headers: bootstrapHeaders() })).json()).backlog.pending, { timeout: 30_000 })
    .toBe(0);
}

const hitPaths = (page: Page) => page.getByTestId("search-results").getByTestId("search-hit-path").allTextContents();
const range = (page: Page) => page.getByRole("navigation", { name: "Result pages", exact: true }).getByTestId("search-range");

async function searchFromForm(page: Page, { q, store = STORE, mode }: { q: string; store?: string; mode?: "hybrid" | "fts" | "vector" }): Promise<void> {
  await page.getByLabel("Store").selectOption(store);
  await page.getByLabel("Query").fill(q);
  if (mode) await page.getByLabel("Mode").selectOption(mode);
  await page.getByRole("button", { name: "Search" }).click();
}

test.describe.serial("search", () => {
  test.beforeAll(async ({ playwright }) => {
    const api = await playwright.request.newContext({ baseURL: E2E.baseURL });
    await seed(api);
    await api.dispose();
  });

  test.beforeEach(async ({ page }) => {
    await signIn(page, "admin", E2E.adminPassword);
  });

  test("a search lives in the URL: paging, sharing and the back button", async ({ page, browser }) => {
    await page.goto("/search");
    await searchFromForm(page, { q: "lighthouse", mode: "fts" });
    await expect(page).toHaveURL(/[?&]page=1(&|$)/);
    const url = new URL(page.url());
    expect(Object.fromEntries(url.searchParams)).toMatchObject({ q: "lighthouse", store: STORE, mode: "fts", page: "1" });
    await expect(range(page)).toHaveText("results 1–20 of more than 20");
    const first = await hitPaths(page);
    expect(first).toHaveLength(20);

    await page.getByRole("navigation", { name: "Result pages", exact: true }).getByRole("link", { name: "Next →" }).click();
    await expect(page).toHaveURL(/[?&]page=2(&|$)/);
    await expect(range(page)).toHaveText("results 21–26 of 26");
    const second = await hitPaths(page);
    expect(second).toHaveLength(6);
    expect(second.filter((p) => first.includes(p))).toEqual([]);
    expect(new Set([...first, ...second])).toEqual(new Set(NOTES.map((n) => n.path)));

    // Back: the first page again, and the form still says what was searched.
    await page.goBack();
    await expect(page).toHaveURL(/[?&]page=1(&|$)/);
    await expect(range(page)).toHaveText("results 1–20 of more than 20");
    expect(await hitPaths(page)).toEqual(first);
    await expect(page.getByLabel("Query")).toHaveValue("lighthouse");
    await expect(page.getByLabel("Mode")).toHaveValue("fts");
    // Back once more: the empty search page, with an empty box.
    await page.goBack();
    await expect(page).toHaveURL(/\/search$/);
    await expect(page.getByLabel("Query")).toHaveValue("");
    await expect(page.getByTestId("search-results")).toHaveCount(0);

    // Shared: the URL alone opens the same page of results for someone else.
    const other = await browser.newPage({ baseURL: E2E.baseURL });
    await signIn(other, "admin", E2E.adminPassword);
    url.searchParams.set("page", "2");
    await other.goto(`${url.pathname}${url.search}`);
    await expect(range(other)).toHaveText("results 21–26 of 26");
    expect(await hitPaths(other)).toEqual(second);
    await other.close();
  });

  test("filters stay visible: switching store keeps exactly what the form shows, and clearing them is one click", async ({ page }) => {
    await page.goto(`/search?q=quayside&store=${STORE}&mode=fts&kind=code&page=1`);
    await expect(page.getByLabel("Kind")).toHaveValue("code");
    await expect(page.getByTestId("search-filters")).toHaveText("Filters: kind: code");
    expect(await hitPaths(page)).toEqual([HTML_DOC.path]);

    // Another store: the filter that narrows the search is the one on screen, in the URL and the form alike.
    await searchFromForm(page, { q: "quayside", store: OTHER });
    await expect(page).toHaveURL(new RegExp(`store=${OTHER}`));
    expect(new URL(page.url()).searchParams.get("kind")).toBe("code");
    await expect(page.getByLabel("Kind")).toHaveValue("code");
    await expect(page.getByTestId("search-filters")).toHaveText("Filters: kind: code");
    await expect(range(page)).toHaveText("no results");

    // A page past the last result says so and links to the last page that has results, not to a "Previous" that is empty too.
    await page.goto(`/search?q=lighthouse&store=${STORE}&mode=fts&page=999`);
    await expect(range(page)).toHaveText("page 50 is past the end: this search has 26 results on 2 pages");
    await expect(page.getByRole("link", { name: "← Previous" })).toHaveCount(0);
    await page.getByTestId("search-last-page").click();
    await expect(page).toHaveURL(/page=2(&|$)/);
    await expect(range(page)).toHaveText("results 21–26 of 26");

    await page.goto(`/search?q=quayside&store=${STORE}&mode=fts&kind=code&page=1`);
    await page.getByRole("link", { name: "Clear filters" }).click();
    await expect(page.getByTestId("search-filters")).toHaveText("No filters");
    await expect(page.getByLabel("Kind")).toHaveValue("");
    expect((await hitPaths(page)).sort()).toEqual([MARKDOWN_WITH_HTML.path, HTML_DOC.path].sort());
  });

  test("inspect shows the full-text, vector and fused legs side by side, with shared hits linked", async ({ page }) => {
    await page.goto(`/search?q=${encodeURIComponent("lighthouse keeper")}&store=${STORE}&mode=hybrid&page=1`);
    await page.getByRole("navigation", { name: "Search views" }).getByRole("link", { name: "Inspect" }).click();
    await expect(page).toHaveURL(/[?&]inspect=1(&|$)/);
    const inspect = page.getByTestId("search-inspect");
    const legs = { fts: inspect.getByRole("region", { name: "Full-text" }), vector: inspect.getByRole("region", { name: "Vector" }), hybrid: inspect.getByRole("region", { name: "Fused (hybrid)" }) };
    for (const leg of Object.values(legs)) await expect(leg.getByTestId("inspect-hit").first()).toBeVisible();
    await expect(legs.fts.getByTestId("inspect-leg-summary")).toContainText("answered by fts");
    await expect(legs.vector.getByTestId("inspect-leg-summary")).toContainText("answered by vector");
    await expect(legs.hybrid.getByTestId("inspect-leg-summary")).toContainText("answered by hybrid");
    // Each leg ranks in its own terms; the fused column explains every hit.
    await expect(legs.fts.getByTestId("inspect-hit").first()).toContainText("bm25");
    await expect(legs.vector.getByTestId("inspect-hit").first()).toContainText("cos");
    await expect(legs.hybrid.getByTestId("inspect-hit").first().getByTestId("search-explain")).toContainText("lexical: #");

    // The fused top hit was found by full-text too: same letter, and pointing at it outlines it in the other column.
    const top = legs.hybrid.getByTestId("inspect-hit").first();
    const key = await top.getAttribute("data-hit-key");
    const twin = legs.fts.locator(`[data-hit-key="${key}"]`);
    await expect(twin).toHaveCount(1);
    await expect(twin.getByTestId("inspect-link-badge")).toHaveText((await top.getByTestId("inspect-link-badge").textContent()) ?? "missing");
    await top.hover();
    await expect(twin).toHaveAttribute("data-active", "true");

    // Back to the plain results: same search, without inspect.
    await page.getByRole("navigation", { name: "Search views" }).getByRole("link", { name: "Results" }).click();
    await expect(page).not.toHaveURL(/inspect=1/);
    await expect(page.getByTestId("search-hit").first()).toBeVisible();
  });

  test("a hit opens the reader: the chunk marked in its document, its neighbours, metadata and vector provenance", async ({ page }) => {
    await page.goto(`/search?q=zeppelin&store=${STORE}&mode=fts&page=1`);
    // Hits are named by their documents' titles (the path is beside them).
    const hit = page.getByTestId("search-hit").filter({ has: page.getByTestId("search-hit-path").getByText(GUIDE.path, { exact: true }) });
    await expect(hit.getByTestId("search-hit-link")).toHaveText("Harbour section 0");
    await hit.getByRole("link", { name: "Harbour section 0" }).click();
    await expect(page).toHaveURL(new RegExp(`/search/read/${STORE}/[0-9a-f]{32}\\?from=[^#]+#chunk$`));
    // The breadcrumb leads back to the search, query and all.
    await expect(page.getByRole("navigation", { name: "Breadcrumb" }).getByTestId("reader-back-to-search")).toHaveText("results for “zeppelin”");
    await expect(page.getByRole("heading", { level: 1, name: GUIDE.path })).toBeVisible();

    const chunk = page.getByTestId("reader-chunk");
    await expect(chunk).toContainText("zeppelin mooring mast");
    await expect(chunk).not.toContainText("Harbour section 0");
    // The document around it is there too, outside the mark.
    await expect(page.getByTestId("reader-document")).toContainText("Harbour section 0");
    await expect(page.getByTestId("reader-prev")).toBeVisible();

    const meta = page.getByTestId("reader-metadata");
    await expect(meta).toContainText(GUIDE.path);
    await expect(meta).toContainText("markdown");
    await expect(meta).toContainText("chunking version");

    await expect(page.getByTestId("reader-vector-state")).toHaveText("embedded");
    const provenance = page.getByTestId("reader-provenance");
    await expect(provenance).toContainText("builtin:");
    await expect(provenance).toContainText("system:embed-worker");

    // The previous chunk is one click away, and is marked in its turn.
    const index = Number((await meta.getByText(/bytes \d+–\d+/).textContent())?.match(/index (\d+) of/)?.[1]);
    await page.getByTestId("reader-prev").click();
    await expect(page.getByTestId("reader-metadata")).toContainText(`index ${index - 1} of`);
    await expect(page.getByTestId("reader-next")).toBeVisible();
    await page.getByTestId("reader-back-to-search").click();
    await expect(page).toHaveURL(/\/search\?q=zeppelin&/);
    await expect(page.getByLabel("Query")).toHaveValue("zeppelin");
  });

  test("markup in a document is shown as text in the reader, never as elements or script", async ({ page }) => {
    await page.addInitScript(() => {
      (window as unknown as { __xss?: number }).__xss = undefined;
    });
    for (const [doc, title] of [[HTML_DOC, "banner.html"], [MARKDOWN_WITH_HTML, "Raw"]] as const) {
      await page.goto(`/search?q=quayside&store=${STORE}&mode=fts&page=1`);
      await page.getByTestId("search-results").getByRole("link", { name: title, exact: true }).click();
      await expect(page.getByRole("heading", { level: 1, name: doc.path })).toBeVisible();
      const document = page.getByTestId("reader-document");
      await expect(document).toContainText(doc === HTML_DOC ? '<h1 id="injected-heading">Injected</h1>' : '<div id="injected-div">markup</div>');
      await expect(page.locator("#injected-heading, #injected-div")).toHaveCount(0);
      expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    }
  });

  test("an unknown chunk or store is a friendly not-found page inside the dashboard", async ({ page }) => {
    for (const url of [`/search/read/${STORE}/${"0".repeat(32)}`, `/search/read/no-such-store-${RUN}/${"0".repeat(32)}`, `/search/read/${STORE}/not-a-chunk-id`]) {
      const res = await page.goto(url);
      expect(res?.status(), url).toBe(404);
      await expect(page.getByRole("heading", { name: "Chunk not found" })).toBeVisible();
      await expect(page.getByTestId("current-user")).toBeVisible();
      await expect(page.getByRole("link", { name: "Back to search" })).toBeVisible();
    }
  });
});
