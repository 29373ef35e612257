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
/** What agents wrote to PostgreSQL through the API before the pages are read. */
const seeded = { traceId: 0, learningId: 0, recallId: 0, thoughtId: "", cacheId: "", jobId: "", chunkId: "" };

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
  await seedThroughApi();
}, 900_000);

// The API's answers, as the tests read them (their shapes are checked by the API suites).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

async function ok(method: string, urlPath: string, body?: unknown): Promise<Json> {
  const r = await api(server.url, method, urlPath, { body });
  expect(r.status, `${method} ${urlPath}: ${JSON.stringify(r.json)}`).toBeLessThan(300);
  return r.json as Json;
}

/** Traces, a learning, a recall, thoughts, a small graph with evidence, working memory and a memory, all in alpha on PostgreSQL. */
async function seedThroughApi(): Promise<void> {
  const trace = await ok("POST", "/stores/alpha/traces", {
    intent: { verb: "restart", target: "ingest relay" },
    shard_type: "ops",
    key_files: ["relay/lease.ts"],
    outcome: "failure",
    key_issue: "the relay lost its lease to a zombie worker",
    error_tags: ["lease"],
  });
  seeded.traceId = trace.trace.id;
  seeded.learningId = (await ok("POST", "/stores/alpha/learnings", { predicate: "prefers", args: { restart: "drain first" }, description: "Drain the relay before a restart", confidence: 0.8 })).learning.id;
  seeded.recallId = (await ok("POST", "/stores/alpha/recall", { query: "restarting the ingest relay lease", min_score: 0.1 })).event_id;
  const thought = await ok("POST", "/stores/alpha/thoughts", { content: "The kestrel cache warms up at dawn.", chain_id: "warmup", tags: ["cache"] });
  seeded.thoughtId = thought.thought.id;
  seeded.cacheId = (await ok("POST", "/stores/alpha/nodes", { name: "Kestrel Cache", entity_type: "system", tags: ["edge"] })).node.id;
  seeded.jobId = (await ok("POST", "/stores/alpha/nodes", { name: "Warmup Job", entity_type: "tool" })).node.id;
  await ok("POST", "/stores/alpha/relations", { from_id: seeded.jobId, to_id: seeded.cacheId, relationship_type: "warms", weight: 0.8 });
  const frame = await ok("POST", "/stores/alpha/frames", { node_id: seeded.cacheId, column: "procedural", properties: { warm: "curl /warm" } });
  await ok("POST", "/stores/alpha/evidence", { target: "frame", target_id: frame.frame.id, thought_id: seeded.thoughtId });
  await ok("PUT", "/stores/alpha/working-memory", { key: "warmup.state", value: { phase: "second-pass" }, ttl_seconds: 3600 });
  await ok("POST", "/stores/alpha/memories", { path: "ops/pager-rota", body: "The pager rota lives in the ops wiki.", tags: ["pager"] });
  seeded.chunkId = (await ok("GET", "/stores/alpha/search?mode=fts&q=zanzibar")).results[0].chunk_id;
}

/** The id of one of the build's server actions (Next names them in its manifest). */
function serverActionId(name: string, fileHint: string): string {
  const manifest = JSON.parse(fs.readFileSync(path.join(process.cwd(), ".next", "server", "server-reference-manifest.json"), "utf8")) as { node: Record<string, { filename: string; exportedName: string }> };
  const found = Object.entries(manifest.node).find(([, a]) => a.exportedName === name && a.filename.includes(fileHint));
  if (!found) throw new Error(`no server action ${name} in ${fileHint}`);
  return found[0];
}

