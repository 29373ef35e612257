/**
 * Self-recall at scale, side by side in one run: a store of
 * BENCH_SELF_RECALL_LOAD_CHUNKS chunks (100,000 by default; builtin
 * embedder), served over HTTP by the real search route
 * (`GET /api/v1/stores/{store}/search`, bearer auth, the default mode) in
 * this process — the process a scheduled evaluation runs in. A client in a
 * child process asks at a fixed rate (open loop: a request's latency counts
 * from when it was due, so a server stalled by the evaluation is not hidden
 * by the client waiting too) and the route's p50/p95/p99 are compared:
 * nothing else running; an evaluation running paced to
 * DUALMIND_EVALUATE_CPU_SHARE (the scheduled and after-reindex runs); an
 * evaluation running unpaced (an on-demand run) — after an untimed warm-up
 * phase, in interleaved rounds (BENCH_SELF_RECALL_LOAD_ROUNDS, default 2),
 * so a machine whose load drifts weighs on each condition alike.
 * Then the evaluation's own cost: one full default run (100 probes per
 * kind) alone, its wall time and this process's CPU time, and the wall time
 * the same work takes paced (its recorded busy time ÷ the share).
 *
 * BENCH_SELF_RECALL_LOAD_DIR keeps the built store between runs (built when
 * missing); BENCH_SELF_RECALL_LOAD_SECONDS (default 45) per phase;
 * BENCH_SELF_RECALL_LOAD_RPS (default 10). `npm run bench -- self-recall-load`.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import * as searchRoute from "../app/api/v1/stores/[store]/search/route";
import { bootstrapApp } from "../lib/bootstrap";
import { getConfig, resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { getEmbedder, resetEmbedderForTests } from "../lib/embed/model";
import { drainEmbedQueues } from "../lib/embed/worker";
import { evaluateStore } from "../lib/eval/evaluate";
import { getSelfRecall, startEvaluation } from "../lib/eval/self-recall";
import { ingestDocument } from "../lib/index/ingest";
import { createStore } from "../lib/stores/stores";
import { loadTextWindows } from "./corpus";
import { percentile, printTable } from "./table";

const CHUNKS = Number(process.env.BENCH_SELF_RECALL_LOAD_CHUNKS ?? 100_000);
const SECONDS = Number(process.env.BENCH_SELF_RECALL_LOAD_SECONDS ?? 45);
/** Rounds of the three conditions, interleaved. */
const ROUNDS = Number(process.env.BENCH_SELF_RECALL_LOAD_ROUNDS ?? 2);
/**
 * Requests per second: BENCH_SELF_RECALL_LOAD_RPS, or by default a quarter
 * of what the route serves one at a time on this machine now (measured
 * after the warm-up), so the route is loaded but not saturated — a
 * saturated route's latency is its queue, whatever runs beside it.
 */
let RPS = Number(process.env.BENCH_SELF_RECALL_LOAD_RPS ?? 0);
const TOKEN = "bench-self-recall-load-token-0123456789abcdef";
const STORE = "big";
/** One text window per document: a window is one chunk, so CHUNKS windows make a store of CHUNKS chunks. */
const PER_DOC = 1;

function chunkCount(): number {
  return (getStoreDb({ store: STORE }).sqlite.prepare("select count(*) as n from chunks").get() as { n: number }).n;
}

/** The store, built once per data dir: documents of PER_DOC text windows until it holds CHUNKS chunks, every chunk embedded. */
async function buildStore(): Promise<void> {
  if (fs.existsSync(path.join(getConfig().dataDir, "stores", STORE, "index.db")) && chunkCount() >= CHUNKS) return;
  createStore({ input: { name: STORE }, actor: "bench" });
  const handle = getStoreDb({ store: STORE });
  const windows = loadTextWindows(Math.ceil(CHUNKS * 1.05));
  const t0 = performance.now();
  for (let d = 0; d * PER_DOC < windows.length; d++) {
    // Counted every 50 documents: stop once the store holds CHUNKS.
    if (d % 50 === 0 && chunkCount() >= CHUNKS) break;
    ingestDocument({ handle, path: `notes/${d}.md`, text: windows.slice(d * PER_DOC, (d + 1) * PER_DOC).join("\n\n"), origin: "api", mtime: Date.now() });
  }
  process.stderr.write(`self-recall-load: ${chunkCount()} chunks ingested in ${((performance.now() - t0) / 1000).toFixed(0)} s; embedding\n`);
  await drainEmbedQueues({ stores: [STORE], batchSize: 256 });
  process.stderr.write(`self-recall-load: built in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
}

/** The search route behind node:http, as Next would call it (a Request in, a Response out). */
function serve(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const url = `http://127.0.0.1${req.url}`;
    const request = new Request(url, { method: "GET", headers: { authorization: req.headers.authorization ?? "" } });
    void searchRoute.GET(request, { params: Promise.resolve({ store: STORE }) }).then(async (r) => {
      res.writeHead(r.status, { "content-type": "application/json" });
      res.end(await r.text());
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ port: (server.address() as { port: number }).port, close: () => new Promise((r) => server.close(() => r())) })));
}

