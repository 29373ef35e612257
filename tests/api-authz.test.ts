import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTE_MODULES } from "@/app/api/v1/openapi.json/catalog";
import * as tokensRoute from "@/app/api/v1/tokens/route";
import * as tokenRoute from "@/app/api/v1/tokens/[id]/route";
import * as jobRoute from "@/app/api/v1/jobs/[id]/route";
import * as dialecticExportRoute from "@/app/api/v1/dialectic/export/route";
import * as dialecticRestoreRoute from "@/app/api/v1/dialectic/restore/route";
import * as dialecticSweepRoute from "@/app/api/v1/dialectic/sweep/route";
import * as sessionsRoute from "@/app/api/v1/dialectic/sessions/route";
import * as sessionRoute from "@/app/api/v1/dialectic/sessions/[id]/route";
import * as messagesRoute from "@/app/api/v1/dialectic/sessions/[id]/messages/route";
import * as claimRoute from "@/app/api/v1/dialectic/sessions/[id]/claim/route";
import * as abandonRoute from "@/app/api/v1/dialectic/sessions/[id]/abandon/route";
import * as tasksRoute from "@/app/api/v1/tasks/route";
import * as taskRoute from "@/app/api/v1/tasks/[id]/route";
import * as runsRoute from "@/app/api/v1/tasks/[id]/runs/route";
import * as finishRoute from "@/app/api/v1/tasks/[id]/runs/[runId]/finish/route";
import * as validationsRoute from "@/app/api/v1/tasks/[id]/validations/route";
import * as overridesRoute from "@/app/api/v1/overrides/route";
import * as provenanceRoute from "@/app/api/v1/provenance/route";
import * as nodesRoute from "@/app/api/v1/stores/[store]/nodes/route";
import { GET as metricsGET } from "@/app/api/metrics/route";
import { toAppError, type DescribedHandler } from "@/lib/api/route";
import { storeReferencePaths } from "@/lib/api/store-refs";
import { governance } from "@/lib/backend/governance";
import { handleMcpPost } from "@/lib/mcp/http";
import { runTool } from "@/lib/mcp/server";
import { MCP_TOOLS } from "@/lib/mcp/tools";
import { governanceSql, principalOf, seedDocument, seedStore, seedThought, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/**
 * Issue 14 findings 3, 4, 5 and 12: who may touch which store, token and
 * task. Every request here is made with a real token against a real
 * data dir; a refusal must carry the error envelope and nothing else.
 */

type Answer = { status: number; json: any }; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
type Handler = Parameters<typeof callRoute>[0];

const H = (c: string) => c.repeat(64);
let env: TestEnv;
const tok = {} as Record<
  "mineRead" | "mineCoreRead" | "mineWrite" | "mineCoreWrite" | "mineAdmin" | "mineCoreAdmin" | "root" | "alice" | "bob" | "carol" | "aliceRead",
  string
>;
const who = principalOf;

function mint(agent: string, scopes: ("read" | "write" | "admin")[], stores: string[] | null = null): Promise<string> {
  return seedToken({ label: agent, agent_id: agent, scopes, stores });
}

beforeAll(async () => {
  env = await useTestBackend();
  await seedStore("mine");
  await seedStore("secret");
  await seedDocument("core", "identity.md", "# Identity\n\nzebracore: the owner's private preferences live in core");
  await seedDocument("mine", "note.md", "# Note\n\nzebracore appears in mine as well");
  await seedThought("core", { content: "zebracore private preference kept in core" });
  await seedThought("mine", { content: "zebracore thought kept in mine" });
  tok.mineRead = await mint("mine-reader", ["read"], ["mine"]);
  tok.mineCoreRead = await mint("mine-core-reader", ["read"], ["mine", "core"]);
  tok.mineWrite = await mint("mine-writer", ["write"], ["mine"]);
  tok.mineCoreWrite = await mint("mine-writer", ["write"], ["mine", "core"]);
  tok.mineAdmin = await mint("mine-admin", ["admin"], ["mine"]);
  tok.mineCoreAdmin = await mint("mine-admin", ["admin"], ["mine", "core"]);
  tok.root = await mint("root", ["admin"]);
  tok.alice = await mint("alice", ["write"]);
  tok.aliceRead = await mint("alice", ["read"]);
  tok.bob = await mint("bob", ["write"]);
  tok.carol = await mint("carol", ["write"]);
});
afterAll(() => env.cleanup());

function isEnvelopeOnly(json: unknown): boolean {
  if (!json || typeof json !== "object") return false;
  const keys = Object.keys(json);
  const e = (json as { error?: Record<string, unknown> }).error;
  return keys.length === 1 && keys[0] === "error" && typeof e?.code === "string" && typeof e.message === "string" && Array.isArray(e.details);
}

/** Rows of the ledger tables a refused request must not touch. */
async function counts(): Promise<string> {
  const tables = ["tasks", "skill_runs", "validations", "provenance", "overrides", "api_tokens", "dialectic_sessions", "dialectic_messages"];
  const out: string[] = [];
  for (const t of tables) out.push(`${t}=${(await governanceSql<{ n: number }>(`select cast(count(*) as integer) as n from ${t}`))[0].n}`);
  return out.join(" ");
}

/** A tool call the way the MCP server makes it; a thrown AppError becomes its status and envelope. */
async function tool(name: string, token: string, args: Record<string, unknown>): Promise<Answer> {
  try {
    return { status: 200, json: await runTool({ name, args, options: { principal: await who(token) } }) };
  } catch (e) {
    const err = toAppError({ error: e, requestId: "test" });
    return { status: err.status, json: err.toBody() };
  }
}

describe("finding 3: every store a request names is checked against the token's allow-list", () => {
  type Route = { file: string; method: string; handler: DescribedHandler; paramNames: string[]; refs: string[] };
  const routes: Route[] = Object.entries(ROUTE_MODULES).flatMap(([file, mod]) =>
    Object.entries(mod).flatMap(([method, h]) => {
      const handler = h as DescribedHandler;
      if (typeof handler !== "function" || !handler.route) return [];
      const { params, query, body } = handler.route;
      const refs = [
        ...storeReferencePaths(params).map((p) => `params.${p}`),
        ...storeReferencePaths(query).map((p) => `query.${p}`),
        ...storeReferencePaths(body).map((p) => `body.${p}`),
      ];
      return [{ file, method, handler, paramNames: [...file.matchAll(/\[(\w+)\]/g)].map((m) => m[1]), refs }];
    }),
  );

  /**
   * One row per store reference other than the path's `{store}` (every path
   * store is covered by the generated test below). `deny` must be refused
   * for a token of `mine` only; `allow` must pass for the token whose list
   * also has the store the row names.
   */
  type Row = { setup?: () => Promise<void>; deny: () => Promise<Answer>; allow: () => Promise<Answer>; allowed?: (a: Answer) => void };
  const hasCore = (a: Answer) => expect(JSON.stringify(a.json.results.map((r: { store: string }) => r.store))).toContain('"core"');
  const search = (token: string, how: "GET" | "POST") => {
    const handler = ROUTE_MODULES["app/api/v1/stores/[store]/search/route.ts"][how] as Handler;
    return how === "GET"
      ? callRoute(handler, { token, params: { store: "mine" }, url: "http://x/api/v1/stores/mine/search?q=zebracore&mode=fts&include_core=true" })
      : callRoute(handler, { token, params: { store: "mine" }, body: { q: "zebracore", mode: "fts", include_core: true } });
  };
  const remember = (token: string) => callRoute(ROUTE_MODULES["app/api/v1/stores/[store]/remember/route.ts"].POST as Handler, { token, params: { store: "mine" }, body: { query: "zebracore preference", include_core: true } });
  const artifact = (store: string) => ({ artifact_type: "summary", artifact_id: `doc-${store}`, store });
  let runSeq = 0;
  const startRun = (token: string, store: string) =>
    callRoute(runsRoute.POST, { token, params: { id: "t-refs" }, body: { run_id: `r-refs-${++runSeq}`, skill: "s", input_hash: H("a"), runner_version: "1", output_hash: H("b"), exit_code: 0, artifacts: [artifact(store)] } });
  const openRun = async (token: string) => {
    const id = `r-open-${++runSeq}`;
    expect((await callRoute(runsRoute.POST, { token, params: { id: "t-refs" }, body: { run_id: id, skill: "s", input_hash: H("a"), runner_version: "1" } })).status).toBe(201);
    return id;
  };
  // Runs to finish are opened in a row's setup, so the refused request is the only thing between the two counts.
  const opened: string[] = [];
  const openTwo = async () => {
    opened.length = 0;
    opened.push(await openRun(tok.mineWrite), await openRun(tok.mineWrite));
  };
  const finishRun = (token: string, store: string, runId: string) =>
    callRoute(finishRoute.POST, { token, params: { id: "t-refs", runId }, body: { output_hash: H("c"), exit_code: 0, artifacts: [artifact(store)] } });
  const toolRun = (token: string, store: string) => tool("record_run", token, { task_id: "t-refs", run_id: `r-tool-${++runSeq}`, skill: "s", input_hash: H("a"), runner_version: "1", output_hash: H("d"), exit_code: 0, artifacts: [artifact(store)] });
  const toolFinish = (token: string, store: string, runId: string) => tool("finish_run", token, { task_id: "t-refs", run_id: runId, output_hash: H("e"), exit_code: 0, artifacts: [artifact(store)] });
  const provenance = (token: string, store: string) =>
    callRoute(provenanceRoute.POST, { token, body: { records: [{ artifact_type: "chunk_vector", artifact_id: `p-${store}`, store, input_hash: H("f"), model_name: "builtin" }] } });

  const ROWS: Record<string, Row> = {
    "GET /stores/{store}/search query.include_core": { deny: () => search(tok.mineRead, "GET"), allow: () => search(tok.mineCoreRead, "GET"), allowed: hasCore },
    "POST /stores/{store}/search body.include_core": { deny: () => search(tok.mineRead, "POST"), allow: () => search(tok.mineCoreRead, "POST"), allowed: hasCore },
    "POST /stores/{store}/remember body.include_core": { deny: () => remember(tok.mineRead), allow: () => remember(tok.mineCoreRead), allowed: hasCore },
    "POST /provenance body.records[].store": { deny: () => provenance(tok.mineWrite, "secret"), allow: () => provenance(tok.mineWrite, "mine"), allowed: (a) => expect(a.json.inserted).toBe(1) },
    "GET /provenance query.store": {
      deny: () => callRoute(provenanceRoute.GET, { token: tok.mineRead, url: "http://x/api/v1/provenance?artifact_type=chunk_vector&artifact_id=p-secret&store=secret" }),
      allow: () => callRoute(provenanceRoute.GET, { token: tok.mineRead, url: "http://x/api/v1/provenance?artifact_type=chunk_vector&artifact_id=p-mine&store=mine" }),
    },
    "GET /activity query.store": {
      deny: () => callRoute(ROUTE_MODULES["app/api/v1/activity/route.ts"].GET as Handler, { token: tok.mineAdmin, url: "http://x/api/v1/activity?store=secret" }),
      allow: () => callRoute(ROUTE_MODULES["app/api/v1/activity/route.ts"].GET as Handler, { token: tok.mineAdmin, url: "http://x/api/v1/activity?store=mine" }),
    },
    "GET /activity/summary query.store": {
      deny: () => callRoute(ROUTE_MODULES["app/api/v1/activity/summary/route.ts"].GET as Handler, { token: tok.mineAdmin, url: "http://x/api/v1/activity/summary?agent=mine-writer&store=secret" }),
      allow: () => callRoute(ROUTE_MODULES["app/api/v1/activity/summary/route.ts"].GET as Handler, { token: tok.mineAdmin, url: "http://x/api/v1/activity/summary?agent=mine-writer&store=mine" }),
    },
    "POST /tasks/{id}/runs body.artifacts[].store": { deny: () => startRun(tok.mineWrite, "secret"), allow: () => startRun(tok.mineWrite, "mine") },
    "POST /tasks/{id}/runs/{runId}/finish body.artifacts[].store": { setup: openTwo, deny: () => finishRun(tok.mineWrite, "secret", opened[0]), allow: () => finishRun(tok.mineWrite, "mine", opened[1]) },
    "tool search include_core": {
      deny: () => tool("search", tok.mineRead, { store: "mine", q: "zebracore", mode: "fts", include_core: true }),
      allow: () => tool("search", tok.mineCoreRead, { store: "mine", q: "zebracore", mode: "fts", include_core: true }),
      allowed: hasCore,
    },
    "tool remember include_core": {
      deny: () => tool("remember", tok.mineRead, { store: "mine", query: "zebracore preference", include_core: true }),
      allow: () => tool("remember", tok.mineCoreRead, { store: "mine", query: "zebracore preference", include_core: true }),
      allowed: hasCore,
    },
    "tool record_run artifacts[].store": { deny: () => toolRun(tok.mineWrite, "secret"), allow: () => toolRun(tok.mineWrite, "mine") },
    "tool finish_run artifacts[].store": { setup: openTwo, deny: () => toolFinish(tok.mineWrite, "secret", opened[0]), allow: () => toolFinish(tok.mineWrite, "mine", opened[1]) },
  };

  it("has a row for every store reference in every route and tool (a new one without a row fails here)", () => {
    const declared = [
      ...routes.flatMap((r) => r.refs.filter((p) => p !== "params.store").map((p) => `${r.handler.route.name} ${p}`)),
      ...MCP_TOOLS.flatMap((t) => storeReferencePaths(t.input).filter((p) => p !== "store").map((p) => `tool ${t.name} ${p}`)),
    ].sort();
    expect(declared).toEqual(Object.keys(ROWS).sort());
  });

  /** Params are parsed before the allow-list is checked: an id of the format this route takes. */
  async function paramsFor(r: Route, store: string): Promise<Record<string, string>> {
    let params: Record<string, string> = {};
    for (const id of ["00000000-0000-4000-8000-000000000000", "1", "0".repeat(32), "k"]) {
      params = Object.fromEntries(r.paramNames.map((p) => [p, p === "store" ? store : p === "kind" ? "memory" : id]));
      const probe = await callRoute(r.handler as Handler, { method: r.method, token: tok.root, params, url: `http://x/api/v1/${r.file}` });
      if (probe.json?.error?.message !== "invalid params") break;
    }
    return params;
  }

  it("table-driven over every route and tool with a store reference: another store is 403 with only the envelope and nothing written; a store in the list is allowed", async () => {
    const wrong: string[] = [];
    const check = async (name: string, row: Row, { strictAllow }: { strictAllow: boolean }) => {
      await row.setup?.();
      const before = await counts();
      const denied = await row.deny();
      if (denied.status !== 403 || !isEnvelopeOnly(denied.json) || !/store (secret|core)/.test(denied.json.error.message)) wrong.push(`${name} (not in the list) → ${denied.status} ${JSON.stringify(denied.json).slice(0, 120)}`);
      if ((await counts()) !== before) wrong.push(`${name}: a refused request wrote`);
      const allowed = await row.allow();
      // Path rows are called without a body or query: "allowed" there means only "not refused for its store".
      if (strictAllow ? allowed.status >= 300 : allowed.status === 403) wrong.push(`${name} (in the list) → ${allowed.status} ${JSON.stringify(allowed.json).slice(0, 120)}`);
      else if (strictAllow) row.allowed?.(allowed);
    };
    await governanceSql("insert into tasks (task_id, client_id, created_at, updated_at, requested_by, intent, spec_json, required_checks_json, verdict) values ('t-refs', 't-refs', 0, 0, 'mine-writer', 'refs', '{}', '[\"critic\",\"runner\"]', 'pending') on conflict do nothing");
    for (const [name, row] of Object.entries(ROWS)) await check(name, row, { strictAllow: true });
    for (const r of routes.filter((x) => x.refs.includes("params.store"))) {
      // Deleting the allowed store would take it from every later row (and paramsFor probes as an unrestricted admin):
      // for that route only the refusal is probed here; tests/limits-stores.test.ts deletes a store of its own.
      const destroys = ["DELETE /stores/{store}", "POST /stores/{store}/archive", "POST /stores/{store}/unarchive"].includes(r.handler.route.name);
      const [other, own] = destroys ? [{ store: "secret" }, { store: "mine" }] : [await paramsFor(r, "secret"), await paramsFor(r, "mine")];
      const call = (params: Record<string, string>) => () => callRoute(r.handler as Handler, { method: r.method, token: tok.mineAdmin, params, url: `http://x/api/v1/${r.file}` });
      await check(`${r.handler.route.name} params.store`, { deny: call(other), allow: destroys ? () => Promise.resolve({ status: 200, json: null }) : call(own) }, { strictAllow: false });
    }
    for (const t of MCP_TOOLS.filter((x) => storeReferencePaths(x.input).includes("store"))) {
      await check(`tool ${t.name} store`, { deny: () => tool(t.name, tok.mineAdmin, { store: "secret" }), allow: () => tool(t.name, tok.mineAdmin, { store: "mine" }) }, { strictAllow: false });
    }
    expect(wrong).toEqual([]);
    // Without include_core nothing of core is read, and a token of core alone still reads core with it.
    const plain = await callRoute(ROUTE_MODULES["app/api/v1/stores/[store]/search/route.ts"].POST as Handler, { token: tok.mineRead, params: { store: "mine" }, body: { q: "zebracore", mode: "fts" } });
    expect(plain.json.results.map((r: { store: string }) => r.store)).toEqual(["mine"]);
    expect((await tool("search", await mint("core-reader", ["read"], ["core"]), { store: "core", q: "zebracore", mode: "fts", include_core: true })).status).toBe(200);
    // The path probes started reindex jobs: let them finish before the data dir goes away.
    const running = async () => (await governanceSql<{ n: number }>("select cast(count(*) as integer) as n from admin_jobs where status = 'running'"))[0].n;
    await expect.poll(running, { timeout: 30_000 }).toBe(0);
  });

  it("a provenance lookup without a store shows a store-limited token only facts of its stores", async () => {
    await callRoute(provenanceRoute.POST, { token: tok.root, body: { records: [{ artifact_type: "chunk_vector", artifact_id: "shared-42", store: "secret", input_hash: H("9") }] } });
    const url = "http://x/api/v1/provenance?artifact_type=chunk_vector&artifact_id=shared-42";
    expect((await callRoute(provenanceRoute.GET, { token: tok.root, url })).json.provenance).toHaveLength(1);
    expect((await callRoute(provenanceRoute.GET, { token: tok.mineRead, url })).json.provenance).toEqual([]);
  });
});

describe("finding 4: token management needs an unrestricted admin; jobs are read per store", () => {
  it("a store-limited admin cannot mint, list or revoke tokens; an unrestricted admin can", async () => {
    const before = await counts();
    for (const stores of [null, ["mine"]]) {
      const r = await callRoute(tokensRoute.POST, { token: tok.mineAdmin, body: { label: "esc", agent_id: "escalated", scopes: ["admin"], stores } });
      expect(r.status).toBe(403);
      expect(isEnvelopeOnly(r.json)).toBe(true);
    }
    const list = await callRoute(tokensRoute.GET, { token: tok.mineAdmin });
    expect(list.status).toBe(403);
    expect(JSON.stringify(list.json)).not.toContain("root");
    const rootId = (await who(tok.root)).tokenId!;
    expect((await callRoute(tokenRoute.DELETE, { token: tok.mineAdmin, params: { id: String(rootId) } })).status).toBe(403);
    expect(await counts()).toBe(before);
    expect(await governance().verifyApiToken({ token: tok.root })).not.toBeNull();

    const minted = await callRoute(tokensRoute.POST, { token: tok.root, body: { label: "ci", agent_id: "ci", scopes: ["read"], stores: ["mine"] } });
    expect(minted.status).toBe(201);
    expect((await callRoute(tokensRoute.GET, { token: tok.root })).json.tokens.map((t: { agent_id: string }) => t.agent_id)).toContain("mine-admin");
    expect((await callRoute(tokenRoute.DELETE, { token: tok.root, params: { id: String(minted.json.id) } })).status).toBe(200);
  });

  it("whole-ledger dialectic admin routes (export, restore, sweep) refuse a store-limited admin", async () => {
    expect((await callRoute(dialecticExportRoute.GET, { token: tok.mineAdmin })).status).toBe(403);
    expect((await callRoute(dialecticSweepRoute.POST, { token: tok.mineAdmin })).status).toBe(403);
    const snapshot = (await callRoute(dialecticExportRoute.GET, { token: tok.root })).json;
    expect((await callRoute(dialecticRestoreRoute.POST, { token: tok.mineAdmin, body: snapshot })).status).toBe(403);
  });

  it("GET /jobs/{id}: a store-limited admin reads its stores' jobs only; another store's job is 404", async () => {
    const insert = { run: (id: string, store: string) => governanceSql("insert into admin_jobs (id, kind, store, actor, status, owner, attempts, started_at, heartbeat_at, finished_at) values (?, 'reindex', ?, 'test', 'succeeded', 'x', 1, 1, 1, 2)", [id, store]) };
    const secretJob = "11111111-1111-4111-8111-111111111111";
    const mineJob = "22222222-2222-4222-8222-222222222222";
    await insert.run(secretJob, "secret");
    await insert.run(mineJob, "mine");
    const other = await callRoute(jobRoute.GET, { token: tok.mineAdmin, params: { id: secretJob } });
    expect(other.status).toBe(404);
    expect(isEnvelopeOnly(other.json)).toBe(true);
    expect((await callRoute(jobRoute.GET, { token: tok.mineAdmin, params: { id: mineJob } })).json.job.store).toBe("mine");
    expect((await callRoute(jobRoute.GET, { token: tok.root, params: { id: secretJob } })).json.job.store).toBe("secret");
  });
});

describe("finding 5: only the requester, an assignee or an admin runs, validates or reads a task", () => {
  const create = (token: string, body: Record<string, unknown>) => callRoute(tasksRoute.POST, { token, body });
  const validate = (token: string, id: string, body: Record<string, unknown>) => callRoute(validationsRoute.POST, { token, params: { id }, body });
  const run = (token: string, id: string, body: Record<string, unknown>) => callRoute(runsRoute.POST, { token, params: { id }, body });
  const read = (token: string, id: string) => callRoute(taskRoute.GET, { token, params: { id } });
  const list = async (token: string) => ((await callRoute(tasksRoute.GET, { token, url: "http://x/api/v1/tasks" })).json.tasks as { task_id: string }[]).map((t) => t.task_id);

  beforeAll(async () => {
    expect((await create(tok.alice, { task_id: "t-alice", intent: "ship it", spec: { plan: "secret plan" }, assignees: ["bob"] })).status).toBe(201);
    expect((await create(tok.carol, { task_id: "t-carol", intent: "carol's own", spec: {} })).status).toBe(201);
  });

  it("a stranger cannot validate, run, finish, override or link provenance to someone else's task (answered as an unknown id: 404, provenance 422), and nothing is written", async () => {
    expect((await run(tok.alice, "t-alice", { run_id: "r-alice", skill: "build", input_hash: H("1"), runner_version: "1" })).status).toBe(201);
    const before = await counts();
    const attempts: [string, Promise<Answer>][] = [
      ["validate", validate(tok.carol, "t-alice", { critic_passed: false, runner_passed: false })],
      ["run", run(tok.carol, "t-alice", { skill: "build", input_hash: H("2"), runner_version: "1" })],
      ["finish", callRoute(finishRoute.POST, { token: tok.carol, params: { id: "t-alice", runId: "r-alice" }, body: { output_hash: H("3"), exit_code: 1 } })],
      ["override", callRoute(overridesRoute.POST, { token: tok.carol, body: { task_id: "t-alice", note: "I say it failed" } })],
      ["provenance", callRoute(provenanceRoute.POST, { token: tok.carol, body: { records: [{ artifact_type: "x", artifact_id: "1", store: "mine", input_hash: H("4"), run_id: "r-alice" }] } })],
      ["validate (store-limited admin)", validate(tok.mineAdmin, "t-alice", { critic_passed: false, runner_passed: false })],
    ];
    for (const [what, p] of attempts) {
      const r = await p;
      expect(r.status, `${what}: ${JSON.stringify(r.json)}`).toBe(what === "provenance" ? 422 : 404);
      expect(isEnvelopeOnly(r.json)).toBe(true);
      expect(JSON.stringify(r.json)).not.toContain("secret plan");
    }
    expect(await counts()).toBe(before);
  });

  it("MCP: the same answers for record_validation, record_run, finish_run and task_status", async () => {
    const before = await counts();
    expect((await tool("record_validation", tok.carol, { task_id: "t-alice", critic_passed: false, runner_passed: false })).status).toBe(404);
    expect((await tool("record_run", tok.carol, { task_id: "t-alice", skill: "s", input_hash: H("5"), runner_version: "1" })).status).toBe(404);
    expect((await tool("finish_run", tok.carol, { task_id: "t-alice", run_id: "r-alice", output_hash: H("6"), exit_code: 0 })).status).toBe(404);
    const status = await tool("task_status", tok.carol, { task_id: "t-alice" });
    expect(status.status).toBe(404);
    expect(JSON.stringify(status.json)).not.toContain("secret plan");
    expect(await counts()).toBe(before);
    const created = await tool("task_create", tok.carol, { task_id: "t-mcp", intent: "via mcp", spec: {}, assignees: ["alice"] });
    expect(created.json.task).toMatchObject({ requested_by: "carol", assignees: ["alice"] });
    expect((await tool("record_validation", tok.alice, { task_id: "t-mcp", critic_passed: true, runner_passed: true })).json.validation.agent_id).toBe("alice");
  });

  it("reads: an agent lists and reads only tasks it requested or is assigned to; an unrestricted admin reads all", async () => {
    expect(await list(tok.carol)).not.toContain("t-alice");
    expect(await list(tok.bob)).toContain("t-alice");
    expect(await list(tok.aliceRead)).toContain("t-alice");
    expect(await list(tok.mineAdmin)).not.toContain("t-alice");
    expect(await list(tok.root)).toEqual(expect.arrayContaining(["t-alice", "t-carol"]));
    const hidden = await read(tok.carol, "t-alice");
    expect(hidden.status).toBe(404);
    expect(isEnvelopeOnly(hidden.json)).toBe(true);
    expect((await read(tok.bob, "t-alice")).json.task.spec).toEqual({ plan: "secret plan" });
    expect((await read(tok.root, "t-alice")).status).toBe(200);
    // Provenance proofs leave out tasks the caller does not work on.
    await callRoute(provenanceRoute.POST, { token: tok.alice, body: { records: [{ artifact_type: "doc", artifact_id: "d-1", store: "mine", input_hash: H("7"), task_id: "t-alice" }] } });
    const proofs = await callRoute(provenanceRoute.GET, { token: tok.carol, url: "http://x/api/v1/provenance?artifact_type=doc&artifact_id=d-1" });
    expect(proofs.json.tasks).toEqual([]);
    expect(JSON.stringify(proofs.json)).not.toContain("secret plan");
  });

  it("the requester and an assignee may run and validate; runs and validations record their agent; an unrestricted admin may too", async () => {
    const byBob = await validate(tok.bob, "t-alice", { validation_id: "v-bob", critic_passed: true, runner_passed: true });
    expect(byBob.status).toBe(201);
    expect(byBob.json.validation.agent_id).toBe("bob");
    const bobRun = await run(tok.bob, "t-alice", { run_id: "r-bob", skill: "test", input_hash: H("8"), runner_version: "1", output_hash: H("9"), exit_code: 0 });
    expect(bobRun.json.run.agent_id).toBe("bob");
    expect((await validate(tok.alice, "t-alice", { validation_id: "v-alice", critic_passed: true, runner_passed: true })).json.validation.agent_id).toBe("alice");
    expect((await validate(tok.root, "t-alice", { validation_id: "v-root", critic_passed: true, runner_passed: true })).status).toBe(201);
    const s = (await read(tok.alice, "t-alice")).json;
    expect(s.validations.map((v: { validation_id: string; agent_id: string }) => `${v.validation_id}:${v.agent_id}`)).toEqual(["v-bob:bob", "v-alice:alice", "v-root:root"]);
  });

  it("client ids stay idempotent for the same agent; another agent reusing one on the same task is a conflict, on its own task its own", async () => {
    expect((await validate(tok.bob, "t-alice", { validation_id: "v-bob", critic_passed: true, runner_passed: true })).status).toBe(200);
    expect((await validate(tok.alice, "t-alice", { validation_id: "v-bob", critic_passed: true, runner_passed: true })).status).toBe(409);
    expect((await run(tok.bob, "t-alice", { run_id: "r-bob", skill: "test", input_hash: H("8"), runner_version: "1", output_hash: H("9"), exit_code: 0 })).status).toBe(200);
    expect((await run(tok.alice, "t-alice", { run_id: "r-bob", skill: "test", input_hash: H("8"), runner_version: "1", output_hash: H("9"), exit_code: 0 })).status).toBe(409);
    const retry = await create(tok.alice, { task_id: "t-alice", intent: "ship it", spec: { plan: "secret plan" }, assignees: ["bob"] });
    expect(retry.status).toBe(200);
    expect((await create(tok.alice, { task_id: "t-alice", intent: "ship it", spec: { plan: "secret plan" }, assignees: ["carol"] })).status).toBe(409);
    // Run ids are per task: the id of a run on a task the caller cannot see is free on its own, and nothing names that task.
    const own = await run(tok.carol, "t-carol", { run_id: "r-bob", skill: "test", input_hash: H("8"), runner_version: "1" });
    expect(own.status).toBe(201);
    expect(JSON.stringify(own.json)).not.toContain("t-alice");
  });

  it("assignees are agent ids: a list of them is kept on the task, a malformed one is 400", async () => {
    const ok = await create(tok.alice, { intent: "x", spec: {}, assignees: ["bob", "carol", "bob", "alice"] });
    expect(ok.status).toBe(201);
    expect(ok.json.task.assignees).toEqual(["bob", "carol"]);
    expect((await create(tok.alice, { intent: "x", spec: {}, assignees: ["not an id"] })).status).toBe(400);
  });
});

describe("finding 12 (i): dialectic writes answer 404 for a session the caller cannot read, as GET does", () => {
  const thesis = { message_type: "thesis", reasoning: "paused on a flaky deploy" };
  it("post, claim and abandon by a stranger: 404 with no participant named; MCP dialectic_post too", async () => {
    expect((await callRoute(sessionsRoute.POST, { token: tok.alice, body: { session_id: "s-priv", topic: "private review", reviewer_agent_id: "bob" } })).status).toBe(201);
    expect((await callRoute(sessionRoute.GET, { token: tok.carol, params: { id: "s-priv" } })).status).toBe(404);
    const before = await counts();
    const answers: Answer[] = [
      await callRoute(messagesRoute.POST, { token: tok.carol, params: { id: "s-priv" }, body: thesis }),
      await callRoute(messagesRoute.POST, { token: tok.carol, params: { id: "s-priv" }, body: { ...thesis, message_type: "antithesis" } }),
      await callRoute(claimRoute.POST, { token: tok.carol, params: { id: "s-priv" } }),
      await callRoute(abandonRoute.POST, { token: tok.carol, params: { id: "s-priv" }, body: {} }),
      await tool("dialectic_post", tok.carol, { session_id: "s-priv", ...thesis }),
    ];
    for (const a of answers) {
      expect(a.status, JSON.stringify(a.json)).toBe(404);
      expect(isEnvelopeOnly(a.json)).toBe(true);
      expect(JSON.stringify(a.json)).not.toMatch(/alice|bob/);
    }
    expect(await counts()).toBe(before);
    // Participants still get the 409 that tells them whose turn it is.
    const early = await callRoute(messagesRoute.POST, { token: tok.bob, params: { id: "s-priv" }, body: { ...thesis, message_type: "antithesis" } });
    expect(early.status).toBe(409);
    expect(early.json.error.details[0].expected_agent_ids).toEqual(["alice"]);
  });

  it("a store-limited admin is not a dialectic admin: another agent's session is 404", async () => {
    expect((await callRoute(sessionRoute.GET, { token: tok.mineAdmin, params: { id: "s-priv" } })).status).toBe(404);
    expect((await callRoute(sessionRoute.GET, { token: tok.root, params: { id: "s-priv" } })).status).toBe(200);
  });
});

describe("finding 12 (ii): /api/metrics needs a token unless DUALMIND_METRICS_PUBLIC_LOOPBACK says otherwise", () => {
  const scrape = (headers: Record<string, string> = {}, url = "http://127.0.0.1:3000/api/metrics") => metricsGET(new Request(url, { headers }));

  it("by default a tokenless scrape is 401 even from loopback to a loopback-bound server; a read token works", async () => {
    const r = await scrape({ host: "127.0.0.1:3000" });
    expect(r.status).toBe(401);
    expect((await r.json()).error.code).toBe("unauthorized");
    expect((await scrape({ authorization: `Bearer ${tok.mineRead}` })).status).toBe(200);
  });

  it("with the setting on, only a request addressed to a loopback name is let in: any other Host (DNS rebinding, a proxy) is 401", async () => {
    const saved = env;
    const scoped = await useTestBackend({ DUALMIND_METRICS_PUBLIC_LOOPBACK: "true" });
    try {
      expect((await scrape({ host: "127.0.0.1:3000" })).status).toBe(200);
      expect((await scrape({ host: "localhost" }, "http://localhost/api/metrics")).status).toBe(200);
      expect((await scrape({ host: "[::1]:3000" }, "http://[::1]:3000/api/metrics")).status).toBe(200);
      for (const host of ["evil.example", "evil.example:3000", "127.0.0.1.nip.io", "dualmind.internal"]) {
        expect((await scrape({ host }, `http://${host}/api/metrics`)).status, host).toBe(401);
      }
      expect((await scrape({ host: "127.0.0.1:3000", "x-forwarded-for": "203.0.113.9" })).status).toBe(401);
    } finally {
      await scoped.cleanup();
      env = saved;
    }
  });
});

describe("finding 12 (iii): JSON nested thousands deep is a 400 with the envelope, not a 500", () => {
  const deep = (n: number): unknown => JSON.parse("[".repeat(n) + "]".repeat(n));
  const deepObject = (n: number): Record<string, unknown> => JSON.parse('{"a":'.repeat(n) + "1" + "}".repeat(n));

  it("REST: a task spec or node attributes nested 3,000 deep", async () => {
    const before = await counts();
    const task = await callRoute(tasksRoute.POST, { token: tok.alice, body: { intent: "deep", spec: deep(3000) } });
    expect(task.status).toBe(400);
    expect(isEnvelopeOnly(task.json)).toBe(true);
    const node = await callRoute(nodesRoute.POST, { token: tok.root, params: { store: "mine" }, body: { name: "deep", entity_type: "system", attributes: deepObject(3000) } });
    expect(node.status).toBe(400);
    expect(isEnvelopeOnly(node.json)).toBe(true);
    expect(await counts()).toBe(before);
    // Ordinary nesting is fine.
    expect((await callRoute(tasksRoute.POST, { token: tok.alice, body: { intent: "shallow", spec: deep(20) } })).status).toBe(201);
  });

  it("MCP endpoint: a tool call with a spec nested 3,000 deep is a 400 with the envelope; runTool refuses deep arguments too", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "task_create", arguments: { intent: "deep", spec: deep(3000) } } });
    const res = await handleMcpPost(
      new Request("http://127.0.0.1/api/mcp", { method: "POST", headers: { authorization: `Bearer ${tok.alice}`, accept: "application/json, text/event-stream", "content-type": "application/json" }, body }),
    );
    expect(res.status).toBe(400);
    expect(isEnvelopeOnly(await res.json())).toBe(true);
    expect((await tool("node_create", tok.root, { store: "mine", name: "deep", entity_type: "system", attributes: deepObject(3000) })).status).toBe(400);
  });
});
