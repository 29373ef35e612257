import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z, type ZodType } from "zod";
import { ROUTE_MODULES } from "@/app/api/v1/openapi.json/catalog";
import { assertMatchesContract, createdOrExisting, errorEnvelopeSchema, toWire } from "@/lib/api/contract";
import { buildApiReference, buildOpenApiDocument } from "@/lib/api/openapi";
import { defineRoute, type DescribedHandler } from "@/lib/api/route";
import type { AgentPrincipal } from "@/lib/auth/tokens";
import { resetConfigForTests } from "@/lib/config";
import { respondCreated } from "@/lib/api/respond";
import { listToolDescriptors } from "@/lib/mcp/server";
import { MCP_TOOLS } from "@/lib/mcp/tools";
import * as dialecticMetricsRoute from "@/app/api/v1/dialectic/metrics/route";
import * as sessionExportRoute from "@/app/api/v1/dialectic/sessions/[id]/export/route";
import * as sessionsRoute from "@/app/api/v1/dialectic/sessions/route";
import * as sweepRoute from "@/app/api/v1/dialectic/sweep/route";
import * as chainRoute from "@/app/api/v1/stores/[store]/chains/[id]/route";
import * as evidenceRoute from "@/app/api/v1/stores/[store]/evidence/route";
import * as frameRoute from "@/app/api/v1/stores/[store]/frames/[id]/route";
import * as framesRoute from "@/app/api/v1/stores/[store]/frames/route";
import * as learningRoute from "@/app/api/v1/stores/[store]/learnings/[id]/route";
import * as learningsRoute from "@/app/api/v1/stores/[store]/learnings/route";
import * as nodeRoute from "@/app/api/v1/stores/[store]/nodes/[id]/route";
import * as nodesRoute from "@/app/api/v1/stores/[store]/nodes/route";
import * as relationRoute from "@/app/api/v1/stores/[store]/relations/[id]/route";
import * as relationsRoute from "@/app/api/v1/stores/[store]/relations/route";
import * as feedbackRoute from "@/app/api/v1/stores/[store]/thoughts/[id]/feedback/route";
import * as thoughtRoute from "@/app/api/v1/stores/[store]/thoughts/[id]/route";
import * as thoughtsRoute from "@/app/api/v1/stores/[store]/thoughts/route";
import * as tasksRoute from "@/app/api/v1/tasks/route";
import { runTool } from "@/lib/mcp/server";
import { principalOf, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
/** Route files that are not agent API routes: next-auth's own handler and the MCP transport (its tools are checked below). */
const NOT_DEFINE_ROUTE = new Set(["app/api/auth/[...nextauth]/route.ts", "app/api/mcp/route.ts"]);

function routeFilesOnDisk(): string[] {
  return execFileSync("find", ["app/api", "-name", "route.ts"], { encoding: "utf8" }).trim().split("\n").sort();
}

function isDescribed(value: unknown): value is DescribedHandler {
  return typeof value === "function" && "route" in value;
}

describe("every answer has a declared contract", () => {
  it("every method of every route file on disk declares a response schema", async () => {
    const files = routeFilesOnDisk().filter((f) => !NOT_DEFINE_ROUTE.has(f));
    expect(files.length).toBeGreaterThan(55);
    const missing: string[] = [];
    let methods = 0;
    for (const file of files) {
      const mod = (await import(pathToFileURL(path.resolve(file)).href)) as Record<string, unknown>;
      const exported = METHODS.filter((m) => m in mod);
      expect(exported.length, file).toBeGreaterThan(0);
      for (const method of exported) {
        methods++;
        const handler = mod[method];
        if (!isDescribed(handler) || !(handler.route.response instanceof z.ZodType)) missing.push(`${method} ${file}`);
      }
    }
    expect(missing).toEqual([]);
    expect(methods).toBeGreaterThan(85);
  });

  it("every MCP tool declares an output schema, listed as its outputSchema", () => {
    expect(MCP_TOOLS.filter((t) => !(t.output instanceof z.ZodType)).map((t) => t.name)).toEqual([]);
    const listed = listToolDescriptors();
    expect(listed).toHaveLength(MCP_TOOLS.length);
    for (const t of listed) expect(t.outputSchema.type, t.name).toBe("object");
  });

  it("the OpenAPI document gives every success its real schema and every error the shared envelope", () => {
    const doc = buildOpenApiDocument(Object.values(ROUTE_MODULES)) as { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }> }>> };
    let operations = 0;
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        operations++;
        for (const [status, r] of Object.entries(op.responses)) {
          const schema = r.content?.["application/json"]?.schema;
          expect(schema, `${method} ${p} ${status}`).toBeTruthy();
          if (status.startsWith("2")) expect(Object.keys(schema!).length, `${method} ${p} ${status}`).toBeGreaterThan(0);
          else expect(schema, `${method} ${p} ${status}`).toEqual({ $ref: "#/components/schemas/Error" });
        }
      }
    }
    expect(operations).toBeGreaterThan(80);
    expect(JSON.stringify(doc)).not.toContain('"schema":{}');
    const tasks = doc.paths["/api/v1/tasks"].post.responses;
    expect(Object.keys(tasks).filter((s) => s.startsWith("2")).sort()).toEqual(["200", "201"]);
    expect(tasks["201"].content!["application/json"].schema).toMatchObject({ required: expect.arrayContaining(["task", "created"]), additionalProperties: false });
  });

  it("every field name on the wire is snake_case, both ways; the dialectic snapshot file format is the one exception", () => {
    const doc = buildOpenApiDocument(Object.values(ROUTE_MODULES)) as { paths: Record<string, Record<string, Record<string, unknown>>> };
    const SNAPSHOT = new Set(["GET /api/v1/dialectic/export", "GET /api/v1/dialectic/sessions/{id}/export", "POST /api/v1/dialectic/restore"]);
    const camel: string[] = [];
    const walk = (schema: unknown, where: string): void => {
      if (!schema || typeof schema !== "object") return;
      if (Array.isArray(schema)) return schema.forEach((x) => walk(x, where));
      const s = schema as Record<string, unknown>;
      for (const [key, child] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) {
        if (/[a-z][A-Z]/.test(key)) camel.push(`${where}: ${key}`);
        walk(child, where);
      }
      for (const k of ["items", "prefixItems", "anyOf", "oneOf", "allOf", "additionalProperties"]) walk(s[k], where);
    };
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const where = `${method.toUpperCase()} ${p}`;
        if (SNAPSHOT.has(where)) continue;
        for (const r of Object.values(op.responses as Record<string, { content?: unknown }>)) walk(r.content, where);
        walk(op.requestBody, where);
        // Path template names ({runId}) never appear in a body; query parameters do.
        for (const param of (op.parameters ?? []) as { name: string; in: string }[]) if (param.in === "query" && /[a-z][A-Z]/.test(param.name)) camel.push(`${where}: ?${param.name}`);
      }
    }
    expect(camel).toEqual([]);
    for (const t of listToolDescriptors()) walk({ properties: { ...(t.inputSchema.properties as object), ...(t.outputSchema.properties as object) }, anyOf: t.outputSchema.anyOf }, `tool ${t.name}`);
    expect(camel).toEqual([]);
  });

  it("the API reference page has each response's shape in snake_case", () => {
    const entry = buildApiReference(Object.values(ROUTE_MODULES)).find((e) => e.method === "GET" && e.path === "/api/v1/tasks/{id}");
    expect(entry?.statuses).toEqual(["200"]);
    expect(entry?.response).toContain("task_id: string;");
    expect(entry?.response).toContain('verdict: "pending" | "passed" | "failed";');
    expect(entry?.response).not.toMatch(/\b[a-z]+[A-Z]\w*\??:/);
  });

  it("no route builds its own Response (it would lose x-request-id and skip the contract)", () => {
    const own = routeFilesOnDisk()
      .filter((f) => !NOT_DEFINE_ROUTE.has(f))
      .filter((f) => /\bResponse\.json\(|new Response\(/.test(fs.readFileSync(f, "utf8")));
    expect(own).toEqual([]);
  });
});

