/**
 * Dialectic sessions under load: 20 agents on loopback against `next start`
 * (port 3208, temp DATA_DIR), each running full reviews with a partner, plus
 * the same workload in-process for comparison. Needs a production build
 * (`npm run build`) first. Bounded: 20 agents × 10 reviews, 3 minutes at most.
 * Latency under 20-way concurrency is mostly queueing on the server's one
 * event loop; the /health row shows that floor on the machine at hand.
 *
 * Then the same writes with the ledger already holding 10k and 100k resolved
 * reviews (a session and its four messages each), seeded through
 * createDialecticSession / postDialecticMessage — the real write path with
 * its per-session signature chain — in transactions of SEED_BATCH sessions
 * (the domain's IMMEDIATE transactions nest as savepoints). One ledger grows
 * from empty to 10k to 100k, measured in-process at each size, then served by
 * `next start` for the HTTP run at the largest size.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type Database from "better-sqlite3";
import { percentile, printTable } from "./table";

const PORT = 3208;
const BASE = `http://127.0.0.1:${PORT}`;
const AGENTS = 20;
const REVIEWS_PER_AGENT = 10;
const DEADLINE_MS = 180_000;
const LEDGER_SIZES = [10_000, 100_000];
const SEED_BATCH = 500;
/**
 * Keeps the bench within about 8 minutes: seeding is CPU-bound in the domain
 * functions (~2-3 ms of CPU per review, so ~4 min for 100k on a quiet
 * machine); a loaded machine may stop short of 100k, and every row then says
 * the size it really reached. BENCH_LEDGER_SEED_S overrides the cap.
 */
const SEED_DEADLINE_MS = Number(process.env.BENCH_LEDGER_SEED_S ?? 420) * 1000;
const SEED_AGENTS = 200;

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

type HttpRun = { samples: Samples; errors: string[]; wallMs: number; requests: number; check: ReturnType<typeof integrity> };

/** The 20-agent workload against `next start` over `dataDir` (empty or seeded; the caller owns and removes it). */
async function runHttp({ dataDir, deadline }: { dataDir: string; deadline: number }): Promise<HttpRun> {
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
    const check = integrity(acks, sessions, await exportSessions(admin, sessions));
    return { samples, errors, wallMs, requests, check };
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
}

type Exported = { format: string; sessions: { sessionId: string; status: string; messages: { id: string; seq: number }[] }[] };

