import { expect, test, type Page, type Request } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

const STORE = "sec-xss";
// Each payload sets window.__xss if it ever runs as script or markup.
const PAYLOAD = `<script>window.__xss=1</script><img src=x onerror="window.__xss=1"><svg onload="window.__xss=1"></svg>[click](javascript:window.__xss=1) "><iframe srcdoc="<script>parent.__xss=1</script>">`;

async function api(page: Page, method: "post" | "put", path: string, data: unknown): Promise<Record<string, unknown>> {
  const res = await page.request[method](`/api/v1${path}`, { headers: bootstrapHeaders(), data });
  expect(res.status(), `${method} ${path}: ${await res.text()}`).toBeLessThan(300);
  return (await res.json()) as Record<string, unknown>;
}

/** Watch a page for any sign that a payload ran: the global flag, a dialog, or a navigation to javascript:. */
async function armXssTrap(page: Page): Promise<() => Promise<void>> {
  await page.addInitScript(() => {
    (window as unknown as { __xss: number }).__xss = 0;
  });
  let dialogs = 0;
  page.on("dialog", async (d) => {
    dialogs++;
    await d.dismiss();
  });
  return async () => {
    expect(await page.evaluate(() => (window as unknown as { __xss: number }).__xss)).toBe(0);
    expect(dialogs).toBe(0);
  };
}

test.describe("security", () => {
  test("XSS payloads in memories, documents, thoughts, nodes, traces, tasks and dialectic messages never run on any page", async ({ page }) => {
    await api(page, "post", "/stores", { name: STORE });
    await api(page, "post", `/stores/${STORE}/memories`, { path: "xss/payload", body: `# Payload\n\n${PAYLOAD}`, tags: ["xss"], summary: PAYLOAD });
    await api(page, "put", `/stores/${STORE}/documents`, { path: "notes/xss.md", content: `xsscanary ${PAYLOAD}` });
    const thought = (await api(page, "post", `/stores/${STORE}/thoughts`, { content: `xsscanary thought ${PAYLOAD}`, tags: ["xss"] })) as { thought: { id: string } };
    const node = (await api(page, "post", `/stores/${STORE}/nodes`, { name: `xss node ${PAYLOAD}`.slice(0, 190), entity_type: "concept" })) as { node: { id: string } };
    await api(page, "post", `/stores/${STORE}/traces`, { intent: { verb: "fix", target: `xsscanary ${PAYLOAD}` }, shard_type: "security", outcome: "failure", key_issue: PAYLOAD });
    await api(page, "post", "/tasks", { task_id: "sec-xss-task", intent: `xsscanary ${PAYLOAD}`, spec: { note: PAYLOAD } });
    await api(page, "post", "/dialectic/sessions", { session_id: "sec-xss-session", topic: `xsscanary ${PAYLOAD}`.slice(0, 400), reviewer_agent_id: "sec-reviewer" });
    await api(page, "post", "/dialectic/sessions/sec-xss-session/messages", { message_type: "thesis", reasoning: PAYLOAD, root_cause: PAYLOAD, concerns: [PAYLOAD.slice(0, 200)] });

    const check = await armXssTrap(page);
    await signIn(page, "admin", E2E.adminPassword);
    const pages = [
      "/",
      `/stores/${STORE}`,
      `/memories?store=${STORE}`,
      `/memories?store=${STORE}&path=xss/payload`,
      `/search?store=${STORE}&q=xsscanary`,
      "/graph",
      `/graph/${STORE}`,
      `/graph/${STORE}/thoughts`,
      `/graph/${STORE}/thoughts/${thought.thought.id}`,
      `/graph/${STORE}/nodes/${node.node.id}`,
      "/sessions",
      "/sessions/sec-xss-session",
      "/ledger",
      "/ledger/tasks/sec-xss-task",
      "/ledger/artifacts",
      `/reflection?store=${STORE}`,
      "/health",
      "/admin",
      "/api-docs",
    ];
    for (const p of pages) {
      const res = await page.goto(p);
      expect(res?.status(), p).toBeLessThan(400);
      await page.getByTestId("current-user").waitFor();
      await check();
    }
    // The payload is shown as text where it is shown at all.
    await page.goto("/sessions/sec-xss-session");
    await expect(page.getByText("<script>window.__xss=1</script>", { exact: false }).first()).toBeVisible();
    await check();
  });

  test("server actions: a viewer's replayed admin action and a cross-origin POST are refused and change nothing", async ({ page, browser }) => {
    await signIn(page, "admin", E2E.adminPassword);
    await page.goto("/admin");
    const userForm = page.getByRole("form", { name: "Create user" });
    await userForm.getByLabel("New username").fill("sec-viewer");
    await userForm.getByLabel("New user password").fill("sec-viewer-password");
    await userForm.getByLabel("Role").selectOption("viewer");
    await userForm.getByRole("button", { name: "Create user" }).click();
    await expect(userForm.getByRole("status")).toContainText("Created viewer sec-viewer");

    // Capture the real server action request the admin's browser sends for "Create token".
    const captured = new Promise<Request>((resolve) => page.on("request", (r) => r.method() === "POST" && r.headers()["next-action"] && resolve(r)));
    const form = page.getByRole("form", { name: "Create token" });
    await form.getByLabel("Token label").fill("sec-admin-token");
    await form.getByLabel("Agent id").fill("sec-agent");
    await form.getByRole("button", { name: "Create token" }).click();
    await expect(page.getByTestId("tokens-table")).toContainText("sec-admin-token");
    const action = await captured;
    const headers = action.headers();
    const body = action.postDataBuffer();
    expect(body).not.toBeNull();
    const replay = (label: string) => body!.toString("latin1").replaceAll("sec-admin-token", label);

    // The viewer replays the admin action with their own session.
    const viewerContext = await browser.newContext({ baseURL: E2E.baseURL });
    const viewer = await viewerContext.newPage();
    await signIn(viewer, "sec-viewer", "sec-viewer-password");
    const byViewer = await viewer.request.post(action.url(), {
      headers: { "next-action": headers["next-action"], "content-type": headers["content-type"], accept: "text/x-component", origin: E2E.baseURL },
      data: Buffer.from(replay("sec-viewer-token"), "latin1"),
    });
    expect(await byViewer.text()).not.toContain("dm_");
    await viewerContext.close();

    // The admin's own session, but the POST comes from another origin (CSRF).
    const crossOrigin = await page.request.post(action.url(), {
      headers: { "next-action": headers["next-action"], "content-type": headers["content-type"], accept: "text/x-component", origin: "http://evil.example" },
      data: Buffer.from(replay("sec-csrf-token"), "latin1"),
    });
    expect(crossOrigin.status()).toBeGreaterThanOrEqual(400);
    expect(await crossOrigin.text()).not.toContain("dm_");

    await page.reload();
    await expect(page.getByTestId("tokens-table")).toContainText("sec-admin-token");
    await expect(page.getByTestId("tokens-table")).not.toContainText("sec-viewer-token");
    await expect(page.getByTestId("tokens-table")).not.toContainText("sec-csrf-token");
  });
});
