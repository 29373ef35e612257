import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { verifyAuditChain, pgLedger } from "@/lib/governance/audit";
import { startFakeOpenAI } from "../fixtures/fake-openai-server";
import { api, ensureProductionBuild, RELIABILITY_TOKEN, startServer, type RunningServer } from "../fixtures/next-server";
import { createTestDatabase } from "./helpers";

/**
 * Two `next start` replicas on one PostgreSQL database; 20 agents write
 * documents, traces, thoughts, ledger rows (tasks, runs) and dialectic messages through both,
 * and one replica is killed with SIGKILL mid-run. An agent whose request dies
 * with the server (no answer) retries it, with the same ids, on the survivor —
 * as a client behind a load balancer would. Afterwards every write a server
 * acknowledged is in the database exactly once, the survivor never answered
 * 5xx, every dialectic transcript is gap-free and verifies, the audit chain
 * verifies, and the embed queue items the dead replica had claimed are
 * embedded by the survivor once its claims' lease ran out — every chunk with
 * exactly one vector and one provenance row. Both replicas embed through an
 * OpenAI-compatible stand-in (same model, so the same fingerprint); the dead
 * one's answers slowly, so it is mid-batch, holding claims, when it dies.
 * Ports 3440/3441.
 */
const AGENTS = 20;
const STEPS = 10;
const HASH = "e".repeat(64);

let url: string;
let a: RunningServer;
let b: RunningServer;
let pg: PgHandle;
const dirs: string[] = [];
const embedders: Awaited<ReturnType<typeof startFakeOpenAI>>[] = [];
const LEASE_MS = 5_000;

beforeAll(async () => {
  ensureProductionBuild();
  url = await createTestDatabase();
  const slow = await startFakeOpenAI({ dimension: 64 });
  const quick = await startFakeOpenAI({ dimension: 64 });
  embedders.push(slow, quick);
  const serve = async (port: number, embedBaseUrl: string) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-pgkill-"));
    dirs.push(dataDir);
    return startServer({
      dataDir,
      port,
      via: "next",
      env: {
        DATABASE_URL: url,
        DUALMIND_PG_POOL_MAX: "6",
        DUALMIND_LOG_LEVEL: "warn",
        DUALMIND_EMBED_PROVIDER: "openai",
        DUALMIND_EMBED_MODEL: "stand-in-64",
        DUALMIND_EMBED_DIM: "64",
        DUALMIND_EMBED_BASE_URL: embedBaseUrl,
        DUALMIND_EMBED_LEASE_MS: String(LEASE_MS),
      },
    });
  };
  a = await serve(3440, slow.baseUrl);
  b = await serve(3441, quick.baseUrl);
  // From now on a's embedder takes its time: each of its batches holds its claims for a while.
  slow.state.delayMs = 1_500;
  pg = await openPgHandle({ url, max: 2 });
}, 900_000);

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  if (pg) await closePgHandle(pg);
  for (const e of embedders) await e.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

type Claim = { ref_id: string; claimed_by: string };
/** Chunks whose queue rows the slow replica's worker (its process id is in the worker id) holds right now. */
async function heldBySlowReplica(): Promise<Claim[]> {
  const rows = (await pg.pool.query<Claim>("select ref_id::text, claimed_by from store_default.embed_queue where claimed_by like $1 and claimed_until > $2", [`pg-worker-${a.child.pid}-%`, Date.now()])).rows;
  if (rows.length === 0) await new Promise((r) => setTimeout(r, 100));
  return rows;
}

type Answer = { status: number; json: unknown; server: "a" | "b" };

