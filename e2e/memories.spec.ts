import { expect, test, type Page } from "@playwright/test";
import { bootstrapHeaders, E2E, ensureRoleUsers, ROLE_USERS, signIn } from "./fixtures";
import { encodeActionArgs, listServerActions, postServerAction } from "./server-actions";

const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const STORE = `mem-${RUN}`;

async function signInAs(page: Page, role: keyof typeof ROLE_USERS): Promise<void> {
  await signIn(page, ROLE_USERS[role].username, ROLE_USERS[role].password);
}

test.describe.serial("memories you can manage", () => {
  test.beforeAll(async ({ browser, request }) => {
    const res = await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name: STORE } });
    expect(res.status(), await res.text()).toBe(201);
    await ensureRoleUsers(browser);
  });

  test("an editor creates, edits, moves, searches and deletes a memory and sees its history and last diff", async ({ page }) => {
    await signInAs(page, "editor");
    await page.goto(`/memories?store=${STORE}`);
    await page.getByRole("link", { name: "New memory" }).click();
    const editor = page.getByRole("form", { name: "New memory" });

    // A bad path is refused beside the field, and nothing typed is lost.
    await editor.getByLabel("Path (category/…/slug)").fill("not a path!");
    await editor.getByLabel("Markdown").fill("# Release plan\n\nShip the quokka build on Friday.");
    await editor.getByLabel("Tags (comma-separated)").fill("release, ops");
    await expect(editor.getByRole("region", { name: "Preview" }).getByRole("heading", { name: "Release plan" })).toBeVisible();
    await editor.getByRole("button", { name: "Create memory" }).click();
    await expect(editor.getByLabel("Path (category/…/slug)")).toHaveAttribute("aria-invalid", "true");
    await expect(editor.locator("#me-path-error")).toContainText("memory path");
    await expect(editor.getByLabel("Markdown")).toHaveValue("# Release plan\n\nShip the quokka build on Friday.");
    await expect(editor.getByLabel("Tags (comma-separated)")).toHaveValue("release, ops");

    await editor.getByLabel("Path (category/…/slug)").fill("plans/release");
    await editor.getByLabel("Summary").fill("when we ship");
    await editor.getByRole("button", { name: "Create memory" }).click();
    await expect(page).toHaveURL(/path=plans%2Frelease/);
    const view = page.getByTestId("memory-view");
    await expect(view).toContainText("Ship the quokka build on Friday.");
    await expect(view).toContainText("tags: release, ops");
    const history = page.getByTestId("memory-history");
    await expect(history.getByTestId("memory-history-entry")).toHaveCount(1);
    await expect(history).toContainText(`created by user:${ROLE_USERS.editor.username}`);

    // Edit: the form opens with the memory's text and fields.
    await view.getByRole("link", { name: "Edit" }).click();
    const edit = page.getByRole("form", { name: "Edit memory plans/release" });
    await expect(edit.getByLabel("Summary")).toHaveValue("when we ship");
    await edit.getByLabel("Markdown").fill("# Release plan\n\nShip the quokka build on Monday.");
    await edit.getByRole("button", { name: "Save changes" }).click();
    await expect(view).toContainText("Ship the quokka build on Monday.");
    await expect(history.getByTestId("memory-history-entry")).toHaveCount(2);
    await expect(history.getByTestId("memory-history-entry").first()).toContainText(`edited by user:${ROLE_USERS.editor.username}`);
    await expect(history.getByTestId("memory-history-entry").first()).toContainText("changed body");
    const diff = page.getByTestId("memory-last-diff");
    await expect(diff).toContainText("-Ship the quokka build on Friday.");
    await expect(diff).toContainText("+Ship the quokka build on Monday.");

    // Move to another category: the history follows it.
    await view.getByLabel("New path (category/…/slug)").fill("archive/2026/release");
    await view.getByRole("button", { name: "Move" }).click();
    await expect(page).toHaveURL(/path=archive%2F2026%2Frelease/);
    await expect(page.getByRole("navigation", { name: "Categories" })).toContainText("2026");
    await expect(page.getByRole("navigation", { name: "Categories" })).not.toContainText("plans");
    await expect(history.getByTestId("memory-history-entry")).toHaveCount(3);
    await expect(history.getByTestId("memory-history-entry").first()).toContainText(`moved by user:${ROLE_USERS.editor.username}`);
    await expect(history.getByTestId("memory-history-entry").first()).toContainText("from plans/release to archive/2026/release");
    await expect(diff).toContainText("+Ship the quokka build on Monday.");

    // Full-text search inside Memories finds it at its new path.
    await page.getByRole("search", { name: "Search memories" }).getByLabel("Search text").fill("quokka monday");
    await page.getByRole("search", { name: "Search memories" }).getByRole("button", { name: "Search" }).click();
    // Each hit is named by its title (its first heading) with its path beside it.
    const hit = page.getByTestId("memory-search-results").getByTestId("memory-search-hit");
    await expect(hit.getByRole("link", { name: "Release plan" })).toBeVisible();
    await expect(hit.getByTestId("memory-search-hit-path")).toHaveText("archive/2026/release");
    await hit.getByRole("link", { name: "Release plan" }).click();

    // Delete asks first; "Keep it" keeps it.
    await view.getByRole("button", { name: "Delete…" }).click();
    const confirm = page.getByRole("alertdialog", { name: "Delete memory archive/2026/release?" });
    await expect(confirm).toContainText("It leaves the list and search and goes to the store's trash");
    await confirm.getByRole("button", { name: "Keep it" }).click();
    await expect(confirm).toHaveCount(0);
    await view.getByRole("button", { name: "Delete…" }).click();
    await page.getByRole("alertdialog").getByRole("button", { name: "Delete memory" }).click();
    await expect(page.getByTestId("memory-count")).toHaveText("0 memories");
    await expect(page.getByTestId("memory-deleted")).toContainText("Deleted archive/2026/release");
    // Its old address says what happened and offers it back from the trash; its history stays reachable.
    await page.goto(`/memories?store=${STORE}&path=archive/2026/release`);
    await expect(page.getByTestId("memory-not-found")).toContainText("No memory at archive/2026/release");
    await expect(page.getByTestId("memory-in-trash")).toContainText("Deleted by user:");
    await expect(page.getByTestId("memory-history")).toContainText("deleted (to the trash)");
    // The path it was moved away from says where it went, and that it was deleted there since.
    await page.goto(`/memories?store=${STORE}&path=plans/release`);
    await expect(page.getByTestId("memory-not-found")).toContainText("It was moved to archive/2026/release, and deleted there since.");
    await expect(page.getByTestId("memory-in-trash")).toBeVisible();
    await expect(page.getByTestId("current-user")).toBeVisible();
  });

  test("switching store drops the category filter instead of hiding it", async ({ page, request }) => {
    await request.post(`/api/v1/stores/${STORE}/memories`, { headers: bootstrapHeaders(), data: { path: "decisions/db", body: "sqlite" } });
    await signInAs(page, "viewer");
    await page.goto(`/memories?store=${STORE}`);
    await page.getByRole("navigation", { name: "Categories" }).getByRole("link", { name: /^decisions/ }).click();
    await expect(page.getByTestId("memory-count")).toHaveText("1 memory in decisions · show all");
    await page.getByRole("form", { name: "Memory filters" }).getByLabel("Store").selectOption("default");
    await page.getByRole("form", { name: "Memory filters" }).getByRole("button", { name: "Apply filters" }).click();
    await expect(page).toHaveURL(/store=default/);
    await expect(page.getByTestId("memory-count")).not.toContainText("decisions");
  });

  test("the store used last opens first on Memories, Search and Reflection", async ({ page }) => {
    await signInAs(page, "viewer");
    const remembered = async () => (await page.context().cookies()).find((c) => c.name === "dualmind-store")?.value;
    // A page that names a store remembers it …
    await page.goto(`/stores/${STORE}`);
    await expect(page.getByRole("heading", { level: 1 })).toContainText(STORE);
    expect(await remembered()).toBe(STORE);
    // … and a store only prefetched is not a store used. The Overview links every store, and the router fetches each
    // link in view ahead of a click: whichever of those answered last used to become the remembered store.
    await page.goto("/");
    await expect(page.getByTestId("store-row-default")).toBeVisible();
    await page.waitForLoadState("networkidle");
    const prefetches: Record<string, string>[] = [
      { accept: "*/*", rsc: "1", "next-router-prefetch": "1", "next-router-segment-prefetch": "/_tree", "next-url": "/" },
      { accept: "text/html", "sec-purpose": "prefetch" },
    ];
    for (const headers of prefetches) {
      expect((await page.request.get("/stores/default", { headers })).ok()).toBe(true);
      expect(await remembered(), JSON.stringify(headers)).toBe(STORE);
    }
    // Pages that pick a store start there instead of the first one with content.
    await page.goto("/memories");
    await expect(page.getByRole("form", { name: "Memory filters" }).getByLabel("Store")).toHaveValue(STORE);
    await page.goto("/search");
    await expect(page.locator("#search-store")).toHaveValue(STORE);
    await page.goto("/reflection");
    await expect(page.getByLabel("Store", { exact: true }).first()).toHaveValue(STORE);
    // Naming another store in the URL wins, and becomes the remembered one: by a page load …
    await page.goto("/memories?store=default");
    await page.goto("/search");
    await expect(page.locator("#search-store")).toHaveValue("default");
    // … or by following a link inside the dashboard (a client-side navigation).
    await page.goto("/");
    await page.getByTestId(`store-row-${STORE}`).getByRole("link", { name: STORE }).click();
    await expect(page.getByRole("heading", { level: 1 })).toContainText(STORE);
    await expect.poll(remembered).toBe(STORE);
    await page.goto("/search");
    await expect(page.locator("#search-store")).toHaveValue(STORE);
  });

  test("a viewer sees no write controls, and a forged write as a viewer is refused and changes nothing", async ({ page, request }) => {
    await request.post(`/api/v1/stores/${STORE}/memories`, { headers: bootstrapHeaders(), data: { path: "keep/me", body: "viewer cannot touch this" } });
    await signInAs(page, "viewer");
    for (const url of [`/memories?store=${STORE}&path=keep/me`, `/memories?store=${STORE}&path=keep/me&edit=1`, `/memories?store=${STORE}&new=1`]) {
      await page.goto(url);
      await expect(page.getByTestId("current-user")).toContainText("viewer");
      await expect(page.getByRole("link", { name: "New memory" })).toHaveCount(0);
      await expect(page.getByRole("link", { name: "Edit" })).toHaveCount(0);
      await expect(page.getByRole("button", { name: /^(Move|Delete…|Create memory|Save changes)$/ })).toHaveCount(0);
    }
    await expect(page.getByTestId("memory-view")).toHaveCount(0);
    await page.goto(`/memories?store=${STORE}&path=keep/me`);
    await expect(page.getByTestId("memory-view")).toContainText("viewer cannot touch this");

    const actions = listServerActions();
    for (const [name, form] of [
      ["deleteMemoryAction", { store: STORE, path: "keep/me" }],
      ["updateMemoryAction", { store: STORE, path: "keep/me", body: "defaced", tags: "", summary: "", source: "", expires: "" }],
      ["moveMemoryAction", { store: STORE, path: "keep/me", to: "keep/elsewhere" }],
      ["createMemoryAction", { store: STORE, path: "keep/forged", body: "forged", tags: "", summary: "", source: "", expires: "" }],
    ] as const) {
      const id = actions.find((a) => a.name === name)?.id;
      expect(id, name).toBeTruthy();
      const r = await postServerAction(page.request, { url: `${E2E.baseURL}/memories?store=${STORE}`, id: id!, ...encodeActionArgs({ form }), origin: E2E.baseURL });
      expect(r.text, name).toContain("editors and admins only");
    }
    const kept = await request.get(`/api/v1/stores/${STORE}/memories?path=keep/me`, { headers: bootstrapHeaders() });
    expect(await kept.text()).toContain("viewer cannot touch this");
    const forged = await request.get(`/api/v1/stores/${STORE}/memories?path=keep/forged`, { headers: bootstrapHeaders() });
    expect(forged.status()).toBe(404);
  });
});
