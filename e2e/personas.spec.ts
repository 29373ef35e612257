import { expect, test, type APIRequestContext } from "@playwright/test";
import { bootstrapHeaders, E2E, ensureRoleUsers, ROLE_USERS, seedDemoMetrics, signIn } from "./fixtures";

/**
 * Each persona's flows end to end, as they would walk them, at a desk and on
 * a phone. A reviewer asks "what did agent X do last night, and was it
 * checked?"; an admin checks a store's embeddings, then gets back a memory
 * someone deleted; a team member finds a page and a memory by their titles;
 * an observability reviewer looks at last night's charts over a range of
 * their own; an agent developer sets up MCP and sees their agent's writes.
 * Everything is seeded through the agent API (chart history by the CLI);
 * every step asserts what the person sees.
 */

const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const H = (c: string) => c.repeat(64);
const VIEWPORTS = [
  { name: "desk", width: 1440, height: 900 },
  { name: "phone", width: 390, height: 844 },
] as const;

async function agentToken(request: APIRequestContext, agentId: string): Promise<Record<string, string>> {
  const res = await request.post("/api/v1/tokens", { headers: bootstrapHeaders(), data: { label: agentId, agent_id: agentId, scopes: ["write"] } });
  expect(res.status(), await res.text()).toBe(201);
  return { authorization: `Bearer ${(await res.json()).token}` };
}

/** Agent X's night: a memory written and a task run and checked; another agent's write is noise the filter must leave out. */
async function seedNight(request: APIRequestContext, tag: string) {
  const store = `e2e-night-${tag}`;
  const agent = `nightly-${tag}`;
  const other = `daytime-${tag}`;
  expect((await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name: store } })).status()).toBe(201);
  const x = await agentToken(request, agent);
  const y = await agentToken(request, other);
  const memoryPath = `reports/nightly-${tag}`;
  expect((await request.post(`/api/v1/stores/${store}/memories`, { headers: x, data: { path: memoryPath, body: `# Nightly report\n\nRotated the backup keys (${tag}).\n` } })).status()).toBe(201);
  expect((await request.post(`/api/v1/stores/${store}/memories`, { headers: y, data: { path: `notes/daytime-${tag}`, body: "unrelated" } })).status()).toBe(201);
  const taskId = `night-task-${tag}`;
  expect((await request.post("/api/v1/tasks", { headers: x, data: { task_id: taskId, intent: `Rotate backup keys ${tag}`, spec: { keys: 3 } } })).status()).toBe(201);
  const run = await request.post(`/api/v1/tasks/${taskId}/runs`, { headers: x, data: { run_id: `${taskId}-r1`, skill: "rotate-keys", input_hash: H("a"), runner_version: "2.0.0", output_hash: H("b"), exit_code: 0 } });
  expect(run.status(), await run.text()).toBe(201);
  expect((await request.post(`/api/v1/tasks/${taskId}/validations`, { headers: x, data: { run_id: `${taskId}-r1`, critic_passed: true, runner_passed: true } })).status()).toBe(201);
  return { store, agent, other, memoryPath, taskId };
}