describe("two replicas on one PostgreSQL database, one killed with SIGKILL mid-run", () => {
  it("keeps every acknowledged write exactly once, answers no 5xx from the survivor, and the chains verify", async () => {
    let aDead = false;
    /** Requests sent to the slow replica and not yet answered: those in flight when it is killed get no answer. */
    let inFlightToA = 0;
    let inFlightToAAtKill = 0;
    const statuses: { server: "a" | "b"; status: number }[] = [];
    /** One write: to the agent's server of the moment; no answer (the server died) → the same request again on the survivor. */
    async function write(prefer: "a" | "b", method: string, urlPath: string, token: string, body: unknown): Promise<Answer> {
      const order: ("a" | "b")[] = prefer === "a" && !aDead ? ["a", "b"] : ["b"];
      for (const name of order) {
        if (name === "a") inFlightToA++;
        const r = await api((name === "a" ? a : b).url, method, urlPath, { token, body }).finally(() => {
          if (name === "a") inFlightToA--;
        });
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

    const acked = { tasks: new Set<string>(), runs: new Set<string>(), documents: new Set<string>(), traces: new Set<string>(), messages: new Map<string, string[]>() };
    let done = 0;
    const killAfter = Math.floor((AGENTS * STEPS) / 3);
    let killed: Promise<void> | null = null;
    let orphaned: Claim[] = [];
    let doneAtKill = 0;
    /** Once a third of the steps are done: wait until the slow replica holds claims, then kill it. */
    async function killer() {
      while (done < killAfter) await new Promise((r) => setTimeout(r, 50));
      const deadline = Date.now() + 120_000;
      while (orphaned.length === 0 && Date.now() < deadline) orphaned = await heldBySlowReplica();
      doneAtKill = done;
      aDead = true;
      killed = a.kill9();
      await killed;
      // Requests to a still unanswered once its process is gone: those can only end without an answer (a request
      // counted just before the signal landed may still have been answered).
      inFlightToAAtKill = inFlightToA;
    }

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
        const docPath = `agents/${i}/step-${step}.md`;
        const doc = await write(prefer, "PUT", "/stores/default/documents", tokens[i], { path: docPath, content: `# Step ${step} of agent ${i}\n\nAgent ${i} recorded kiwi${i}x${step} while the replicas were racing.\n` });
        expect([200, 201], JSON.stringify(doc)).toContain(doc.status);
        acked.documents.add(docPath);
        // A reasoning trace: a retry of one that committed before the server died is deduplicated (the same row, seen again).
        const traceTarget = `agent ${i} step ${step}`;
        const trace = await write(prefer, "POST", "/stores/default/traces", tokens[i], { intent: { verb: "record", target: traceTarget }, shard_type: "kill", outcome: "success", key_issue: `kiwi${i}x${step} settled` });
        // 201 the first time; 200 with deduped: true when the write committed on the killed replica and the retry met it.
        expect(trace.status === 201 || (trace.status === 200 && (trace.json as { deduped?: boolean }).deduped === true), JSON.stringify(trace)).toBe(true);
        acked.traces.add(traceTarget);
        // A thought in the agent's chain with its number given: a retry of one that committed before the server died is a 409 (it is there).
        const thought = await write(prefer, "POST", "/stores/default/thoughts", tokens[i], { content: `agent ${i} thought ${step}`, chain_id: `kill-c-${i}`, thought_number: step + 1 });
        expect([201, 409], JSON.stringify(thought)).toContain(thought.status);
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
        done++;
      }
    }
    await Promise.all([killer(), ...Array.from({ length: AGENTS }, (_, i) => agent(i))]);
    expect(killed).not.toBeNull();
    // The slow replica died holding claims on queued chunks.
    expect(orphaned.length).toBeGreaterThan(0);

    // Some writes went to a before it died; the ones in flight when it died had no answer and were retried on b.
    expect(statuses.filter((s) => s.server === "a" && s.status >= 200 && s.status < 300).length).toBeGreaterThan(0);
    // (On a slow machine the kill may come when every request in flight went to b, or after the agents finished: then none to a was cut off.)
    if (doneAtKill < AGENTS * STEPS && inFlightToAAtKill > 0) expect(statuses.filter((s) => s.server === "a" && s.status === 0).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s.server === "b" && s.status >= 500)).toEqual([]);
    expect(statuses.filter((s) => s.server === "a" && s.status >= 500)).toEqual([]);

    // Exactly once: every acknowledged task and run is there, and nothing else of this run.
    const tasks = await pg.pool.query<{ client_id: string }>("select client_id from tasks where client_id like 'kill-t-%'");
    expect(tasks.rows.map((r) => r.client_id).sort()).toEqual([...acked.tasks].sort());
    const runs = await pg.pool.query<{ run_id: string }>("select client_id as run_id from skill_runs where client_id like 'kill-r-%'");
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
    const chain = await verifyAuditChain({ handle: pgLedger(pg.db) });
    expect(chain.ok).toBe(true);
    expect(chain.entries).toBeGreaterThanOrEqual(AGENTS);

    // Documents: every acknowledged one, once.
    const docs = await pg.pool.query<{ path: string }>("select path from store_default.documents where path like 'agents/%'");
    expect(docs.rows.map((r) => r.path).sort()).toEqual([...acked.documents].sort());

    // Traces: every acknowledged one, exactly one row each (a retried write is the same row seen twice, never a second row).
    const traces = await pg.pool.query<{ intent_target: string; n: number }>("select intent_target, count(*)::int as n from store_default.reasoning_traces where shard_type = 'kill' group by intent_target");
    expect(traces.rows.map((r) => r.intent_target).sort()).toEqual([...acked.traces].sort());
    expect(traces.rows.filter((r) => r.n !== 1)).toEqual([]);

    // Thoughts: each agent's chain numbered 1..STEPS, every number once, and the chain's count exact.
    const chains = await pg.pool.query<{ chain_id: string; numbers: number[]; thought_count: number }>(
      "select t.chain_id, array_agg(t.thought_number order by t.thought_number) as numbers, c.thought_count from store_default.thoughts t join store_default.chains c on c.id = t.chain_id where t.chain_id like 'kill-c-%' group by t.chain_id, c.thought_count",
    );
    expect(chains.rows).toHaveLength(AGENTS);
    for (const c of chains.rows) expect(c).toEqual({ chain_id: c.chain_id, numbers: Array.from({ length: STEPS }, (_, k) => k + 1), thought_count: STEPS });

        // The survivor's worker takes over what the dead replica had claimed once the lease runs out, and drains the queue.
    await expect.poll(async () => (await pg.pool.query<{ n: number }>("select count(*)::int as n from store_default.embed_queue")).rows[0].n, { timeout: 180_000, interval: 500 }).toBe(0);
    const perChunk = await pg.pool.query<{ id: string; vectors: number }>(
      "select c.id::text, (select count(*)::int from store_default.chunk_embeddings e where e.chunk_row_id = c.id) as vectors from store_default.chunks c join store_default.documents d on d.doc_id = c.doc_id where d.path like 'agents/%'",
    );
    expect(perChunk.rows.length).toBeGreaterThanOrEqual(AGENTS * STEPS);
    expect(perChunk.rows.filter((r) => r.vectors !== 1)).toEqual([]);
    // Among them the ones the dead replica held: taken over, one vector each.
    const vectorsOf = new Map(perChunk.rows.map((r) => [r.id, r.vectors]));
    expect(orphaned.map((c) => vectorsOf.get(c.ref_id) ?? "not an agent's chunk")).toEqual(orphaned.map(() => 1));
    const provenance = await pg.pool.query<{ artifact_id: string; n: number }>(
      "select artifact_id, count(*)::int as n from provenance where store = 'default' and artifact_type = 'chunk_vector' group by artifact_id",
    );
    const byChunk = new Map(provenance.rows.map((r) => [r.artifact_id, r.n]));
    expect(perChunk.rows.filter((r) => byChunk.get(r.id) !== 1)).toEqual([]);
    // Every trace has exactly one vector too (the kind-generic embeddings table), and recall on the survivor finds one.
    const perTrace = await pg.pool.query<{ id: string; vectors: number }>(
      "select t.id::text, (select count(*)::int from store_default.embeddings e where e.kind = 'trace' and e.ref_id = t.id) as vectors from store_default.reasoning_traces t where t.shard_type = 'kill'",
    );
    expect(perTrace.rows).toHaveLength(AGENTS * STEPS);
    expect(perTrace.rows.filter((r) => r.vectors !== 1)).toEqual([]);
    const recalled = await api(b.url, "POST", "/stores/default/recall", { token: tokens[5], body: { query: "kiwi5x3 settled" } });
    expect(recalled.status).toBe(200);
    expect(JSON.stringify(recalled.json)).toContain("kiwi5x3 settled");
    // A vector search on the survivor now answers by vector, no fallback.
    const found = await api(b.url, "GET", "/stores/default/search?mode=vector&q=kiwi3x7%20recorded", { token: tokens[3] });
    expect(found.status).toBe(200);
    expect(found.json).toMatchObject({ effective_mode: "vector" });
    expect((found.json as { fallback?: unknown }).fallback ?? null).toBeNull();

    // The survivor still serves reads and writes.
    expect((await api(b.url, "GET", "/tasks?limit=1", { token: tokens[0] })).status).toBe(200);
  }, 600_000);
});
