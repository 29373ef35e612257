/**
 * Dialectic sessions under load: 20 agents on loopback against `next start`
 * (port 3208, temp DATA_DIR), each running full reviews with a partner, plus
 * the same workload in-process for comparison. Needs a production build
 * (`npm run build`) first. Bounded: 20 agents × 10 reviews, 3 minutes at most.
 * Latency under 20-way concurrency is mostly queueing on the server's one
 * event loop; the /health row shows that floor on the machine at hand.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { percentile, printTable } from "./table";

const PORT = 3208;
const BASE = `http://127.0.0.1:${PORT}`;
const AGENTS = 20;
const REVIEWS_PER_AGENT = 10;
const DEADLINE_MS = 180_000;

type Samples = { create: number[]; post: number[]; retry: number[]; health: number[] };
type Ack = { sessionId: string; messageId: string };

async function startServer(dataDir: string, bootstrapToken: string): Promise<ChildProcess> {
  const server = spawn(process.execPath, [path.join("node_modules", "next", "dist", "bin", "next"), "start", "-H", "127.0.0.1", "-p", String(PORT)], {
    env: { ...process.env, DATA_DIR: dataDir, DUALMIND_BOOTSTRAP_TOKEN: bootstrapToken, DUALMIND_ADMIN_PASSWORD: randomBytes(12).toString("hex"), DUALMIND_LOG_LEVEL: "warn", NEXT_TELEMETRY_DISABLED: "1" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  server.stderr?.on("data", (d) => (stderr += d));
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    if (server.exitCode !== null) throw new Error(`next start exited ${server.exitCode}: ${stderr}`);
    try {
      if ((await fetch(`${BASE}/api/v1/health`)).ok) return server;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  server.kill("SIGTERM");
  throw new Error(`next start did not answer on ${BASE} within 60 s: ${stderr}`);
}

async function call(method: string, url: string, token: string, body?: unknown): Promise<{ status: number; json: unknown; ms: number }> {
  const started = performance.now();
  const res = await fetch(`${BASE}${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const json = await res.json();
  return { status: res.status, json, ms: performance.now() - started };
}

function reviewMessages(i: number, n: number) {
  return [
    { message_type: "thesis", reasoning: `agent ${i} paused on review ${n}: backlog above watermark`, root_cause: "embed worker stalled", observed_metrics: { backlog: 1000 + n } },
    { message_type: "antithesis", reasoning: "the worker is fine; the provider is rate limiting", concerns: ["retries hide the rate limit"] },
    { message_type: "synthesis", reasoning: "cap batch size and back off", proposed_conditions: ["batch 16", "exponential backoff"], agrees: true },
    { message_type: "synthesis", reasoning: "agreed", agrees: true },
  ];
}

async function runHttp(deadline: number): Promise<{ samples: Samples; errors: string[]; wallMs: number; requests: number; check: ReturnType<typeof integrity> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-ledger-"));
  const admin = randomBytes(32).toString("hex");
  const server = await startServer(dataDir, admin);
  try {
    const tokens: string[] = [];
    for (let i = 0; i < AGENTS; i++) {
      const r = await call("POST", "/api/v1/tokens", admin, { label: `bench-${i}`, agent_id: `bench-agent-${i}`, scopes: ["write"] });
      if (r.status !== 201) throw new Error(`token create failed: ${JSON.stringify(r.json)}`);
      tokens.push((r.json as { token: string }).token);
    }
    const samples: Samples = { create: [], post: [], retry: [], health: [] };
    // The floor on this machine: the same concurrency against the cheapest route.
    await Promise.all(
      tokens.map(async (t) => {
        for (let k = 0; k < 20; k++) samples.health.push((await call("GET", "/api/v1/health", t)).ms);
      }),
    );
    const acks: Ack[] = [];
    const sessions: string[] = [];
    const errors: string[] = [];
    let requests = 0;
    const started = performance.now();
    // Agent i asks agent i+1 to review: every agent is a requestor and a reviewer at once.
    await Promise.all(
      tokens.map(async (mine, i) => {
        const partner = tokens[(i + 1) % AGENTS];
        for (let n = 0; n < REVIEWS_PER_AGENT && Date.now() < deadline; n++) {
          const sessionId = `bench-${i}-${n}`;
          const created = await call("POST", "/api/v1/dialectic/sessions", mine, { session_id: sessionId, topic: `backlog review ${i}/${n}`, reviewer_agent_id: `bench-agent-${(i + 1) % AGENTS}` });
          requests++;
          if (created.status !== 201) {
            errors.push(`create ${sessionId}: ${created.status}`);
            continue;
          }
          samples.create.push(created.ms);
          sessions.push(sessionId);
          const messages = reviewMessages(i, n);
          const authors = [mine, partner, partner, mine];
          for (let k = 0; k < messages.length; k++) {
            const messageId = `${sessionId}-m${k + 1}`;
            const r = await call("POST", `/api/v1/dialectic/sessions/${sessionId}/messages`, authors[k], { message_id: messageId, ...messages[k] });
            requests++;
            if (r.status !== 201) errors.push(`post ${messageId}: ${r.status} ${JSON.stringify(r.json)}`);
            else {
              samples.post.push(r.ms);
              acks.push({ sessionId, messageId });
            }
            if (k === 0) {
              // A client that lost the answer retries: it must get the same message back, not a second one.
              const again = await call("POST", `/api/v1/dialectic/sessions/${sessionId}/messages`, authors[k], { message_id: messageId, ...messages[k] });
              requests++;
              if (again.status !== 200) errors.push(`retry ${messageId}: ${again.status}`);
              else samples.retry.push(again.ms);
            }
          }
        }
      }),
    );
    const wallMs = performance.now() - started;
    // Read back what the server stored, through its own export, before it stops.
    const check = integrity(acks, sessions, await exportAll(admin));
    return { samples, errors, wallMs, requests, check };
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

type Exported = { format: string; sessions: { sessionId: string; status: string; messages: { id: string; seq: number }[] }[] };

async function exportAll(admin: string): Promise<Exported> {
  const r = await call("GET", "/api/v1/dialectic/export", admin);
  if (r.status !== 200) throw new Error(`export failed: ${r.status}`);
  return r.json as Exported;
}

function integrity(acks: Ack[], sessions: string[], exported: Exported) {
  const stored = exported.sessions.flatMap((s) => s.messages.map((m) => m.id));
  const storedSet = new Set(stored);
  const ackSet = new Set(acks.map((a) => a.messageId));
  return {
    sessions: sessions.length,
    resolved: exported.sessions.filter((s) => s.status === "resolved").length,
    acknowledged: acks.length,
    stored: stored.length,
    lost: acks.filter((a) => !storedSet.has(a.messageId)).length,
    duplicated: stored.length - storedSet.size + stored.filter((id) => !ackSet.has(id)).length,
    gaps: exported.sessions.filter((s) => s.messages.some((m, i) => m.seq !== i + 1)).length,
  };
}

async function runInProcess(): Promise<Samples & { wallMs: number }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-ledger-lib-"));
  process.env.DATA_DIR = dataDir;
  const { resetConfigForTests } = await import("../lib/config");
  const { closeAllDatabases } = await import("../lib/db/connection");
  const { createDialecticSession, postDialecticMessage } = await import("../lib/governance/dialectic");
  resetConfigForTests();
  const samples: Samples = { create: [], post: [], retry: [], health: [] };
  const started = performance.now();
  for (let i = 0; i < AGENTS; i++) {
    for (let n = 0; n < REVIEWS_PER_AGENT; n++) {
      const sessionId = `lib-${i}-${n}`;
      let t = performance.now();
      createDialecticSession({ input: { session_id: sessionId, topic: "t", reviewer_agent_id: `a${i + 1}` }, agentId: `a${i}` });
      samples.create.push(performance.now() - t);
      const authors = [`a${i}`, `a${i + 1}`, `a${i + 1}`, `a${i}`];
      reviewMessages(i, n).forEach((m, k) => {
        t = performance.now();
        postDialecticMessage({ sessionId, agentId: authors[k], input: { message_id: `${sessionId}-m${k + 1}`, ...(m as { message_type: "thesis" | "antithesis" | "synthesis"; reasoning: string }) } });
        samples.post.push(performance.now() - t);
      });
    }
  }
  const wallMs = performance.now() - started;
  closeAllDatabases();
  fs.rmSync(dataDir, { recursive: true, force: true });
  return { ...samples, wallMs };
}

function row(name: string, samples: number[]) {
  return { operation: name, n: samples.length, "p50 ms": percentile(samples, 50), "p95 ms": percentile(samples, 95), "max ms": percentile(samples, 100) };
}

export default async function ledgerBench(): Promise<void> {
  if (!fs.existsSync(path.join(process.cwd(), ".next", "BUILD_ID"))) {
    const msg = "ledger bench: no production build (.next/BUILD_ID is missing). Run `npm run build` first, then `npm run bench -- ledger`.";
    process.stderr.write(msg + "\n");
    process.stdout.write(msg + "\n");
    process.exitCode = 1;
    return;
  }
  const http = await runHttp(Date.now() + DEADLINE_MS);
  const lib = await runInProcess();
  printTable(`Dialectic over HTTP: ${AGENTS} concurrent agents on 127.0.0.1 (next start), ${AGENTS * REVIEWS_PER_AGENT} full reviews`, [
    row("GET /health, the floor (HTTP)", http.samples.health),
    row("session create (HTTP)", http.samples.create),
    row("message post (HTTP)", http.samples.post),
    row("idempotent retry (HTTP)", http.samples.retry),
    row("session create (in-process, serial)", lib.create),
    row("message post (in-process, serial)", lib.post),
  ]);
  printTable("Throughput", [
    { run: `HTTP, ${AGENTS} agents`, "wall s": http.wallMs / 1000, requests: http.requests, "requests/s": http.requests / (http.wallMs / 1000), "messages/s": http.samples.post.length / (http.wallMs / 1000), errors: http.errors.length },
    { run: "in-process, serial", "wall s": lib.wallMs / 1000, requests: lib.create.length + lib.post.length, "requests/s": (lib.create.length + lib.post.length) / (lib.wallMs / 1000), "messages/s": lib.post.length / (lib.wallMs / 1000), errors: 0 },
  ]);
  printTable("Integrity after the HTTP run (read back through the admin export)", [http.check]);
  if (http.errors.length) process.stdout.write(`errors (first 5): ${http.errors.slice(0, 5).join(" | ")}\n`);
}