/** Post a form to a server action the way the browser does (React's encodeReply of [previous state, form]). */
async function postAction({ id, form, withCookie = true, at = "/memories" }: { id: string; form: Record<string, string>; withCookie?: boolean; at?: string }): Promise<{ status: number; text: string }> {
  const boundary = "----dualmind-pg-boundary";
  const part = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const body = Object.entries(form).map(([k, v]) => part(`_1_${k}`, v)).join("") + part("0", '[null,"$K1"]') + `--${boundary}--\r\n`;
  const res = await fetch(`${server.url}${at}`, {
    method: "POST",
    headers: { ...(withCookie ? { cookie } : {}), "next-action": id, "content-type": `multipart/form-data; boundary=${boundary}`, accept: "text/x-component", origin: server.url, connection: "close" },
    body,
    redirect: "manual",
  });
  return { status: res.status, text: await res.text() };
}

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
    // alpha's chunks, trace and learning wait for the embed worker (off here): queued under the watermark, so healthy — on the page and over the API alike.
    const health = await api(server.url, "GET", "/stores/alpha/health");
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ store: "alpha", status: "healthy", backlog: { parked: 0 } });
    const pending = (health.json as { backlog: { pending: number } }).backlog.pending;
    expect(pending).toBeGreaterThan(0);
    expect(r.text).toMatch(/data-testid="stat-health"[^>]*><span class="label">Memory health<\/span><span[^>]*>Healthy</);
    expect(r.text).toMatch(new RegExp(`data-testid="stat-backlog"[^>]*><span class="label">Embed backlog \\(all stores\\)</span><span[^>]*>${pending}<`));
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
    // The runbook and the memory (a memory is indexed as a document too).
    expect(alpha.text).toMatch(/2<!-- --> documents/);
    // The embeddings card and the workers are served from PostgreSQL too: an admin sees the re-embed buttons.
    expect(alpha.text).toContain('data-testid="store-embeddings"');
    expect(alpha.text).toContain('data-testid="worker-state"');
    expect(alpha.text).toContain("Re-embed");
    // The page streams behind its loading skeleton, so an unknown store is the not-found view inside a 200.
    const old = await page("/stores/oldlocal");
    expect(old.text).toMatch(/NEXT_HTTP_ERROR_FALLBACK;404|data-testid="not-found"/);
    expect(old.text).not.toContain('data-testid="store-summary"');
  });

  it("Reflection shows the traces, learnings, recalls and working memory agents wrote to PostgreSQL", async () => {
    const list = await page("/reflection?store=alpha");
    expect(list.status).toBe(200);
    expect(list.text).toContain('data-testid="reflection-summary"');
    expect(list.text).toContain("ingest relay");
    expect(list.text).toContain("prefers");
    expect(list.text).toContain("restarting the ingest relay lease");
    expect(list.text).toMatch(/Traces \(<!-- -->1<!-- -->\)|Traces \(1\)/);
    expect(list.text).not.toContain("oldlocal");

    const trace = await page(`/reflection/alpha/traces/${seeded.traceId}`);
    expect(trace.text).toContain("the relay lost its lease to a zombie worker");
    expect(trace.text).toContain("relay/lease.ts");
    // The recall that returned it is listed, linked to its page.
    expect(trace.text).toContain(`/reflection/alpha/recalls/${seeded.recallId}`);
    const learning = await page(`/reflection/alpha/learnings/${seeded.learningId}`);
    expect(learning.text).toContain("Drain the relay before a restart");
    const recall = await page(`/reflection/alpha/recalls/${seeded.recallId}`);
    expect(recall.text).toContain("restarting the ingest relay lease");
    expect(recall.text).toContain(`/reflection/alpha/traces/${seeded.traceId}`);
    const wm = await page("/reflection/alpha/working-memory");
    expect(wm.text).toContain('data-testid="wm-warmup.state"');
    expect(wm.text).toContain("second-pass");
    // An unknown id, and the local store, are not found.
    expect((await page("/reflection/alpha/traces/999999")).status).toBe(404);
    expect((await page("/reflection/oldlocal/working-memory")).status).toBe(404);
  });

  it("Graph shows the PostgreSQL stores' nodes, relations, frames, thoughts and evidence", async () => {
    const index = await page("/graph");
    expect(index.text).toContain('href="/graph/alpha"');
    expect(index.text).not.toContain("oldlocal");
    const nodes = await page("/graph/alpha");
    expect(nodes.text).toContain('data-testid="nodes-table"');
    expect(nodes.text).toContain("Kestrel Cache");
    expect(nodes.text).toContain("Warmup Job");
    // Remember is served from PostgreSQL too (graphBackend().remember): its box is there.
    expect(nodes.text).toContain('aria-label="Remember query"');
    const node = await page(`/graph/alpha/nodes/${seeded.cacheId}`);
    expect(node.text).toContain("Kestrel Cache");
    expect(node.text).toMatch(/data-testid="relations-in"[\s\S]*warms[\s\S]*Warmup Job/);
    expect(node.text).toContain("curl /warm");
    const thoughts = await page("/graph/alpha/thoughts");
    expect(thoughts.text).toContain("The kestrel cache warms up at dawn.");
    expect(thoughts.text).toMatch(/data-testid="chains"[\s\S]*warmup/);
    const thought = await page(`/graph/alpha/thoughts/${seeded.thoughtId}`);
    expect(thought.text).toContain('data-testid="thought-content"');
    expect(thought.text).toMatch(/Evidence for[\s\S]*Kestrel Cache[\s\S]*procedural frame/);
    // The graph pages stream behind their loading skeleton, so the local store is the not-found view inside a 200.
    const old = await page("/graph/oldlocal");
    expect(old.text).toMatch(/NEXT_HTTP_ERROR_FALLBACK;404|data-testid="not-found"/);
    expect(old.text).not.toContain('data-testid="nodes-table"');
  });

  it("Memories lists and reads the PostgreSQL memories, with their history", async () => {
    const list = await page("/memories?store=alpha");
    expect(list.text).toContain('data-testid="memories-table"');
    expect(list.text).toContain("ops/pager-rota");
    expect(list.text).not.toContain("oldlocal");
    const read = await page("/memories?store=alpha&path=ops%2Fpager-rota");
    expect(read.text).toContain('data-testid="memory-view"');
    expect(read.text).toContain("The pager rota lives in the ops wiki.");
    expect(read.text).toMatch(/data-testid="memory-history"[\s\S]*created/);
  });

  it("a memory edited on the dashboard is written to PostgreSQL through the same path as the API; without a session the action is refused", async () => {
    const id = serverActionId("updateMemoryAction", "memories/actions");
    const form = { store: "alpha", path: "ops/pager-rota", body: "The pager rota moved to the runbook.", tags: "pager, rota", summary: "", source: "", expires: "" };
    const anonymous = await postAction({ id, form: { ...form, body: "written by nobody" }, withCookie: false });
    expect(anonymous.text).not.toContain("Saved ops/pager-rota");
    expect((await ok("GET", "/stores/alpha/memories?path=ops/pager-rota")).body).toBe("The pager rota lives in the ops wiki.");
    const saved = await postAction({ id, form });
    expect(saved.status).toBe(200);
    expect(saved.text).toContain("Saved ops/pager-rota.");
    const after = await ok("GET", "/stores/alpha/memories?path=ops/pager-rota");
    expect(after).toMatchObject({ path: "ops/pager-rota", body: "The pager rota moved to the runbook.", tags: ["pager", "rota"] });
    // Audited as the API would be: the page's history names the dashboard user's edit.
    expect((await page("/memories?store=alpha&path=ops%2Fpager-rota")).text).toMatch(/data-testid="memory-history"[\s\S]*edited/);
  });

  it("a recall hit rated on the Reflection page is written to PostgreSQL: the API's precision counts it", async () => {
    const before = await ok("GET", "/stores/alpha/reflection");
    expect(before.totals.rated).toBe(0);
    const hitId = /data-testid="rate-hit-(\d+)"/.exec((await page("/reflection?store=alpha")).text)?.[1];
    expect(hitId).toBeDefined();
    const rated = await postAction({ id: serverActionId("rateRecallHitAction", "reflection/actions"), form: { store: "alpha", hit_id: hitId!, relevant: "true" }, at: "/reflection?store=alpha" });
    expect(rated.text).toContain(`Rated hit ${hitId} relevant.`);
    expect((await ok("GET", "/stores/alpha/reflection")).totals).toMatchObject({ rated: 1, precision: 1 });
  });

  it("the reader shows a PostgreSQL chunk in its document, with its metadata and vector state; the local store's is not found", async () => {
    const r = await page(`/search/read/alpha/${seeded.chunkId}`);
    expect(r.status).toBe(200);
    expect(r.text).toContain("runbooks/pager.md");
    expect(r.text).toContain("zanzibar rotation for the pager in PostgreSQL");
    // No embed worker runs here: the chunk waits in the PostgreSQL embed queue.
    expect(r.text).toContain("Waiting in the embed queue");
    const old = await page("/search/read/oldlocal/0123456789abcdef0123456789abcdef");
    expect(old.status).toBe(404);
    expect(old.text).not.toContain("decoy");
  });

  it("Health shows each PostgreSQL store's live backlog and status its recall hit rate and the history charts", async () => {
    const r = await page("/health");
    expect(r.status).toBe(200);
    expect(r.text).toContain('data-testid="health-stores"');
    expect(r.text).toContain('data-testid="health-store-status-alpha"');
    expect(r.text).not.toContain("oldlocal");
    // alpha: its chunk and memory chunk, the trace, the learning, the thought and the nodes wait for the (stopped) worker.
    const health = await api(server.url, "GET", "/stores/alpha/health");
    const backlog = (health.json as { backlog: { pending: number } }).backlog.pending;
    expect(backlog).toBeGreaterThan(0);
    expect(r.text).toMatch(new RegExp(`href="/health\\?range=24h&amp;store=alpha"[\\s\\S]*?${backlog}<!-- --> / <!-- -->`));
    // One recall in alpha, and it found something.
    expect(r.text).toMatch(/data-testid="health-recall-alpha"><td>alpha<\/td><td>1<\/td><td>100%<\/td>/);
    // The history charts, as on SQLite: snapshots every replica takes of the PostgreSQL stores, recall from the recall logs.
    for (const chart of ["chart-backlog", "chart-drift", "chart-recall-quality", "chart-search-latency", "chart-throughput"]) expect(r.text).toContain(`data-testid="${chart}"`);
    expect(r.text).toContain("every replica takes of the PostgreSQL stores");
    // The workers card is read from PostgreSQL's worker rows (none runs here: it says so, not a local worker list).
    expect(r.text).toContain('data-testid="worker-state"');
    const one = await page("/health?store=alpha");
    expect(one.text).toContain('data-testid="store-status"');
    // One store: its embeddings card (re-embed, parked items) from PostgreSQL.
    expect(one.text).toContain('data-testid="store-embeddings"');
    expect(one.text).toMatch(/data-testid="health-recall-alpha"/);
    expect(one.text).not.toContain('data-testid="health-recall-default"');
  });

  it("every page refuses a request without a session, an RSC request included", async () => {
    for (const p of ["/reflection?store=alpha", `/graph/alpha/nodes/${seeded.cacheId}`, "/memories?store=alpha", `/search/read/alpha/${seeded.chunkId}`, "/health"]) {
      for (const headers of [{ accept: "text/html" }, { RSC: "1" }] as Record<string, string>[]) {
        const res = await fetch(`${server.url}${p}`, { headers: { ...headers, connection: "close" }, redirect: "manual" });
        const text = await res.text();
        expect([302, 303, 307, 401], `${p} ${JSON.stringify(headers)}`).toContain(res.status);
        expect(text).not.toContain("Kestrel Cache");
        expect(text).not.toContain("zanzibar");
        expect(text).not.toContain("pager rota");
      }
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

  it("Admin lists each PostgreSQL store's last reindex, as on SQLite (read from PostgreSQL's admin jobs)", async () => {
    let job = (await ok("POST", "/stores/alpha/reindex")).job;
    for (let i = 0; i < 600 && job.status === "running"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      job = (await ok("GET", `/jobs/${job.id}`)).job;
    }
    expect(job.status).toBe("succeeded");
    const admin = await page("/admin");
    // The row of alpha carries the finished job (the panel's initial state), not the empty "—".
    expect(admin.text).toMatch(/data-testid="reindex-status-alpha"[^>]*>[\s\S]{0,400}?done in/);
  });

  it("/metrics answers without store gauges from the local stores", async () => {
    const res = await fetch(`${server.url}/api/metrics`, { headers: { authorization: `Bearer ${"reliability-bootstrap-token-0123456789abcdef"}`, connection: "close" } });
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain('store="oldlocal"');
  });
});