describe("the wire is the domain's snake_case, shaped by the schema", () => {
  const schema = z.strictObject({
    task_id: z.string(),
    p50_ms: z.number().nullable(),
    chunk_sha256: z.string(),
    attributes: z.record(z.string(), z.unknown()),
    runs: z.array(z.strictObject({ run_id: z.string() })),
    check: z.union([z.strictObject({ ok: z.literal(true), messages: z.number() }), z.strictObject({ ok: z.literal(false), broken_at_seq: z.number() })]),
  });

  it("declared keys pass key for key, nested and in unions; free-form records keep their keys; undeclared keys are left for the check to catch", () => {
    // With responses checked (tests), undeclared keys stay on the wire so the check names them.
    const value = { task_id: "t1", p50_ms: null, chunk_sha256: "ab", attributes: { ownerId: 1, nested: { someKey: 2 } }, runs: [{ run_id: "r1" }], check: { ok: false, broken_at_seq: 3 }, extraField: 1 };
    const wire = toWire({ schema, value, opts: { undeclared: "keep" } });
    expect(wire).toEqual(value);
    expect(() => assertMatchesContract({ schema, wire, what: "test" })).toThrow(/does not match/);
    const { extraField: _extra, ...declared } = value;
    expect(() => assertMatchesContract({ schema, wire: toWire({ schema, value: declared }), what: "test" })).not.toThrow();
  });

  it("keys already in snake_case (graph rows, health) pass as they are", () => {
    expect(toWire({ schema: schema.pick({ task_id: true }), value: { task_id: "t" } })).toEqual({ task_id: "t" });
  });
});

