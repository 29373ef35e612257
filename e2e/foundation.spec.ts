import { expect, test } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

test.describe("foundation", () => {
  test("admin signs in, sees stores, creates a token that works on the API", async ({ page, request }) => {
    await signIn(page, "admin", E2E.adminPassword);
    await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
    await expect(page.getByTestId("store-row-core")).toBeVisible();
    await expect(page.getByTestId("store-row-core")).toContainText("sqlite-vec");

    await page.getByRole("link", { name: "Admin" }).click();
    await expect(page.getByRole("heading", { name: "API tokens" })).toBeVisible();
    const form = page.getByRole("form", { name: "Create token" });
    await form.getByLabel("Token label").fill("e2e-agent-token");
    await form.getByLabel("Agent id").fill("e2e-agent");
    await form.getByRole("button", { name: "Create token" }).click();
    const tokenText = (await page.getByTestId("new-token").textContent())?.trim() ?? "";
    expect(tokenText).toMatch(/^dm_/);
    await expect(page.getByTestId("tokens-table")).toContainText("e2e-agent-token");

    const res = await request.get("/api/v1/stores", { headers: { authorization: `Bearer ${tokenText}` } });
    expect(res.status()).toBe(200);
    const body = await res.json();
    expect(body.stores.map((s: { name: string }) => s.name)).toContain("core");

    // A read-only token cannot create a store.
    const denied = await request.post("/api/v1/stores", { headers: { authorization: `Bearer ${tokenText}` }, data: { name: "e2e-nope" } });
    expect(denied.status()).toBe(403);
    expect((await denied.json()).error.code).toBe("forbidden");

    // The token creation is in the audit log on the Admin page.
    await page.reload();
    await expect(page.getByTestId("audit-table")).toContainText("token.create");
  });

  test("a viewer cannot reach Admin", async ({ page, browser }) => {
    await signIn(page, "admin", E2E.adminPassword);
    await page.goto("/admin");
    const userForm = page.getByRole("form", { name: "Create user" });
    await userForm.getByLabel("New username").fill("e2e-viewer");
    await userForm.getByLabel("New user password").fill("viewer-password");
    await userForm.getByLabel("Role").selectOption("viewer");
    await userForm.getByRole("button", { name: "Create user" }).click();
    await expect(userForm.getByRole("status")).toContainText("Created viewer e2e-viewer");

    const viewerContext = await browser.newContext();
    const viewer = await viewerContext.newPage();
    await signIn(viewer, "e2e-viewer", "viewer-password");
    await expect(viewer.getByTestId("current-user")).toContainText("viewer");
    await expect(viewer.getByRole("link", { name: "Admin" })).toHaveCount(0);
    // A friendly 403 inside the dashboard, saying why (SECURITY.md "Admin pages: 403, not 404").
    const res = await viewer.goto("/admin");
    expect(res?.status()).toBe(403);
    await expect(viewer.getByRole("heading", { level: 1, name: "Admins only" })).toBeVisible();
    await expect(viewer.getByRole("navigation", { name: "Main" })).toBeAttached();
    await expect(viewer.getByRole("heading", { name: "API tokens" })).toHaveCount(0);
    await viewerContext.close();
  });

  test("wrong password is refused and the dashboard stays closed", async ({ page }) => {
    await page.goto("/login");
    await page.getByLabel("Username").fill("admin");
    await page.getByLabel("Password").fill("not-the-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByRole("alert").filter({ hasText: "Wrong username or password" })).toBeVisible();
    await page.goto("/");
    await expect(page).toHaveURL(/\/login/);
  });

  test("API errors: 401 without token, 400 with field details, 413 when too large, 404 envelope for unknown routes", async ({ request }) => {
    const noToken = await request.get("/api/v1/stores");
    expect(noToken.status()).toBe(401);
    expect((await noToken.json()).error.code).toBe("unauthorized");

    const malformed = await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name: "Not A Valid Name!" } });
    expect(malformed.status()).toBe(400);
    const err = (await malformed.json()).error;
    expect(err.code).toBe("invalid_request");
    expect(err.details[0].path).toBe("body.name");

    const huge = await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name: "big", description: "x".repeat(2 * 1024 * 1024) } });
    expect(huge.status()).toBe(413);

    const unknown = await request.get("/api/v1/no-such-thing", { headers: bootstrapHeaders() });
    expect(unknown.status()).toBe(404);
    expect((await unknown.json()).error.code).toBe("not_found");

    const health = await request.get("/api/v1/health");
    expect(health.status()).toBe(200);
  });
});
