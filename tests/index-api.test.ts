import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as documentsRoute from "@/app/api/v1/stores/[store]/documents/route";
import * as chunksRoute from "@/app/api/v1/stores/[store]/chunks/[id]/route";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import * as categoriesRoute from "@/app/api/v1/stores/[store]/categories/route";
import * as reindexRoute from "@/app/api/v1/stores/[store]/reindex/route";
import * as verifyRoute from "@/app/api/v1/stores/[store]/verify/route";
import * as jobsRoute from "@/app/api/v1/jobs/[id]/route";
import { governance } from "@/lib/backend/governance";
import { getStoreDb } from "@/lib/db/connection";
import { stores } from "@/lib/stores/backend";
import { itSqliteOnly, onPg, seedStore, seedTokens, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

const store = "notes";
const params = { store };
let env: TestEnv;
let token: string;
let adminToken: string;

/** The store, an agent's token and an admin's. */
const seed = async () => {
  await seedStore(store);
  return seedTokens({ token: { label: "agent", agent_id: "claude", scopes: ["read", "write"] }, adminToken: { label: "ops", agent_id: "ops", scopes: ["admin"] } });
};
beforeEach(async () => {
  const started = await useTestBackend({}, { seed });
  env = started;
  ({ token, adminToken } = started.seeded);
});
afterEach(() => env.cleanup());

/** The store's memory folder: the truth on SQLite (on PostgreSQL the memories table is, and there is no folder). */
const memoryDir = () => path.join(env.dataDir, "stores", store, "memory");
const listAuditTail = (a: { limit: number }) => governance().listAuditTail(a);

async function putDoc(p: string, content: string, s = store) {
  return callRoute(documentsRoute.PUT, { method: "PUT", token, params: { store: s }, body: { path: p, content } });
}

/** Full-text search unless the test names another mode (the API's default is hybrid). */
async function search(query: Record<string, string>, s = store) {
  const url = `http://127.0.0.1/api/v1/stores/${s}/search?${new URLSearchParams({ mode: "fts", ...query })}`;
  return callRoute(searchRoute.GET, { token, params: { store: s }, url });
}

async function createMemory(body: Record<string, unknown>) {
  return callRoute(memoriesRoute.POST, { token, params, body });
}

async function listMemories(query: Record<string, string>) {
  const url = `http://127.0.0.1/api/v1/stores/${store}/memories?${new URLSearchParams(query)}`;
  return callRoute(memoriesRoute.GET, { token, params, url });
}

describe("documents API", () => {
  it("upserts, skips unchanged content, replaces chunks on change, lists by prefix and deletes", async () => {
    const first = await putDoc("guides/sqlite.md", "# SQLite\n\nWAL mode lets readers run beside one writer.\n");
    expect(first.status).toBe(200);
    expect(first.json.documents[0]).toMatchObject({ path: "guides/sqlite.md", status: "added", chunks: 1 });
    expect((await putDoc("guides/sqlite.md", "# SQLite\n\nWAL mode lets readers run beside one writer.\n")).json.documents[0].status).toBe("unchanged");
    expect((await putDoc("guides/sqlite.md", "# SQLite\n\nCheckpoints move pages back.\n")).json.documents[0].status).toBe("changed");
    const batch = await callRoute(documentsRoute.PUT, {
      method: "PUT",
      token,
      params,
      body: { documents: [{ path: "guides/fts.md", content: "bm25 ranking" }, { path: "misc\\win.txt", content: "backslashes normalized" }] },
    });
    expect(batch.json.documents.map((d: { path: string }) => d.path)).toEqual(["guides/fts.md", "misc/win.txt"]);

    const list = await callRoute(documentsRoute.GET, { token, params, url: "http://127.0.0.1/x?prefix=guides/" });
    expect(list.json.total).toBe(2);
    expect(list.json.documents.map((d: { path: string }) => d.path)).toEqual(["guides/fts.md", "guides/sqlite.md"]);

    expect((await search({ q: "WAL" })).json.results).toHaveLength(0);
    const hit = (await search({ q: "checkpoints" })).json.results[0];
    const chunk = await callRoute(chunksRoute.GET, { token, params: { store, id: hit.chunk_id } });
    expect(chunk.json).toMatchObject({ path: "guides/sqlite.md", chunk_index: 0, stale: false, text: "# SQLite\n\nCheckpoints move pages back.\n" });
    expect((await callRoute(chunksRoute.GET, { token, params: { store, id: "0".repeat(32) } })).status).toBe(404);

    const del = await callRoute(documentsRoute.DELETE, { method: "DELETE", token, params, url: "http://127.0.0.1/x?path=guides/sqlite.md" });
    expect(del.status).toBe(200);
    expect((await search({ q: "checkpoints" })).json.results).toHaveLength(0);
    expect((await callRoute(documentsRoute.DELETE, { method: "DELETE", token, params, url: "http://127.0.0.1/x?path=guides/sqlite.md" })).status).toBe(404);
  });

  it("path traversal and reserved paths get 400 and write nothing", async () => {
    for (const bad of ["../escape.md", "/etc/passwd", "a/../../b.md", "C:\\win.md", "a\0b.md", ".hidden/x.md", "a//b.md", "memory/x/y.md", "source/r/f.md", ""]) {
      const r = await putDoc(bad, "x");
      expect(r.status, bad).toBe(400);
      expect(r.json.error.code).toBe("invalid_request");
    }
    for (const bad of ["../escape", "/abs/x", "a/../b", "a/.hidden", "cat/sl\0ug", "only-slug", "x/" + "a".repeat(200), "a\\b/c"]) {
      const r = await createMemory({ path: bad, body: "x" });
      expect(r.status, bad).toBe(400);
    }
    expect((await stores().listDocuments({ store, prefix: "", limit: 10, offset: 0 })).total).toBe(0);
    expect((await listMemories({})).json.total).toBe(0);
    if (!onPg) {
      // SQLite: nothing reached the memory folder, nor outside the store's folder.
      expect(fs.readdirSync(memoryDir())).toEqual([]);
      expect(fs.existsSync(path.join(env.dataDir, "stores", "escape.md"))).toBe(false);
    }
  });

  it("unknown stores are 404 and are not created", async () => {
    expect((await putDoc("a.md", "x", "nope")).status).toBe(404);
    expect(await stores().listStoreNames()).not.toContain("nope");
    expect(fs.existsSync(path.join(env.dataDir, "stores", "nope"))).toBe(false);
  });
});

describe("full-text search", () => {
  beforeEach(async () => {
    await putDoc("a.md", "# Alpha\n\nThe quick brown fox jumps over the lazy dog. NEAR and AND are words too.\n");
    await putDoc("b.ts", "export function lazyLoader() { return 'dog'; }\n");
    // "Foxgloves", not "Foxes": chunk text is stemmed (porter), so "foxes" would match the word fox.
    await putDoc("deep/c.md", "Foxgloves grow quick. Dogs are lazy.\n");
  });

  it("ranks with bm25 and returns snippets with highlights, chunk ids and scores", async () => {
    const r = await search({ q: "quick fox" });
    expect(r.status).toBe(200);
    expect(r.json.results.map((h: { path: string }) => h.path)).toEqual(["a.md"]);
    const hit = r.json.results[0];
    expect(hit.chunk_id).toMatch(/^[0-9a-f]{32}$/);
    expect(hit.score).toBeGreaterThan(0);
    expect(hit.highlights.map(([s, e]: [number, number]) => hit.snippet.slice(s, e).toLowerCase()).sort()).toEqual(["fox", "quick"]);
    expect((await search({ q: "quick fox", match: "any" })).json.results.map((h: { path: string }) => h.path)).toEqual(["a.md", "deep/c.md"]);
    expect((await search({ q: "lazy", kind: "code" })).json.results).toHaveLength(0);
    expect((await search({ q: "lazy", prefix: "deep/" })).json.results.map((h: { path: string }) => h.path)).toEqual(["deep/c.md"]);
    const page = await search({ q: "lazy", limit: "1" });
    expect(page.json.results).toHaveLength(1);
    expect(page.json.has_more).toBe(true);
  });

  it("injection strings never cause a 500 or change the query's meaning", async () => {
    const nasty = ['"', '""', "*", "fox*", "NEAR(", "NEAR(fox dog", "fox AND", "OR", "AND OR NOT", '"unbalanced', "a:b", "text:fox", "^fox", "(", ")", "{fox}", "", "   ", "-fox", "fox -dog", "'; drop table chunks; --", "\u0000", "🦊"];
    for (const q of nasty) {
      for (const syntax of ["plain", "fts5"]) {
        const r = await search({ q, syntax });
        expect([200, 400], `${syntax}: ${JSON.stringify(q)}`).toContain(r.status);
        // A query with nothing in it is a 400 (browse has its own routes); any other plain text is words.
        if (syntax === "plain") expect(r.status, JSON.stringify(q)).toBe(q.trim() === "" ? 400 : 200);
        if (r.status === 400) expect(r.json.error.code).toBe("invalid_request");
      }
    }
    // Random strings built from FTS5's special characters and keywords: never a 500.
    const parts = ['"', "*", "(", ")", "NEAR", "AND", "OR", "NOT", ":", "^", "+", "-", "{", "}", "fox", "dog", " ", "text", ",", "'", "\\", "é"];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % parts.length;
    for (let i = 0; i < 150; i++) {
      const q = Array.from({ length: 1 + (i % 9) }, () => parts[next()]).join(i % 2 ? "" : " ");
      const r = await search({ q, syntax: i % 3 === 0 ? "plain" : "fts5" });
      expect([200, 400], JSON.stringify(q)).toContain(r.status);
    }
    // Operators in plain text are words: "NEAR" matches the doc that says NEAR.
    expect((await search({ q: "NEAR(" })).json.results.map((h: { path: string }) => h.path)).toEqual(["a.md"]);
    // "fox*" is the word fox, not a prefix query (which would also hit "foxgloves").
    expect((await search({ q: "fox*" })).json.results.map((h: { path: string }) => h.path)).toEqual(["a.md"]);
    const prefix = await search({ q: "fox*", syntax: "fts5" });
    // FTS5's advanced syntax is the SQLite backend's; PostgreSQL refuses it by name (use syntax=plain there).
    if (onPg) expect(prefix).toMatchObject({ status: 400, json: { error: { details: [{ path: "syntax" }] } } });
    else expect(prefix.json.results.map((h: { path: string }) => h.path).sort()).toEqual(["a.md", "deep/c.md"]);
    expect((await search({ q: "NEAR(fox", syntax: "fts5" })).status).toBe(400);
    const post = await callRoute(searchRoute.POST, { token, params, body: { q: '" OR *', include_core: false, limit: 5 } });
    expect(post.status).toBe(200);
    expect((await callRoute(searchRoute.POST, { token, params, body: { q: "x", bogus: 1 } })).status).toBe(400);
    expect((await search({ q: "x", mode: "semantic" })).status).toBe(400);
    expect((await search({ q: "x", mode: "vector" })).status).toBe(200);
  });

  it("includes core read-only when asked, results marked by store", async () => {
    await putDoc("identity.md", "The user prefers quick answers about the fox.", "core");
    const without = await search({ q: "fox" });
    expect(without.json.results.every((h: { store: string }) => h.store === store)).toBe(true);
    const withCore = await search({ q: "fox", include_core: "true" });
    expect(withCore.json.stores).toEqual([store, "core"]);
    expect(withCore.json.results.map((h: { store: string; path: string }) => `${h.store}:${h.path}`).sort()).toEqual(["core:identity.md", `${store}:a.md`]);
  });
});

describe("memories", () => {
  const now = Date.now();

  it("writes the markdown file first and indexes it; update, move and delete keep both in step", async () => {
    const created = await createMemory({ path: "projects/dualmind/setup", body: "# Setup\n\nRun npm ci then migrate.\n", tags: ["setup", "npm"], source: "chat", summary: "how to set up" });
    expect(created.status).toBe(201);
    const file = path.join(memoryDir(), "projects", "dualmind", "setup.md");
    if (!onPg) {
      // SQLite: the file is the truth, written first.
      const text = fs.readFileSync(file, "utf8");
      expect(text).toMatch(/^---\ntags: \["setup", "npm"\]\n/);
      expect(text).toContain("# Setup");
    }
    expect((await createMemory({ path: "projects/dualmind/setup", body: "dup" })).status).toBe(409);

    const one = await listMemories({ path: "projects/dualmind/setup" });
    expect(one.json).toMatchObject({ path: "projects/dualmind/setup", category: "projects/dualmind", tags: ["setup", "npm"], source: "chat", summary: "how to set up" });
    expect((await search({ q: "migrate" })).json.results.map((h: { path: string; kind: string }) => `${h.kind}:${h.path}`)).toEqual(["memory:memory/projects/dualmind/setup.md"]);

    const updated = await callRoute(memoriesRoute.PUT, { method: "PUT", token, params, body: { path: "projects/dualmind/setup", body: "# Setup\n\nUse pnpm now.\n", move_to: "projects/tools/setup" } });
    expect(updated.status).toBe(200);
    expect((await listMemories({ path: "projects/dualmind/setup" })).status).toBe(404);
    expect((await listMemories({ path: "projects/tools/setup" })).json.body).toContain("pnpm");
    if (!onPg) {
      expect(fs.existsSync(file)).toBe(false);
      expect(fs.readFileSync(path.join(memoryDir(), "projects", "tools", "setup.md"), "utf8")).toContain("pnpm");
    }
    expect((await search({ q: "migrate" })).json.results).toHaveLength(0);
    expect((await search({ q: "pnpm" })).json.results[0].path).toBe("memory/projects/tools/setup.md");
    const cats = await callRoute(categoriesRoute.GET, { token, params, url: "http://127.0.0.1/x?parent=projects" });
    expect(cats.json.categories.map((c: { path: string; memories: number }) => `${c.path}=${c.memories}`)).toEqual(["projects/tools=1"]);

    const del = await callRoute(memoriesRoute.DELETE, { method: "DELETE", token, params, url: "http://127.0.0.1/x?path=projects/tools/setup" });
    expect(del.status).toBe(200);
    expect((await listMemories({})).json.total).toBe(0);
    expect((await search({ q: "pnpm" })).json.results).toHaveLength(0);
    expect((await callRoute(memoriesRoute.DELETE, { method: "DELETE", token, params, url: "http://127.0.0.1/x?path=projects/tools/setup" })).status).toBe(404);
  });

  it("every write is audited by the domain under the calling agent; a refused write and a read are not", async () => {
    const audited = async () => (await listAuditTail({ limit: 50 })).filter((a) => a.actor === "agent:claude").map((a) => `${a.action} ${a.target}${a.details ? " " + a.details : ""}`.replace(/"trashId":"\d{13}-[0-9a-f]{12}"/, '"trashId":"<id>"')).reverse();
    await createMemory({ path: "ops/restic", body: "nightly" });
    expect((await createMemory({ path: "ops/restic", body: "again" })).status).toBe(409);
    await callRoute(memoriesRoute.PUT, { method: "PUT", token, params, body: { path: "ops/restic", body: "hourly", move_to: "ops/backup" } });
    await callRoute(categoriesRoute.PUT, { method: "PUT", token, params, body: { path: "ops", description: "operations" } });
    await listMemories({});
    await putDoc("guides/a.md", "alpha");
    await putDoc("guides/a.md", "alpha");
    await callRoute(documentsRoute.DELETE, { method: "DELETE", token, params, url: "http://127.0.0.1/x?path=guides/a.md" });
    await callRoute(memoriesRoute.DELETE, { method: "DELETE", token, params, url: "http://127.0.0.1/x?path=ops/backup" });
    expect(await audited()).toEqual([
      "memory.create store:notes/memory:ops/restic",
      `memory.update store:notes/memory:ops/backup ${JSON.stringify({ movedFrom: "ops/restic", fields: ["body"], diff: "+++ b/ops/backup.md\n@@ -1,1 +1,1 @@\n-nightly\n+hourly\n", diffTruncated: false })}`,
      `category.describe store:notes/category:ops ${JSON.stringify({ cleared: false })}`,
      `documents.put store:notes ${JSON.stringify({ paths: ["guides/a.md"], changed: 1, unchanged: 0 })}`,
      "document.delete store:notes/document:guides/a.md",
      // The deleted memory went to the trash: its entry's id is in the audit row (restorable from there).
      `memory.delete store:notes/memory:ops/backup ${JSON.stringify({ trashId: "<id>" })}`,
    ]);
  });

  it("filters: recursive category, tags match any, source, dates, sort, paging; expired hidden by default", async () => {
    await createMemory({ path: "work/infra/db", body: "sqlite tuning ".repeat(50), tags: ["sqlite", "ops"], source: "chat" });
    await createMemory({ path: "work/infra/net/dns", body: "dns notes", tags: ["network"], source: "doc" });
    await createMemory({ path: "work/people", body: "team", tags: ["team"] });
    await createMemory({ path: "home/garden", body: "tomatoes", tags: ["sqlite"] });
    await createMemory({ path: "work/old", body: "stale reminder about sqlite", tags: ["ops"], expires_at: now - 1000 });
    await createMemory({ path: "work/later", body: "expires in future", expires_at: now + 3_600_000 });

    const paths = (r: { json: { memories: { path: string }[] } }) => r.json.memories.map((m) => m.path).sort();
    expect(paths(await listMemories({ category: "work/infra" }))).toEqual(["work/infra/db", "work/infra/net/dns"]);
    expect(paths(await listMemories({ category: "work" }))).toEqual(["work/infra/db", "work/infra/net/dns", "work/later", "work/people"]);
    expect(paths(await listMemories({ category: "wor" }))).toEqual([]);
    expect(paths(await listMemories({ tags: "network,team" }))).toEqual(["work/infra/net/dns", "work/people"]);
    expect(paths(await listMemories({ tags: "ops" }))).toEqual(["work/infra/db"]);
    expect(paths(await listMemories({ tags: "ops", include_expired: "true" }))).toEqual(["work/infra/db", "work/old"]);
    expect(paths(await listMemories({ source: "doc" }))).toEqual(["work/infra/net/dns"]);
    expect((await listMemories({ updated_after: String(now + 10_000_000) })).json.total).toBe(0);
    const bySize = await listMemories({ sort: "token_estimate", order: "desc", limit: "2" });
    expect(bySize.json.total).toBe(5);
    expect(bySize.json.memories[0].path).toBe("work/infra/db");
    expect(bySize.json.memories).toHaveLength(2);
    expect((await listMemories({ sort: "token_estimate", order: "desc", limit: "2", offset: "4" })).json.memories).toHaveLength(1);
    expect((await listMemories({ sort: "bogus" })).status).toBe(400);
    // Expired memories are hidden from search too, unless asked.
    // A word only the expired memory has ("expired" would stem to the `expires:` front matter of the other one).
    expect((await search({ q: "reminder" })).json.results).toHaveLength(0);
    expect((await search({ q: "reminder", include_expired: "true" })).json.results).toHaveLength(1);
    expect((await search({ q: "sqlite", tags: "ops" })).json.results.map((h: { path: string }) => h.path)).toEqual(["memory/work/infra/db.md"]);

    const top = await callRoute(categoriesRoute.GET, { token, params, url: "http://127.0.0.1/x" });
    expect(top.json.categories.map((c: { path: string; memories: number; children: number }) => `${c.path}:${c.memories}:${c.children}`)).toEqual(["home:1:0", "work:5:1"]);
  });
});

describe("reindex and verify over the API", () => {
  it("reindex runs as an audited admin job; verify reports a clean store", async () => {
    if (onPg) {
      // The memories table is the truth on PostgreSQL: the memory to rebuild from is written by the API.
      expect((await createMemory({ path: "inbox/dropped", body: "# Dropped in by an agent\n" })).status).toBe(201);
    } else {
      // A file dropped in the memory folder by hand is picked up by the rebuild.
      fs.mkdirSync(path.join(memoryDir(), "inbox"), { recursive: true });
      fs.writeFileSync(path.join(memoryDir(), "inbox", "dropped.md"), "# Dropped in by hand\n");
    }
    expect((await callRoute(reindexRoute.POST, { token, params })).status).toBe(403);
    const started = await callRoute(reindexRoute.POST, { token: adminToken, params });
    expect(started.status).toBe(202);
    const id = started.json.job.id;
    let job = started.json.job;
    while (job.status === "running") {
      // The job yields to the event loop between files; let it run before polling again.
      await new Promise((resolve) => setImmediate(resolve));
      job = (await callRoute(jobsRoute.GET, { token: adminToken, params: { id } })).json.job;
    }
    expect(job).toMatchObject({ status: "succeeded", result: { counts: { scanned: 1 } } });
    expect((await listAuditTail({ limit: 5 })).some((a) => a.action === "store.reindex" && a.target === `store:${store}`)).toBe(true);
    const verify = await callRoute(verifyRoute.GET, { token, params });
    expect(verify.json).toMatchObject({ ok: true, counts: { files: 1, memories: 1 } });
    expect((await callRoute(verifyRoute.GET, { token, params: { store: "nope" } })).status).toBe(404);
  });
});

describe("category descriptions", () => {
  const describeWorkInfra = () => callRoute(categoriesRoute.PUT, { method: "PUT", token, params, body: { path: "work/infra", description: "servers and databases" } });

  it("show in the browse, are not memories, and a bad path is 400", async () => {
    await createMemory({ path: "work/infra/db", body: "x" });
    await createMemory({ path: "home/garden", body: "y" });
    const put = await describeWorkInfra();
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ path: "work/infra", description: "servers and databases", memories: 1 });
    expect((await callRoute(categoriesRoute.PUT, { method: "PUT", token, params, body: { path: "../x", description: "no" } })).status).toBe(400);
    const children = await callRoute(categoriesRoute.GET, { token, params, url: "http://127.0.0.1/x?parent=work" });
    expect(children.json.categories).toEqual([{ path: "work/infra", name: "infra", description: "servers and databases", memories: 1, children: 0 }]);
    const top = await callRoute(categoriesRoute.GET, { token, params, url: "http://127.0.0.1/x" });
    expect(top.json.categories.map((c: { path: string }) => c.path)).toEqual(["home", "work"]);
    expect((await listMemories({})).json.total).toBe(2);
  });

  itSqliteOnly("live in _category.md (file first) and survive a rebuild from files", "the memory folder is the truth and index.db is rebuilt from it", async () => {
    await createMemory({ path: "work/infra/db", body: "x" });
    await createMemory({ path: "home/garden", body: "y" });
    expect((await describeWorkInfra()).status).toBe(200);
    expect(fs.readFileSync(path.join(memoryDir(), "work", "infra", "_category.md"), "utf8")).toBe("servers and databases\n");
    const { sqlite } = getStoreDb({ store });
    sqlite.prepare("delete from categories").run();
    sqlite.prepare("delete from meta where key = 'index_built_at'").run();
    const children = await callRoute(categoriesRoute.GET, { token, params, url: "http://127.0.0.1/x?parent=work" });
    expect(children.json.categories).toEqual([{ path: "work/infra", name: "infra", description: "servers and databases", memories: 1, children: 0 }]);
    // The description file is not a memory and not a document.
    expect((await listMemories({})).json.total).toBe(2);
  });
});