/** The client: a separate process asking at RPS for SECONDS, each latency from the moment the request was due. */
const CLIENT = `
const [port, rps, seconds, token, queries] = [Number(process.argv[1]), Number(process.argv[2]), Number(process.argv[3]), process.argv[4], JSON.parse(process.argv[5])];
const out = [];
let failed = 0;
const start = performance.now();
const n = Math.round(rps * seconds);
let pending = 0;
for (let i = 0; i < n; i++) {
  const due = start + (i * 1000) / rps;
  pending++;
  setTimeout(async () => {
    try {
      const r = await fetch("http://127.0.0.1:" + port + "/api/v1/stores/big/search?q=" + encodeURIComponent(queries[i % queries.length]) + "&limit=10", { headers: { authorization: "Bearer " + token } });
      await r.text();
      if (r.status !== 200) failed++;
      out.push(performance.now() - due);
    } catch { failed++; }
    if (--pending === 0) process.stdout.write(JSON.stringify({ out, failed }));
  }, Math.max(0, due - performance.now()));
}
`;

function runClient(port: number, queries: string[], seconds = SECONDS): Promise<{ out: number[]; failed: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", CLIENT, String(port), String(RPS), String(seconds), TOKEN, JSON.stringify(queries)], { stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.on("data", (d: Buffer) => (text += d.toString()));
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(text) as { out: number[]; failed: number }) : reject(new Error(`client exited ${code}`))));
  });
}

/** Queries as an agent might type them: four words of a text window, the same list in every phase. */
function queryList(): string[] {
  const windows = loadTextWindows(2_000);
  return Array.from({ length: 200 }, (_, i) => (windows[(i * 37) % windows.length].match(/[A-Za-z]{4,}/g) ?? []).slice(3, 7).join(" ") || "search");
}

/** An evaluation asking the store's probes at `share` of a core until `stop` (no job: stopped by throwing from its progress). */
async function evaluationDuring(share: number, stop: { now: boolean }): Promise<{ questions: number }> {
  let questions = 0;
  const configured = await getEmbedder().fingerprint;
  const onProgress = (p: { phase: string }) => {
    if (stop.now) throw new Error("phase over");
    if (p.phase === "asking") questions++;
  };
  try {
    // Round after round until the phase ends: the run is busy the whole phase.
    for (;;) await evaluateStore({ store: STORE, target: "active", seed: 2026, perKind: 100, configured, cpuShare: share, onProgress });
  } catch {
    return { questions };
  }
}

type Row = Record<string, string | number>;

