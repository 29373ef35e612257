import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { verifyAuditChainPg } from "@/lib/governance/audit-pg";
import { api, ensureProductionBuild, RELIABILITY_TOKEN, startServer, type RunningServer } from "../fixtures/next-server";
import { createTestDatabase } from "./helpers";

/**
 * Two `next start` replicas on one PostgreSQL database; 20 agents write
 * ledger rows (tasks, runs) and dialectic messages through both, and one
 * replica is killed with SIGKILL mid-run. An agent whose request dies with
 * the server (no answer) retries it, with the same ids, on the survivor —
 * as a client behind a load balancer would. Afterwards every write a server
 * acknowledged is in the database exactly once, the survivor never answered
 * 5xx, every dialectic transcript is gap-free and verifies, and the audit
 * chain verifies. Ports 3440/3441.
 */
const AGENTS = 20;
const STEPS = 10;
const HASH = "e".repeat(64);

let url: string;
let a: RunningServer;
let b: RunningServer;
let pg: PgHandle;
const dirs: string[] = [];

beforeAll(async () => {
  ensureProductionBuild();
  url = await createTestDatabase();
  const serve = (port: number) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-pgkill-"));
    dirs.push(dataDir);
    return startServer({ dataDir, port, via: "next", env: { DATABASE_URL: url, DUALMIND_PG_POOL_MAX: "6", DUALMIND_LOG_LEVEL: "warn" } });
  };
  a = await serve(3440);
  b = await serve(3441);
  pg = await openPgHandle({ url, max: 2 });
}, 900_000);

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  if (pg) await closePgHandle(pg);
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

type Answer = { status: number; json: unknown; server: "a" | "b" };

describe("two replicas on one PostgreSQL database, one killed with SIGKILL mid-run", () => {
  it("keeps every acknowledged write exactly once, answers no 5xx from the survivor, and the chains verify", async () => {
    let aDead = false;
    const statuses: { server: "a" | "b"; status: number }[] = [];
    /** One write: to the agent's server of the moment; no answer (the server died) → the same request again on the survivor. */
    async function write(prefer: "a" | "b", method: string, urlPath: string, token: string, body: unknown): Promise<Answer> {
      const order: ("a" | "b")[] = prefer === "a" && !aDead ? ["a", "b"] : ["b"];
      for (const name of order) {
        const r = await api((name === "a" ? a : b).url, method, urlPath, { token, body });
        statuses.push({ server: name, status: r.status });
        if (r.status !== 0) return { ...r, server: name };
      }
      throw new Error(`${method} ${urlPath}: the survivor did not answer`);
    }

    const tokens: string[] = [];
    for (let i = 0; i < AGENTS; i++) {
      const made = await api((i % 2 ? a : b).url, "POST", "/tokens", { token: RELIABILITY_TOKEN, body: { label: `agent-${i}`, agent_id: `agent-${i}`, scopes: ["write"] } });
      expect(made.status).toBe(201);
      tokens.push((made.json as { token: string }).token);
    }
    const reviewerOf = (i: number) => (i + 1) % AGENTS;

    const acked = { tasks: new Set<string>(), runs: new Set<string>(), messages: new Map<string, string[]>() };
    let done = 0;
    const killAfter = Math.floor((AGENTS * STEPS) / 3);
    let killed: Promise<void> | null = null;

    async function agent(i: number) {
      const session = `kill-d-${i}`;
      acked.messages.set(session, []);
      const opened = await write(i % 2 ? "a" : "b", "POST", "/dialectic/sessions", tokens[i], { session_id: session, topic: `work of agent ${i}`, reviewer_agent_id: `agent-${reviewerOf(i)}`, max_rounds: 100 });
      expect([200, 201]).toContain(opened.status);
      for (let step = 0; step < STEPS; step++) {
        const prefer = (i + step) % 2 ? "a" : "b";
        const taskId = `kill-t-${i}-${step}`;
        const task = await write(prefer, "POST", "/tasks", tokens[i], { task_id: taskId, intent: `step ${step} of agent ${i}`, spec: { step } });
        expect([200, 201], JSON.stringify(task)).toContain(task.status);
        acked.tasks.add(taskId);
        const runId = `kill-r-${i}-${step}`;
        const run = await write(prefer, "POST", `/tasks/${taskId}/runs`, tokens[i], { run_id: runId, skill: "build", input_hash: HASH, runner_version: "1" });
        expect([200, 201], JSON.stringify(run)).toContain(run.status);
        acked.runs.add(runId);
        // thesis (author), antithesis (reviewer), then syntheses alternating author / reviewer.
        const byReviewer = step % 2 === 1;
        const messageType = step === 0 ? "thesis" : step === 1 ? "antithesis" : "synthesis";
        const messageId = `kill-m-${i}-${step}`;
        const posted = await write(prefer, "POST", `/dialectic/sessions/${session}/messages`, tokens[byReviewer ? reviewerOf(i) : i], {
          message_id: messageId,
          message_type: messageType,
          reasoning: `step ${step} of agent ${i}`,
          ...(messageType === "synthesis" ? { agrees: false } : {}),
        });
        expect([200, 201], JSON.stringify(posted)).toContain(posted.status);
        acked.messages.get(session)!.push(messageId);
        if (++done === killAfter) {
          aDead = true;
          killed = a.kill9();
        }
      }
    }
    await Promise.all(Array.from({ length: AGENTS }, (_, i) => agent(i)));
    await killed;
    expect(killed).not.toBeNull();

    // Some writes went to a before it died; the ones in flight when it died had no answer and were retried on b.
    expect(statuses.filter((s) => s.server === "a" && s.status >= 200 && s.status < 300).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s.server === "a" && s.status === 0).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s.server === "b" && s.status >= 500)).toEqual([]);
    expect(statuses.filter((s) => s.server === "a" && s.status >= 500)).toEqual([]);

    // Exactly once: every acknowledged task and run is there, and nothing else of this run.
    const tasks = await pg.pool.query<{ task_id: string }>("select task_id from tasks where task_id like 'kill-t-%'");
    expect(tasks.rows.map((r) => r.task_id).sort()).toEqual([...acked.tasks].sort());
    const runs = await pg.pool.query<{ run_id: string }>("select run_id from skill_runs where run_id like 'kill-r-%'");
    expect(runs.rows.map((r) => r.run_id).sort()).toEqual([...acked.runs].sort());
    expect(acked.tasks.size).toBe(AGENTS * STEPS);

    // Each transcript: the acknowledged messages, once each, in order, seq 1..n, and its signature chain verifies (read on the survivor).
    for (let i = 0; i < AGENTS; i++) {
      const session = `kill-d-${i}`;
      const detail = await api(b.url, "GET", `/dialectic/sessions/${session}`, { token: tokens[i] });
      expect(detail.status).toBe(200);
      const messages = (detail.json as { messages: { id: string; seq: number }[] }).messages;
      expect(messages.map((m) => m.id)).toEqual(acked.messages.get(session));
      expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: STEPS }, (_, k) => k + 1));
      expect((await api(b.url, "GET", `/dialectic/sessions/${session}/verify`, { token: tokens[i] })).json).toEqual({ ok: true, messages: STEPS });
    }

    // One audit chain across both servers (token creations, the first admin), intact after the kill.
    const chain = await verifyAuditChainPg({ db: pg.db });
    expect(chain.ok).toBe(true);
    expect(chain.entries).toBeGreaterThanOrEqual(AGENTS);

    // The survivor still serves reads and writes.
    expect((await api(b.url, "GET", "/tasks?limit=1", { token: tokens[0] })).status).toBe(200);
  }, 600_000);
});
