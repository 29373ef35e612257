import { expect, test, type APIRequestContext } from "@playwright/test";
import { bootstrapHeaders, E2E, ensureRoleUsers, ROLE_USERS, signIn } from "./fixtures";

const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const SESSION = `review-${RUN}`;
const BUILDER = `builder-${RUN}`;
const CRITIC = `critic-${RUN}`;

async function agentToken(request: APIRequestContext, agentId: string): Promise<Record<string, string>> {
  const res = await request.post("/api/v1/tokens", { headers: bootstrapHeaders(), data: { label: agentId, agent_id: agentId, scopes: ["write"] } });
  expect(res.status(), await res.text()).toBe(201);
  return { authorization: `Bearer ${(await res.json()).token}` };
}

test.describe.serial("reviews people can join", () => {
  test.beforeAll(async ({ browser, request }) => {
    const builder = await agentToken(request, BUILDER);
    const created = await request.post("/api/v1/dialectic/sessions", { headers: builder, data: { session_id: SESSION, topic: `Rollout of ${RUN}`, reviewer_agent_id: CRITIC } });
    expect(created.status(), await created.text()).toBe(201);
    const thesis = await request.post(`/api/v1/dialectic/sessions/${SESSION}/messages`, { headers: builder, data: { message_type: "thesis", reasoning: "Ship it behind a flag." } });
    expect(thesis.status(), await thesis.text()).toBe(201);
    await ensureRoleUsers(browser);
  });

  test("the list says who the review waits on, since when, and when it times out", async ({ page }) => {
    await signIn(page, ROLE_USERS.viewer.username, ROLE_USERS.viewer.password);
    await page.goto(`/sessions?topic=${RUN}`);
    const row = page.getByTestId(`session-row-${SESSION}`);
    await expect(row.getByTestId("session-waiting-on")).toContainText(`${CRITIC} (antithesis)`);
    const headers = await page.getByTestId("sessions-table").locator("th").allTextContents();
    expect(headers).toEqual(expect.arrayContaining(["Waiting on", "Idle since", "Times out at", "Phase"]));
    // Idle since and times out at are 24 h apart (the default idle timeout).
    const cells = await row.locator("td").allTextContents();
    const idleSince = Date.parse(cells[headers.indexOf("Idle since")].replace(" ", "T"));
    const timesOut = Date.parse(cells[headers.indexOf("Times out at")].replace(" ", "T"));
    expect(timesOut - idleSince).toBe(24 * 60 * 60 * 1000);
    await expect(page.getByText("Latency in this server process")).toHaveCount(0);
  });

  test("an editor leaves a note beside the transcript; a viewer reads it but has no form; the phase does not move", async ({ page, browser }) => {
    await signIn(page, ROLE_USERS.editor.username, ROLE_USERS.editor.password);
    await page.goto(`/sessions/${SESSION}`);
    const notes = page.getByTestId("session-notes-panel");
    const form = notes.getByRole("form", { name: "Add a note" });
    await form.getByLabel("Note").fill("Ask for the rollback plan before agreeing.");
    await form.getByRole("button", { name: "Add note" }).click();
    await expect(form.getByRole("status")).toHaveText("Note added.");
    await expect(form.getByLabel("Note")).toHaveValue("");
    await expect(notes.getByTestId("session-notes")).toContainText("Ask for the rollback plan before agreeing.");
    await expect(notes.getByTestId("session-notes")).toContainText(`user:${ROLE_USERS.editor.username}`);
    await expect(page.getByTestId("transcript").locator(":scope > li")).toHaveCount(1);
    await expect(page.getByTestId("session-waiting")).toContainText(CRITIC);
    // Editors cannot abandon.
    await expect(page.getByRole("button", { name: "Abandon session…" })).toHaveCount(0);

    const viewerContext = await browser.newContext({ baseURL: E2E.baseURL });
    const viewer = await viewerContext.newPage();
    await signIn(viewer, ROLE_USERS.viewer.username, ROLE_USERS.viewer.password);
    await viewer.goto(`/sessions/${SESSION}`);
    await expect(viewer.getByTestId("session-notes")).toContainText("Ask for the rollback plan before agreeing.");
    await expect(viewer.getByRole("form", { name: "Add a note" })).toHaveCount(0);
    await viewerContext.close();
  });

  test("an admin abandons the review after confirming; agents can post no more", async ({ page, request }) => {
    await signIn(page, "admin", E2E.adminPassword);
    await page.goto(`/sessions/${SESSION}`);
    await page.getByRole("button", { name: "Abandon session…" }).click();
    const confirm = page.getByRole("alertdialog", { name: "Abandon this session?" });
    await expect(confirm).toContainText("neither agent can post again");
    await confirm.getByRole("button", { name: "Keep it open" }).click();
    await expect(page.getByTestId("session-status")).toContainText("active");

    await page.getByRole("button", { name: "Abandon session…" }).click();
    await confirm.getByLabel("Reason (optional)").fill("superseded by the new rollout");
    await confirm.getByRole("button", { name: "Abandon session" }).click();
    // The page re-renders with the session failed: the reason shows where a failure's reason always does.
    await expect(page.getByTestId("session-status")).toContainText("failed");
    await expect(page.getByRole("button", { name: "Abandon session…" })).toHaveCount(0);
    await page.reload();
    await expect(page.getByTestId("resolution")).toContainText("abandoned by user:admin (admin): superseded by the new rollout");

    const critic = await agentToken(request, CRITIC);
    const late = await request.post(`/api/v1/dialectic/sessions/${SESSION}/messages`, { headers: critic, data: { message_type: "antithesis", reasoning: "too late" } });
    expect(late.status()).toBe(409);
  });
});
