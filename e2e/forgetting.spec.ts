import { expect, test } from "@playwright/test";
import { bootstrapHeaders, E2E, seriousViolations, signIn } from "./fixtures";

// Unique per run: specs share one server and DATA_DIR.
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

test("an admin sets a TTL, previews what it retires, forgets it (gone from search), restores it (back in search)", async ({ request, page }) => {
  const store = `forget-${RUN}`;
  const headers = bootstrapHeaders();
  expect((await request.post("/api/v1/stores", { headers, data: { name: store } })).status()).toBe(201);
  const api = `/api/v1/stores/${store}`;
  for (const [path, body, tags] of [
    [`notes/old-${RUN}`, `The ferry to Ilha ${RUN} leaves at nine.`, []],
    [`notes/kept-${RUN}`, `The ferry ${RUN} schedule is pinned.`, ["pinned"]],
  ] as const) {
    expect((await request.post(`${api}/memories`, { headers, data: { path, body, tags } })).status()).toBe(201);
  }
  const searched = async () => ((await (await request.post(`${api}/search`, { headers, data: { q: `ferry ${RUN}`, mode: "fts" } })).json()).results as { path: string }[]).map((r) => r.path).sort();
  expect(await searched()).toEqual([`memory/notes/kept-${RUN}.md`, `memory/notes/old-${RUN}.md`]);

  await signIn(page, "admin", E2E.adminPassword);
  await page.goto(`/stores/${store}`);
  await page.getByRole("link", { name: "Forgetting" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Forgetting in store ${store}`);
  expect(await seriousViolations(page)).toEqual([]);

  // A TTL of 0 days: everything written before now is past it (the pinned memory is kept whatever its age).
  const policy = page.getByRole("form", { name: "memory policy" });
  await policy.getByLabel("TTL (days)").fill("0");
  await policy.getByRole("button", { name: "Save memory policy" }).click();
  await expect(policy.getByRole("status")).toHaveText("The memory policy is saved.");

  await page.getByRole("button", { name: "Preview" }).click();
  const preview = page.getByTestId("forget-preview");
  await expect(preview.getByRole("row")).toHaveCount(2);
  await expect(preview).toContainText(`notes/old-${RUN}`);
  await expect(preview).not.toContainText(`notes/kept-${RUN}`);
  expect(await seriousViolations(page)).toEqual([]);
  // A preview retires nothing.
  expect(await searched()).toHaveLength(2);

  const forget = page.getByRole("form", { name: "Forget now" });
  await forget.getByRole("checkbox").check();
  await forget.getByRole("button", { name: "Forget now" }).click();
  await expect(page.getByText("Forgotten: 1 item(s) retired")).toBeVisible();
  expect(await searched()).toEqual([`memory/notes/kept-${RUN}.md`]);

  await page.reload();
  const forgotten = page.getByTestId("forgotten-items");
  await expect(forgotten).toContainText(`notes/old-${RUN}`);
  await expect(page.getByTestId("forget-runs").getByRole("row")).toHaveCount(3);
  expect(await seriousViolations(page)).toEqual([]);

  // Restored, the item leaves the forgotten list (the page is revalidated) and answers search again.
  await forgotten.getByRole("button", { name: "Restore" }).click();
  await expect(page.getByText("No item is retired by a policy.")).toBeVisible();
  expect(await searched()).toEqual([`memory/notes/kept-${RUN}.md`, `memory/notes/old-${RUN}.md`]);
  expect(await seriousViolations(page)).toEqual([]);
});
