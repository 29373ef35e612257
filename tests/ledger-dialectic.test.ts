import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { runCli } from "@/scripts/cli-kit";
import { ledgerCommands } from "@/scripts/commands/ledger-commands";
import { governance } from "@/lib/backend/governance";
import { getDialecticMetrics } from "@/lib/metrics/dialectic";
import * as sessionsRoute from "@/app/api/v1/dialectic/sessions/route";
import * as sessionRoute from "@/app/api/v1/dialectic/sessions/[id]/route";
import * as messagesRoute from "@/app/api/v1/dialectic/sessions/[id]/messages/route";
import * as claimRoute from "@/app/api/v1/dialectic/sessions/[id]/claim/route";
import * as abandonRoute from "@/app/api/v1/dialectic/sessions/[id]/abandon/route";
import * as verifyRoute from "@/app/api/v1/dialectic/sessions/[id]/verify/route";
import * as exportAllRoute from "@/app/api/v1/dialectic/export/route";
import * as restoreRoute from "@/app/api/v1/dialectic/restore/route";
import { governanceSql, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

let env: TestEnv;
const tok: Record<string, string> = {};

function token(agent: string, scopes: ("read" | "write" | "admin")[] = ["write"]): Promise<string> {
  return seedToken({ label: agent, agent_id: agent, scopes });
}

beforeEach(async () => {
  env = await useTestBackend();
  tok.alice = await token("alice");
  tok.bob = await token("bob");
  tok.carol = await token("carol");
  tok.admin = await token("ops", ["admin"]);
});
afterEach(() => env.cleanup());

const sessionById = (sessionId: string) => governance().getDialecticSession({ sessionId });
const verifySession = (sessionId: string) => governance().verifyDialecticSession({ sessionId });
const listAuditTail = (a: { limit: number }) => governance().listAuditTail(a);
/** The ledger's rows as stored, in a fixed order (to compare a restore with the original). */
const ledgerRows = async () => ({
  messages: await governanceSql("select * from dialectic_messages order by session_id, seq"),
  sessions: await governanceSql("select * from dialectic_sessions order by session_id"),
});

async function create(agent: string, body: Record<string, unknown>) {
  return callRoute(sessionsRoute.POST, { token: tok[agent], body });
}
async function post(agent: string, id: string, body: Record<string, unknown>) {
  return callRoute(messagesRoute.POST, { token: tok[agent], params: { id }, body });
}
async function detail(agent: string, id: string) {
  return callRoute(sessionRoute.GET, { token: tok[agent], params: { id } });
}
const thesis = { message_type: "thesis" as const, reasoning: "I paused because the migration dropped a column", root_cause: "schema drift", observed_metrics: { failed_queries: 12 } };
const antithesis = { message_type: "antithesis", reasoning: "The column was unused; the failure is the stale cache", concerns: ["cache TTL too long"] };

/** alice (paused) and bob (reviewer) up to the synthesis phase. */
async function toSynthesis(id: string, extra: Record<string, unknown> = {}) {
  expect((await create("alice", { session_id: id, topic: `review ${id}`, reviewer_agent_id: "bob", ...extra })).status).toBe(201);
  expect((await post("alice", id, thesis)).status).toBe(201);
  expect((await post("bob", id, antithesis)).status).toBe(201);
}

describe("phase machine", () => {
  it("runs thesis → antithesis → synthesis → resolved, with the agreed conditions as the resolution", async () => {
    await toSynthesis("s-ok");
    const p1 = await post("bob", "s-ok", { message_type: "synthesis", reasoning: "shorten the TTL and re-run", proposed_conditions: ["TTL 60s", "re-run migration check"], agrees: true });
    expect(p1.json.session).toMatchObject({ phase: "synthesis", status: "active" });
    const p2 = await post("alice", "s-ok", { message_type: "synthesis", reasoning: "agreed", agrees: true });
    expect(p2.json.session).toMatchObject({ phase: "resolved", status: "resolved", resolution: { conditions: ["TTL 60s", "re-run migration check"], agreed_by: ["bob", "alice"] } });
    const d = await detail("alice", "s-ok");
    expect(d.json.messages.map((m: { message_type: string; agent_id: string }) => `${m.message_type}:${m.agent_id}`)).toEqual(["thesis:alice", "antithesis:bob", "synthesis:bob", "synthesis:alice"]);
    expect(d.json.messages[0]).toMatchObject({ root_cause: "schema drift", observed_metrics: { failed_queries: 12 } });
    expect((await post("bob", "s-ok", { message_type: "synthesis", reasoning: "one more" })).status).toBe(409);
  });

  it("answers every illegal post with 409, the expected phase and agent, and writes nothing", async () => {
    expect((await create("alice", { session_id: "s-bad", topic: "t", reviewer_agent_id: "bob" })).status).toBe(201);
    const cases: [string, Record<string, unknown>, string][] = [
      ["bob", thesis, "not bob's turn"],
      ["alice", antithesis, "expected a thesis"],
      ["alice", { message_type: "synthesis", reasoning: "x" }, "expected a thesis"],
    ];
    for (const [agent, body, msg] of cases) {
      const r = await post(agent, "s-bad", body);
      expect(r.status).toBe(409);
      expect(r.json.error.message).toContain(msg);
      expect(r.json.error.details[0]).toMatchObject({ expected_phase: "thesis", expected_message_type: "thesis", expected_agent_ids: ["alice"] });
    }
    // A non-participant hears what GET would say (404), never who the participants are.
    const stranger = await post("carol", "s-bad", thesis);
    expect(stranger.status).toBe(404);
    expect(JSON.stringify(stranger.json)).not.toMatch(/alice|bob/);
    await post("alice", "s-bad", thesis);
    const twice = await post("alice", "s-bad", thesis);
    expect(twice.status).toBe(409);
    expect(twice.json.error.details[0]).toMatchObject({ expected_phase: "antithesis", expected_agent_ids: ["bob"] });
    expect((await post("bob", "s-bad", { message_type: "synthesis", reasoning: "skip ahead" })).status).toBe(409);
    await post("bob", "s-bad", antithesis);
    expect((await post("alice", "s-bad", { ...antithesis, message_type: "antithesis" })).status).toBe(409);
    await post("alice", "s-bad", { message_type: "synthesis", reasoning: "proposal", proposed_conditions: ["a"], agrees: true });
    const outOfTurn = await post("alice", "s-bad", { message_type: "synthesis", reasoning: "again", agrees: true });
    expect(outOfTurn.status).toBe(409);
    expect(outOfTurn.json.error.details[0]).toMatchObject({ expected_phase: "synthesis", expected_agent_ids: ["bob"] });
    expect((await detail("alice", "s-bad")).json.messages).toHaveLength(3);
  });

  it("takes the agent from the token, never from the body", async () => {
    await create("alice", { session_id: "s-tok", topic: "t", reviewer_agent_id: "bob" });
    const r = await post("bob", "s-tok", { ...thesis, agent_id: "alice" });
    expect(r.status).toBe(400);
    expect((await create("alice", { topic: "t", paused_agent_id: "bob" })).status).toBe(400);
  });

  it("lets a reviewer claim an open session, once, and not its own", async () => {
    await create("alice", { session_id: "s-open", topic: "open review" });
    await post("alice", "s-open", thesis);
    const early = await post("bob", "s-open", antithesis);
    expect(early.status).toBe(409);
    expect(early.json.error.details[0].message).toContain("claim");
    const openList = await callRoute(sessionsRoute.GET, { token: tok.bob, url: "http://x/api/v1/dialectic/sessions?role=open" });
    expect(openList.json.sessions.map((s: { session_id: string }) => s.session_id)).toEqual(["s-open"]);
    expect((await detail("carol", "s-open")).status).toBe(200);
    expect((await callRoute(claimRoute.POST, { token: tok.alice, params: { id: "s-open" } })).status).toBe(422);
    expect((await callRoute(claimRoute.POST, { token: tok.bob, params: { id: "s-open" } })).status).toBe(200);
    expect((await callRoute(claimRoute.POST, { token: tok.bob, params: { id: "s-open" } })).status).toBe(200);
    // Claimed: carol can no longer see it, so a claim answers 404 like GET, not 409 naming the reviewer.
    expect((await callRoute(claimRoute.POST, { token: tok.carol, params: { id: "s-open" } })).status).toBe(404);
    expect((await detail("carol", "s-open")).status).toBe(404);
    expect((await post("bob", "s-open", antithesis)).status).toBe(201);
  });

  it("fails after the configured number of synthesis rounds without agreement", async () => {
    await toSynthesis("s-rounds", { max_rounds: 3 });
    await post("alice", "s-rounds", { message_type: "synthesis", reasoning: "A", proposed_conditions: ["a"], agrees: true });
    await post("bob", "s-rounds", { message_type: "synthesis", reasoning: "B", proposed_conditions: ["b"], agrees: true });
    const last = await post("alice", "s-rounds", { message_type: "synthesis", reasoning: "A again", proposed_conditions: ["a"], agrees: true });
    expect(last.json.session).toMatchObject({ phase: "failed", status: "failed", failure_reason: "no agreement after 3 synthesis rounds" });
  });

  it("fails on explicit abandonment by a participant only", async () => {
    await toSynthesis("s-ab");
    expect((await callRoute(abandonRoute.POST, { token: tok.carol, params: { id: "s-ab" }, body: {} })).status).toBe(404);
    const r = await callRoute(abandonRoute.POST, { token: tok.bob, params: { id: "s-ab" }, body: { reason: "out of scope" } });
    expect(r.json.session).toMatchObject({ status: "failed", failure_reason: "abandoned by bob: out of scope" });
    expect((await post("alice", "s-ab", { message_type: "synthesis", reasoning: "late" })).status).toBe(409);
  });

  it("fails idle sessions, by the sweep and on a late post", async () => {
    await create("alice", { session_id: "s-idle", topic: "t", reviewer_agent_id: "bob", idle_timeout_ms: 1000 });
    await create("alice", { session_id: "s-idle2", topic: "t", reviewer_agent_id: "bob", idle_timeout_ms: 1000 });
    const later = Date.now() + 5000;
    expect((await governance().sweepIdleSessions({ actor: "test", now: later })).failed.sort()).toEqual(["alice~s-idle", "alice~s-idle2"]);
    expect(await sessionById("s-idle")).toMatchObject({ status: "failed", failure_reason: "idle timeout" });

    await create("alice", { session_id: "s-idle3", topic: "t", reviewer_agent_id: "bob", idle_timeout_ms: 1000 });
    await expect(governance().postDialecticMessage({ sessionId: "s-idle3", agentId: "alice", input: thesis, now: Date.now() + 5000 })).rejects.toThrow(/idle/);
    expect((await sessionById("s-idle3")).status).toBe("failed");

    await create("alice", { session_id: "s-idle4", topic: "t", reviewer_agent_id: "bob", idle_timeout_ms: 1000 });
    await governance().createDialecticSession({ input: { topic: "a new one, a minute later" }, agentId: "carol", now: Date.now() + 60_000 });
    expect((await sessionById("s-idle4")).failure_reason).toBe("idle timeout");
  });

  it("keeps agreement to synthesis messages (422 otherwise)", async () => {
    await create("alice", { session_id: "s-agree", topic: "t", reviewer_agent_id: "bob" });
    const r = await post("alice", "s-agree", { ...thesis, agrees: true });
    expect(r.status).toBe(422);
    expect((await detail("alice", "s-agree")).json.message_count).toBe(0);
  });
});

describe("idempotency, signatures, cache, listings", () => {
  it("returns the stored message on a retried post and never appends it twice", async () => {
    await create("alice", { session_id: "s-retry", topic: "t", reviewer_agent_id: "bob" });
    const first = await post("alice", "s-retry", { ...thesis, message_id: "m-1" });
    expect(first.status).toBe(201);
    await post("bob", "s-retry", antithesis);
    const retry = await post("alice", "s-retry", { ...thesis, message_id: "m-1" });
    expect(retry.status).toBe(200);
    expect(retry.json.message.signature).toBe(first.json.message.signature);
    expect((await post("alice", "s-retry", { ...thesis, reasoning: "changed", message_id: "m-1" })).status).toBe(409);
    expect((await create("alice", { session_id: "s-retry", topic: "t", reviewer_agent_id: "bob" })).status).toBe(200);
    expect((await create("alice", { session_id: "s-retry", topic: "other", reviewer_agent_id: "bob" })).status).toBe(409);
    expect((await detail("alice", "s-retry")).json.message_count).toBe(2);
  });

  it("detects any edit to a stored message through the signature chain", async () => {
    await toSynthesis("s-sig");
    await post("alice", "s-sig", { message_type: "synthesis", reasoning: "fix", proposed_conditions: ["x"], agrees: true });
    const ok = await callRoute(verifyRoute.GET, { token: tok.alice, params: { id: "s-sig" } });
    expect(ok.json).toEqual({ ok: true, messages: 3 });
    await governanceSql("update dialectic_messages set reasoning = 'The column was needed after all' where session_id = 'alice~s-sig' and seq = 2");
    const broken = await verifySession("s-sig");
    expect(broken).toMatchObject({ ok: false, broken_at_seq: 2 });
    await governanceSql("update dialectic_messages set reasoning = ? where session_id = 'alice~s-sig' and seq = 2", [antithesis.reasoning]);
    expect((await verifySession("s-sig")).ok).toBe(true);
    await governanceSql("update dialectic_messages set agrees = false where session_id = 'alice~s-sig' and seq = 3");
    expect(await verifySession("s-sig")).toMatchObject({ ok: false, broken_at_seq: 3 });
  });

  it("never serves a stale phase from the cache after a write", async () => {
    await create("alice", { session_id: "s-cache", topic: "t", reviewer_agent_id: "bob" });
    expect((await sessionById("s-cache")).phase).toBe("thesis");
    await post("alice", "s-cache", thesis);
    expect((await sessionById("s-cache")).phase).toBe("antithesis");
    expect((await detail("bob", "s-cache")).json.phase).toBe("antithesis");
    await callRoute(abandonRoute.POST, { token: tok.bob, params: { id: "s-cache" }, body: {} });
    expect((await sessionById("s-cache")).phase).toBe("failed");
  });

  it("lists my sessions by role, status, phase and topic, with or without transcripts", async () => {
    await toSynthesis("s-l1");
    await create("bob", { session_id: "s-l2", topic: "bob asks about 100% CPU", reviewer_agent_id: "alice" });
    await create("carol", { session_id: "s-l3", topic: "carol and bob", reviewer_agent_id: "bob" });
    const list = async (agent: string, q: string) => (await callRoute(sessionsRoute.GET, { token: tok[agent], url: `http://x/api/v1/dialectic/sessions?${q}` })).json;
    const ids = (r: { sessions: { session_id: string }[] }) => r.sessions.map((s) => s.session_id).sort();
    expect(ids(await list("bob", "role=any"))).toEqual(["s-l1", "s-l2", "s-l3"]);
    expect(ids(await list("bob", "role=requestor"))).toEqual(["s-l2"]);
    expect(ids(await list("bob", "role=reviewer"))).toEqual(["s-l1", "s-l3"]);
    expect(ids(await list("bob", "phase=synthesis"))).toEqual(["s-l1"]);
    expect(ids(await list("bob", "topic=100%25"))).toEqual(["s-l2"]);
    expect(ids(await list("bob", "topic=%25"))).toEqual(["s-l2"]);
    expect(ids(await list("alice", "status=resolved"))).toEqual([]);
    const withT = await list("alice", "role=requestor&transcript=true");
    expect(withT.sessions[0].messages).toHaveLength(2);
    const withoutT = await list("alice", "role=requestor");
    expect(withoutT.sessions[0].messages).toBeUndefined();
    expect(withoutT.sessions[0]).toMatchObject({ message_count: 2, expected: { phase: "synthesis", agent_ids: ["alice", "bob"] } });
    const paged = await list("bob", "limit=1&offset=1");
    expect(paged.sessions).toHaveLength(1);
    expect(paged.total).toBe(3);
    const metrics = await getDialecticMetrics();
    expect(metrics.active_sessions).toBe(3);
    expect(metrics.messages_last_hour).toBe(2);
    expect(metrics.latency.map((r) => r.route)).toEqual(expect.arrayContaining(["dialectic create", "dialectic list", "dialectic list+transcript", "POST /dialectic/sessions"]));
    expect((await governance().listDialecticSessions({ topic: "carol" })).sessions.map((s) => s.session_id)).toEqual(["s-l3"]);
  });

  it("times a failed create or detail with the status the caller got, not 200", async () => {
    expect((await create("alice", { session_id: "s-self", topic: "t", reviewer_agent_id: "alice" })).status).toBe(422);
    expect((await detail("alice", "s-missing")).status).toBe(404);
    const latency = (await getDialecticMetrics()).latency;
    const byStatus = (route: string) => latency.find((r) => r.route === route)?.by_status ?? {};
    expect(byStatus("dialectic create")["422"]).toBeGreaterThanOrEqual(1);
    expect(byStatus("dialectic detail")["404"]).toBeGreaterThanOrEqual(1);
    expect(byStatus("POST /dialectic/sessions")["422"]).toBeGreaterThanOrEqual(1);
  });
});

describe("export and restore", () => {
  it("round-trips through the CLI: export to a file, restore into an empty database, verify", async () => {
    await toSynthesis("s-cli");
    const file = path.join(env.dataDir, "..", `dialectic-${path.basename(env.dataDir)}.json`);
    const run = (argv: string[]) => runCli(ledgerCommands, [...argv, "--json"]);
    const quiet = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      expect(await run(["dialectic", "export", "--out", file])).toBe(0);
      await env.cleanup();
      env = await useTestBackend();
      expect(await run(["dialectic", "restore", file])).toBe(0);
      expect(await run(["dialectic", "verify", "s-cli"])).toBe(0);
      await governanceSql("update dialectic_messages set reasoning = 'edited' where session_id = 'alice~s-cli' and seq = 1");
      expect(await run(["dialectic", "verify", "s-cli"])).toBe(1);
    } finally {
      quiet.mockRestore();
      fs.rmSync(file, { force: true });
    }
    expect((await listAuditTail({ limit: 5 })).some((a) => a.action === "dialectic.restore" && a.actor.startsWith("cli:"))).toBe(true);
  });

  it("exports sessions as JSON that restores into an empty database exactly", async () => {
    await toSynthesis("s-x1");
    await post("bob", "s-x1", { message_type: "synthesis", reasoning: "ok", proposed_conditions: ["c"], agrees: true });
    await post("alice", "s-x1", { message_type: "synthesis", reasoning: "ok", agrees: true });
    await create("bob", { session_id: "s-x2", topic: "second", reviewer_agent_id: "carol" });
    const all = await callRoute(exportAllRoute.GET, { token: tok.admin });
    expect(all.status).toBe(200);
    expect((await callRoute(exportAllRoute.GET, { token: tok.alice })).status).toBe(403);
    const before = await ledgerRows();
    await env.cleanup();

    env = await useTestBackend();
    const admin = await token("ops", ["admin"]);
    const writerOnly = await token("dave");
    expect((await callRoute(restoreRoute.POST, { token: writerOnly, body: all.json })).status).toBe(403);
    const restored = await callRoute(restoreRoute.POST, { token: admin, body: all.json });
    expect(restored.json).toEqual({ restored: 2, unchanged: 0, messages: 4 });
    expect(await ledgerRows()).toEqual(before);
    expect({ ...(await governance().exportDialecticSessions({})), exportedAt: 0 }).toEqual({ ...all.json, exportedAt: 0 });
    expect((await verifySession("s-x1")).ok).toBe(true);
    expect((await listAuditTail({ limit: 3 })).find((a) => a.action === "dialectic.restore")).toMatchObject({ actor: "agent:ops" });

    expect((await callRoute(restoreRoute.POST, { token: admin, body: all.json })).json).toEqual({ restored: 0, unchanged: 2, messages: 0 });
    const tampered = structuredClone(all.json);
    tampered.sessions[0].messages[1].reasoning = "rewritten history";
    // Under a new id of the same agent (its key spelled as the namespaced ids are): the chain no longer verifies.
    const key = `${tampered.sessions[0].pausedAgentId}~s-x9`;
    tampered.sessions[0].sessionId = key;
    tampered.sessions[0].clientId = "s-x9";
    for (const m of tampered.sessions[0].messages) Object.assign(m, { sessionId: key, id: `${key}~${m.clientId}` });
    const rejected = await callRoute(restoreRoute.POST, { token: admin, body: tampered });
    expect(rejected.status).toBe(422);
    // A key that is not its agent's key for its id (another agent's, planted) is refused before anything is read.
    const planted = structuredClone(all.json);
    planted.sessions[0].sessionId = "someone-else~s-x1";
    for (const m of planted.sessions[0].messages) m.sessionId = "someone-else~s-x1";
    const refused = await callRoute(restoreRoute.POST, { token: admin, body: planted });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.json)).toContain("sessionId must be the paused agent's key");
    await expect(governance().restoreDialecticSessions({ snapshot: { format: "other" }, actor: "t" })).rejects.toThrow();
  });
});
