import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTE_MODULES } from "@/app/api/v1/openapi.json/catalog";
import { GET as getOpenApi } from "@/app/api/v1/openapi.json/route";
import { listOperations } from "@/lib/api/openapi";
import { DualmindApiError, DualmindClient } from "@/lib/client";
import { seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

type Handler = (req: Request, ctx: { params: Promise<Record<string, string | string[] | undefined>> }) => Promise<Response>;

/** A fetch that dispatches to the real route handlers, the way Next's router would. */
function routeFetch(): typeof fetch {
  const modules: Record<string, Record<string, unknown>> = { ...ROUTE_MODULES, "app/api/v1/openapi.json/route.ts": { GET: getOpenApi } };
  const table = Object.entries(modules).map(([file, mod]) => {
    const segments = file.replace(/^app\/api\/v1\//, "").replace(/\/route\.ts$/, "").split("/");
    const names: string[] = [];
    const source = segments.map((s) => (s.startsWith("[") ? (names.push(s.slice(1, -1)), "([^/]+)") : s.replace(/[.]/g, "\\.")));
    return { re: new RegExp(`^/api/v1/${source.join("/")}$`), names, mod };
  });
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    for (const r of table) {
      const m = r.re.exec(url.pathname);
      if (!m) continue;
      const handler = r.mod[request.method] as Handler | undefined;
      if (!handler) return new Response(null, { status: 405 });
      const params = Object.fromEntries(r.names.map((n, i) => [n, decodeURIComponent(m[i + 1])]));
      return handler(request, { params: Promise.resolve(params) });
    }
    return new Response(null, { status: 404 });
  }) as typeof fetch;
}

let env: TestEnv;
let token: string;
beforeAll(async () => {
  env = await useTestBackend();
  token = await seedToken({ label: "client", agent_id: "client-a", scopes: ["write"] });
});
afterAll(() => env.cleanup());

describe("OpenAPI 3.1 document", () => {
  it("covers every /api/v1 route file", () => {
    const files = execFileSync("find", ["app/api/v1", "-name", "route.ts"], { encoding: "utf8" })
      .trim()
      .split("\n")
      .filter((f) => !f.includes("[...path]") && !f.includes("openapi.json"))
      .sort();
    expect(Object.keys(ROUTE_MODULES).sort()).toEqual(files);
  });

  it("is served without a token and describes inputs from the zod schemas", async () => {
    const { status, json } = await callRoute(getOpenApi, { url: "http://127.0.0.1/api/v1/openapi.json" });
    expect(status).toBe(200);
    expect(json.openapi).toBe("3.1.0");
    const search = json.paths["/api/v1/stores/{store}/search"];
    expect(search.post.requestBody.content["application/json"].schema.properties.mode.enum).toEqual(["fts", "vector", "hybrid"]);
    expect(search.get.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(["store", "q", "mode", "limit"]));
    expect(search.post["x-required-scope"]).toBe("read");
    expect(json.paths["/api/v1/stores/{store}/memories"].post.responses["201"]).toBeTruthy();
    expect(json.paths["/api/v1/health"].get.security).toEqual([]);
    expect(json.components.schemas.Error.properties.error.properties.code.enum).toContain("invalid_request");
  });

  it("names every path parameter it declares, with unique operation ids", () => {
    const ops = listOperations(Object.values(ROUTE_MODULES));
    expect(ops.length).toBeGreaterThan(40);
    const ids = new Set<string>();
    for (const op of ops) {
      const declared = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const schemaKeys = op.route.params ? Object.keys((op.route.params as unknown as { shape: Record<string, unknown> }).shape).sort() : [];
      expect(schemaKeys, op.route.name).toEqual(declared);
      ids.add(`${op.method} ${op.path}`);
    }
    expect(ids.size).toBe(ops.length);
  });
});

describe("typed client (lib/client)", () => {
  it("writes, reads and searches memories, and runs the ledger", async () => {
    const client = new DualmindClient({ baseUrl: "http://dualmind.test", token, fetch: routeFetch() });
    expect((await client.health()).ok).toBe(true);
    await client.writeMemory("default", { path: "howto/deploy", body: "Deploy with blue-green switching behind nginx.", tags: ["ops"] });
    expect((await client.readMemory("default", "howto/deploy")).body).toContain("blue-green");
    expect((await client.queryMemories("default", { tags: ["ops"] })).total).toBe(1);
    const hits = await client.search("default", { q: "blue-green nginx", mode: "fts" });
    expect(hits.results[0].path).toBe("memory/howto/deploy.md");
    const { task } = await client.createTask({ intent: "deploy v2", spec: { version: 2 } });
    await client.recordRun(task.task_id, { skill: "deploy", input_hash: "a".repeat(64), runner_version: "1", output_hash: "b".repeat(64), exit_code: 0 });
    await client.recordValidation(task.task_id, { critic_passed: true, runner_passed: true });
    expect((await client.taskStatus(task.task_id)).verdict.verdict).toBe("passed");
    const doc = await client.openapi();
    expect(Object.keys(doc.paths)).toContain("/api/v1/tasks/{id}");
  });

  it("archives, unarchives and deletes a store (admin)", async () => {
    const admin = new DualmindClient({ baseUrl: "http://dualmind.test", token: await seedToken({ label: "client-admin", agent_id: "client-admin", scopes: ["admin"] }), fetch: routeFetch() });
    await admin.createStore({ name: "client-box" });
    expect((await admin.archiveStore("client-box")).archived).toBe(true);
    await expect(admin.writeMemory("client-box", { path: "notes/a", body: "x" })).rejects.toMatchObject({ status: 409, code: "store_archived" });
    expect((await admin.unarchiveStore("client-box")).archived).toBe(false);
    expect(await admin.deleteStore("client-box")).toEqual({ deleted: "client-box" });
  });

  it("raises the envelope's code on errors", async () => {
    const client = new DualmindClient({ baseUrl: "http://dualmind.test", token, fetch: routeFetch() });
    const missing = await client.readMemory("default", "howto/nothing").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(DualmindApiError);
    expect(missing).toMatchObject({ status: 404, code: "not_found" });
    const bad = new DualmindClient({ baseUrl: "http://dualmind.test", token: "dm_wrong", fetch: routeFetch() });
    await expect(bad.listStores()).rejects.toMatchObject({ status: 401, code: "unauthorized" });
  });
});
