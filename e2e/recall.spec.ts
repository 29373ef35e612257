import { expect, test } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

test.describe("reflection recall", () => {
  test("an agent is warned about a past failure; a person sees the recall, rates it and tunes the store", async ({ page, request }) => {
    const store = `e2e-recall-${Date.now().toString(36)}`;
    const headers = bootstrapHeaders();
    expect((await request.post("/api/v1/stores", { headers, data: { name: store } })).status()).toBe(201);
    const trace = await request.post(`/api/v1/stores/${store}/traces`, {
      headers,
      data: {
        intent: { verb: "fix", target: "auth token refresh" },
        shard_type: "backend",
        key_files: ["lib/auth/session.ts"],
        outcome: "failure",
        key_issue: "refresh token rotated twice, causing 401 loops",
        error_tags: ["auth"],
      },
    });
    expect(trace.status()).toBe(201);
    const traceId = (await trace.json()).trace.id as number;

    // The vector is written behind; the warning is there as soon as the recall finds the trace.
    await expect
      .poll(async () => {
        const r = await request.post(`/api/v1/stores/${store}/recall`, { headers, data: { query: "repair the auth token refresh" } });
        const body = await r.json();
        return body.guidance?.past_failure_warning?.trace_id ?? null;
      })
      .toBe(traceId);

    await signIn(page, "admin", E2E.adminPassword);
    await page.getByRole("link", { name: "Reflection" }).click();
    await page.getByRole("form", { name: "Choose store" }).getByLabel("Store").selectOption(store);
    await page.getByRole("form", { name: "Choose store" }).getByRole("button", { name: "Show" }).click();
    await expect(page.getByTestId("recent-recalls")).toContainText("repair the auth token refresh");
    await expect(page.getByTestId("recent-recalls")).toContainText("past failure warning");
    await expect(page.getByTestId(`trace-row-${traceId}`)).toContainText("failure");
    // The recall links to the trace it returned; the trace reads as fields.
    await page.getByTestId("recent-recalls").getByRole("link", { name: `trace #${traceId}` }).first().click();
    await expect(page.getByRole("heading", { level: 1, name: `Trace #${traceId}` })).toBeVisible();
    await expect(page.getByTestId("trace-fields")).toContainText("refresh token rotated twice, causing 401 loops");
    await expect(page.getByTestId("trace-fields")).toContainText("lib/auth/session.ts");
    await expect(page.getByTestId("trace-recalls")).toContainText("repair the auth token refresh");
    await page.getByRole("link", { name: `← Reflection · ${store}` }).click();

    // A rated hit leaves the queue, and the summary counts it.
    const item = page.getByTestId("rating-queue").getByRole("listitem").first();
    const itemId = await item.getAttribute("data-testid");
    await item.getByRole("button", { name: "Relevant", exact: true }).click();
    await expect(page.getByTestId(itemId!)).toHaveCount(0);
    await page.reload();
    await expect(page.getByTestId("reflection-summary")).toContainText("100% of 1 rated");

    const settings = page.getByRole("form", { name: "Reflection settings" });
    await settings.getByLabel("Min score").fill("0.3");
    await settings.getByRole("button", { name: "Save settings" }).click();
    await expect(settings.getByRole("status")).toContainText("saved");
    const overview = await request.get(`/api/v1/stores/${store}/reflection`, { headers });
    expect((await overview.json()).settings.min_score).toBe(0.3);
  });
});
