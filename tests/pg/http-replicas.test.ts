import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { listAuditTail, verifyAuditChain, pgLedger } from "@/lib/governance/audit";
import { api, ensureProductionBuild, RELIABILITY_TOKEN, startServer, type RunningServer } from "../fixtures/next-server";
import { createTestDatabase } from "./helpers";

/**
 * Two `next start` servers on one PostgreSQL database (DATABASE_URL), each
 * with its own DATA_DIR, as two replicas behind a load balancer: the ledger
 * written through one is read through the other, over REST and MCP with
 * agent tokens, and dialectic posts racing across both stay one gap-free,
 * signed transcript. Ports 3420/3421 (this branch's range).
 */
const HASH = "d".repeat(64);
let url: string;
let a: RunningServer;
let b: RunningServer;
let pg: PgHandle;
const dirs: string[] = [];
let serverErrors = 0;

async function call(server: RunningServer, method: string, urlPath: string, opts: { token?: string; body?: unknown } = {}) {
  const r = await api(server.url, method, urlPath, opts);
  if (r.status >= 500 || r.status === 0) serverErrors++;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
  return r as { status: number; json: any };
}

async function mcp(server: RunningServer, token: string, name: string, args: Record<string, unknown>) {
  const res = await fetch(`${server.url}/api/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, accept: "application/json, text/event-stream", "content-type": "application/json", connection: "close" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
  if (res.status >= 500) serverErrors++;
  const text = await res.text();
  const rpc = JSON.parse(text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data: "))!.slice(6)) as { result: { isError?: boolean; content: { text: string }[] } };
  return { isError: rpc.result.isError === true, json: JSON.parse(rpc.result.content[0].text) as Record<string, unknown> };
}

beforeAll(async () => {
  ensureProductionBuild();
  url = await createTestDatabase();
  const serve = (port: number, via: "next" | "npm-start") => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-pghttp-"));
    dirs.push(dataDir);
    return startServer({ dataDir, port, via, env: { DATABASE_URL: url, DUALMIND_PG_POOL_MAX: "4", DUALMIND_LOG_LEVEL: "warn" } });
  };
  // One as a user starts it (npm start: migrations, then serve), one as a bare `next start`.
  a = await serve(3420, "npm-start");
  b = await serve(3421, "next");
  pg = await openPgHandle({ url, max: 2 });
}, 900_000);

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  if (pg) await closePgHandle(pg);
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe("two app servers on one PostgreSQL database", () => {
  const tok: Record<string, string> = {};

  it("npm start says what is served from PostgreSQL (everything: nothing answers 501)", () => {
    expect(a.stderr()).toContain("from PostgreSQL: the governance ledger (tasks, runs, validations, provenance, overrides, dialectic sessions, API tokens), users, sign-in and the login throttle");
    expect(a.stderr()).toContain("the dashboard reads the PostgreSQL stores too");
    expect(a.stderr()).not.toContain("501");
  });

  it("serves the ledger written through one server from the other, over REST and MCP, with tokens made on either", async () => {
    for (const [agent, server] of [["alice", a], ["bob", b]] as const) {
      const made = await call(server, "POST", "/tokens", { token: RELIABILITY_TOKEN, body: { label: agent, agent_id: agent, scopes: ["write"] } });
      expect(made.status).toBe(201);
      tok[agent] = made.json.token;
    }
    expect((await call(a, "POST", "/tasks", { token: tok.alice, body: { task_id: "http-t", intent: "ship it", spec: { v: 1 }, assignees: ["bob"] } })).status).toBe(201);
    expect((await call(b, "POST", "/tasks", { token: tok.alice, body: { task_id: "http-t", intent: "ship it", spec: { v: 1 }, assignees: ["bob"] } })).status).toBe(200);
    expect((await call(b, "POST", "/tasks/http-t/runs", { token: tok.bob, body: { run_id: "http-r", skill: "build", input_hash: HASH, runner_version: "1" } })).status).toBe(201);
    expect((await call(a, "POST", "/tasks/http-t/runs/http-r/finish", { token: tok.bob, body: { output_hash: HASH, exit_code: 0 } })).status).toBe(200);
    const validated = await mcp(b, tok.alice, "record_validation", { task_id: "http-t", critic_passed: true, runner_passed: true });
    expect(validated.isError).toBe(false);
    const status = await call(a, "GET", "/tasks/http-t", { token: tok.bob });
    expect(status.json.verdict.verdict).toBe("passed");
    expect((await mcp(a, tok.bob, "task_status", { task_id: "http-t" })).json).toMatchObject({ verdict: { verdict: "passed" } });
    expect((await call(b, "POST", "/overrides", { token: tok.alice, body: { task_id: "http-t", note: "released by hand" } })).status).toBe(201);
  });

  it("keeps one gap-free, signed transcript when both agents post at once through both servers", async () => {
    expect((await call(a, "POST", "/dialectic/sessions", { token: tok.alice, body: { session_id: "http-d", topic: "pause review", reviewer_agent_id: "bob", max_rounds: 100 } })).status).toBe(201);
    expect((await mcp(b, tok.alice, "dialectic_post", { session_id: "http-d", message_type: "thesis", reasoning: "paused on a failing check" })).isError).toBe(false);
    expect((await call(a, "POST", "/dialectic/sessions/http-d/messages", { token: tok.bob, body: { message_type: "antithesis", reasoning: "the check is flaky" } })).status).toBe(201);
    let acknowledged = 2;
    for (let wave = 0; wave < 3; wave++) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          call(i % 2 ? a : b, "POST", "/dialectic/sessions/http-d/messages", {
            token: i % 4 < 2 ? tok.alice : tok.bob,
            body: { message_type: "synthesis", reasoning: `wave ${wave} post ${i}`, agrees: false },
          }),
        ),
      );
      expect(answers.map((x) => x.status).filter((s) => s !== 201 && s !== 409)).toEqual([]);
      acknowledged += answers.filter((x) => x.status === 201).length;
    }
    const detail = await call(b, "GET", "/dialectic/sessions/http-d", { token: tok.alice });
    expect(detail.json.messages.map((m: { seq: number }) => m.seq)).toEqual(Array.from({ length: acknowledged }, (_, i) => i + 1));
    expect((await call(a, "GET", "/dialectic/sessions/http-d/verify", { token: tok.bob })).json).toEqual({ ok: true, messages: acknowledged });
    // The export, from either server, is the same signed transcript.
    const exported = await api(a.url, "GET", "/dialectic/export");
    expect(exported.status).toBe(200);
    const { sessions } = exported.json as { sessions: { clientId: string; messages: unknown[] }[] };
    expect(sessions.find((s) => s.clientId === "http-d")?.messages).toHaveLength(acknowledged);
  });

  it("refuses a token revoked on one server at once on the other, and the audit chain verifies", async () => {
    const list = await call(a, "GET", "/tokens", { token: RELIABILITY_TOKEN });
    const bob = list.json.tokens.find((t: { agent_id: string }) => t.agent_id === "bob");
    expect((await call(b, "DELETE", `/tokens/${bob.id}`, { token: RELIABILITY_TOKEN })).status).toBe(200);
    expect((await call(a, "GET", "/tasks", { token: tok.bob })).status).toBe(401);
    expect((await call(a, "GET", "/tasks", { token: tok.alice })).status).toBe(200);
    // One chain across both servers: the first admin and the core and default stores (made once, by whichever server
    // started first), two token creations, one override, one validation, one revocation.
    const actions = (await listAuditTail({ handle: pgLedger(pg.db), limit: 50 })).map((r) => r.action).sort();
    expect(actions).toEqual(["ledger.override", "ledger.validation", "store.create", "store.create", "token.create", "token.create", "token.revoke", "user.create"]);
    expect(await verifyAuditChain({ handle: pgLedger(pg.db) })).toEqual({ ok: true, entries: 8 });
    expect(serverErrors).toBe(0);
  });
});
