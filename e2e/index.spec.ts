import { expect, test } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

// Unique names: the spec files share one server and DATA_DIR.
const store = `e2e-index-${Date.now().toString(36)}`;
const word = `zebracorn${Date.now().toString(36)}`;

test("a memory created by API shows on the Memories page, in Search, and Reindex reports counts", async ({ page, request }) => {
  const created = await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name: store } });
  expect(created.status()).toBe(201);
  const memory = await request.post(`/api/v1/stores/${store}/memories`, {
    headers: bootstrapHeaders(),
    data: {
      path: "projects/e2e/first-note",
      body: `# First note\n\nThe ${word} lives here.\n\n<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">\n`,
      tags: ["e2e", "demo"],
      source: "playwright",
    },
  });
  expect(memory.status()).toBe(201);

  await signIn(page, "admin", E2E.adminPassword);

  await page.goto(`/memories?store=${store}`);
  await expect(page.getByTestId("category-tree").getByRole("link", { name: /e2e/ })).toBeVisible();
  await page.getByTestId("memories-table").getByRole("link", { name: "projects/e2e/first-note" }).click();
  const view = page.getByTestId("memory-view");
  await expect(view.getByRole("heading", { name: "First note" })).toBeVisible();
  await expect(view).toContainText(word);
  // Memory content is shown as text, never run.
  await expect(view).toContainText("<script>window.pwned = 1</script>");
  expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();

  await page.goto("/search");
  await page.getByLabel("Store").selectOption(store);
  // Quotes and operators in the box are just punctuation: this finds the word.
  await page.getByLabel("Query").fill(`"${word}*`);
  await page.getByRole("button", { name: "Search" }).click();
  const hit = page.getByTestId("search-hit").first();
  await expect(hit).toContainText("memory/projects/e2e/first-note.md");
  await expect(hit.locator("mark")).toHaveText([word]);

  await page.goto("/admin");
  const row = page.getByTestId(`reindex-row-${store}`);
  await row.getByRole("button", { name: `Reindex ${store}` }).click();
  await page.getByRole("dialog", { name: `Reindex store ${store}?` }).getByRole("button", { name: "Reindex", exact: true }).click();
  await expect(page.getByTestId(`reindex-result-memories-${store}`)).toHaveText("Memories: 1 scanned, 0 added, 0 changed, 1 unchanged, 0 removed");
  await page.reload();
  await expect(page.getByTestId("audit-table")).toContainText("store.reindex");

  await page.goto(`/stores/${store}`);
  await page.getByRole("button", { name: "Run verify" }).click();
  await expect(page.getByTestId("verify-result")).toContainText("OK: the index matches the files.");
});
