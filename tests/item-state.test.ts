import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as invalidateRoute from "@/app/api/v1/stores/[store]/items/[kind]/[id]/invalidate/route";
import * as restoreRoute from "@/app/api/v1/stores/[store]/items/[kind]/[id]/restore/route";
import * as historyRoute from "@/app/api/v1/stores/[store]/items/[kind]/[id]/history/route";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import * as learningsRoute from "@/app/api/v1/stores/[store]/learnings/route";
import * as tracesRoute from "@/app/api/v1/stores/[store]/traces/route";
import * as recallRoute from "@/app/api/v1/stores/[store]/recall/route";
import * as thoughtsRoute from "@/app/api/v1/stores/[store]/thoughts/route";
import * as nodesRoute from "@/app/api/v1/stores/[store]/nodes/route";
import * as relationsRoute from "@/app/api/v1/stores/[store]/relations/route";
import * as framesRoute from "@/app/api/v1/stores/[store]/frames/route";
import * as rememberRoute from "@/app/api/v1/stores/[store]/remember/route";
import { runTool } from "@/lib/mcp/server";
import { ITEM_STATE_LIMITS } from "@/lib/index/item-state";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { callRoute } from "./helpers";
import { drainEmbeddings, governanceSql, principalOf, seedStore, seedToken, seedTokens, storeSql, useTestBackend, type TestEnv } from "./backend";

import { itemDecisionAction } from "@/app/(dashboard)/items/actions";
import { governance } from "@/lib/backend/governance";
import { decideItemIn } from "@/lib/api/items";
import { stores } from "@/lib/stores/backend";

// The dashboard's action reads its caller from the session cookie (next-auth's getServerSession); here the test says who calls.
vi.mock("server-only", () => ({}));
const caller = vi.hoisted(() => ({ session: null as null | { user: { id: number; role: string; sv: number; name: string } } }));
vi.mock("next-auth", async (importOriginal) => ({ ...(await importOriginal<typeof import("next-auth")>()), getServerSession: async () => caller.session }));
vi.mock("next/cache", () => ({ revalidatePath: () => undefined }));

let env: TestEnv;
let write: string;
let read: string;
const P = { store: "kb" };

/** Stores kb and other, a writer's and a reader's tokens. */
const seed = async () => {
  await seedStore("kb");
  await seedStore("other");
  return seedTokens({ write: { label: "w", agent_id: "curator", scopes: ["write"] }, read: { label: "r", agent_id: "reader", scopes: ["read"] } });
};
beforeEach(async () => {
  const started = await useTestBackend({}, { seed });
  env = started;
  ({ write, read } = started.seeded);
});
afterEach(async () => {
  await env.cleanup();
  resetEmbedderForTests();
});

const at = (path: string, q: Record<string, string | number> = {}) => `http://127.0.0.1/api/v1/stores/kb/${path}?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`;
const decide = (route: typeof invalidateRoute | typeof restoreRoute, kind: string, id: string, reason: string, store = "kb") => callRoute(route.POST, { token: write, params: { store, kind, id }, body: { reason } });
const history = (kind: string, id: string) => callRoute(historyRoute.GET, { token: read, params: { ...P, kind, id } });
const created = (r: { status: number; json: unknown }) => {
  expect(r.status, JSON.stringify(r.json)).toBe(201);
  return r.json as Record<string, { id: string | number; path?: string }>;
};

/** What each retrieval answers for its query: the ids it returns. */
const searched = async (q: string, extra: Record<string, unknown> = {}) => (await callRoute(searchRoute.POST, { token: read, params: P, body: { q, mode: "fts", ...extra } })).json.results.map((h: { path: string }) => h.path);
const listedMemories = async () => (await callRoute(memoriesRoute.GET, { token: read, params: P, url: at("memories") })).json.memories.map((m: { path: string }) => m.path);
const recalled = async (query: string, extra: Record<string, unknown> = {}) => {
  const r = await callRoute(recallRoute.POST, { token: read, params: P, body: { query, signals: "lexical", min_score: 0, ...extra } });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return [...r.json.traces.map((t: { id: number }) => `trace:${t.id}`), ...r.json.learnings.map((l: { id: number }) => `learning:${l.id}`)];
};
const remembered = async (query: string, extra: Record<string, unknown> = {}) => (await callRoute(rememberRoute.POST, { token: read, params: P, body: { query, ...extra } })).json.results.map((r: { id: string }) => r.id);

