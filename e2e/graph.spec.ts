import { expect, test } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

// Unique per run: specs share one server and DATA_DIR.
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

test("an agent builds a node with a frame and evidence; a person opens it and runs Remember", async ({ request, page }) => {
  const store = `graph-${RUN}`;
  const headers = bootstrapHeaders();
  expect((await request.post("/api/v1/stores", { headers, data: { name: store } })).status()).toBe(201);
  const api = `/api/v1/stores/${store}`;

  const node = await request.post(`${api}/nodes`, { headers, data: { name: `Reindex job ${RUN}`, entity_type: "system", tags: ["batch"] } });
  expect(node.status()).toBe(201);
  const nodeId = (await node.json()).node.id as string;
  const neighbour = await request.post(`${api}/nodes`, { headers, data: { name: `Chunker ${RUN}`, entity_type: "tool" } });
  const neighbourId = (await neighbour.json()).node.id as string;
  const thought = await request.post(`${api}/thoughts`, { headers, data: { content: `The reindex job ${RUN} stalls when the chunker version changes`, framework: "debug" } });
  expect(thought.status()).toBe(201);
  const thoughtId = (await thought.json()).thought.id as string;
  const frame = await request.post(`${api}/frames`, { headers, data: { node_id: nodeId, column: "semantic", properties: { schedule: "nightly at 02:00" } } });
  expect(frame.status()).toBe(201);
  const evidence = await request.post(`${api}/evidence`, { headers, data: { target: "frame", target_id: (await frame.json()).frame.id, thought_id: thoughtId } });
  expect(evidence.status()).toBe(201);
  expect((await request.post(`${api}/relations`, { headers, data: { from_id: nodeId, to_id: neighbourId, relationship_type: "depends_on", weight: 0.75 } })).status()).toBe(201);

  await signIn(page, "admin", E2E.adminPassword);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Graph", exact: true }).click();
  // The Overview also links each store by name (to its store page): wait for the Graph index first.
  await expect(page).toHaveURL(/\/graph$/);
  await page.getByRole("main").getByRole("link", { name: store, exact: true }).click();
  await expect(page.getByRole("heading", { level: 1, name: `Graph · ${store}` })).toBeVisible();
  await page.getByLabel("Search nodes").fill(`reindex ${RUN}`);
  await page.getByRole("button", { name: "Search" }).click();
  await page.getByTestId("nodes-table").getByRole("link", { name: `Reindex job ${RUN}` }).click();

  await expect(page.getByRole("heading", { level: 1, name: `Reindex job ${RUN}` })).toBeVisible();
  await expect(page.getByTestId("node-type")).toHaveText("system");
  const semantic = page.getByTestId("frames-semantic");
  await expect(semantic).toContainText("nightly at 02:00");
  await expect(semantic.getByRole("link", { name: /stalls when the chunker version changes/ })).toBeVisible();
  await expect(page.getByTestId("relations-out").getByRole("link", { name: `Chunker ${RUN}` })).toBeVisible();
  await expect(page.getByTestId("relations-out").getByTestId("relation-weight")).toHaveText("0.75");
  await page.getByTestId("neighbourhood").getByRole("link", { name: new RegExp(`Chunker ${RUN}`) }).hover();
  await expect(page.getByTestId("neighbourhood-caption")).toHaveText(`Reindex job ${RUN} → Chunker ${RUN}: depends_on (weight 0.75)`);

  await semantic.getByRole("link", { name: /stalls when the chunker version changes/ }).click();
  await expect(page.getByTestId("thought-content")).toHaveText(`The reindex job ${RUN} stalls when the chunker version changes`);
  await expect(page.getByRole("link", { name: `Reindex job ${RUN}` })).toBeVisible();

  await page.goto(`/graph/${store}`);
  await page.getByLabel("Remember query").fill(`reindex job ${RUN} chunker`);
  await page.getByRole("button", { name: "Remember" }).click();
  const results = page.getByTestId("remember-results");
  const nodeResult = results.getByRole("article", { name: `node Reindex job ${RUN}` });
  await expect(nodeResult).toBeVisible();
  await expect(nodeResult.getByRole("table", { name: "Score breakdown" })).toContainText("relevance: words + context + w_vec × cosine");
  await expect(nodeResult.getByRole("link", { name: thoughtId.slice(0, 8) })).toBeVisible();
  // The neighbour arrives by the strong edge, with its weight in the breakdown.
  const neighbourResult = results.getByRole("article", { name: `node Chunker ${RUN}` });
  await expect(neighbourResult.getByRole("row", { name: /edge weight/ })).toContainText("0.750");
});