describe("the wrapper keeps its promises", () => {
  let env: TestEnv;
  let token: string;
  beforeAll(async () => {
    env = await useTestBackend();
    token = await seedToken({ label: "c", agent_id: "contract", scopes: ["write"] });
  });
  afterAll(() => env.cleanup());

  const route = (response: ZodType, handler: () => unknown) => defineRoute({ name: "POST /contract-test", auth: "write", response, handler });
  const call = async (handler: DescribedHandler) => {
    const res = await handler(new Request("http://127.0.0.1/api/v1/contract-test", { method: "POST", headers: { authorization: `Bearer ${token}` } }));
    return { res, json: await res.json() };
  };

  it("a created answer keeps x-request-id and goes out like any other", async () => {
    const { res, json } = await call(route(createdOrExisting(z.strictObject({ task_id: z.string(), created: z.boolean() })), () => respondCreated({ body: { task_id: "t1", created: true }, created: true })));
    expect(res.status).toBe(201);
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(json).toEqual({ task_id: "t1", created: true });
  });

  it("without response checks (production), an undeclared field is stripped from the wire, nested ones too; loose objects keep theirs", () => {
    const schema = z.strictObject({ ok: z.boolean(), items: z.array(z.object({ id_value: z.string() })), attrs: z.looseObject({ kind: z.string() }) });
    const domain = { ok: true, secretHash: "x", items: [{ id_value: "a", tokenHash: "y" }], attrs: { kind: "k", free: 1 } };
    expect(toWire({ schema, value: domain, opts: { undeclared: "strip" } })).toEqual({ ok: true, items: [{ id_value: "a" }], attrs: { kind: "k", free: 1 } });
    expect(toWire({ schema, value: domain, opts: { undeclared: "keep" } })).toMatchObject({ secretHash: "x", items: [{ id_value: "a", tokenHash: "y" }] });
  });

  it("an answer with an undeclared field is a 500 naming it, not a silent leak", async () => {
    const { res, json } = await call(route(z.strictObject({ ok: z.boolean() }), () => ({ ok: true, secretHash: "x" })));
    expect(res.status).toBe(500);
    expect(errorEnvelopeSchema.parse(json).error.details.map((d) => d.message).join(" ")).toContain("secretHash");
  });

  it("a status the route does not document is a 500", async () => {
    const { res } = await call(route(z.strictObject({ created: z.boolean() }), () => respondCreated({ body: { created: true }, created: true })));
    expect(res.status).toBe(500);
  });

  it("a handler that builds its own Response is a 500", async () => {
    const { res } = await call(route(z.strictObject({}), () => Response.json({})));
    expect(res.status).toBe(500);
    expect(res.headers.get("x-request-id")).toBeTruthy();
  });

  it("the harness checks answers even with the wrapper's check switched off (callRoute)", async () => {
    const leaky = defineRoute({ name: "GET /contract-test", auth: "public", response: z.strictObject({ ok: z.literal(true) }), handler: () => ({ ok: "yes" }) });
    process.env.DUALMIND_CHECK_RESPONSES = "false";
    resetConfigForTests();
    try {
      await expect(callRoute(leaky)).rejects.toThrow(/GET \/contract-test: answer 200 breaks its contract/);
    } finally {
      process.env.DUALMIND_CHECK_RESPONSES = "true";
      resetConfigForTests();
    }
  });
});

