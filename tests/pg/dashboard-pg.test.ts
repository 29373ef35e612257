import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, ensureProductionBuild, RELIABILITY_PASSWORD, startServer, type RunningServer } from "../fixtures/next-server";
import { createTestDatabase } from "./helpers";

/**
 * The dashboard with DATABASE_URL, over real HTTP as a signed-in person sees
 * it: the data dir still holds a SQLite store from before the move to
 * PostgreSQL (`oldlocal`, with a document), and agents now write to the
 * PostgreSQL stores. Every page shows the PostgreSQL stores or says it is not
 * served from PostgreSQL yet — none shows the local store agents no longer
 * write to. Ports 3590–3591.
 */
const SESSION_COOKIE = "next-auth.session-token";
let dataDir: string;
let server: RunningServer;
let cookie: string;

async function page(urlPath: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server.url}${urlPath}`, { headers: { cookie, accept: "text/html", connection: "close" }, redirect: "manual" });
  return { status: res.status, text: await res.text() };
}

async function signIn(username: string, password: string): Promise<string> {
  const c = await fetch(`${server.url}/api/auth/csrf`, { headers: { connection: "close" } });
  const { csrfToken } = (await c.json()) as { csrfToken: string };
  const csrfCookie = c.headers
    .getSetCookie()
    .map((s) => s.split(";")[0])
    .join("; ");
  const res = await fetch(`${server.url}/api/auth/callback/credentials`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: csrfCookie, connection: "close" },
    body: new URLSearchParams({ csrfToken, username, password, json: "true" }).toString(),
    redirect: "manual",
  });
  const session = res.headers
    .getSetCookie()
    .map((s) => s.split(";")[0])
    .find((s) => s.startsWith(`${SESSION_COOKIE}=`) && s.length > SESSION_COOKIE.length + 1);
  if (!session) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  return session;
}

beforeAll(async () => {
  ensureProductionBuild();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-dashboard-pg-"));
  // Before the move: a SQLite store with a document in DATA_DIR.
  const local = await startServer({ dataDir, port: 3590, env: { DUALMIND_EMBED_WORKER: "false" } });
  try {
    expect((await api(local.url, "POST", "/stores", { body: { name: "oldlocal" } })).status).toBe(201);
    expect((await api(local.url, "PUT", "/stores/oldlocal/documents", { body: { documents: [{ path: "notes/decoy.md", content: "# Decoy\n\nzanzibar lighthouse keeper from the local store" }] } })).status).toBe(200);
  } finally {
    await local.stop();
  }
  // After: the same DATA_DIR, stores in PostgreSQL.
  const url = await createTestDatabase();
  server = await startServer({ dataDir, port: 3591, via: "npm-start", env: { DATABASE_URL: url, DUALMIND_PG_POOL_MAX: "4", DUALMIND_EMBED_WORKER: "false" } });
  expect((await api(server.url, "POST", "/stores", { body: { name: "alpha" } })).status).toBe(201);
  expect((await api(server.url, "PUT", "/stores/alpha/documents", { body: { documents: [{ path: "runbooks/pager.md", content: "# Pager\n\nzanzibar rotation for the pager in PostgreSQL" }] } })).status).toBe(200);
  cookie = await signIn("admin", RELIABILITY_PASSWORD);
}, 900_000);

afterAll(async () => {
  await server?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe("the dashboard with DATABASE_URL shows the PostgreSQL stores, never the local ones", () => {
  it("Overview lists the PostgreSQL stores, not DATA_DIR's, with the same live store status the health route answers", async () => {
    const r = await page("/");
    expect(r.status).toBe(200);
    expect(r.text).toContain('data-testid="store-row-alpha"');
    expect(r.text).toContain('data-testid="store-row-default"');
    expect(r.text).not.toContain("oldlocal");
    expect(r.text).toContain("PostgreSQL schema");
    // alpha's chunk waits for the embed worker (off here): queued under the watermark, so healthy — on the page and over the API alike.
    const health = await api(server.url, "GET", "/stores/alpha/health");
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ store: "alpha", status: "healthy", backlog: { pending: 1, parked: 0 } });
    expect(r.text).toMatch(/data-testid="stat-health"[^>]*><span class="label">Memory health<\/span><span[^>]*>healthy</);
    expect(r.text).toMatch(/data-testid="stat-backlog"[^>]*><span class="label">Embed backlog<\/span><span[^>]*>1</);
  });

  it("Search finds what agents wrote to PostgreSQL; the local store is not offered and its words find nothing", async () => {
    const hit = await page("/search?store=alpha&q=zanzibar&mode=fts");
    expect(hit.status).toBe(200);
    expect(hit.text).toContain("runbooks/pager.md");
    expect(hit.text).not.toContain("decoy");
    const local = await page("/search?store=oldlocal&q=zanzibar&mode=fts");
    expect(local.status).toBe(200);
    expect(local.text).not.toContain("notes/decoy.md");
    expect(local.text).not.toContain('value="oldlocal"');
  });

  it("a store page shows the PostgreSQL store; the local store is not found", async () => {
    const alpha = await page("/stores/alpha");
    expect(alpha.status).toBe(200);
    expect(alpha.text).toContain('data-testid="store-summary"');
    expect(alpha.text).toMatch(/1<!-- --> documents/);
    // The embeddings card and the workers are served from PostgreSQL too: an admin sees the re-embed buttons.
    expect(alpha.text).toContain('data-testid="store-embeddings"');
    expect(alpha.text).toContain('data-testid="worker-state"');
    expect(alpha.text).toContain("Re-embed");
    expect(alpha.text).not.toContain('data-testid="not-served-on-postgres"');
    // The page streams behind its loading skeleton, so an unknown store is the not-found view inside a 200.
    const old = await page("/stores/oldlocal");
    expect(old.text).toMatch(/NEXT_HTTP_ERROR_FALLBACK;404|data-testid="not-found"/);
    expect(old.text).not.toContain('data-testid="store-summary"');
  });

  it("views not served from PostgreSQL yet say so instead of reading the local stores", async () => {
    for (const p of ["/memories?store=oldlocal", "/graph", "/reflection", "/health", "/search/read/oldlocal/0123456789abcdef0123456789abcdef"]) {
      const r = await page(p);
      expect(r.status, p).toBe(200);
      expect(r.text, p).toContain('data-testid="not-served-on-postgres"');
      expect(r.text, p).not.toContain("decoy");
    }
  });

  it("Admin offers the PostgreSQL stores for tokens; a read-only token for a PostgreSQL store is accepted, one for the local store refused", async () => {
    const admin = await page("/admin");
    expect(admin.status).toBe(200);
    expect(admin.text).toContain("alpha");
    expect(admin.text).not.toContain("oldlocal");
    const ok = await api(server.url, "POST", "/tokens", { body: { label: "reader", agent_id: "reader", scopes: ["read"], stores: ["alpha"] } });
    expect(ok.status).toBe(201);
    const refused = await api(server.url, "POST", "/tokens", { body: { label: "reader-old", agent_id: "reader", scopes: ["read"], stores: ["oldlocal"] } });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.json)).toContain("no such store: oldlocal");
  });

  it("/metrics answers without store gauges from the local stores", async () => {
    const res = await fetch(`${server.url}/api/metrics`, { headers: { authorization: `Bearer ${"reliability-bootstrap-token-0123456789abcdef"}`, connection: "close" } });
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain('store="oldlocal"');
  });
});