for (const vp of VIEWPORTS) {
  test.describe(`personas at ${vp.width} px`, () => {
    test.use({ viewport: { width: vp.width, height: vp.height } });

    test.beforeAll(async ({ browser }) => {
      await ensureRoleUsers(browser);
    });

    test(`a reviewer finds what agent X did and whether it was checked (${vp.name})`, async ({ page, request }) => {
      const night = await seedNight(request, `${RUN}-${vp.name}`);
      await signIn(page, ROLE_USERS.viewer.username, ROLE_USERS.viewer.password);

      // What did agent X do? The activity explorer, filtered by the agent.
      await page.goto("/activity");
      const filters = page.getByRole("form", { name: "Activity filters" });
      await filters.getByLabel("Agent").fill(night.agent);
      await filters.getByRole("button", { name: "Show" }).click();
      await expect(page).toHaveURL(new RegExp(`agent=${night.agent}`));
      const table = page.getByTestId("activity-table");
      await expect(table).toContainText("memory.create");
      await expect(table).toContainText(`store:${night.store}/memory:${night.memoryPath}`);
      await expect(table).not.toContainText(night.other);
      await expect(page.getByTestId("activity-summary-total")).toContainText("audited action");

      // The memory it wrote, one click away.
      await table.getByRole("link", { name: `store:${night.store}/memory:${night.memoryPath}` }).click();
      await expect(page.getByTestId("memory-view")).toContainText("Rotated the backup keys");

      // Was it checked? Its task on the ledger: the run and a passing verdict.
      await page.goto(`/ledger?requested_by=${night.agent}`);
      await page.getByRole("link", { name: night.taskId }).click();
      await expect(page.getByTestId("task-verdict")).toHaveText("passed");
      await expect(page.getByTestId(`run-${night.taskId}-r1`)).toContainText("rotate-keys");
    });

    test(`an admin checks a store's embeddings, then restores a deleted memory (${vp.name})`, async ({ page, request }) => {
      const store = `e2e-admin-${RUN}-${vp.name}`;
      const headers = bootstrapHeaders();
      expect((await request.post("/api/v1/stores", { headers, data: { name: store } })).status()).toBe(201);
      const body = "# Restore drill\n\nThe quarterly restore drill runs on the first Monday.\n";
      expect((await request.post(`/api/v1/stores/${store}/memories`, { headers, data: { path: "ops/restore-drill", body, tags: ["ops"] } })).status()).toBe(201);
      await expect.poll(async () => (await (await request.get(`/api/v1/stores/${store}/health`, { headers })).json()).backlog.pending).toBe(0);

      await signIn(page, "admin", E2E.adminPassword);
      // Re-embed: the store page says what a re-embed would do before anything starts.
      await page.goto(`/stores/${store}`);
      const card = page.getByTestId("store-embeddings");
      await expect(card.getByTestId("embeddings-coverage")).toContainText("100.0% embedded");
      await card.getByRole("button", { name: "Re-embed", exact: true }).click();
      const dialog = page.getByRole("dialog", { name: `Re-embed store ${store}?` });
      await expect(dialog.getByTestId("confirm-details")).toContainText("Nothing to re-embed");
      await dialog.getByRole("button", { name: "Re-embed", exact: true }).click();
      await expect(card.getByRole("status")).toContainText("No job was started");

      // Someone deletes a memory; the page offers Undo at once.
      await page.goto(`/memories?store=${store}&path=ops/restore-drill`);
      await page.getByRole("button", { name: "Delete…" }).click();
      await page.getByRole("alertdialog", { name: "Delete memory ops/restore-drill?" }).getByRole("button", { name: "Delete memory" }).click();
      const deleted = page.getByTestId("memory-deleted");
      await expect(deleted).toContainText("Deleted ops/restore-drill");
      await expect(page.getByTestId("memory-count")).toHaveText("0 memories");

      // Later, from the trash: the admin finds it, reads it and its history, and restores it.
      await deleted.getByRole("link", { name: "trash" }).click();
      await expect(page.getByTestId("trash-count")).toHaveText(`1 deleted memory in ${store}, newest first.`);
      await page.getByTestId("trash-table").getByRole("link", { name: "ops/restore-drill" }).click();
      const entry = page.getByTestId("trash-entry");
      await expect(entry).toContainText("deleted by user:admin");
      await expect(entry).toContainText("quarterly restore drill");
      await expect(page.getByTestId("memory-history")).toContainText("deleted (to the trash)");
      await entry.getByRole("button", { name: "Restore", exact: true }).click();
      await expect(page).toHaveURL(/\/memories\?store=.*&path=ops%2Frestore-drill/);
      await expect(page.getByTestId("memory-view")).toContainText("quarterly restore drill");
      await expect(page.getByTestId("memory-history")).toContainText("restored from the trash");
      // Exactly as it was, through the API too.
      const read = await request.get(`/api/v1/stores/${store}/memories?path=ops/restore-drill`, { headers });
      expect(read.status()).toBe(200);
      expect(await read.json()).toMatchObject({ body, tags: ["ops"] });

      // A memory moved away: its old address says where it went.
      expect((await request.put(`/api/v1/stores/${store}/memories`, { headers, data: { path: "ops/restore-drill", move_to: "runbooks/restore-drill" } })).status()).toBe(200);
      await page.goto(`/memories?store=${store}&path=ops/restore-drill`);
      await page.getByTestId("memory-moved").getByRole("link", { name: "runbooks/restore-drill" }).click();
      await expect(page.getByTestId("memory-view")).toContainText("quarterly restore drill");
    });

    test(`a team member finds a page and a memory by their titles and comes back to the results (${vp.name})`, async ({ page, request }) => {
      const store = `e2e-team-${RUN}-${vp.name}`;
      expect((await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name: store } })).status()).toBe(201);
      const docs = [{ path: "guides/setup.md", content: "# Setting up your machine\n\nInstall the wombat toolkit, then sign in to the build farm." }];
      expect((await request.put(`/api/v1/stores/${store}/documents`, { headers: bootstrapHeaders(), data: { documents: docs } })).status()).toBe(200);
      expect((await request.post(`/api/v1/stores/${store}/memories`, { headers: bootstrapHeaders(), data: { path: "team/onboarding", body: "# Onboarding checklist\n\nAsk for a laptop and the wombat badge." } })).status()).toBe(201);
      await signIn(page, ROLE_USERS.viewer.username, ROLE_USERS.viewer.password);

      // Search names the page by its title; the reader leads back to the same results.
      await page.goto(`/search?store=${store}&q=wombat+toolkit&mode=fts`);
      await page.getByTestId("search-results").getByRole("link", { name: "Setting up your machine" }).click();
      await expect(page.getByRole("heading", { level: 1, name: "guides/setup.md" })).toBeVisible();
      await page.getByTestId("reader-back-to-search").click();
      await expect(page).toHaveURL(/q=wombat/);
      await expect(page.getByTestId("search-results").getByRole("link", { name: "Setting up your machine" })).toBeVisible();

      // Memories' own search: the title, the path beside it, and the memory one click away.
      await page.goto(`/memories?store=${store}&q=badge`);
      const hit = page.getByTestId("memory-search-hit");
      await expect(hit.getByTestId("memory-search-hit-path")).toHaveText("team/onboarding");
      await hit.getByRole("link", { name: "Onboarding checklist" }).click();
      await expect(page.getByTestId("memory-view")).toContainText("Ask for a laptop");
    });

    test(`an observability reviewer reads last night on the charts over a range of their own (${vp.name})`, async ({ page, request }) => {
      // A sign-in, a day of metrics seeded by the CLI and two Health renders over a range: slow on a loaded machine.
      test.slow();
      const store = `e2e-obs-${RUN}-${vp.name}`;
      expect((await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name: store } })).status()).toBe(201);
      seedDemoMetrics([store]);
      await signIn(page, ROLE_USERS.viewer.username, ROLE_USERS.viewer.password);

      await page.goto(`/health?store=${store}`);
      await expect(page.getByTestId("chart-backlog")).toContainText("of 96 buckets measured");
      // Last night: eight hours, on the hour, ending two hours ago, in buckets of five minutes.
      const hour = 3_600_000;
      const now = Math.floor(Date.now() / hour) * hour;
      const picker = page.getByRole("form", { name: "Custom time range" });
      await picker.getByLabel("From (UTC)").fill(new Date(now - 10 * hour).toISOString().slice(0, 16));
      await picker.getByLabel("To (UTC)").fill(new Date(now - 2 * hour).toISOString().slice(0, 16));
      await picker.getByRole("button", { name: "Show range" }).click();
      await expect(page.getByTestId("range-shown")).toContainText("in buckets of 5 minutes");
      await expect(page.getByTestId("chart-backlog")).toContainText("of 96 buckets measured");
      const range = new URL(page.url()).search.replace(`store=${store}&`, "");

      // The same night's API traffic, route by route, with the key columns in view.
      await page.goto(`/observability${range}`);
      await expect(page.getByRole("heading", { name: /^Routes \(/ })).toContainText("UTC");
      const routes = page.getByTestId("route-table");
      await expect(routes).toContainText("GET /stores/{store}/search");
      const p95 = routes.locator('td[data-label="p95 (est.)"]').first();
      await p95.scrollIntoViewIfNeeded();
      await expect(p95).toBeInViewport({ ratio: 1 });
    });

    test(`an agent developer sets up MCP from any folder and sees what their agent wrote (${vp.name})`, async ({ page, request }) => {
      const store = `e2e-dev-${RUN}-${vp.name}`;
      const agent = `dev-agent-${RUN}-${vp.name}`;
      expect((await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name: store } })).status()).toBe(201);
      await signIn(page, "admin", E2E.adminPassword);

      // The stdio entry launches this installation's CLI by its absolute path, with its data dir; it can be copied.
      await page.goto("/api-docs");
      const config = page.getByTestId("mcp-config");
      await expect(config).toContainText('"cwd"');
      await expect(config).toContainText('"DATA_DIR"');
      await expect(config).toContainText("scripts/dualmind.mjs");
      await expect(config).not.toContainText('"npx"');
      await expect(page.getByRole("button", { name: /Copy configuration/ })).toBeVisible();
      // The token it needs is one link away.
      await page.getByRole("link", { name: "create one on the Admin page" }).click();
      await expect(page).toHaveURL(/\/admin/);

      // The agent writes with its token; its activity shows it.
      const headers = await agentToken(request, agent);
      expect((await request.post(`/api/v1/stores/${store}/memories`, { headers, data: { path: "dev/first-write", body: "# First write\n\nHello from the agent." } })).status()).toBe(201);
      // Its searches count beside its writes in the summary.
      expect((await request.post(`/api/v1/stores/${store}/search`, { headers, data: { q: "hello", mode: "fts" } })).status()).toBe(200);
      await page.goto(`/activity?agent=${agent}`);
      await expect(page.getByTestId("activity-table")).toContainText(`store:${store}/memory:dev/first-write`);
      await expect(page.getByTestId("activity-count-searches")).toContainText(/Searches\s*1$/);
      await expect(page.getByTestId("activity-count-writes")).toContainText(/Writes\s*1$/);
    });
  });
}