describe("governed memory: invalidate, restore and history of any single item", () => {
  it("a retired memory leaves search and the memory list, as_of before its retirement still finds it, restore brings it back unchanged", async () => {
    expect((await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "people/alice", body: "Alice lives in Lisbon and works as a cartographer." } })).status).toBe(201);
    expect(await searched("cartographer lisbon")).toEqual(["memory/people/alice.md"]);
    const [memory] = (await callRoute(memoriesRoute.GET, { token: read, params: P, url: at("memories") })).json.memories;
    const before = Date.now();
    await new Promise((r) => setTimeout(r, 5));

    const retired = await decide(invalidateRoute, "memory", "people/alice", "she moved to Porto");
    expect(retired.status, JSON.stringify(retired.json)).toBe(200);
    expect(retired.json.state).toMatchObject({ kind: "memory", id: "people/alice", status: "retired", reason: "she moved to Porto", decided_by: "agent:curator" });
    expect(await searched("cartographer lisbon")).toEqual([]);
    expect(await listedMemories()).toEqual([]);
    // What was believed before the decision, and retired items shown marked.
    expect(await searched("cartographer lisbon", { as_of: before })).toEqual(["memory/people/alice.md"]);
    const marked = await callRoute(searchRoute.POST, { token: read, params: P, body: { q: "cartographer lisbon", mode: "fts", include_retired: true } });
    expect(marked.json.results.map((h: { path: string; item_status?: string }) => [h.path, h.item_status])).toEqual([["memory/people/alice.md", "retired"]]);
    expect((await callRoute(memoriesRoute.GET, { token: read, params: P, url: at("memories", { include_retired: "true" }) })).json.memories.map((m: { path: string }) => m.path)).toEqual(["people/alice"]);

    const restored = await decide(restoreRoute, "memory", "people/alice", "the move fell through");
    expect(restored.status).toBe(200);
    expect(restored.json.state.status).toBe("active");
    expect(await searched("cartographer lisbon")).toEqual(["memory/people/alice.md"]);
    const [again] = (await callRoute(memoriesRoute.GET, { token: read, params: P, url: at("memories") })).json.memories;
    expect(again).toEqual(memory);

    const h = await history("memory", "people/alice");
    expect(h.json.history.map((t: { from: string; to: string; by: string; reason: string }) => [t.from, t.to, t.by, t.reason])).toEqual([
      ["active", "retired", "agent:curator", "she moved to Porto"],
      ["retired", "active", "agent:curator", "the move fell through"],
    ]);
  });

  it("retired traces and learnings leave recall and their lists, and come back on restore", async () => {
    const trace = created(await callRoute(tracesRoute.POST, { token: write, params: P, body: { intent: { verb: "fix", target: "token refresh" }, shard_type: "backend", key_files: ["lib/auth.ts"], outcome: "failure", key_issue: "401 loop on token refresh", error_tags: ["auth"] } })).trace;
    const learning = created(await callRoute(learningsRoute.POST, { token: write, params: P, body: { predicate: "refresh_tokens_early", description: "refresh the token before it expires to avoid the 401 loop" } })).learning;
    const both = [`trace:${trace.id}`, `learning:${learning.id}`];
    expect((await recalled("token refresh 401 loop")).sort()).toEqual(both.sort());

    expect((await decide(invalidateRoute, "trace", String(trace.id), "misdiagnosed")).status).toBe(200);
    expect((await decide(invalidateRoute, "learning", String(learning.id), "wrong advice")).status).toBe(200);
    expect(await recalled("token refresh 401 loop")).toEqual([]);
    expect((await callRoute(tracesRoute.GET, { token: read, params: P, url: at("traces") })).json.traces).toEqual([]);
    expect((await callRoute(learningsRoute.GET, { token: read, params: P, url: at("learnings") })).json.learnings).toEqual([]);
    expect((await recalled("token refresh 401 loop", { include_retired: true })).sort()).toEqual(both.sort());

    await decide(restoreRoute, "trace", String(trace.id), "it was right after all");
    await decide(restoreRoute, "learning", String(learning.id), "it was right after all");
    expect((await recalled("token refresh 401 loop")).sort()).toEqual(both.sort());
    expect((await callRoute(learningsRoute.GET, { token: read, params: P, url: at("learnings") })).json.learnings.map((l: { id: number }) => l.id)).toEqual([learning.id]);
  });

  it("retired thoughts, nodes and relations leave remember and the lists; frames and relations keep a history too", async () => {
    const thought = created(await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content: "The lighthouse keeper logs every passing ship", framework: "review" } })).thought;
    const node = created(await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "lighthouse keeper", entity_type: "concept" } })).node;
    const other = created(await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "harbour", entity_type: "concept" } })).node;
    const relation = (await callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id: node.id, to_id: other.id, relationship_type: "guards", weight: 0.9 } })).json.relation;
    const frame = created(await callRoute(framesRoute.POST, { token: write, params: P, body: { node_id: node.id, column: "semantic", properties: { shift: "night" } } })).frame;
    expect(await remembered("lighthouse keeper")).toEqual(expect.arrayContaining([thought.id, node.id]));

    for (const [kind, id] of [["thought", thought.id], ["node", node.id], ["relation", relation.id], ["frame", frame.id]] as const) {
      const r = await decide(invalidateRoute, kind, String(id), `wrong ${kind}`);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
    }
    const after = await remembered("lighthouse keeper");
    expect(after).not.toContain(thought.id);
    expect(after).not.toContain(node.id);
    expect((await callRoute(thoughtsRoute.GET, { token: read, params: P, url: at("thoughts") })).json.thoughts).toEqual([]);
    expect((await callRoute(nodesRoute.GET, { token: read, params: P, url: at("nodes") })).json.nodes.map((n: { id: string }) => n.id)).toEqual([other.id]);
    expect(await remembered("lighthouse keeper", { include_retired: true })).toEqual(expect.arrayContaining([thought.id, node.id]));

    for (const [kind, id] of [["thought", thought.id], ["node", node.id], ["relation", relation.id], ["frame", frame.id]] as const) {
      expect((await decide(restoreRoute, kind, String(id), "restored")).status).toBe(200);
      expect((await history(kind, String(id))).json.history.map((t: { to: string }) => t.to)).toEqual(["retired", "active"]);
    }
    expect(await remembered("lighthouse keeper")).toEqual(expect.arrayContaining([thought.id, node.id]));
  });

  it("every decision has its ledger row and its audit entry, with who and why", async () => {
    await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "notes/wrong", body: "The moon is made of cheese." } });
    const { json } = await decide(invalidateRoute, "memory", "notes/wrong", "not a fact");
    await decide(restoreRoute, "memory", "notes/wrong", "kept for the record");
    const overrides = await governanceSql<{ actor: string; note: string; client_id: string }>("select actor, note, client_id from overrides order by ts, client_id");
    expect(overrides.map((o) => [o.actor, o.note])).toEqual(
      expect.arrayContaining([
        ["agent:curator", "item.invalidate memory notes/wrong in store kb: not a fact"],
        ["agent:curator", "item.restore memory notes/wrong in store kb: kept for the record"],
      ]),
    );
    expect(overrides.map((o) => o.client_id)).toContain(json.override_id);
    const audit = await governanceSql<{ actor: string; action: string; reason: string }>("select actor, action, reason from audit_log where target = ? and action like 'item.%' order by id", ["store:kb/memory:notes/wrong"]);
    expect(audit.map((a) => [a.actor, a.action, a.reason])).toEqual([
      ["agent:curator", "item.invalidate", "not a fact"],
      ["agent:curator", "item.restore", "kept for the record"],
    ]);
  });

  it("says no clearly: twice retired or restoring an active item is 409, another store's id is the same 404 as a made-up one, limits are named", async () => {
    await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "notes/a", body: "a note" } });
    await callRoute(memoriesRoute.POST, { token: write, params: { store: "other" }, body: { path: "notes/elsewhere", body: "another store's note" } });
    expect((await decide(restoreRoute, "memory", "notes/a", "nothing to restore")).json.error.code).toBe("item_not_retired");
    await decide(invalidateRoute, "memory", "notes/a", "first");
    const twice = await decide(invalidateRoute, "memory", "notes/a", "second");
    expect([twice.status, twice.json.error.code]).toEqual([409, "item_already_retired"]);

    const elsewhere = await decide(invalidateRoute, "memory", "notes/elsewhere", "not here");
    const madeUp = await decide(invalidateRoute, "memory", "notes/elsewhere-not", "not here");
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.json.error.message.replace("elsewhere", "X")).toBe(madeUp.json.error.message.replace("elsewhere-not", "X"));
    expect((await decide(invalidateRoute, "learning", "999999", "none")).status).toBe(404);
    expect((await decide(invalidateRoute, "learning", "not-a-number", "none")).status).toBe(404);
    expect((await history("thought", crypto.randomUUID())).status).toBe(404);

    const long = await decide(invalidateRoute, "memory", "notes/a", "x".repeat(ITEM_STATE_LIMITS.maxReasonChars + 1));
    expect([long.status, JSON.stringify(long.json)]).toEqual([400, expect.stringContaining("maxReasonChars")]);
    const empty = await decide(invalidateRoute, "memory", "notes/a", " ");
    expect([empty.status, JSON.stringify(empty.json)]).toEqual([400, expect.stringContaining("reason is required")]);
    const badKind = await callRoute(invalidateRoute.POST, { token: write, params: { ...P, kind: "chunk", id: "1" }, body: { reason: "x" } });
    expect(badKind.status).toBe(400);
    const early = await callRoute(searchRoute.POST, { token: read, params: P, body: { q: "note", as_of: 5 } });
    expect([early.status, JSON.stringify(early.json)]).toEqual([400, expect.stringContaining("minAsOf")]);
    const readOnly = await callRoute(invalidateRoute.POST, { token: read, params: { ...P, kind: "memory", id: "notes/a" }, body: { reason: "x" } });
    expect(readOnly.status).toBe(403);
  });

  it("a store without item state has no rows; the MCP tools mirror the routes", async () => {
    await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "notes/mcp", body: "written for the tools" } });
    expect(await storeSql("kb", "select * from item_state")).toEqual([]);
    const principal = await principalOf(write);
    const out = (await runTool({ name: "item_invalidate", args: { store: "kb", kind: "memory", id: "notes/mcp", reason: "via mcp" }, options: { principal: principal! } })) as { state: { status: string } };
    expect(out.state.status).toBe("retired");
    const h = (await runTool({ name: "item_history", args: { store: "kb", kind: "memory", id: "notes/mcp" }, options: { principal: principal! } })) as { history: { by: string }[] };
    expect(h.history.map((t) => t.by)).toEqual(["agent:curator"]);
    expect(((await runTool({ name: "item_restore", args: { store: "kb", kind: "memory", id: "notes/mcp", reason: "back" }, options: { principal: principal! } })) as { state: { status: string } }).state.status).toBe("active");
    expect(await storeSql("kb", "select kind, item_id, status from item_state")).toEqual([{ kind: "memory", item_id: "notes/mcp", status: "active" }]);
  });

  it("supersedes keeps both: retrieval answers the new one, as_of before answers the old, history links them", async () => {
    await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "people/bob-job", body: "Bob works as a baker in Leeds." } });
    const before = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    const newer = await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "people/bob-job-2", body: "Bob now works as a baker in York.", supersedes: "people/bob-job" } });
    expect(newer.status, JSON.stringify(newer.json)).toBe(201);
    expect(await searched("bob baker")).toEqual(["memory/people/bob-job-2.md"]);
    // Before the new one was written: the old one alone, as it was believed then.
    expect(await searched("bob baker", { as_of: before })).toEqual(["memory/people/bob-job.md"]);
    const old = await history("memory", "people/bob-job");
    expect(old.json.state).toMatchObject({ status: "retired", superseded_by: "people/bob-job-2" });
    expect(old.json.history.map((t: { to: string; superseded_by?: string }) => [t.to, t.superseded_by])).toEqual([["retired", "people/bob-job-2"]]);
    expect((await history("memory", "people/bob-job-2")).json.state).toMatchObject({ status: "active", supersedes: "people/bob-job" });
    expect(await storeSql("kb", "select item_id from item_state order by item_id")).toEqual([{ item_id: "people/bob-job" }, { item_id: "people/bob-job-2" }]);

    const first = created(await callRoute(learningsRoute.POST, { token: write, params: P, body: { predicate: "deploy_day", description: "deploy on fridays" } })).learning;
    const second = await callRoute(learningsRoute.POST, { token: write, params: P, body: { predicate: "deploy_day", description: "never deploy on fridays, deploy on tuesdays", supersedes: String(first.id) } });
    expect(second.status, JSON.stringify(second.json)).toBe(201);
    expect((await callRoute(learningsRoute.GET, { token: read, params: P, url: at("learnings") })).json.learnings.map((l: { id: number }) => l.id)).toEqual([second.json.learning.id]);

    // Same kind and store only; an already retired item cannot be superseded again.
    const node = created(await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "oven", entity_type: "concept" } })).node;
    const wrongKind = await callRoute(framesRoute.POST, { token: write, params: P, body: { node_id: node.id, column: "semantic", properties: { hot: true }, supersedes: String(first.id) } });
    expect([wrongKind.status, wrongKind.json.error.message]).toEqual([404, expect.stringContaining("supersedes: no frame")]);
    await callRoute(memoriesRoute.POST, { token: write, params: { store: "other" }, body: { path: "people/carol", body: "Carol" } });
    const wrongStore = await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "people/carol", body: "Carol again", supersedes: "people/carol" } });
    expect(wrongStore.status).toBe(404);
    const again = await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "people/bob-job-3", body: "Bob", supersedes: "people/bob-job" } });
    expect([again.status, again.json.error.code]).toEqual([409, "item_already_retired"]);
    expect((await listedMemories())).toEqual(["people/bob-job-2"]);
  });

  it("the dashboard's Invalidate / Restore re-checks the role on every call and records the person", async () => {
    await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "notes/dash", body: "decided from the dashboard" } });
    const form = (to: string, reason: string) => {
      const f = new FormData();
      for (const [k, v] of Object.entries({ store: "kb", kind: "memory", id: "notes/dash", to, reason })) f.append(k, v);
      return f;
    };
    const signInAs = async (username: string, role: "viewer" | "editor") => {
      await governance().insertUser({ username, passwordHash: "x", role, actor: "test" });
      const u = (await governance().getUserByUsername({ username }))!;
      caller.session = { user: { id: u.id, role: u.role, sv: u.sessionVersion, name: u.username } };
    };
    caller.session = null;
    expect(await itemDecisionAction(null, form("retired", "no session"))).toMatchObject({ ok: false, error: "sign in first" });
    await signInAs("vera", "viewer");
    expect(await itemDecisionAction(null, form("retired", "viewer"))).toMatchObject({ ok: false, error: "editors and admins only" });
    expect((await history("memory", "notes/dash")).json.history).toEqual([]);
    await signInAs("eddie", "editor");
    expect(await itemDecisionAction(null, form("retired", "outdated"))).toMatchObject({ ok: true });
    expect(await itemDecisionAction(null, form("active", "still true"))).toMatchObject({ ok: true });
    expect((await history("memory", "notes/dash")).json.history.map((t: { by: string; to: string }) => [t.by, t.to])).toEqual([["user:eddie", "retired"], ["user:eddie", "active"]]);
    caller.session = null;
  });
});

