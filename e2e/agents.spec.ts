import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { expect, test } from "@playwright/test";
import { DualmindApiError, DualmindClient } from "../lib/client";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

// Unique per run: specs share one server and DATA_DIR.
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const STORE = `agents-${RUN}`;

function text(result: unknown): string {
  const first = (result as CallToolResult).content[0];
  return first && first.type === "text" ? first.text : "";
}

test("an agent works through the typed client and the MCP endpoint of the running server", async ({ request }) => {
  const res = await request.post("/api/v1/tokens", { headers: bootstrapHeaders(), data: { label: `agents ${RUN}`, agent_id: `e2e-agent-${RUN}`, scopes: ["write"], stores: [STORE] } });
  expect(res.status()).toBe(201);
  const token = (await res.json()).token as string;

  const client = new DualmindClient({ baseUrl: E2E.baseURL, token });
  await client.createStore({ name: STORE });
  await client.writeMemory(STORE, { path: "runbooks/restore", body: `Restore drill ${RUN}: dualmind restore <dir> into an empty DATA_DIR.` });
  const hits = await client.search(STORE, { q: `restore drill ${RUN}`, mode: "fts" });
  expect(hits.results[0].path).toBe("memory/runbooks/restore.md");
  await expect(client.readMemory("default", "runbooks/restore")).rejects.toBeInstanceOf(DualmindApiError);

  const mcp = new Client({ name: "e2e", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL("/api/mcp", E2E.baseURL), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  const { tools } = await mcp.listTools();
  expect(tools.map((t) => t.name)).toContain("search");
  const found = await mcp.callTool({ name: "search", arguments: { store: STORE, q: `drill ${RUN}`, mode: "fts" } });
  expect(text(found)).toContain("runbooks/restore.md");
  const written = await mcp.callTool({ name: "write_memory", arguments: { store: STORE, path: "runbooks/backup", body: `Backups ${RUN} run online.` } });
  expect(written.isError).toBeFalsy();
  expect((await client.readMemory(STORE, "runbooks/backup")).body).toContain(RUN);
  const refused = await mcp.callTool({ name: "write_memory", arguments: { store: "default", path: "runbooks/elsewhere", body: "not allowed" } });
  expect(refused.isError).toBe(true);
  expect(JSON.parse(text(refused)).error.code).toBe("forbidden");
  await mcp.close();

  const wrong = new Client({ name: "e2e", version: "1.0.0" });
  await expect(wrong.connect(new StreamableHTTPClientTransport(new URL("/api/mcp", E2E.baseURL), { requestInit: { headers: { Authorization: "Bearer dm_wrong" } } }))).rejects.toThrow();
});

test("a person finds the API reference and the MCP connection snippet from the nav", async ({ page, request }) => {
  const doc = await request.get("/api/v1/openapi.json");
  expect(doc.status()).toBe(200);
  expect((await doc.json()).openapi).toBe("3.1.0");

  await signIn(page, "admin", E2E.adminPassword);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "API reference" })).toBeVisible();
  await expect(page.getByTestId("mcp-config")).toContainText('"--store"');
  await expect(page.getByTestId("mcp-config")).toContainText("/api/mcp");
  await expect(page.getByTestId("mcp-tools").getByRole("cell", { name: "dialectic_post", exact: true })).toBeVisible();
  const search = page.getByTestId("api-operation").filter({ hasText: "/api/v1/stores/{store}/search" }).first();
  await search.locator("summary").click();
  await expect(search.getByRole("cell", { name: "mode", exact: true })).toBeVisible();
  await expect(search.getByTestId("api-response-shape")).toContainText("effective_mode");
});