/** Each session the run created, through the per-session admin export: a whole-ledger export at 100k would measure the export, not the writes. */
async function exportSessions(admin: string, sessionIds: string[]): Promise<Exported> {
  const out: Exported = { format: "", sessions: [] };
  for (const id of sessionIds) {
    const r = await call("GET", `/api/v1/dialectic/sessions/${id}/export`, admin);
    if (r.status !== 200) throw new Error(`export of ${id} failed: ${r.status}`);
    const one = r.json as Exported;
    out.format = one.format;
    out.sessions.push(...one.sessions);
  }
  return out;
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

type DialecticModule = typeof import("../lib/governance/dialectic");
type InProcessRun = Samples & { wallMs: number; ledgerSessions: number };
type SeedStep = { from: number; to: number; target: number; ms: number; dbMb: number };

/** The same 200 full reviews as the HTTP run, serial, straight into the domain functions. */
function runInProcess({ dialectic, ledgerSessions }: { dialectic: DialecticModule; ledgerSessions: number }): InProcessRun {
  const samples: Samples = { create: [], post: [], retry: [], health: [] };
  const started = performance.now();
  for (let i = 0; i < AGENTS; i++) {
    for (let n = 0; n < REVIEWS_PER_AGENT; n++) {
      const sessionId = `lib-${ledgerSessions}-${i}-${n}`;
      let t = performance.now();
      dialectic.createDialecticSession({ input: { session_id: sessionId, topic: "t", reviewer_agent_id: `a${i + 1}` }, agentId: `a${i}` });
      samples.create.push(performance.now() - t);
      const authors = [`a${i}`, `a${i + 1}`, `a${i + 1}`, `a${i}`];
      reviewMessages(i, n).forEach((m, k) => {
        t = performance.now();
        dialectic.postDialecticMessage({ sessionId, agentId: authors[k], input: { message_id: `${sessionId}-m${k + 1}`, ...(m as { message_type: "thesis" | "antithesis" | "synthesis"; reasoning: string }) } });
        samples.post.push(performance.now() - t);
      });
    }
  }
  return { ...samples, wallMs: performance.now() - started, ledgerSessions };
}

/**
 * Grow the ledger to `to` sessions, each a resolved review, through the
 * domain functions. Seeded reviews are spread over SEED_AGENTS agents and
 * over the past (one a second: the automatic idle sweep then runs every
 * tenth create, as it would at that rate live), so indexes see a real spread.
 */
function seedLedger({ dialectic, sqlite, from, to, base, deadline }: { dialectic: DialecticModule; sqlite: Database.Database; from: number; to: number; base: number; deadline: number }): number {
  let k = from;
  while (k < to && Date.now() < deadline) {
    const end = Math.min(to, k + SEED_BATCH);
    sqlite.transaction(() => {
      for (; k < end; k++) {
        const sessionId = `seed-${k}`;
        const requestor = `seed-agent-${k % SEED_AGENTS}`;
        const reviewer = `seed-agent-${(k + 1) % SEED_AGENTS}`;
        const now = base + k * 1000;
        dialectic.createDialecticSession({ input: { session_id: sessionId, topic: `backlog review ${k}`, reviewer_agent_id: reviewer }, agentId: requestor, now });
        const authors = [requestor, reviewer, reviewer, requestor];
        reviewMessages(k % SEED_AGENTS, k).forEach((m, j) => {
          dialectic.postDialecticMessage({ sessionId, agentId: authors[j], now: now + (j + 1) * 100, input: { message_id: `${sessionId}-m${j + 1}`, ...(m as { message_type: "thesis" | "antithesis" | "synthesis"; reasoning: string }) } });
        });
      }
    })();
  }
  return k;
}

/** One ledger, empty → 10k → 100k: seed rate per step and the in-process workload at each size. The data dir is left for the HTTP run. */
async function growLedger(dataDir: string): Promise<{ runs: InProcessRun[]; seeds: SeedStep[] }> {
  process.env.DATA_DIR = dataDir;
  const { resetConfigForTests } = await import("../lib/config");
  const { closeAllDatabases, getGovernance, governancePath } = await import("../lib/db/connection");
  const dialectic = await import("../lib/governance/dialectic");
  resetConfigForTests();
  const { sqlite } = getGovernance();
  const deadline = Date.now() + SEED_DEADLINE_MS;
  const base = Date.now() - 2 * Math.max(...LEDGER_SIZES) * 1000;
  const runs = [runInProcess({ dialectic, ledgerSessions: 0 })];
  const seeds: SeedStep[] = [];
  let have = 0;
  for (const size of LEDGER_SIZES) {
    const t0 = performance.now();
    const reached = seedLedger({ dialectic, sqlite, from: have, to: size, base, deadline });
    sqlite.pragma("wal_checkpoint(TRUNCATE)");
    seeds.push({ from: have, to: reached, target: size, ms: performance.now() - t0, dbMb: fs.statSync(governancePath()).size / 2 ** 20 });
    have = reached;
    runs.push(runInProcess({ dialectic, ledgerSessions: have }));
    if (reached < size) break;
  }
  closeAllDatabases();
  return { runs, seeds };
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
  const emptyDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-ledger-"));
  const grownDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-ledger-grown-"));
  try {
    const http = await runHttp({ dataDir: emptyDir, deadline: Date.now() + DEADLINE_MS });
    const grown = await growLedger(grownDir);
    const largest = grown.runs[grown.runs.length - 1].ledgerSessions;
    const httpLarge = await runHttp({ dataDir: grownDir, deadline: Date.now() + DEADLINE_MS });
    printReport({ http, httpLarge, largest, ...grown });
  } finally {
    fs.rmSync(emptyDir, { recursive: true, force: true });
    fs.rmSync(grownDir, { recursive: true, force: true });
  }
}

function throughputRow(run: string, ledgerSessions: number, r: { wallMs: number; requests: number; messages: number; errors: number }) {
  return { run, "ledger sessions": ledgerSessions, "wall s": r.wallMs / 1000, requests: r.requests, "requests/s": r.requests / (r.wallMs / 1000), "messages/s": r.messages / (r.wallMs / 1000), errors: r.errors };
}

function printReport({ http, httpLarge, largest, runs, seeds }: { http: HttpRun; httpLarge: HttpRun; largest: number; runs: InProcessRun[]; seeds: SeedStep[] }): void {
  const lib = runs[0];
  printTable(`Dialectic over HTTP: ${AGENTS} concurrent agents on 127.0.0.1 (next start), ${AGENTS * REVIEWS_PER_AGENT} full reviews, empty ledger`, [
    row("GET /health, the floor (HTTP)", http.samples.health),
    row("session create (HTTP)", http.samples.create),
    row("message post (HTTP)", http.samples.post),
    row("idempotent retry (HTTP)", http.samples.retry),
    row("session create (in-process, serial)", lib.create),
    row("message post (in-process, serial)", lib.post),
  ]);
  printTable(`Seed: resolved reviews (session + 4 messages) through createDialecticSession / postDialecticMessage, ${SEED_BATCH} sessions per transaction`, seeds.map((s) => {
    const sessions = s.to - s.from;
    return { "ledger from": s.from, "ledger to": s.to, target: s.to < s.target ? `${s.target} (stopped at the ${SEED_DEADLINE_MS / 1000} s cap)` : s.target, sessions, messages: 4 * sessions, "seed s": s.ms / 1000, "sessions/s": sessions / (s.ms / 1000), "messages/s": (4 * sessions) / (s.ms / 1000), "governance.db MB": s.dbMb };
  }));
  printTable(`Writes on a grown ledger: the same ${AGENTS * REVIEWS_PER_AGENT} reviews (1 create + 4 posts each) at each ledger size`, [
    ...runs.flatMap((r) => [
      { "ledger sessions": r.ledgerSessions, ...row("session create (in-process, serial)", r.create) },
      { "ledger sessions": r.ledgerSessions, ...row("message post (in-process, serial)", r.post) },
    ]),
    { "ledger sessions": largest, ...row("GET /health, the floor (HTTP)", httpLarge.samples.health) },
    { "ledger sessions": largest, ...row(`session create (HTTP, ${AGENTS} agents)`, httpLarge.samples.create) },
    { "ledger sessions": largest, ...row(`message post (HTTP, ${AGENTS} agents)`, httpLarge.samples.post) },
    { "ledger sessions": largest, ...row(`idempotent retry (HTTP, ${AGENTS} agents)`, httpLarge.samples.retry) },
  ]);
  const httpTotals = (h: HttpRun) => ({ wallMs: h.wallMs, requests: h.requests, messages: h.samples.post.length, errors: h.errors.length });
  const libTotals = (r: InProcessRun) => ({ wallMs: r.wallMs, requests: r.create.length + r.post.length, messages: r.post.length, errors: 0 });
  printTable("Throughput", [
    throughputRow(`HTTP, ${AGENTS} agents`, 0, httpTotals(http)),
    throughputRow(`HTTP, ${AGENTS} agents`, largest, httpTotals(httpLarge)),
    ...runs.map((r) => throughputRow("in-process, serial", r.ledgerSessions, libTotals(r))),
  ]);
  printTable("Integrity after each HTTP run (every session the run created, read back through the admin per-session export)", [
    { "ledger sessions": 0, ...http.check },
    { "ledger sessions": largest, ...httpLarge.check },
  ]);
  printTable(`Dialectic writes: how cost grows with the ledger (in-process serial; HTTP with ${AGENTS} agents)`, growthRows({ runs, http, httpLarge }));
  for (const h of [http, httpLarge]) if (h.errors.length) process.stdout.write(`errors (first 5): ${h.errors.slice(0, 5).join(" | ")}\n`);
}

/** Each measure at every ledger size it was taken at, and the ratios that show the growth. */
function growthRows({ runs, http, httpLarge }: { runs: InProcessRun[]; http: HttpRun; httpLarge: HttpRun }) {
  const [empty, ...grown] = runs;
  const mid = grown[0];
  const top = grown[grown.length - 1];
  const fmt = (v: number | undefined) => (v === undefined ? "" : v);
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? "" : `${(b / a).toFixed(2)}×`);
  const line = (measure: string, at: [number | undefined, number | undefined, number | undefined]) => ({
    measure,
    "empty ledger": fmt(at[0]),
    [`${mid?.ledgerSessions ?? ""} sessions`]: fmt(at[1]),
    [`${top?.ledgerSessions ?? ""} sessions`]: fmt(at[2]),
    [`largest / ${mid?.ledgerSessions ?? ""}`]: ratio(at[1], at[2]),
    "largest / empty": ratio(at[0], at[2]),
  });
  const p = (r: InProcessRun | undefined, k: "create" | "post", q: number) => (r ? percentile(r[k], q) : undefined);
  const mps = (r: InProcessRun | undefined) => (r ? r.post.length / (r.wallMs / 1000) : undefined);
  return [
    line("session create p50 ms (in-process)", [p(empty, "create", 50), p(mid, "create", 50), p(top, "create", 50)]),
    line("session create p95 ms (in-process)", [p(empty, "create", 95), p(mid, "create", 95), p(top, "create", 95)]),
    line("message post p50 ms (in-process)", [p(empty, "post", 50), p(mid, "post", 50), p(top, "post", 50)]),
    line("message post p95 ms (in-process)", [p(empty, "post", 95), p(mid, "post", 95), p(top, "post", 95)]),
    line("messages/s (in-process, serial)", [mps(empty), mps(mid), mps(top)]),
    line("session create p50 ms (HTTP)", [percentile(http.samples.create, 50), undefined, percentile(httpLarge.samples.create, 50)]),
    line("session create p95 ms (HTTP)", [percentile(http.samples.create, 95), undefined, percentile(httpLarge.samples.create, 95)]),
    line("message post p50 ms (HTTP)", [percentile(http.samples.post, 50), undefined, percentile(httpLarge.samples.post, 50)]),
    line("message post p95 ms (HTTP)", [percentile(http.samples.post, 95), undefined, percentile(httpLarge.samples.post, 95)]),
    line("messages/s (HTTP)", [http.samples.post.length / (http.wallMs / 1000), undefined, httpLarge.samples.post.length / (httpLarge.wallMs / 1000)]),
  ];
}
