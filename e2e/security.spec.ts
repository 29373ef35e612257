import { expect, test, type APIRequestContext, type Page } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";
import { captureServerAction, encodeActionArgs, governanceSnapshot, listServerActions, postServerAction, type ActionArgs } from "./server-actions";

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

  test("sign-in: a hostile callbackUrl lands on this origin, a throttled name is told when to retry", async ({ page }) => {
    // Were the app to follow one of these links off-site, the page would read "left the site" instead of the dashboard.
    await page.route((url) => url.hostname.endsWith("evil.example"), (route) => route.fulfill({ contentType: "text/html", body: "<h1>left the site</h1>" }));
    for (const hostile of ["/%5Cevil.example/x", "/\\evil.example/x", "/%09/evil.example", "/%5C/evil.example", "//evil.example", "https://evil.example/", "javascript:alert(1)"]) {
      await page.context().clearCookies();
      await page.goto(`/login?callbackUrl=${hostile}`);
      await page.getByLabel("Username").fill("admin");
      await page.getByLabel("Password").fill(E2E.adminPassword);
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect(page.getByTestId("current-user"), hostile).toBeVisible();
      expect(new URL(page.url()).origin, hostile).toBe(E2E.baseURL);
    }

    // Counts are per name typed, known or not: five wrong guesses are answered, the sixth is told to wait.
    await page.context().clearCookies();
    await page.goto("/login");
    await page.getByLabel("Username").fill("sec-throttled-name");
    for (let i = 0; i < 6; i++) {
      await page.getByLabel("Password").fill(`wrong-${i}`);
      const answered = page.waitForResponse((r) => r.url().includes("/api/auth/callback/credentials"));
      await page.getByRole("button", { name: "Sign in" }).click();
      expect((await answered).status()).toBe(i < 5 ? 401 : 429);
      await expect(page.locator("form").getByRole("alert")).toHaveText(i < 5 ? "Wrong username or password." : /^Too many attempts — try again in \d+ s\.$/);
    }
  });

  test("an admin disables a user (their open session ends at once) and enables them again; no button to disable oneself", async ({ page, browser }) => {
    await signIn(page, "admin", E2E.adminPassword);
    await page.goto("/admin");
    await createUserInUi(page, { username: "sec-disabled", password: "sec-disabled-pw", role: "viewer" });
    const users = page.getByTestId("users-table");
    await expect(users.getByRole("button", { name: "Disable user admin" })).toHaveCount(0);

    const other = await browser.newContext({ baseURL: E2E.baseURL });
    const person = await other.newPage();
    await signIn(person, "sec-disabled", "sec-disabled-pw");

    // Disabling ends sessions: it asks first, in a dialog centred on the screen, with a red confirm button.
    await users.getByRole("button", { name: "Disable user sec-disabled" }).click();
    const dialog = page.getByRole("dialog", { name: "Disable sec-disabled?" });
    await expect(dialog).toBeVisible();
    const box = (await dialog.boundingBox())!;
    const viewport = page.viewportSize()!;
    expect(Math.abs(box.x + box.width / 2 - viewport.width / 2)).toBeLessThan(2);
    await expect(dialog.getByRole("button", { name: "Disable user" })).toHaveClass(/bg-red-700/);
    await dialog.getByRole("button", { name: "Disable user" }).click();
    await expect(users.getByRole("button", { name: "Enable user sec-disabled" })).toBeVisible();
    await person.goto("/");
    await expect(person).toHaveURL(/\/login/);

    await users.getByRole("button", { name: "Enable user sec-disabled" }).click();
    await expect(users.getByRole("button", { name: "Disable user sec-disabled" })).toBeVisible();
    await signIn(person, "sec-disabled", "sec-disabled-pw");

    // A role change from the table: confirmed, audited, and it ends the person's session too.
    await expect(users.getByRole("combobox", { name: "New role for admin" })).toHaveCount(0);
    await users.getByRole("combobox", { name: "New role for sec-disabled" }).selectOption("editor");
    await users.getByRole("button", { name: "Change role of sec-disabled" }).click();
    await page.getByRole("dialog", { name: "Change the role of sec-disabled?" }).getByRole("button", { name: "Change role" }).click();
    await expect(users.getByText("sec-disabled is now editor; their sessions have ended.")).toBeVisible();
    await person.goto("/");
    await expect(person).toHaveURL(/\/login/);
    await other.close();
  });

  test("server actions: a viewer's replayed admin action and a cross-origin POST are refused and change nothing", async ({ page, browser }) => {
    await signIn(page, "admin", E2E.adminPassword);
    await page.goto("/admin");
    await createUserInUi(page, { username: "sec-viewer", password: "sec-viewer-password", role: "viewer" });

    // Capture the real server action request the admin's browser sends for "Create token".
    const form = page.getByRole("form", { name: "Create token" });
    await form.getByLabel("Token label").fill("sec-admin-token");
    await form.getByLabel("Agent id").fill("sec-agent");
    const action = await captureServerAction(page, () => form.getByRole("button", { name: "Create token" }).click());
    await expect(page.getByTestId("tokens-table")).toContainText("sec-admin-token");
    // The table below posts actions by the manifest's ids and its own encoding: both must be what the browser really sends.
    expect(listServerActions().find((a) => a.name === "createTokenAction")?.id).toBe(action.id);
    for (const part of ['name="_1_label"', 'name="_1_agent_id"', 'name="0"', '"$K1"']) expect(action.body.toString("latin1")).toContain(part);
    const replay = (label: string) => ({ ...action, body: Buffer.from(action.body.toString("latin1").replaceAll("sec-admin-token", label), "latin1") });

    // The viewer replays the admin action with their own session.
    const viewerContext = await browser.newContext({ baseURL: E2E.baseURL });
    const viewer = await viewerContext.newPage();
    await signIn(viewer, "sec-viewer", "sec-viewer-password");
    const byViewer = await postServerAction(viewer.request, { ...replay("sec-viewer-token"), origin: E2E.baseURL });
    expect(byViewer.text).not.toContain("dm_");
    await viewerContext.close();

    // The admin's own session, but the POST comes from another origin (CSRF).
    const crossOrigin = await postServerAction(page.request, { ...replay("sec-csrf-token"), origin: "http://evil.example" });
    expect(crossOrigin.status).toBeGreaterThanOrEqual(400);
    expect(crossOrigin.text).not.toContain("dm_");

    await page.reload();
    await expect(page.getByTestId("tokens-table")).toContainText("sec-admin-token");
    await expect(page.getByTestId("tokens-table")).not.toContainText("sec-viewer-token");
    await expect(page.getByTestId("tokens-table")).not.toContainText("sec-csrf-token");
  });

  test("every server action: no session, a viewer on admin actions, CSRF and malformed arguments are refused and change nothing", async ({ page, browser, playwright }) => {
    await api(page, "post", "/stores", { name: ACTION_STORE });
    await api(page, "post", "/stores", { name: DOOMED_STORE });
    await api(page, "post", "/dialectic/sessions", { session_id: ACTION_SESSION, topic: "security table", reviewer_agent_id: "sec-actions-critic" });
    const spare = (await api(page, "post", "/tokens", { label: "sec-actions-spare", agent_id: "sec-actions-agent", scopes: ["read"] })) as { id: number };
    const thought = ((await api(page, "post", `/stores/${ACTION_STORE}/thoughts`, { content: "a thought the security table invalidates" })) as { thought: { id: string } }).thought;
    // A store whose memories wait for review, and one proposal in it (the bootstrap agent is not trusted there).
    await api(page, "post", "/stores", { name: REVIEW_STORE });
    await api(page, "put", `/stores/${REVIEW_STORE}/policy/write`, { modes: { memory: "review" } });
    await api(page, "post", `/stores/${REVIEW_STORE}/memories`, { path: "sec/proposed", body: "a proposal the security table rejects" });
    await signIn(page, "admin", E2E.adminPassword);
    await page.goto("/admin");
    await createUserInUi(page, { username: "sec-actions-viewer", password: "sec-actions-viewer-pw", role: "viewer" });
    const viewerContext = await browser.newContext({ baseURL: E2E.baseURL });
    await signIn(await viewerContext.newPage(), "sec-actions-viewer", "sec-actions-viewer-pw");
    const anonymous = await playwright.request.newContext({ baseURL: E2E.baseURL });

    const rows = serverActionRows({ spareTokenId: spare.id, thoughtId: thought.id });
    const actions = listServerActions();
    expect(rows.map((r) => r.name).sort(), "a row for every server action in the build").toEqual(actions.map((a) => a.name).sort());

    const wrong: string[] = [];
    for (const row of rows) {
      const id = actions.find((a) => a.name === row.name)!.id;
      const send = (request: APIRequestContext, args: ActionArgs, origin = E2E.baseURL) => postServerAction(request, { url: `${E2E.baseURL}${row.page}`, id, ...encodeActionArgs(args), origin });
      const refusals: [string, () => Promise<{ status: number; text: string }>, (r: { status: number; text: string }) => boolean][] = [
        ["no session", () => send(anonymous, row.valid), (r) => r.text.includes("sign in first")],
        ["cross-origin POST with the admin's session", () => send(page.request, row.valid, "http://evil.example"), (r) => r.status >= 400 && !r.text.includes('"ok":true')],
        ["cross-origin POST from a sandboxed frame (Origin: null)", () => send(page.request, row.valid, "null"), (r) => r.status >= 400 && !r.text.includes('"ok":true')],
        ...row.malformed.map((args, i): (typeof refusals)[number] => [`malformed arguments #${i + 1} ${JSON.stringify(args).slice(0, 60)}`, () => send(page.request, args), (r) => r.text.includes('"ok":false') && !r.text.includes("Something went wrong")]),
      ];
      if (row.role !== "viewer") refusals.push(["a viewer's session", () => send(viewerContext.request, row.valid), (r) => r.text.includes(row.role === "admin" ? "admins only" : "editors and admins only")]);
      const before = governanceSnapshot();
      for (const [name, run, refused] of refusals) {
        const r = await run();
        if (!refused(r)) wrong.push(`${row.name} [${name}] → ${r.status} ${r.text.slice(0, 200)}`);
      }
      if (governanceSnapshot() !== before) wrong.push(`${row.name}: a refused call changed governance.db`);
      // The same call from an admin goes through, so the refusals above are about who asks and what, not a broken request.
      const allowed = await send(page.request, row.valid);
      if (!(row.reached ?? /"ok":true/).test(allowed.text)) wrong.push(`${row.name} [admin, valid arguments] → ${allowed.status} ${allowed.text.slice(0, 200)}`);
    }
    await viewerContext.close();
    await anonymous.dispose();
    expect(wrong).toEqual([]);
  });
});