/**
 * Routes and tools no feature test happens to call: each answers once here,
 * so its declared schema is checked against a real answer too (callRoute and
 * runTool both check under DUALMIND_CHECK_RESPONSES).
 */
describe("the routes and tools other tests do not call answer within their contract", () => {
  let env: TestEnv;
  let admin: string;
  let adminPrincipal: AgentPrincipal;
  const P = { store: "kb" };
  beforeAll(async () => {
    env = await useTestBackend();
    await seedStore("kb");
    admin = await seedToken({ label: "a", agent_id: "keeper", scopes: ["admin"] });
    adminPrincipal = await principalOf(admin);
  });
  afterAll(() => env.cleanup());
  const ok = async (handler: DescribedHandler, opts: Parameters<typeof callRoute>[1]) => {
    const r = await callRoute(handler, { token: admin, ...opts });
    expect(r.status, `${handler.route.name}: ${JSON.stringify(r.json)}`).toBeLessThan(300);
    return r.json;
  };
  const tool = (name: string, args: Record<string, unknown>) => runTool({ name, args, options: { principal: adminPrincipal } });

  it("graph items by id: read, change, delete", async () => {
    const a = (await ok(nodesRoute.POST, { params: P, body: { name: "wal", entity_type: "concept" } })).node.id;
    const b = (await ok(nodesRoute.POST, { params: P, body: { name: "checkpoint", entity_type: "concept" } })).node.id;
    const thought = (await ok(thoughtsRoute.POST, { params: P, body: { content: "WAL grows until a checkpoint", chain_id: "c-1" } })).thought;
    expect((await ok(thoughtRoute.GET, { params: { ...P, id: thought.id } })).thought.id).toBe(thought.id);
    expect((await ok(feedbackRoute.POST, { params: { ...P, id: thought.id }, body: { utility: 0.9 } })).thought.feedback_count).toBe(1);
    expect((await ok(chainRoute.GET, { params: { ...P, id: "c-1" } })).chain.thoughts).toHaveLength(1);
    const frame = (await ok(framesRoute.POST, { params: P, body: { node_id: a, column: "semantic", properties: { size: "grows" } } })).frame;
    expect((await ok(frameRoute.GET, { params: { ...P, id: frame.id } })).frame.properties).toEqual({ size: "grows" });
    await ok(frameRoute.PATCH, { method: "PATCH", params: { ...P, id: frame.id }, body: { properties: { size: "bounded" } } });
    await ok(evidenceRoute.POST, { params: P, body: { target: "frame", target_id: frame.id, thought_id: thought.id } });
    expect(await ok(evidenceRoute.DELETE, { method: "DELETE", params: P, body: { target: "frame", target_id: frame.id, thought_id: thought.id } })).toEqual({ deleted: true });
    const relation = (await ok(relationsRoute.POST, { params: P, body: { from_id: a, to_id: b, relationship_type: "needs" } })).relation;
    expect((await ok(relationRoute.GET, { params: { ...P, id: relation.id } })).relation.relationship_type).toBe("needs");
    expect((await ok(relationRoute.PATCH, { method: "PATCH", params: { ...P, id: relation.id }, body: { weight: 0.9 } })).relation.weight).toBe(0.9);
    expect((await ok(nodeRoute.PATCH, { method: "PATCH", params: { ...P, id: a }, body: { display_name: "WAL" } })).node.display_name).toBe("WAL");
    expect(await ok(relationRoute.DELETE, { method: "DELETE", params: { ...P, id: relation.id } })).toEqual({ deleted: relation.id });
    expect(await ok(frameRoute.DELETE, { method: "DELETE", params: { ...P, id: frame.id } })).toEqual({ deleted: frame.id });
    expect(await ok(thoughtRoute.DELETE, { method: "DELETE", params: { ...P, id: thought.id } })).toEqual({ deleted: thought.id });
    expect(await ok(nodeRoute.DELETE, { method: "DELETE", params: { ...P, id: b } })).toEqual({ deleted: b, frames: 0, relations: 0 });

    const c = ((await tool("node_create", { store: "kb", name: "vacuum", entity_type: "tool" })) as { node: { id: string } }).node.id;
    await tool("node_update", { store: "kb", id: c, changes: { tags: ["maintenance"] } });
    const f = ((await tool("frame_create", { store: "kb", node_id: c, column: "procedural", properties: { step: 1 } })) as { frame: { id: string } }).frame.id;
    expect(await tool("frame_delete", { store: "kb", id: f })).toEqual({ deleted: f });
    const r = ((await tool("relation_create", { store: "kb", from_id: c, to_id: a, relationship_type: "shrinks" })) as { relation: { id: string } }).relation.id;
    expect(await tool("relation_delete", { store: "kb", id: r })).toEqual({ deleted: r });
  });

  it("memories, learnings, tasks and the dialectic ledger", async () => {
    await tool("write_memory", { store: "kb", path: "ops/wal", body: "Checkpoint often." });
    expect(await tool("update_memory", { store: "kb", path: "ops/wal", body: "Checkpoint hourly." })).toMatchObject({ path: "ops/wal", body: expect.stringContaining("hourly") });
    expect(await tool("delete_memory", { store: "kb", path: "ops/wal" })).toEqual({ deleted: "ops/wal" });
    const learning = (await ok(learningsRoute.POST, { params: P, body: { predicate: "prefers_small_commits", args: {}, description: "keep commits small", confidence: 0.8 } })).learning;
    expect((await ok(learningRoute.GET, { params: { ...P, id: String(learning.id) } })).learning.id).toBe(learning.id);
    const task = (await ok(tasksRoute.POST, { body: { intent: "compact the WAL", spec: { limit: "64MB" } } })).task;
    expect(await tool("task_status", { task_id: task.task_id })).toMatchObject({ task: { task_id: task.task_id }, verdict: { verdict: "pending" } });
    const session = (await ok(sessionsRoute.POST, { body: { topic: "WAL size" } })).session;
    expect((await ok(sessionExportRoute.GET, { params: { id: session.session_id } })).sessions[0]).toMatchObject({ sessionId: session.key, clientId: session.session_id });
    expect(await ok(sweepRoute.POST, {})).toEqual({ failed: [] });
    expect((await ok(dialecticMetricsRoute.GET, {})).active_sessions).toBe(1);
  });
});
