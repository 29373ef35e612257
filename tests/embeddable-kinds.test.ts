import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as documentsRoute from "@/app/api/v1/stores/[store]/documents/route";
import * as learningsRoute from "@/app/api/v1/stores/[store]/learnings/route";
import * as nodesRoute from "@/app/api/v1/stores/[store]/nodes/route";
import * as reembedRoute from "@/app/api/v1/stores/[store]/reembed/route";
import * as storesRoute from "@/app/api/v1/stores/route";
import * as thoughtsRoute from "@/app/api/v1/stores/[store]/thoughts/route";
import * as tracesRoute from "@/app/api/v1/stores/[store]/traces/route";
import { bootstrapApp } from "@/lib/bootstrap";
import { clearEmbeddablesForTests, listEmbeddables } from "@/lib/embed/embeddables";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { EMBEDDABLE_KINDS, registerEmbeddableKinds } from "@/lib/embeddable-kinds";
import { pgEmbeddableKinds } from "@/lib/index/embed-kinds-pg";
import { runCli } from "@/scripts/cli-kit";
import { drainEmbeddingsWith, seedToken, storeSql, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

const ROOT = path.resolve(__dirname, "..");
const registeredKinds = () => listEmbeddables().map((e) => e.kind).sort();
const allKinds = EMBEDDABLE_KINDS.map((e) => e.kind).sort();

function libFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? libFiles(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : []));
}

let env: TestEnv;
beforeEach(async () => {
  // Start-up runs in the tests that are about it.
  env = await useTestBackend({}, { bootstrap: false });
  resetEmbedderForTests();
});
afterEach(async () => {
  registerEmbeddableKinds();
  await env.cleanup();
});

describe("embeddable kinds are registered by the entry points", () => {
  it("lists every kind the app enqueues (each *_KIND constant in lib/)", () => {
    const declared = libFiles("lib").flatMap((f) => [...fs.readFileSync(path.join(ROOT, f), "utf8").matchAll(/export const \w+_KIND = "([a-z_]+)"/g)].map((m) => m[1]));
    expect(declared.sort()).toEqual(allKinds);
    expect(allKinds).toEqual(["chunk", "learning", "node", "thought", "trace"]);
  });

  it("with none registered, the worker and re-embed refuse instead of dropping queued items", () => {
    clearEmbeddablesForTests();
    expect(() => listEmbeddables()).toThrow(/registerEmbeddableKinds/);
  });

  it("bootstrapApp() registers every kind: the server (instrumentation.ts), npm start, the worker and MCP over stdio call it", async () => {
    for (const entry of ["instrumentation.ts", "scripts/start.ts", "scripts/worker.ts", "scripts/mcp-stdio.ts"]) {
      expect(fs.readFileSync(path.join(ROOT, entry), "utf8"), entry).toMatch(/bootstrapApp\(\)/);
    }
    clearEmbeddablesForTests();
    await bootstrapApp();
    expect(registeredKinds()).toEqual(allKinds);
  });

  it("registerEmbeddableKinds() registers PostgreSQL's kinds too, chunks included: none is left to a module's import", () => {
    // A registry that starts empty, as in a bundle or a process whose modules were loaded before it was reset.
    delete (globalThis as Record<string, unknown>).__dualmindPgEmbeddables;
    registerEmbeddableKinds();
    expect(pgEmbeddableKinds().sort()).toEqual(allKinds);
  });

  it("runCli() registers every kind before any command runs (scripts/cli.ts goes through it)", async () => {
    expect(fs.readFileSync(path.join(ROOT, "scripts/cli.ts"), "utf8")).toMatch(/runCli\(/);
    clearEmbeddablesForTests();
    const quiet = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      await runCli([], ["--help"]);
    } finally {
      quiet.mockRestore();
    }
    expect(registeredKinds()).toEqual(allKinds);
  });

  it("after bootstrap, the worker embeds and re-embed lists one artifact of every kind", async () => {
    clearEmbeddablesForTests();
    await bootstrapApp();
    const admin = await seedToken({ label: "a", agent_id: "ops", scopes: ["admin"] });
    expect((await callRoute(storesRoute.POST, { token: admin, body: { name: "kinds" } })).status).toBe(201);
    const params = { store: "kinds" };
    const writes = [
      callRoute(documentsRoute.PUT, { method: "PUT", token: admin, params, body: { path: "notes/wal.md", content: "WAL lets readers continue while one writer commits." } }),
      callRoute(tracesRoute.POST, { token: admin, params, body: { intent: { verb: "fix", target: "token refresh" }, shard_type: "backend", key_files: ["lib/auth.ts"], outcome: "failure", key_issue: "401 loop", error_tags: ["auth"] } }),
      callRoute(learningsRoute.POST, { token: admin, params, body: { predicate: "prefers_small_commits", description: "keep commits small" } }),
      callRoute(thoughtsRoute.POST, { token: admin, params, body: { content: "checkpoints keep the WAL short" } }),
      callRoute(nodesRoute.POST, { token: admin, params, body: { name: "SQLite WAL", entity_type: "concept" } }),
    ];
    for (const w of await Promise.all(writes)) expect(w.status, JSON.stringify(w.json)).toBeLessThan(300);
    const kindsOf = async (sql: string) => (await storeSql<{ kind: string }>("kinds", sql)).map((r) => r.kind);
    expect(await kindsOf("select distinct kind from embed_queue order by kind")).toEqual(allKinds);

    const [{ n: queued }] = await storeSql<{ n: number }>("kinds", "select cast(count(*) as integer) as n from embed_queue");
    // Re-embed lists artifacts through the registry: before the worker runs, every queued artifact still needs a vector.
    const dry = await callRoute(reembedRoute.POST, { token: admin, params, body: { dry_run: true } });
    expect(dry.json.estimate.to_embed).toBe(queued);
    // The worker loads each item's text through the registry: none is dropped as deleted.
    expect(await drainEmbeddingsWith(["kinds"])).toMatchObject({ embedded: queued, failed: 0 });
    // PostgreSQL keeps chunk vectors in their own table (chunk_embeddings), every other kind's in `embeddings` as SQLite does.
    const withVectors = env.backend === "pg" ? "select 'chunk' as kind from chunk_embeddings union select kind from embeddings order by kind" : "select distinct kind from embeddings order by kind";
    expect(await kindsOf(withVectors)).toEqual(allKinds);
  });
});
