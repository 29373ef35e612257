import { expect, test } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

test("a fresh server is ready for an agent: a default store, and the API page's examples use it at the address really served", async ({ page, request }) => {
  const stores = await request.get("/api/v1/stores", { headers: bootstrapHeaders() });
  expect(((await stores.json()).stores as { name: string }[]).map((s) => s.name)).toEqual(expect.arrayContaining(["core", "default"]));
  const write = await request.post("/api/v1/stores/default/memories", { headers: bootstrapHeaders(), data: { path: "first-run/hello", body: "ready on first run" } });
  expect(write.status(), await write.text()).toBe(201);

  await signIn(page, "admin", E2E.adminPassword);
  await page.goto("/api-docs");
  // The e2e server listens on E2E_PORT, not the default 3000: a hardcoded address would show here.
  await expect(page.getByTestId("mcp-config")).toContainText(`"url": "${E2E.baseURL}/api/mcp"`);
  await expect(page.getByTestId("mcp-config")).toContainText('"--store",\n        "default"');
  await expect(page.getByTestId("curl-example")).toContainText(`${E2E.baseURL}/api/v1/stores/default/memories`);
});
