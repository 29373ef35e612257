import { expect, test } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

// Unique names: the spec files share one server and DATA_DIR.
const store = `e2e-vec-${Date.now().toString(36)}`;

test("documents get vectors in the background; vector search explains its hits; the store page shows embedding health", async ({ page, request }) => {
  expect((await request.post("/api/v1/stores", { headers: bootstrapHeaders(), data: { name: store } })).status()).toBe(201);
  const put = await request.put(`/api/v1/stores/${store}/documents`, {
    headers: bootstrapHeaders(),
    data: {
      documents: [
        { path: "ops/proxy.md", content: "# Proxy\n\nRestart the nginx reverse proxy after rotating the TLS certificate." },
        { path: "auth/login.md", content: "# Login\n\nAuthentication fails when the session cookie lacks the secure flag." },
      ],
    },
  });
  expect(put.status()).toBe(200);

  // The in-server worker embeds them; wait for the backlog to drain (a state, not a sleep).
  await expect
    .poll(async () => (await (await request.get(`/api/v1/stores/${store}/health`, { headers: bootstrapHeaders() })).json()).backlog.pending, { timeout: 30_000 })
    .toBe(0);
  const health = await (await request.get(`/api/v1/stores/${store}/health`, { headers: bootstrapHeaders() })).json();
  expect(health).toMatchObject({ degraded: false, coverage_pct: 100, drift: { drifted: 0 } });

  // A misspelled query: full-text finds nothing, vector search does.
  const fts = await (await request.get(`/api/v1/stores/${store}/search?mode=fts&q=authentification%20cokie`, { headers: bootstrapHeaders() })).json();
  expect(fts.results).toHaveLength(0);
  const vec = await (await request.get(`/api/v1/stores/${store}/search?mode=vector&q=authentification%20cokie&explain=true`, { headers: bootstrapHeaders() })).json();
  expect(vec.results[0].path).toBe("auth/login.md");
  expect(vec.results[0].signals.vector.rank).toBe(1);

  await signIn(page, "admin", E2E.adminPassword);
  await page.goto("/search");
  await page.getByLabel("Store").selectOption(store);
  await page.getByLabel("Query").fill("authentification cokie");
  await page.getByLabel("Mode").selectOption("vector");
  await page.getByLabel("explain").check();
  await page.getByRole("button", { name: "Search" }).click();
  const hit = page.getByTestId("search-hit").first();
  await expect(hit).toContainText("auth/login.md");
  await expect(hit.getByTestId("search-explain")).toContainText("vector: #1");

  await page.goto(`/stores/${store}`);
  const card = page.getByTestId("store-embeddings");
  await expect(card.getByTestId("embeddings-status")).toHaveText("Healthy");
  await expect(card.getByTestId("embeddings-coverage")).toContainText("100.0% embedded");
  await card.getByRole("button", { name: "Estimate re-embed" }).click();
  await expect(card.getByRole("status")).toContainText("A full re-embed would embed 0 item(s)");
});
