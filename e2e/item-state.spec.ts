import { expect, test, type APIRequestContext } from "@playwright/test";
import { bootstrapHeaders, E2E, ensureRoleUsers, ROLE_USERS, seriousViolations, signIn } from "./fixtures";

// Unique per run: specs share one server and DATA_DIR.
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

async function thoughtIds({ request, store, q }: { request: APIRequestContext; store: string; q: string }): Promise<string[]> {
  const r = await request.get(`/api/v1/stores/${store}/thoughts?q=${encodeURIComponent(q)}`, { headers: bootstrapHeaders() });
  expect(r.status()).toBe(200);
  return ((await r.json()).thoughts as { id: string }[]).map((t) => t.id);
}

test("an editor invalidates a thought on its page with a reason: the history says who and why, lists and search leave it out, Restore brings it back", async ({ request, page }) => {
  const store = `items-${RUN}`;
  const headers = bootstrapHeaders();
  expect((await request.post("/api/v1/stores", { headers, data: { name: store } })).status()).toBe(201);
  const made = await request.post(`/api/v1/stores/${store}/thoughts`, { headers, data: { content: `Quokka ${RUN}: the staging database moved to the east region.` } });
  expect(made.status()).toBe(201);
  const id = (await made.json()).thought.id as string;
  expect(await thoughtIds({ request, store, q: `Quokka ${RUN}` })).toEqual([id]);
  // A second thought keeps the list non-empty, so the table is there to look in.
  expect((await request.post(`/api/v1/stores/${store}/thoughts`, { headers, data: { content: `Numbat ${RUN}: backups run nightly.` } })).status()).toBe(201);

  await signIn(page, "admin", E2E.adminPassword);
  await page.goto(`/graph/${store}/thoughts/${id}`);
  const section = page.getByRole("region", { name: "Item state" });
  await expect(section.getByTestId("item-status")).toHaveText("active");
  const invalidate = section.getByRole("form", { name: "Invalidate" });
  await invalidate.getByLabel("Reason").fill(`wrong region ${RUN}`);
  await invalidate.getByRole("button", { name: "Invalidate" }).click();
  await expect(section.getByRole("status")).toContainText(`thought ${id} is now retired`);
  await page.reload();
  await expect(section.getByTestId("item-status")).toHaveText("retired");
  await expect(section.getByTestId("item-history")).toContainText(`active → retired · user:admin · wrong region ${RUN}`);
  expect(await seriousViolations(page)).toEqual([]);

  // Gone from what agents and people are answered, still readable by id on its page.
  expect(await thoughtIds({ request, store, q: `Quokka ${RUN}` })).not.toContain(id);
  await page.goto(`/graph/${store}/thoughts`);
  await expect(page.getByTestId("thoughts-table")).toContainText(`Numbat ${RUN}`);
  await expect(page.getByTestId("thoughts-table")).not.toContainText(`Quokka ${RUN}`);

  await page.goto(`/graph/${store}/thoughts/${id}`);
  const restore = section.getByRole("form", { name: "Restore" });
  await restore.getByLabel("Reason").fill(`checked again ${RUN}`);
  await restore.getByRole("button", { name: "Restore" }).click();
  await expect(section.getByRole("status")).toContainText(`thought ${id} is now active`);
  expect(await thoughtIds({ request, store, q: `Quokka ${RUN}` })).toContain(id);
  await page.reload();
  await expect(section.getByTestId("item-history").getByRole("listitem")).toHaveCount(2);
  await expect(section.getByTestId("item-history")).toContainText(`retired → active · user:admin · checked again ${RUN}`);
});

test("a memory's page shows its state; a viewer sees the history but no Invalidate, and the API's decision by an agent shows there", async ({ request, page, browser }) => {
  const store = `items-mem-${RUN}`;
  const headers = bootstrapHeaders();
  expect((await request.post("/api/v1/stores", { headers, data: { name: store } })).status()).toBe(201);
  const path = `ops/runbook-${RUN}`;
  expect((await request.post(`/api/v1/stores/${store}/memories`, { headers, data: { path, body: `Wombat ${RUN}: restart the ingest worker before noon.` } })).status()).toBe(201);
  const decided = await request.post(`/api/v1/stores/${store}/items/memory/${encodeURIComponent(path)}/invalidate`, { headers, data: { reason: `outdated runbook ${RUN}` } });
  expect(decided.status()).toBe(200);

  await ensureRoleUsers(browser);
  await signIn(page, ROLE_USERS.viewer.username, ROLE_USERS.viewer.password);
  await page.goto(`/memories?store=${store}&path=${encodeURIComponent(path)}`);
  const section = page.getByRole("region", { name: "Item state" });
  await expect(section.getByTestId("item-status")).toHaveText("retired");
  await expect(section).toContainText("not answered by search, recall, remember or lists");
  await expect(section.getByTestId("item-history")).toContainText(`active → retired`);
  await expect(section.getByTestId("item-history")).toContainText(`outdated runbook ${RUN}`);
  await expect(section.getByRole("form")).toHaveCount(0);
  expect(await seriousViolations(page)).toEqual([]);
});
