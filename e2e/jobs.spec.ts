import { expect, test } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

test.describe("admin jobs mean what they say", () => {
  test("an admin's reindex asks first: cancel does nothing, confirm starts it, and the row turns done without a reload", async ({ page, request }) => {
    const store = `e2e-jobs-${Date.now().toString(36)}`;
    const headers = bootstrapHeaders();
    expect((await request.post("/api/v1/stores", { headers, data: { name: store } })).status()).toBe(201);
    for (let i = 0; i < 3; i++) {
      const r = await request.post(`/api/v1/stores/${store}/memories`, { headers, data: { path: `jobs/note-${i}`, body: `# Note ${i}\n\nAbout the reindex job ${i}.\n` } });
      expect(r.status()).toBe(201);
    }

    await signIn(page, "admin", E2E.adminPassword);
    await page.goto("/admin");
    const row = page.getByTestId(`reindex-row-${store}`);
    const status = page.getByTestId(`reindex-status-${store}`);
    const dialog = page.getByRole("dialog", { name: `Reindex store ${store}?` });
    await expect(status).toHaveText("—");

    // Cancel: the dialog said what would happen, and nothing did.
    await row.getByRole("button", { name: `Reindex ${store}` }).click();
    await expect(dialog).toBeVisible();
    await expect(dialog.getByTestId("confirm-details")).toContainText("Indexed now: 3 memories and 0 source documents");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await expect(dialog).toBeHidden();
    await expect(status).toHaveText("—");
    // No job row was written either: after a reload the store still has no last run.
    await page.reload();
    await expect(status).toHaveText("—");

    // Confirm: the job starts and the row follows it to the end by itself.
    await row.getByRole("button", { name: `Reindex ${store}` }).click();
    await dialog.getByRole("button", { name: "Reindex", exact: true }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByTestId(`reindex-result-memories-${store}`)).toHaveText("Memories: 3 scanned, 0 added, 0 changed, 3 unchanged, 0 removed");
    await expect(page.getByTestId(`reindex-result-documents-${store}`)).toHaveText("Documents: 0 scanned, 0 added, 0 changed, 0 unchanged, 0 removed");

    // Done stays done after a reload.
    await page.reload();
    await expect(page.getByTestId(`reindex-result-memories-${store}`)).toHaveText("Memories: 3 scanned, 0 added, 0 changed, 3 unchanged, 0 removed");
  });

  test("re-embed on an up-to-date store asks, says there is nothing to do, and starts no job", async ({ page, request }) => {
    const store = `e2e-reembed-${Date.now().toString(36)}`;
    const headers = bootstrapHeaders();
    expect((await request.post("/api/v1/stores", { headers, data: { name: store } })).status()).toBe(201);
    expect((await request.post(`/api/v1/stores/${store}/memories`, { headers, data: { path: "a/one", body: "# One\n\nOne small memory.\n" } })).status()).toBe(201);
    // Wait for the worker: nothing left to embed.
    await expect.poll(async () => (await (await request.get(`/api/v1/stores/${store}/health`, { headers })).json()).backlog.pending).toBe(0);

    await signIn(page, "admin", E2E.adminPassword);
    await page.goto(`/stores/${store}`);
    const card = page.getByTestId("store-embeddings");
    await card.getByRole("button", { name: "Re-embed", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: `Re-embed store ${store}?` });
    await expect(dialog.getByTestId("confirm-details")).toContainText("Nothing to re-embed");
    await dialog.getByRole("button", { name: "Re-embed", exact: true }).click();
    await expect(card.getByRole("status")).toContainText("No job was started");
    await expect(card.getByTestId("reembed-progress")).toHaveCount(0);
    const job = await request.get(`/api/v1/stores/${store}/reembed`, { headers });
    expect((await job.json()).job).toBeNull();
  });
});