describe("a memory's state follows its path; every surface refuses an archived store's decision", () => {
  it("a move takes a retired memory's state along; a delete drops it, so a new memory at the freed path starts active", async () => {
    created(await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "notes/x", body: "The harbour crane is painted orange." } }));
    expect((await decide(invalidateRoute, "memory", "notes/x", "wrong colour")).status).toBe(200);
    const moved = await callRoute(memoriesRoute.PUT, { token: write, params: P, body: { path: "notes/x", move_to: "notes/y" } });
    expect(moved.status, JSON.stringify(moved.json)).toBe(200);
    // Still retired at its new path: not answered, its history there, nothing left at the old one.
    expect(await searched("harbour crane orange")).toEqual([]);
    expect(await listedMemories()).toEqual([]);
    expect((await history("memory", "notes/y")).json.state).toMatchObject({ status: "retired", reason: "wrong colour" });
    expect(await storeSql("kb", "select item_id from item_state where kind = 'memory'")).toEqual([{ item_id: "notes/y" }]);

    expect((await callRoute(memoriesRoute.DELETE, { token: write, params: P, url: at("memories", { path: "notes/y" }) })).status).toBe(200);
    // Nothing left at the path; the retired state waits with the trash entry (a restore brings it back).
    expect(await storeSql("kb", "select item_id from item_state where kind = 'memory' and item_id not like '.trash/%'")).toEqual([]);
    created(await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "notes/y", body: "The harbour crane is painted blue." } }));
    expect(await searched("harbour crane blue")).toEqual(["memory/notes/y.md"]);
  });

  it("a memory at the same path in the store and in core: each one's own state decides it, in search with core (fts and hybrid)", async () => {
    for (const [store, city] of [["kb", "Lisbon"], ["core", "Porto"]]) created(await callRoute(memoriesRoute.POST, { token: write, params: { store }, body: { path: "people/alice", body: `Alice the cartographer lives in ${city}.` } }));
    await drainEmbeddings(["kb", "core"]);
    const withCore = async (mode: string) => {
      const r = await callRoute(searchRoute.POST, { token: read, params: P, body: { q: "alice cartographer", mode, include_core: true } });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      return (r.json.results as { store: string; path: string }[]).map((h) => `${h.store}:${h.path}`).sort();
    };
    const both = ["core:memory/people/alice.md", "kb:memory/people/alice.md"];
    for (const mode of ["fts", "hybrid"]) expect(await withCore(mode), mode).toEqual(both);
    expect((await decide(invalidateRoute, "memory", "people/alice", "she moved")).status).toBe(200);
    for (const mode of ["fts", "hybrid"]) expect(await withCore(mode), mode).toEqual(["core:memory/people/alice.md"]);
    expect((await decide(restoreRoute, "memory", "people/alice", "she came back")).status).toBe(200);
    expect((await decide(invalidateRoute, "memory", "people/alice", "core's is stale", "core")).status).toBe(200);
    for (const mode of ["fts", "hybrid"]) expect(await withCore(mode), mode).toEqual(["kb:memory/people/alice.md"]);
  });

  it("a decision in an archived store answers 409 store_archived from the dashboard's and the CLI's path too, and changes nothing", async () => {
    created(await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path: "notes/z", body: "Keep this note." } }));
    await stores().archiveStore({ name: "kb", actor: "user:admin" });
    await expect(decideItemIn({ store: "kb", kind: "memory", id: "notes/z", to: "retired", reason: "tidy", who: { cli: true } })).rejects.toMatchObject({ code: "store_archived" });
    expect(await storeSql("kb", "select item_id from item_state")).toEqual([]);
  });

  it("a learning superseded by a token whose agent id has a colon is decided by that agent, not by the name it spells", async () => {
    const odd = await seedToken({ label: "odd", agent_id: "user:alice", scopes: ["write"] });
    const first = created(await callRoute(learningsRoute.POST, { token: write, params: P, body: { predicate: "build_tool", description: "use make" } })).learning;
    const second = await callRoute(learningsRoute.POST, { token: odd, params: P, body: { predicate: "build_tool", description: "use just", supersedes: String(first.id) } });
    expect(second.status, JSON.stringify(second.json)).toBe(201);
    expect((await history("learning", String(first.id))).json.state).toMatchObject({ status: "retired", decided_by: "agent:user:alice" });
  });
});
