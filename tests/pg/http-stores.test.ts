import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { listAuditTail, verifyAuditChain, pgLedger } from "@/lib/governance/audit";
import { ensureProductionBuild, RELIABILITY_TOKEN, startServer, type RunningServer } from "../fixtures/next-server";
import { callApi, callTool, storeApiCases, type StoreApiTarget } from "../shared/store-api";
import { createTestDatabase } from "./helpers";

/**
 * The store routes over real HTTP on both backends, with one body of
 * assertions (tests/shared/store-api.ts): two `next start` replicas on one
 * PostgreSQL database (DATABASE_URL), and two on one SQLite DATA_DIR.
 * PostgreSQL-only: what is not ported yet answers 501, vectors that cannot
 * answer say why. Ports 3510–3513 (this branch's range).
 */
const dirs: string[] = [];
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-stores-http-"));
  dirs.push(d);
  return d;
};

beforeAll(() => ensureProductionBuild(), 900_000);
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe("the store API on PostgreSQL: two replicas on one database", () => {
  let a: RunningServer;
  let b: RunningServer;
  let url: string;
  const target: StoreApiTarget = { a: () => a, b: () => b, serverErrors: { n: 0 } };
  beforeAll(async () => {
    url = await createTestDatabase();
    const env = { DATABASE_URL: url, DUALMIND_PG_POOL_MAX: "4", DUALMIND_LOG_LEVEL: "warn", DUALMIND_EMBED_WORKER: "false" };
    // One as a user starts it (npm start: migrations, core and default stores, then serve), one as a bare `next start`.
    a = await startServer({ dataDir: tempDir(), port: 3510, via: "npm-start", env });
    b = await startServer({ dataDir: tempDir(), port: 3511, via: "next", env });
  }, 300_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it("npm start says which store routes PostgreSQL serves (all of them)", () => {
    expect(a.stderr()).toContain("from PostgreSQL too, for the API and MCP: stores (list, create, describe), documents, chunks, search (fts, vector, hybrid), memories, categories, verify, reindex and jobs, traces, learnings, recall, reflection settings, store health, re-embed (with a held switch and the candidate model's comparison) and retry-parked");
    expect(a.stderr()).toContain("from PostgreSQL too, for the API and MCP: thoughts, chains, nodes, relations, frames, evidence, working memory and remember");
    expect(a.stderr()).not.toContain("501");
  });

  const { tokens } = storeApiCases(target);
  const call = (server: RunningServer, method: string, p: string, opts: { token?: string; body?: unknown } = {}) => callApi(target, server, method, p, opts);

  it("answers a vector search whose vectors cannot answer lexically, saying why — never a silent empty answer", async () => {
    for (const mode of ["vector", "hybrid"]) {
      const r = await call(b, "GET", `/stores/alpha/search?mode=${mode}&q=zanzibar`, { token: tokens.writer });
      expect(r.status).toBe(200);
      // No embed worker writes PostgreSQL vectors yet: the chunks wait for theirs.
      expect(r.json).toMatchObject({ mode, effective_mode: "fts", fallback: { reason: "backlog" } });
      expect(r.json.results.map((h: { path: string }) => h.path)).toEqual(["runbooks/pager.md"]);
    }
  });

  it("serves every store route from PostgreSQL — remember, re-embed and retry-parked too — after the token's checks", async () => {
    // A token that may not use the store is refused (403).
    expect((await call(b, "POST", "/stores/beta/thoughts", { token: tokens.alphaOnly, body: {} })).status).toBe(403);
    // remember (REST and MCP), the re-embed dry run and retry-parked answer from PostgreSQL; none answers 501.
    expect(await call(a, "POST", "/stores/alpha/remember", { token: tokens.writer, body: { query: "x" } })).toMatchObject({ status: 200, json: { store: "alpha" } });
    const tool = await callTool(b, tokens.writer, "remember", { store: "alpha", query: "x" });
    expect(tool).toMatchObject({ isError: false, json: { store: "alpha" } });
    const dry = await call(b, "GET", "/stores/alpha/reembed", { token: RELIABILITY_TOKEN });
    expect(dry.status).toBe(200);
    expect(await call(a, "POST", "/stores/alpha/embeddings/retry-parked", { token: RELIABILITY_TOKEN, body: {} })).toMatchObject({ status: 200 });
    expect(target.serverErrors.n).toBe(0);
  });

  it("writes every store change's audit row into the one PostgreSQL chain, which verifies", async () => {
    const pg: PgHandle = await openPgHandle({ url, max: 1 });
    try {
      const actions = new Set((await listAuditTail({ handle: pgLedger(pg.db), limit: 200 })).map((r) => r.action));
      for (const action of ["store.create", "documents.put", "document.delete", "memory.create", "memory.update", "memory.delete", "store.reindex", "reflection.settings.update", "thought.delete", "graph.node.delete"]) expect(actions).toContain(action);
      expect((await verifyAuditChain({ handle: pgLedger(pg.db) })).ok).toBe(true);
    } finally {
      await closePgHandle(pg);
    }
  });
});

describe("the store API on SQLite: two servers on one DATA_DIR", () => {
  let a: RunningServer;
  let b: RunningServer;
  const target: StoreApiTarget = { a: () => a, b: () => b, serverErrors: { n: 0 } };
  beforeAll(async () => {
    const dataDir = tempDir();
    const env = { DUALMIND_LOG_LEVEL: "warn", DUALMIND_EMBED_WORKER: "false" };
    a = await startServer({ dataDir, port: 3512, via: "next", env });
    b = await startServer({ dataDir, port: 3513, via: "next", env });
  }, 300_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  storeApiCases(target);
});
