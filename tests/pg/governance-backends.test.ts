import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as tasksRoute from "@/app/api/v1/tasks/route";
import * as taskRoute from "@/app/api/v1/tasks/[id]/route";
import * as runsRoute from "@/app/api/v1/tasks/[id]/runs/route";
import * as finishRoute from "@/app/api/v1/tasks/[id]/runs/[runId]/finish/route";
import * as validationsRoute from "@/app/api/v1/tasks/[id]/validations/route";
import * as provenanceRoute from "@/app/api/v1/provenance/route";
import * as overridesRoute from "@/app/api/v1/overrides/route";
import * as tokensRoute from "@/app/api/v1/tokens/route";
import * as tokenRoute from "@/app/api/v1/tokens/[id]/route";
import * as sessionsRoute from "@/app/api/v1/dialectic/sessions/route";
import * as sessionRoute from "@/app/api/v1/dialectic/sessions/[id]/route";
import * as messagesRoute from "@/app/api/v1/dialectic/sessions/[id]/messages/route";
import * as claimRoute from "@/app/api/v1/dialectic/sessions/[id]/claim/route";
import * as abandonRoute from "@/app/api/v1/dialectic/sessions/[id]/abandon/route";
import * as verifyRoute from "@/app/api/v1/dialectic/sessions/[id]/verify/route";
import * as exportRoute from "@/app/api/v1/dialectic/export/route";
import * as sessionExportRoute from "@/app/api/v1/dialectic/sessions/[id]/export/route";
import * as restoreRoute from "@/app/api/v1/dialectic/restore/route";
import { USER_THROTTLE } from "@/lib/auth/login-throttle";
import { governance } from "@/lib/backend/governance";
import { createUser, ensureFirstAdmin, resolveSessionUser, setUserPassword, signInWithPassword } from "@/lib/backend/users";
import { getGovernance } from "@/lib/db/connection";
import { closePg, getPg } from "@/lib/db/pg";
import { createMcpServer } from "@/lib/mcp/server";
import { callRoute, useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";

/**
 * The governance ledger through the agent API, once per backend: the same
 * requests, the same statuses and the same answers on embedded SQLite and
 * on PostgreSQL (DATABASE_URL). Tokens are made through the backend too, so
 * bearer authentication is exercised on each.
 */
const HASH = "b".repeat(64);
const BACKENDS = ["sqlite", "postgres"] as const;

describe("governance ledger with PostgreSQL down", () => {
  it("answers 503 (retry), not 500, when DATABASE_URL names a server that refuses connections", async () => {
    const env = useTempDataDir({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" });
    try {
      const r = await callRoute(tasksRoute.GET, { token: "dm_anything" });
      expect(r.status).toBe(503);
      expect(r.json.error.code).toBe("unavailable");
    } finally {
      await closePg();
      env.cleanup();
    }
  });
});

describe.each(BACKENDS)("governance ledger on %s", (backend) => {
  let env: ReturnType<typeof useTempDataDir>;
  const tok: Record<string, string> = {};

  beforeEach(async () => {
    env = useTempDataDir(backend === "postgres" ? { DATABASE_URL: await createTestDatabase() } : {});
    expect(governance().kind).toBe(backend);
    for (const [agent, scopes] of [
      ["alice", ["write"]],
      ["bob", ["write"]],
      ["carol", ["write"]],
      ["ops", ["admin"]],
    ] as const) {
      tok[agent] = (await governance().createApiToken({ input: { label: agent, agent_id: agent, scopes: [...scopes] }, actor: "test" })).token;
    }
  });
  afterEach(async () => {
    await closePg();
    env.cleanup();
  });

  it("records a task, its runs and a validation, and derives the verdict; retries answer 200 with the first record", async () => {
    const create = { task_id: "t1", intent: "summarize the notes", spec: { doc: "notes.md" }, assignees: ["bob"] };
    expect((await callRoute(tasksRoute.POST, { token: tok.alice, body: create })).status).toBe(201);
    const again = await callRoute(tasksRoute.POST, { token: tok.alice, body: create });
    expect(again.status).toBe(200);
    expect(again.json.created).toBe(false);
    expect((await callRoute(tasksRoute.POST, { token: tok.alice, body: { ...create, intent: "other" } })).status).toBe(409);

    const run = { run_id: "r1", skill: "summarize", input_hash: HASH, runner_version: "1.0" };
    expect((await callRoute(runsRoute.POST, { token: tok.bob, params: { id: "t1" }, body: run })).status).toBe(201);
    // Another agent's task answers as an unknown one.
    expect((await callRoute(runsRoute.POST, { token: tok.carol, params: { id: "t1" }, body: run })).status).toBe(404);
    const finished = await callRoute(finishRoute.POST, {
      token: tok.bob,
      params: { id: "t1", runId: "r1" },
      body: { output_hash: HASH, exit_code: 0, artifacts: [{ artifact_type: "summary", artifact_id: "s1", store: "default" }] },
    });
    expect(finished.status).toBe(200);
    expect(finished.json.run.status).toBe("succeeded");

    const pending = await callRoute(taskRoute.GET, { token: tok.alice, params: { id: "t1" } });
    expect(pending.json.verdict).toEqual({ verdict: "pending", reasons: ["no validation recorded yet"] });
    const v = { validation_id: "v1", run_id: "r1", critic_passed: true, runner_passed: true, details: { note: "ok" } };
    expect((await callRoute(validationsRoute.POST, { token: tok.alice, params: { id: "t1" }, body: v })).status).toBe(201);
    expect((await callRoute(validationsRoute.POST, { token: tok.alice, params: { id: "t1" }, body: v })).status).toBe(200);
    const failing = { validation_id: "v2", critic_passed: false, runner_passed: true };
    expect((await callRoute(validationsRoute.POST, { token: tok.bob, params: { id: "t1" }, body: failing })).status).toBe(201);

    const status = await callRoute(taskRoute.GET, { token: tok.bob, params: { id: "t1" } });
    expect(status.status).toBe(200);
    expect(status.json.verdict).toEqual({ verdict: "failed", reasons: ["critic check failed in validation v2"] });
    expect(status.json.validations.map((x: { validation_id: string }) => x.validation_id)).toEqual(["v1", "v2"]);
    expect(status.json.artifacts).toHaveLength(1);
    expect((await callRoute(taskRoute.GET, { token: tok.carol, params: { id: "t1" } })).status).toBe(404);

    const listed = await callRoute(tasksRoute.GET, { token: tok.bob, url: "http://127.0.0.1/api/v1/tasks?outcome=failed" });
    expect(listed.json.total).toBe(1);
    expect(listed.json.tasks[0]).toMatchObject({ task_id: "t1", run_count: 1, verdict: "failed" });
    expect((await callRoute(tasksRoute.GET, { token: tok.carol })).json.total).toBe(0);
    expect((await callRoute(tasksRoute.GET, { token: tok.ops })).json.total).toBe(1);
  });

  it("records provenance batches (a retry is counted, not duplicated), answers proofs, and audits overrides", async () => {
    await callRoute(tasksRoute.POST, { token: tok.alice, body: { task_id: "t2", intent: "embed", spec: {} } });
    await callRoute(runsRoute.POST, { token: tok.alice, params: { id: "t2" }, body: { run_id: "r2", skill: "embed", input_hash: HASH, runner_version: "1", output_hash: HASH, exit_code: 0 } });
    const batch = { records: [{ artifact_type: "chunk", artifact_id: "c1", store: "default", model_name: "m", input_hash: HASH, run_id: "r2" }] };
    expect((await callRoute(provenanceRoute.POST, { token: tok.alice, body: batch })).json).toEqual({ inserted: 1, existing: 0 });
    expect((await callRoute(provenanceRoute.POST, { token: tok.alice, body: batch })).json).toEqual({ inserted: 0, existing: 1 });
    expect((await callRoute(provenanceRoute.POST, { token: tok.carol, body: batch })).status).toBe(422);
    const unknown = { records: [{ ...batch.records[0], run_id: "nope" }] };
    expect((await callRoute(provenanceRoute.POST, { token: tok.alice, body: unknown })).status).toBe(422);

    const proofs = await callRoute(provenanceRoute.GET, { token: tok.alice, url: "http://127.0.0.1/api/v1/provenance?artifact_type=chunk&artifact_id=c1" });
    expect(proofs.json.provenance).toHaveLength(1);
    expect(proofs.json.runs.map((r: { run_id: string }) => r.run_id)).toEqual(["r2"]);
    expect(proofs.json.tasks[0].task.task_id).toBe("t2");
    const asCarol = await callRoute(provenanceRoute.GET, { token: tok.carol, url: "http://127.0.0.1/api/v1/provenance?artifact_type=chunk&artifact_id=c1" });
    expect(asCarol.json.runs).toEqual([]);

    const override = { override_id: "o1", task_id: "t2", note: "shipped by hand, runner was down" };
    expect((await callRoute(overridesRoute.POST, { token: tok.alice, body: override })).status).toBe(201);
    expect((await callRoute(overridesRoute.POST, { token: tok.alice, body: override })).status).toBe(200);
    expect((await callRoute(overridesRoute.POST, { token: tok.alice, body: { ...override, note: "changed" } })).status).toBe(409);
    expect((await callRoute(overridesRoute.POST, { token: tok.carol, body: { ...override, override_id: "o2" } })).status).toBe(404);
    expect((await callRoute(taskRoute.GET, { token: tok.alice, params: { id: "t2" } })).json.overrides).toHaveLength(1);
    // 4 token creations and one override, each with its row.
    expect(await governance().verifyAuditChain({})).toEqual({ ok: true, entries: 5 });
  });

  it("runs a dialectic session thesis → antithesis → synthesis → resolved, refusing the wrong turn with what is expected", async () => {
    const s = await callRoute(sessionsRoute.POST, { token: tok.alice, body: { session_id: "d1", topic: "why did the deploy pause", reviewer_agent_id: "bob" } });
    expect(s.status).toBe(201);
    expect(s.json.session.expected).toMatchObject({ phase: "thesis", agent_ids: ["alice"] });
    const post = (agent: string, body: Record<string, unknown>) => callRoute(messagesRoute.POST, { token: tok[agent], params: { id: "d1" }, body });
    const wrong = await post("bob", { message_type: "thesis", reasoning: "not mine to say" });
    expect(wrong.status).toBe(409);
    expect(wrong.json.error.details[0]).toMatchObject({ expected_phase: "thesis", expected_agent_ids: ["alice"] });
    const thesis = { message_id: "m1", message_type: "thesis", reasoning: "the migration dropped a column" };
    expect((await post("alice", thesis)).status).toBe(201);
    expect((await post("alice", thesis)).status).toBe(200);
    expect((await post("bob", { message_type: "antithesis", reasoning: "stale cache", concerns: ["TTL"] })).status).toBe(201);
    expect((await post("bob", { message_type: "synthesis", reasoning: "shorten TTL", proposed_conditions: ["TTL 60s"], agrees: true })).status).toBe(201);
    const resolved = await post("alice", { message_type: "synthesis", reasoning: "agreed", agrees: true });
    expect(resolved.status).toBe(201);
    expect(resolved.json.session).toMatchObject({ phase: "resolved", status: "resolved", resolution: { conditions: ["TTL 60s"], agreed_by: ["bob", "alice"], seq: 4 } });
    expect((await post("bob", { message_type: "synthesis", reasoning: "one more" })).status).toBe(409);

    const detail = await callRoute(sessionRoute.GET, { token: tok.bob, params: { id: "d1" } });
    expect(detail.json.messages.map((m: { seq: number }) => m.seq)).toEqual([1, 2, 3, 4]);
    expect((await callRoute(sessionRoute.GET, { token: tok.carol, params: { id: "d1" } })).status).toBe(404);
    expect((await callRoute(verifyRoute.GET, { token: tok.alice, params: { id: "d1" } })).json).toEqual({ ok: true, messages: 4 });
    const mine = await callRoute(sessionsRoute.GET, { token: tok.bob, url: "http://127.0.0.1/api/v1/dialectic/sessions?role=reviewer" });
    expect(mine.json.sessions.map((x: { session_id: string; message_count: number }) => [x.session_id, x.message_count])).toEqual([["d1", 4]]);
  });

  it("lets a reviewer claim an open session once, and a participant abandon it", async () => {
    await callRoute(sessionsRoute.POST, { token: tok.alice, body: { session_id: "open1", topic: "open review" } });
    const open = await callRoute(sessionsRoute.GET, { token: tok.carol, url: "http://127.0.0.1/api/v1/dialectic/sessions?role=open" });
    expect(open.json.sessions.map((x: { session_id: string }) => x.session_id)).toEqual(["open1"]);
    expect((await callRoute(claimRoute.POST, { token: tok.alice, params: { id: "open1" } })).status).toBe(422);
    expect((await callRoute(claimRoute.POST, { token: tok.bob, params: { id: "open1" } })).json.session.reviewer_agent_id).toBe("bob");
    expect((await callRoute(claimRoute.POST, { token: tok.bob, params: { id: "open1" } })).status).toBe(200);
    expect((await callRoute(claimRoute.POST, { token: tok.carol, params: { id: "open1" } })).status).toBe(404);
    const abandoned = await callRoute(abandonRoute.POST, { token: tok.bob, params: { id: "open1" }, body: { reason: "out of scope" } });
    expect(abandoned.json.session).toMatchObject({ status: "failed", failure_reason: "abandoned by bob: out of scope" });
  });

  it("serves the dashboard's reads and people's actions: notes, an admin's abandon (audited), activity counts, the audit tail", async () => {
    await callRoute(sessionsRoute.POST, { token: tok.alice, body: { session_id: "dash", topic: "dashboard", reviewer_agent_id: "bob" } });
    await callRoute(sessionsRoute.POST, { token: tok.alice, body: { session_id: "dash2", topic: "still open" } });
    await callRoute(messagesRoute.POST, { token: tok.alice, params: { id: "dash" }, body: { message_type: "thesis", reasoning: "r" } });
    const note = await governance().annotateDialecticSession({ sessionId: "dash", input: { body: "looks right" }, actor: "user:ann" });
    expect(note).toMatchObject({ sessionId: "alice~dash", author: "user:ann", body: "looks right" });
    expect((await governance().listDialecticAnnotations({ sessionId: "dash" })).map((n) => n.body)).toEqual(["looks right"]);
    const ended = await governance().abandonDialecticSessionAsAdmin({ sessionId: "dash", actor: "user:ann", reason: "stale" });
    expect(ended).toMatchObject({ status: "failed", failure_reason: "abandoned by user:ann (admin): stale" });
    const view = await governance().getDialecticSession({ sessionId: "dash" });
    expect(view.messages!.map((m) => m.seq)).toEqual([1]);
    const activity = await governance().getDialecticActivity({});
    expect(activity).toMatchObject({ active_sessions: 1, messages_last_hour: 1 });
    expect(activity.failed_per_hour.reduce((n, h) => n + h.failed, 0)).toBe(1);
    const tail = await governance().listAuditTail({ limit: 2 });
    expect(tail.map((r) => r.action)).toEqual(["dialectic.abandon", "dialectic.annotate"]);
    const listed = await governance().listTasks({ input: {} });
    expect(listed).toEqual({ tasks: [], total: 0, next_offset: null });
  });

  it("answers the same through MCP tools with the token's agent", async () => {
    const principal = { tokenId: null, agentId: "alice", label: "alice", scopes: ["write" as const], stores: null };
    const server = createMcpServer({ principal });
    const client = new Client({ name: "t", version: "1" });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(a), client.connect(b)]);
    try {
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = await client.callTool({ name, arguments: args });
        return JSON.parse((r.content as { text: string }[])[0].text) as Record<string, unknown>;
      };
      expect(await call("task_create", { task_id: "mcp-t", intent: "via mcp", spec: {} })).toMatchObject({ created: true });
      await call("record_run", { task_id: "mcp-t", run_id: "mcp-r", skill: "s", input_hash: HASH, runner_version: "1", output_hash: HASH, exit_code: 0 });
      await call("record_validation", { task_id: "mcp-t", critic_passed: true, runner_passed: true });
      expect(await call("task_status", { task_id: "mcp-t" })).toMatchObject({ verdict: { verdict: "passed" } });
      expect(await call("dialectic_request", { session_id: "mcp-d", topic: "t", reviewer_agent_id: "bob" })).toMatchObject({ created: true });
      expect(await call("dialectic_post", { session_id: "mcp-d", message_type: "thesis", reasoning: "r" })).toMatchObject({ message: { seq: 1 } });
      expect(await call("dialectic_get", { session_id: "mcp-d" })).toMatchObject({ phase: "antithesis", message_count: 1 });
    } finally {
      await client.close();
    }
    // What MCP wrote is what REST reads.
    expect((await callRoute(taskRoute.GET, { token: tok.alice, params: { id: "mcp-t" } })).json.verdict.verdict).toBe("passed");
  });

  it("authenticates bearer tokens through the backend: a revoked token is refused at once, a repeated label gets a number", async () => {
    const made = await callRoute(tokensRoute.POST, { token: tok.ops, body: { label: "alice", agent_id: "alice2", scopes: ["read"] } });
    expect(made.status).toBe(201);
    expect(made.json.label).toBe("alice (2)");
    expect((await callRoute(tasksRoute.GET, { token: made.json.token })).status).toBe(200);
    expect((await callRoute(tokenRoute.DELETE, { method: "DELETE", token: tok.ops, params: { id: String(made.json.id) } })).json.revoked_at).toEqual(expect.any(Number));
    expect((await callRoute(tasksRoute.GET, { token: made.json.token })).status).toBe(401);
    expect((await callRoute(tasksRoute.GET, { token: "dm_unknown" })).status).toBe(401);
    const listed = await callRoute(tokensRoute.GET, { token: tok.ops });
    expect(listed.json.tokens.map((t: { label: string }) => t.label)).toContain("alice (2)");
    expect((await callRoute(tokensRoute.GET, { token: tok.alice })).status).toBe(403);
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
  });

  it("users and sign-in: created, signed in, throttled after 5 failures, locked at 10 (audited); role, disable and password changes end sessions; the last admin stays", async () => {
    const g = governance();
    const actor = "test";
    await createUser({ input: { username: "root", password: "root-password", role: "admin" }, actor });
    const vera = await createUser({ input: { username: "vera", password: "vera-password", role: "viewer" }, actor });
    await expect(createUser({ input: { username: "vera", password: "other-password", role: "viewer" }, actor })).rejects.toMatchObject({ code: "conflict" });
    expect((await g.listUsers({})).map((u) => u.username)).toEqual(["root", "vera"]);
    expect(await g.countUsers({})).toBe(2);
    // What the dashboard's overview shows: these users, the four tokens made above, and the audit rows so far.
    expect(await g.countGovernanceRows({})).toEqual({ users: 2, tokens: 4, auditEntries: 6 });

    const T0 = Date.UTC(2030, 0, 1);
    const signedIn = await signInWithPassword({ username: "vera", password: "vera-password", address: null, now: T0 });
    expect(signedIn.ok && signedIn.user.username).toBe("vera");
    const claims = { uid: vera.id, sv: vera.sessionVersion, name: vera.username };
    expect((await resolveSessionUser({ claims }))?.username).toBe("vera");

    // Five wrong passwords cost nothing more; the sixth attempt must wait, even with the right password.
    for (let i = 0; i < USER_THROTTLE.freeFailures; i++) expect(await signInWithPassword({ username: "vera", password: "wrong-password", address: null, now: T0 + i })).toEqual({ ok: false, reason: "invalid" });
    expect(await signInWithPassword({ username: "vera", password: "vera-password", address: null, now: T0 + 10 })).toMatchObject({ ok: false, reason: "throttled" });
    // Waiting out each delay, failures go on to the lock, audited once.
    let at = T0 + 10;
    for (let i = USER_THROTTLE.freeFailures; i < USER_THROTTLE.lockAfterFailures; i++) {
      at += USER_THROTTLE.lockMs;
      expect(await signInWithPassword({ username: "vera", password: "wrong-password", address: null, now: at })).toEqual({ ok: false, reason: "invalid" });
    }
    const locked = await signInWithPassword({ username: "vera", password: "vera-password", address: null, now: at + 1 });
    expect(locked).toMatchObject({ ok: false, reason: "throttled" });
    expect((await g.listAuditTail({ limit: 10 })).filter((r) => r.action === "auth.lockout").map((r) => r.target)).toEqual(["user:vera"]);
    // A new password clears the name's failures and ends the old session.
    await setUserPassword({ username: "vera", password: "vera-password-2", actor });
    expect(await resolveSessionUser({ claims })).toBeNull();
    const again = await signInWithPassword({ username: "vera", password: "vera-password-2", address: null, now: at + 2 });
    expect(again.ok).toBe(true);

    await g.setUserRole({ username: "vera", role: "editor", actor });
    const promoted = await g.getUserById({ id: vera.id });
    expect(promoted?.role).toBe("editor");
    expect(await resolveSessionUser({ claims: { uid: vera.id, sv: again.ok ? again.user.sessionVersion : -1, name: vera.username } })).toBeNull();
    expect((await g.setUserDisabled({ username: "vera", disabled: true, actor })).disabledAt).toEqual(expect.any(Number));
    expect(await signInWithPassword({ username: "vera", password: "vera-password-2", address: null, now: at + 3 })).toEqual({ ok: false, reason: "invalid" });
    await expect(g.setUserRole({ username: "root", role: "viewer", actor })).rejects.toMatchObject({ code: "conflict" });
    await expect(g.setUserDisabled({ username: "root", disabled: true, actor })).rejects.toMatchObject({ code: "conflict" });
    await expect(g.setUserRole({ username: "ghost", role: "viewer", actor })).rejects.toMatchObject({ code: "not_found" });
    expect((await g.setUserDisabled({ username: "vera", disabled: false, actor })).disabledAt).toBeNull();
    expect((await signInWithPassword({ username: "vera", password: "vera-password-2", address: null, now: at + 4 })).ok).toBe(true);

    const actions = (await g.listAuditTail({ limit: 50 })).map((r) => r.action).reverse();
    expect(actions.filter((a) => a.startsWith("user."))).toEqual(["user.create", "user.create", "user.password_reset", "user.role", "user.disable", "user.enable"]);
    expect((await g.verifyAuditChain({})).ok).toBe(true);
  });

  it("first run: one admin, made once", async () => {
    const first = await ensureFirstAdmin({ configuredPassword: "first-admin-password" });
    expect(first).toEqual({ created: true, username: "admin", generatedPassword: undefined });
    expect(await ensureFirstAdmin({})).toEqual({ created: false });
    expect((await signInWithPassword({ username: "admin", password: "first-admin-password", address: null })).ok).toBe(true);
  });

  it("dialectic export and restore: a signed snapshot out, the same back in changes nothing, a tampered one is refused, a missing session comes back", async () => {
    await callRoute(sessionsRoute.POST, { token: tok.alice, body: { session_id: "x1", topic: "cache ttl", reviewer_agent_id: "bob" } });
    await callRoute(messagesRoute.POST, { token: tok.alice, params: { id: "x1" }, body: { message_type: "thesis", reasoning: "60 s" } });
    await callRoute(messagesRoute.POST, { token: tok.bob, params: { id: "x1" }, body: { message_type: "antithesis", reasoning: "too long", concerns: ["staleness"] } });
    const one = await callRoute(sessionExportRoute.GET, { token: tok.bob, params: { id: "x1" } });
    expect(one.status).toBe(200);
    expect(one.json.sessions.map((s: { sessionId: string; messages: unknown[] }) => [s.sessionId, s.messages.length])).toEqual([["alice~x1", 2]]);
    expect((await callRoute(sessionExportRoute.GET, { token: tok.carol, params: { id: "x1" } })).status).toBe(404);
    expect((await callRoute(exportRoute.GET, { token: tok.alice })).status).toBe(403);
    const all = await callRoute(exportRoute.GET, { token: tok.ops });
    expect(all.json.sessions).toHaveLength(1);

    expect((await callRoute(restoreRoute.POST, { token: tok.ops, body: all.json })).json).toEqual({ restored: 0, unchanged: 1, messages: 0 });
    const tampered = structuredClone(all.json);
    tampered.sessions[0].messages[1].reasoning = "fine as is";
    expect((await callRoute(restoreRoute.POST, { token: tok.ops, body: tampered })).status).toBe(422);
    // A restore never overwrites: the same session with other contents is a conflict.
    const changed = structuredClone(one.json);
    changed.sessions[0].updatedAt += 1;
    expect((await callRoute(restoreRoute.POST, { token: tok.ops, body: changed })).status).toBe(409);
    // Lost from the database (an operator's mistake), the session comes back whole from the snapshot.
    if (backend === "postgres") await (await getPg()!).pool.query("delete from dialectic_messages where session_id = 'alice~x1'; delete from dialectic_sessions where session_id = 'alice~x1'");
    else getGovernance().sqlite.exec("delete from dialectic_messages where session_id = 'alice~x1'; delete from dialectic_sessions where session_id = 'alice~x1'");
    expect((await callRoute(sessionRoute.GET, { token: tok.alice, params: { id: "x1" } })).status).toBe(404);
    expect((await callRoute(restoreRoute.POST, { token: tok.ops, body: all.json })).json).toEqual({ restored: 1, unchanged: 0, messages: 2 });
    expect((await callRoute(verifyRoute.GET, { token: tok.alice, params: { id: "x1" } })).json).toEqual({ ok: true, messages: 2 });
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
  });
});