export default async function main(): Promise<void> {
  const keep = process.env.BENCH_SELF_RECALL_LOAD_DIR;
  const dataDir = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-self-recall-load-"));
  fs.mkdirSync(dataDir, { recursive: true });
  Object.assign(process.env, { DATA_DIR: dataDir, DUALMIND_BOOTSTRAP_TOKEN: TOKEN, DUALMIND_LOG_LEVEL: "warn", DUALMIND_EMBED_BACKLOG_WATERMARK: "10000000", DUALMIND_EVALUATE_EVERY: "off" });
  resetConfigForTests();
  resetEmbedderForTests();
  await bootstrapApp();
  const { port, close } = await serve();
  try {
    await buildStore();
    const chunks = chunkCount();
    const queries = queryList();
    // Warm, one request at a time: the first vector searches load the approximate index, first calls fill caches.
    const sequential: number[] = [];
    for (const q of queries.slice(0, 40)) {
      const t = performance.now();
      const r = await fetch(`http://127.0.0.1:${port}/api/v1/stores/${STORE}/search?q=${encodeURIComponent(q)}&limit=10`, { headers: { authorization: `Bearer ${TOKEN}` } });
      await r.text();
      sequential.push(performance.now() - t);
    }
    const oneAtATimeMs = percentile(sequential.slice(10), 50);
    if (!RPS) RPS = Math.max(0.5, Math.round((0.25 * 1000 * 10) / oneAtATimeMs) / 10);
    process.stderr.write(`self-recall-load: one request at a time p50 ${oneAtATimeMs.toFixed(0)} ms; asking ${RPS}/s\n`);
    const share = getConfig().selfRecall.cpuShare;
    type Phase = { out: number[]; failed: number; cpuS: number; questions: number };
    const phase = async (label: string, evaluating: number | null): Promise<Phase> => {
      process.stderr.write(`self-recall-load: ${label}\n`);
      const stop = { now: false };
      const running = evaluating === null ? null : evaluationDuring(evaluating, stop);
      const cpu = process.cpuUsage();
      const { out, failed } = await runClient(port, queries);
      const used = process.cpuUsage(cpu);
      stop.now = true;
      const ev = running ? await running : null;
      return { out, failed, cpuS: (used.user + used.system) / 1e6, questions: ev?.questions ?? 0 };
    };
    // One phase untimed: a new process's first minute does one-time work (indexes loaded, word lists built).
    await phase("warm-up (not counted)", null);
    const conditions: [string, number | null][] = [
      ["search alone", null],
      [`evaluation running, paced to ${share} of a core (scheduled and after-reindex runs)`, share],
      ["evaluation running, unpaced (on-demand runs)", 1],
    ];
    // Interleaved rounds, so a machine whose load drifts weighs on every condition alike.
    const got = conditions.map(() => [] as Phase[]);
    for (let round = 1; round <= ROUNDS; round++) for (const [i, [label, evaluating]] of conditions.entries()) got[i].push(await phase(`round ${round}: ${label}`, evaluating));
    const p95 = (ps: Phase[]) => percentile(ps.flatMap((p) => p.out), 95);
    const alone = p95(got[0]);
    const rows: Row[] = conditions.map(([label], i) => {
      const all = got[i].flatMap((p) => p.out);
      return {
        condition: label,
        requests: all.length,
        failed: got[i].reduce((n, p) => n + p.failed, 0),
        "p50 ms": percentile(all, 50).toFixed(1),
        "p95 ms": p95(got[i]).toFixed(1),
        "p99 ms": percentile(all, 99).toFixed(1),
        "p95 per round ms": got[i].map((p) => percentile(p.out, 95).toFixed(0)).join(" / "),
        "p95 vs alone": `${(((p95(got[i]) - alone) / alone) * 100).toFixed(1)}%`,
        "server CPU s": got[i].reduce((n, p) => n + p.cpuS, 0).toFixed(1),
        "evaluation questions asked": i === 0 ? "-" : got[i].reduce((n, p) => n + p.questions, 0),
      };
    });
    printTable(`Search route while self-recall runs: ${chunks.toLocaleString("en-US")} chunks, ${RPS} requests/s, ${ROUNDS} interleaved rounds of ${SECONDS} s per condition (client in its own process, open loop)`, rows);

    // The evaluation's own cost, alone: one default run (the scheduler's), to its end.
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    const job = await startEvaluation({ store: STORE, actor: "system:bench", input: {}, wait: true });
    const wallS = (performance.now() - t0) / 1000;
    const used = process.cpuUsage(cpu);
    if (job.status !== "succeeded") throw new Error(`evaluation failed: ${job.error}`);
    const run = (await getSelfRecall({ store: STORE, limit: 1 })).latest!;
    const busyS = (run.results.cost?.busy_ms ?? 0) / 1000;
    const cpuS = (used.user + used.system) / 1e6;
    printTable(`Self-recall evaluation cost: ${chunks.toLocaleString("en-US")} chunks, default probes (100 per kind)`, [
      {
        questions: Object.values(run.results.by_kind).reduce((n, m) => n + Object.values(m ?? {}).reduce((a, s) => a + (s?.probes ?? 0), 0), 0),
        "unpaced wall s": wallS.toFixed(1),
        "CPU s (this process)": cpuS.toFixed(1),
        "busy s (its questions)": busyS.toFixed(1),
        [`paced wall s at ${share} (busy ÷ share)`]: (busyS / share).toFixed(0),
        "share of a core-day, once a day": `${((cpuS / 86_400) * 100).toFixed(2)}%`,
        "hybrid MRR@10": run.mrr10?.toFixed(3) ?? "-",
      },
    ]);
  } finally {
    await close();
    closeAllDatabases();
    if (!keep) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