const ACTION_STORE = "sec-actions";
/** The store of the review queue's rows (memories under review). */
const REVIEW_STORE = "sec-actions-review";
/** The store the admin's valid call of deleteStoreAction deletes (the other rows keep using ACTION_STORE). */
const DOOMED_STORE = "sec-actions-doomed";

type ActionRow = { name: string; role: "viewer" | "editor" | "admin"; page: string; valid: ActionArgs; malformed: ActionArgs[]; reached?: RegExp };

const ACTION_SESSION = "sec-actions-session";

/** The table: each server action, the page that serves it, arguments that work for an admin, and arguments that must be refused with a clear error. */
function serverActionRows({ spareTokenId, thoughtId }: { spareTokenId: number; thoughtId: string }): ActionRow[] {
  const store = ACTION_STORE;
  const notAForm = { values: [null, "not a form"] };
  const memoryFields = { store, path: "sec/x", body: "body", tags: "", summary: "", source: "", expires: "" };
  const settings = { store, enabled: "on", top_k: "5", min_score: "0.3", recency_half_life_days: "30", failure_warning_score: "0.8", preference_score: "0.7", ttl_days: "", max_traces: "", strategy: "newest" };
  return [
    { name: "verifyStoreAction", role: "viewer", page: `/stores/${store}`, valid: { form: { store } }, malformed: [{ form: { store: "../etc" } }, notAForm] },
    { name: "embeddingAdminAction", role: "admin", page: `/stores/${store}`, valid: { form: { store, intent: "estimate" } }, malformed: [{ form: { store, intent: "format_disk" } }, { form: { store: "nosuchstore", intent: "start" } }, notAForm] },
    { name: "describeEmbeddingActionAction", role: "admin", page: `/stores/${store}`, valid: { values: [store, "start"] }, malformed: [{ values: ["../etc", "start"] }, { values: [store, "format_disk"] }, { values: ["nosuchstore", "start"] }] },
    { name: "createUserAction", role: "admin", page: "/admin", valid: { form: { username: "sec-actions-made", password: "sec-actions-made-pw", role: "viewer" } }, malformed: [{ form: { username: "../x\u0000", password: "short", role: "root" } }, { form: { username: "sec-actions-viewer", password: "sec-actions-viewer-pw", role: "admin" } }, notAForm] },
    { name: "resetPasswordAction", role: "admin", page: "/admin", valid: { form: { username: "sec-actions-made", password: "sec-actions-new-pw" } }, malformed: [{ form: { username: "nobody-here", password: "long-enough-pw" } }, { form: { username: "admin", password: "x" } }, { form: { username: "admin", password: `${E2E.adminPassword}\u0000` } }, notAForm] },
    { name: "setUserDisabledAction", role: "admin", page: "/admin", valid: { form: { username: "sec-actions-made", disabled: "true" } }, malformed: [{ form: { username: "admin", disabled: "true" } }, { form: { username: "nobody-here", disabled: "true" } }, { form: { username: "sec-actions-made", disabled: "maybe" } }, notAForm] },
    // Archives the store the delete row then deletes (an archived store can be deleted).
    { name: "archiveStoreAction", role: "admin", page: `/stores/${DOOMED_STORE}`, valid: { form: { store: DOOMED_STORE } }, malformed: [{ form: { store: "../etc" } }, { form: { store: "core" } }, { form: { store: "nosuchstore" } }, notAForm] },
    { name: "evaluateStoreAction", role: "admin", page: `/stores/${store}`, valid: { form: { store } }, malformed: [{ form: { store: "../etc" } }, { form: { store: "nosuchstore" } }, { form: { store, target: "shadow" } }, notAForm] },
    { name: "deleteStoreAction", role: "admin", page: `/stores/${DOOMED_STORE}`, valid: { form: { store: DOOMED_STORE } }, malformed: [{ form: { store: "../etc" } }, { form: { store: "core" } }, { form: { store: "nosuchstore" } }, notAForm] },
    { name: "setUserRoleAction", role: "admin", page: "/admin", valid: { form: { username: "sec-actions-made", role: "editor" } }, malformed: [{ form: { username: "admin", role: "viewer" } }, { form: { username: "nobody-here", role: "viewer" } }, { form: { username: "sec-actions-made", role: "root" } }, notAForm] },
    { name: "createTokenAction", role: "admin", page: "/admin", valid: { form: { label: "sec-actions-token", agent_id: "sec-actions-agent", scopes: ["read"], stores: "" } }, malformed: [{ form: { label: "", agent_id: "", scopes: ["root"], stores: "../etc" } }, notAForm] },
    { name: "revokeTokenAction", role: "admin", page: "/admin", valid: { form: { id: String(spareTokenId) } }, malformed: [{ form: { id: "1 OR 1=1" } }, { form: { id: "-1" } }, { form: { id: "999999999" } }, notAForm] },
    { name: "startReindexAction", role: "admin", page: "/admin", valid: { values: [store] }, malformed: [{ values: ["../etc"] }, { values: [{ $ne: null }] }, { values: ["nosuchstore"] }] },
    { name: "describeReindexAction", role: "admin", page: "/admin", valid: { values: [store] }, malformed: [{ values: ["../etc"] }, { values: [{ $ne: null }] }, { values: ["nosuchstore"] }] },
    { name: "getReindexJobAction", role: "admin", page: "/admin", valid: { values: ["00000000-0000-4000-8000-000000000000"] }, malformed: [{ values: ["' OR 1=1 --"] }, { values: [42] }], reached: /No such job/ },
    {
      name: "itemDecisionAction",
      role: "editor",
      page: `/graph/${store}/thoughts/${thoughtId}`,
      valid: { form: { store, kind: "thought", id: thoughtId, to: "retired", reason: "security table" } },
      malformed: [{ form: { store, kind: "root", id: thoughtId, to: "retired", reason: "x" } }, { form: { store, kind: "thought", id: thoughtId, to: "deleted", reason: "x" } }, { form: { store, kind: "thought", id: thoughtId, to: "retired", reason: "  " } }, { form: { store: "nosuchstore", kind: "thought", id: thoughtId, to: "retired", reason: "x" } }, { form: { store, kind: "thought", id: "x".repeat(600), to: "retired", reason: "x" } }, notAForm],
    },
    {
      name: "setForgetPolicyAction",
      role: "admin",
      page: `/stores/${store}/forgetting`,
      valid: { form: { store, kind: "memory", ttl_days: "", ttl_since: "written", max_items: "", protected_ids: "" } },
      malformed: [{ form: { store, kind: "root", ttl_days: "1" } }, { form: { store, kind: "memory", ttl_days: "-5" } }, { form: { store, kind: "memory", ttl_days: "40000" } }, { form: { store: "nosuchstore", kind: "memory", ttl_days: "1" } }, { form: { store: "../etc", kind: "memory" } }, notAForm],
    },
    { name: "forgetRunAction", role: "admin", page: `/stores/${store}/forgetting`, valid: { form: { store, dry_run: "true" } }, malformed: [{ form: { store, dry_run: "maybe" } }, { form: { store: "nosuchstore", dry_run: "true" } }, { form: { store: "../etc", dry_run: "false" } }, notAForm] },
    {
      name: "proposalDecisionAction",
      role: "editor",
      page: `/stores/${REVIEW_STORE}/review`,
      valid: { form: { store: REVIEW_STORE, kind: "memory", id: "sec/proposed", to: "rejected", reason: "security table" } },
      malformed: [{ form: { store: REVIEW_STORE, kind: "trace", id: "sec/proposed", to: "rejected", reason: "x" } }, { form: { store: REVIEW_STORE, kind: "memory", id: "sec/proposed", to: "deleted", reason: "x" } }, { form: { store: REVIEW_STORE, kind: "memory", id: "sec/proposed", to: "rejected", reason: "  " } }, { form: { store: "nosuchstore", kind: "memory", id: "sec/proposed", to: "active" } }, { form: { store: REVIEW_STORE, kind: "memory", id: "x".repeat(600), to: "active" } }, notAForm],
    },
    {
      name: "writePolicyAction",
      role: "admin",
      page: `/stores/${REVIEW_STORE}/review`,
      valid: { form: { store: REVIEW_STORE, mode_memory: "review", mode_learning: "open", mode_thought: "open", mode_node: "open", mode_relation: "open", mode_frame: "open", trusted: "librarian" } },
      malformed: [{ form: { store: REVIEW_STORE, mode_memory: "maybe", mode_learning: "open", mode_thought: "open", mode_node: "open", mode_relation: "open", mode_frame: "open", trusted: "" } }, { form: { store: "../etc", mode_memory: "open", mode_learning: "open", mode_thought: "open", mode_node: "open", mode_relation: "open", mode_frame: "open", trusted: "" } }, { form: { store: REVIEW_STORE, mode_memory: "open", mode_learning: "open", mode_thought: "open", mode_node: "open", mode_relation: "open", mode_frame: "open", trusted: Array.from({ length: 101 }, (_, i) => `a${i}`).join("\n") } }, notAForm],
    },
    { name: "rememberAction", role: "viewer", page: `/graph/${store}`, valid: { form: { store, query: "anything" } }, malformed: [{ form: { store: "Bad Store", query: "x" } }, notAForm] },
    { name: "rateRecallHitAction", role: "editor", page: "/reflection", valid: { form: { store, hit_id: "999999", relevant: "true" } }, malformed: [{ form: { store: "nosuchstore", hit_id: "x", relevant: "true" } }, notAForm], reached: /no recall hit/ },
    { name: "updateReflectionSettingsAction", role: "admin", page: "/reflection", valid: { form: settings }, malformed: [{ form: { ...settings, top_k: "-5", min_score: "NaN" } }, { form: { ...settings, strategy: "delete_everything" } }, notAForm] },
    // In this order: each memory action's valid call works on what the one before it made.
    { name: "createMemoryAction", role: "editor", page: `/memories?store=${store}`, valid: { form: { ...memoryFields, path: "sec/made" } }, malformed: [{ form: { ...memoryFields, path: "../../etc/passwd" } }, { form: { ...memoryFields, store: "nosuchstore" } }, { form: { ...memoryFields, expires: "tomorrow" } }, notAForm] },
    { name: "updateMemoryAction", role: "editor", page: `/memories?store=${store}`, valid: { form: { ...memoryFields, path: "sec/made", body: "edited" } }, malformed: [{ form: { ...memoryFields, path: "sec/nothing-here" } }, { form: { ...memoryFields, path: "sec/made", summary: "s".repeat(1001) } }, notAForm] },
    { name: "moveMemoryAction", role: "editor", page: `/memories?store=${store}`, valid: { form: { store, path: "sec/made", to: "sec/moved" } }, malformed: [{ form: { store, path: "sec/made", to: "../outside" } }, { form: { store, path: "sec/made", to: "sec/made" } }, notAForm] },
    { name: "deleteMemoryAction", role: "editor", page: `/memories?store=${store}`, valid: { form: { store, path: "sec/moved" } }, malformed: [{ form: { store, path: "sec/nothing-here" } }, { form: { store, path: "/etc/passwd" } }, notAForm] },
    // A well-formed trash id that names nothing: the call reaches the store's trash and is told so.
    { name: "restoreMemoryAction", role: "editor", page: `/memories/trash?store=${store}`, valid: { form: { store, id: "1764345600000-0123456789ab" } }, malformed: [{ form: { store, id: "../../etc/passwd" } }, { form: { store: "nosuchstore", id: "1764345600000-0123456789ab" } }, { form: { store, id: "1764345600000-0123456789ab", to: "../outside" } }, notAForm], reached: /no deleted memory/ },
    { name: "purgeTrashedMemoryAction", role: "editor", page: `/memories/trash?store=${store}`, valid: { form: { store, id: "1764345600000-0123456789ab" } }, malformed: [{ form: { store, id: "1 OR 1=1" } }, { form: { store: "../etc", id: "1764345600000-0123456789ab" } }, notAForm], reached: /no deleted memory/ },
    { name: "annotateSessionAction", role: "editor", page: `/sessions/${ACTION_SESSION}`, valid: { form: { session_id: ACTION_SESSION, body: "a note" } }, malformed: [{ form: { session_id: ACTION_SESSION, body: "   " } }, { form: { session_id: "no-such-session", body: "hi" } }, { form: { session_id: ACTION_SESSION, body: "x".repeat(2001) } }, notAForm] },
    { name: "abandonSessionAction", role: "admin", page: `/sessions/${ACTION_SESSION}`, valid: { form: { session_id: ACTION_SESSION, reason: "security table" } }, malformed: [{ form: { session_id: "no-such-session", reason: "" } }, { form: { session_id: "../x", reason: "" } }, notAForm] },
  ];
}

async function createUserInUi(page: Page, { username, password, role }: { username: string; password: string; role: "viewer" | "admin" }): Promise<void> {
  const userForm = page.getByRole("form", { name: "Create user" });
  await userForm.getByLabel("New username").fill(username);
  await userForm.getByLabel("New user password").fill(password);
  await userForm.getByLabel("Role").selectOption(role);
  await userForm.getByRole("button", { name: "Create user" }).click();
  await expect(userForm.getByRole("status")).toContainText(`Created ${role} ${username}`);
}
