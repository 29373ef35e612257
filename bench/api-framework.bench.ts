/**
 * dualmind against the framework it runs on, in one run on one machine: a
 * trivial Next app (one route handler answering `Response.json`, one dynamic
 * page, one route of the search's shape; built in a temp dir with this
 * checkout's own `next`) is served beside
 * dualmind's `next start`, and the same closed-loop load is put on each in
 * turn. The table prints dualmind ÷ trivial per request shape: what a
 * request costs beyond what Next itself costs. The selective search is also
 * held against a trivial route of its own shape (the same dynamic path,
 * answering dualmind's own answer), which separates what Next costs for that
 * shape from what dualmind's work costs.
 *
 * BENCH_API_BASELINE=<dir>: a built checkout of another commit (`next build`
 * done there) served beside as "before", so before and after are measured
 * in the same rounds. The servers take turns second by second within each
 * cell (BENCH_API_SECONDS slices each), and each cell is the range over
 * BENCH_API_ROUNDS rounds: the machine is shared, and one round says little.
 * With a baseline, each row also prints after p95 ÷ before p95 (the search,
 * recall and remember rows: what a change did to a user's wait).
 * BENCH_API_ONLY=<words,…>: only the request shapes whose name contains one of them.
 * BENCH_API_FLOOR=1: dualmind is served from a copy of this checkout built with two more routes, which answer the
 * selective search's own answer through the same route wrapper (the search's params and query parsed, the answer
 * put in its wire form) with no search done — one checking the agent token, one public — each held against the
 * trivial route of the same shape: what the wrapper and the app cost before any search work, and so how much of
 * the trivial route's cost is left for the search itself under a goal. Not with BENCH_API_BASELINE.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases } from "../lib/db/connection";
import { createApiToken } from "../lib/auth/tokens";
import { drainEmbedQueues } from "../lib/embed/worker";
import { thinkThought } from "../lib/graph/thoughts";
import { recordTrace } from "../lib/recall/traces";
import { openStore } from "../lib/stores/stores";
import { loadTextWindows } from "./corpus";
import { syntheticTrace } from "./side-by-side-data";
import { ROOT, SOURCES } from "../scripts/build-freshness";
import { ensureProductionBuild, freePort } from "../tests/fixtures/next-server";
import { seed } from "./api.bench";
import { PASSWORD, signIn } from "./health.bench";
import { percentile, printTable } from "./table";

const CONCURRENCY = 16;
const SECONDS = Number(process.env.BENCH_API_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_API_ROUNDS ?? 3);
const DOCUMENTS = Number(process.env.BENCH_API_FRAMEWORK_DOCS ?? 10_000);
const BASELINE = process.env.BENCH_API_BASELINE;
/** Thoughts (README text windows) and traces (the side-by-side bench's synthetic ones) the recall and remember rows read. */
const THOUGHTS = Number(process.env.BENCH_API_FRAMEWORK_THOUGHTS ?? 2_000);
const TRACES = Number(process.env.BENCH_API_FRAMEWORK_TRACES ?? 2_000);
const ONLY = (process.env.BENCH_API_ONLY ?? "").split(",").map((w) => w.trim()).filter(Boolean);
const FLOOR = process.env.BENCH_API_FLOOR === "1";
const WARMUP_REQUESTS = 20;

/** The trivial app: what Next costs with nothing of ours in the way. JavaScript, so the build needs no TypeScript setup. */
const TRIVIAL_FILES: Record<string, string> = {
  "package.json": JSON.stringify({ name: "trivial-next", private: true }),
  // The root is widened so that the symlinked node_modules (this checkout's) is inside it.
  "next.config.mjs": 'export default { poweredByHeader: false, turbopack: { root: "/" } };\n',
  "app/api/health/route.js": [
    'export const dynamic = "force-dynamic";',
    "export function GET() { return Response.json({ ok: true }); }",
    "export async function POST(request) { return Response.json({ ok: true, got: await request.json() }); }",
    "",
  ].join("\n"),
  // The selective search's shape with none of dualmind's work: the same dynamic path, its own answer (read once from
  // TRIVIAL_SEARCH_ANSWER, written by the bench from dualmind's answer) sent by Response.json with a request id.
  "app/api/v1/stores/[store]/search/route.js": [
    'import fs from "node:fs";',
    'export const dynamic = "force-dynamic";',
    "let answer;",
    "export async function GET(request, { params }) {",
    "  const { store } = await params;",
    '  answer ??= JSON.parse(fs.readFileSync(process.env.TRIVIAL_SEARCH_ANSWER, "utf8"));',
    '  return Response.json({ ...answer, query: new URL(request.url).searchParams.get("q"), stores: [store] }, { headers: { "x-request-id": crypto.randomUUID() } });',
    "}",
    "",
  ].join("\n"),
  "app/layout.js": "export default function Layout({ children }) { return <html lang=\"en\"><body>{children}</body></html>; }\n",
  "app/page.js": 'export const dynamic = "force-dynamic";\nexport default function Page() { return <main><h1>Trivial</h1><p>{new Date().toISOString()}</p></main>; }\n',
};

/** `files` written into `dir`, then `next build` there with `dir`'s own `next` (whose React the app then uses). */
function writeAndBuild({ dir, files, what, env = {} }: { dir: string; files: Record<string, string>; what: string; env?: Record<string, string> }): void {
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  const next = path.join(dir, "node_modules", "next", "dist", "bin", "next");
  const build = spawnSync(process.execPath, [next, "build"], { cwd: dir, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1", ...env } });
  if (build.status !== 0) throw new Error(`${what} did not build (exit ${build.status})`);
}

/** Build the trivial app in a temp dir, resolving `next` and React from this checkout. */
function buildTrivialApp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-trivial-next-"));
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
  writeAndBuild({ dir, files: TRIVIAL_FILES, what: "the trivial app" });
  return dir;
}

/** BENCH_API_FLOOR's two routes: the search route's own spec (scope, params, query), the answer read once, no search. */
const floorRoute = (auth: "read" | "public") =>
  [
    'import fs from "node:fs";',
    'import { z } from "zod";',
    'import { searchResponse } from "@/lib/api/responses/documents";',
    'import { defineRoute } from "@/lib/api/route";',
    'import { storeNameSchema } from "@/lib/db/store-names";',
    'import { commonSearchQuery, searchInputSchema } from "@/lib/index/search";',
    "let answer: unknown;",
    "export const GET = defineRoute({",
    `  name: "GET /stores/{store}/search-floor (${auth})",`,
    `  auth: "${auth}",`,
    "  response: searchResponse,",
    "  params: z.object({ store: storeNameSchema }),",
    "  query: searchInputSchema,",
    "  commonQuery: commonSearchQuery,",
    '  handler: () => (answer ??= JSON.parse(fs.readFileSync(process.env.TRIVIAL_SEARCH_ANSWER!, "utf8"))),',
    "});",
    "",
  ].join("\n");
const FLOOR_ROUTES: Record<string, string> = {
  "app/api/v1/stores/[store]/search-floor/route.ts": floorRoute("read"),
  "app/api/v1/stores/[store]/search-floor-public/route.ts": floorRoute("public"),
};

/** A copy of this checkout (its build's sources, the native extension, node_modules hard-linked) with FLOOR_ROUTES, built. */
function buildFloorCopy(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-floor-"));
  try {
    copyFloor(dir);
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return dir;
}

function copyFloor(dir: string): void {
  for (const entry of [...SOURCES, "native", "next-env.d.ts"]) {
    if (fs.existsSync(path.join(ROOT, entry))) fs.cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
  }
  // Hard links where the temp dir shares the checkout's file system (under a second), else a copy.
  const modules = path.join(dir, "node_modules");
  const linked = spawnSync("cp", ["-al", path.join(ROOT, "node_modules"), modules]);
  if (linked.status !== 0) {
    // What a failed `cp -al` linked is removed first: copying onto a link of the same file fails.
    fs.rmSync(modules, { recursive: true, force: true });
    fs.cpSync(path.join(ROOT, "node_modules"), modules, { recursive: true, verbatimSymlinks: true });
  }
  // The checkout's own build checked these types; the copy differs by two routes that use its exported ones.
  writeAndBuild({ dir, files: FLOOR_ROUTES, what: "the floor copy", env: { DM_TEST_BUILD_TYPES_CHECKED: "1" } });
}

/**
 * The store api.bench.ts serves (DOCUMENTS documents, each with a word of its own, `item<n>`, its word lists built, so
 * no server builds them mid-run), THOUGHTS thoughts and TRACES traces in it with their vectors (the servers run no
 * embed worker), and one read-scoped agent token for every store.
 */
async function seedWithToken(dataDir: string): Promise<string> {
  seed(dataDir, DOCUMENTS);
  process.env.DATA_DIR = dataDir;
  resetConfigForTests();
  const handle = openStore({ store: "bench" });
  const texts = loadTextWindows(THOUGHTS);
  handle.sqlite.transaction(() => {
    for (let i = 0; i < THOUGHTS; i++) thinkThought({ handle, input: { content: texts[i % texts.length], framework: "conversation", timestamp: 1_790_000_000_000 + i * 60_000 }, actor: "bench" });
    for (let i = 0; i < TRACES; i++) recordTrace({ handle, agentId: "bench", input: syntheticTrace(i) });
  })();
  await drainEmbedQueues({ stores: ["bench"], batchSize: 256 });
  // A real agent token (looked up by hash on every request), not the bootstrap token, which is answered from config.
  const { token } = createApiToken({ input: { label: "bench", agent_id: "bench", scopes: ["read"], stores: null }, actor: "bench" });
  closeAllDatabases();
  return token;
}

type Server = { name: string; url: string; child: ChildProcess; stop: () => Promise<void> };

async function serve({ name, cwd, env }: { name: string; cwd: string; env: Record<string, string> }): Promise<Server> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // BENCH_API_CPU_PROF=<dir>: each server writes a V8 CPU profile there when it stops (Node refuses --cpu-prof in NODE_OPTIONS).
  const profile = process.env.BENCH_API_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_API_CPU_PROF}`, `--cpu-prof-name=${name.replace(/\W+/g, "-")}.cpuprofile`, "--cpu-prof-interval=250"] : [];
  const child = spawn(process.execPath, [...profile, path.join(cwd, "node_modules", "next", "dist", "bin", "next"), "start", "-H", "127.0.0.1", "-p", String(port)], {
    cwd,
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1", NEXTAUTH_URL: url, ...env },
  });
  let err = "";
  child.stderr?.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    try {
      process.kill(-child.pid!, "SIGTERM");
    } catch {
      // already gone
    }
    await exited;
  };
  const probe = env.DATA_DIR ? "/api/v1/health" : "/api/health";
  for (const until = Date.now() + 60_000; ; ) {
    if (child.exitCode !== null) throw new Error(`${name}: next start exited: ${err}`);
    try {
      if ((await fetch(`${url}${probe}`, { headers: { connection: "close" } })).ok) return { name, url, child, stop };
    } catch {
      // not listening yet
    }
    if (Date.now() > until) {
      await stop();
      throw new Error(`${name}: no answer within 60 s: ${err}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

type Shot = { path: string; method?: "GET" | "POST"; headers?: Record<string, string>; body?: string; status: number };
type Run = { rps: number; p50: number; p95: number; wrong: number; cpuUs: number | null };
type Slice = { samples: number[]; ms: number; wrong: number; cpuMs: number | null };

/**
 * The CPU time (user + system, ms) a server process has used, from /proc (Linux), or null. CPU per request holds
 * steadier than requests per second on a shared machine: another process taking the cores slows a server's answers,
 * not the work each answer costs.
 */
function cpuMsOf(pid: number | undefined): number | null {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
const CLOCK_TICKS = 100;

/** WARMUP_REQUESTS one after another, untimed: the route's module loaded and its first-call work done. */
async function warm(base: string, shot: Shot): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < WARMUP_REQUESTS; i++) await request(agent, new URL(shot.path, base), shot);
  agent.destroy();
}

/** One request; its latency, or null when it failed or answered another status than the shot expects. */
function request(agent: http.Agent, url: URL, shot: Shot): Promise<number | null> {
  return new Promise((resolve) => {
    const t = performance.now();
    const req = http.request(url, { method: shot.method ?? "GET", agent, headers: shot.headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode === shot.status ? performance.now() - t : null));
    });
    req.on("error", () => resolve(null));
    req.end(shot.body);
  });
}

/** CONCURRENCY keep-alive clients in a closed loop for `ms`. */
async function slice(base: string, shot: Shot, ms: number, pid?: number): Promise<Slice> {
  const cpu0 = cpuMsOf(pid);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const url = new URL(shot.path, base);
  const samples: number[] = [];
  let wrong = 0;
  const started = performance.now();
  const until = started + ms;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) {
        const latency = await request(agent, url, shot);
        if (latency === null) wrong++;
        else samples.push(latency);
      }
    }),
  );
  agent.destroy();
  const cpu1 = cpuMsOf(pid);
  return { samples, ms: performance.now() - started, wrong, cpuMs: cpu0 === null || cpu1 === null ? null : cpu1 - cpu0 };
}

/**
 * One cell per server for one request shape: SECONDS one-second slices each,
 * the servers taking turns slice by slice (the order rotating), so a change in
 * the machine's load during the cell falls on every server alike.
 */
async function cells(targets: { name: string; base: string; shot: Shot; pid?: number }[]): Promise<Map<string, Run>> {
  for (const t of targets) await warm(t.base, t.shot);
  const got = new Map(targets.map((t) => [t.name, [] as Slice[]]));
  for (let i = 0; i < SECONDS; i++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(i + k) % targets.length];
      got.get(t.name)!.push(await slice(t.base, t.shot, 1000, t.pid));
    }
  }
  return new Map(
    [...got].map(([name, slices]) => {
      const samples = slices.flatMap((s) => s.samples);
      const ms = slices.reduce((a, s) => a + s.ms, 0);
      const wrong = slices.reduce((a, s) => a + s.wrong, 0);
      const cpuMs = slices.every((s) => s.cpuMs !== null) ? slices.reduce((a, s) => a + s.cpuMs!, 0) : null;
      const answered = samples.length + wrong;
      return [name, { rps: samples.length / (ms / 1000), p50: percentile(samples, 50), p95: percentile(samples, 95), wrong, cpuUs: cpuMs === null || answered === 0 ? null : (cpuMs * 1000) / answered }];
    }),
  );
}

const MCP_LIST = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
const SELECTIVE_SEARCH = "/api/v1/stores/bench/search?q=item4242&mode=fts&limit=10";
/** A question in the words of the synthetic traces, and one in README words: hybrid recall and remember, as agents ask. */
const RECALL_BODY = JSON.stringify({ query: "fix the retry queue after a timeout" });
const REMEMBER_BODY = JSON.stringify({ query: "how do I configure the plugin options", limit: 10 });

/** Per request shape: the trivial app's counterpart, dualmind's request, and the goal it is held to (if any). */
type Shape = { name: string; goal: string; trivial: Shot; dualmind: (cookie: string) => Shot };
function shapes({ token, cookie }: { token: string; cookie: string }): Shape[] {
  const bearer = { authorization: `Bearer ${token}` };
  const trivialGet: Shot = { path: "/api/health", status: 200 };
  void cookie;
  const all: Shape[] = [
    { name: "GET /api/v1/health (select 1)", goal: "≥ 0.8×", trivial: trivialGet, dualmind: () => ({ path: "/api/v1/health", status: 200 }) },
    { name: "selective search (fts, one match, agent token)", goal: "≥ 0.6×", trivial: trivialGet, dualmind: () => ({ path: SELECTIVE_SEARCH, headers: bearer, status: 200 }) },
    // Against Next's own cost of the same request shape (a dynamic route answering the same body), not of `{ ok: true }`.
    { name: "selective search ÷ trivial same shape (dynamic route, same answer)", goal: "", trivial: { path: SELECTIVE_SEARCH, status: 200 }, dualmind: () => ({ path: SELECTIVE_SEARCH, headers: bearer, status: 200 }) },
    ...(FLOOR
      ? [
          { name: "floor: the route wrapper and the agent token, the search's answer, no search (÷ trivial same shape)", goal: "", trivial: { path: SELECTIVE_SEARCH, status: 200 }, dualmind: () => ({ path: SELECTIVE_SEARCH.replace("/search?", "/search-floor?"), headers: bearer, status: 200 }) },
          { name: "floor: the route wrapper, public, the search's answer, no search (÷ trivial same shape)", goal: "", trivial: { path: SELECTIVE_SEARCH, status: 200 }, dualmind: () => ({ path: SELECTIVE_SEARCH.replace("/search?", "/search-floor-public?"), status: 200 }) },
        ]
      : []),
    { name: "token-checked 404 (GET /api/v1/stores/{unknown})", goal: "", trivial: trivialGet, dualmind: () => ({ path: "/api/v1/stores/nope", headers: bearer, status: 404 }) },
    {
      name: "MCP tools/list (POST /api/mcp)",
      goal: "",
      trivial: { path: "/api/health", method: "POST", headers: { "content-type": "application/json" }, body: MCP_LIST, status: 200 },
      dualmind: () => ({ path: "/api/mcp", method: "POST", headers: { ...bearer, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: MCP_LIST, status: 200 }),
    },
    { name: "dashboard page, signed in (GET /)", goal: "", trivial: { path: "/", status: 200 }, dualmind: (c) => ({ path: "/", headers: { cookie: c, accept: "text/html" }, status: 200 }) },
    // A page of tables: the newest 25 of the bench store's traces, each row with its times (the store has no learnings;
    // its recent recalls, once the recall row has run in an earlier round, are listed too).
    { name: "dashboard table page, signed in (GET /reflection?store=bench)", goal: "", trivial: { path: "/", status: 200 }, dualmind: (c) => ({ path: "/reflection?store=bench", headers: { cookie: c, accept: "text/html" }, status: 200 }) },
    ...(
      [
        ["recall (hybrid, POST /stores/{s}/recall)", "recall", RECALL_BODY],
        ["remember (POST /stores/{s}/remember)", "remember", REMEMBER_BODY],
      ] as const
    ).map(([name, route, body]): Shape => ({
      name,
      goal: "",
      trivial: { path: "/api/health", method: "POST" as const, headers: { "content-type": "application/json" }, body, status: 200 },
      dualmind: () => ({ path: `/api/v1/stores/bench/${route}`, method: "POST" as const, headers: { ...bearer, "content-type": "application/json" }, body, status: 200 }),
    })),
  ];
  return all.filter((shape) => ONLY.length === 0 || ONLY.some((w) => shape.name.includes(w)));
}

const range = (xs: number[], digits = 0) => (xs.length === 0 ? "" : `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`);

export default async function apiFrameworkBench(): Promise<void> {
  if (FLOOR && BASELINE) throw new Error("BENCH_API_FLOOR measures this checkout alone: unset BENCH_API_BASELINE");
  ensureProductionBuild();
  const trivialDir = buildTrivialApp();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-framework-"));
  const servers: Server[] = [];
  let floorDir: string | null = null;
  try {
    if (FLOOR) floorDir = buildFloorCopy();
    const token = await seedWithToken(path.join(dataDir, "after"));
    fs.cpSync(path.join(dataDir, "after"), path.join(dataDir, "before"), { recursive: true });
    // Production settings: answers not checked against their schemas (the test servers check them), no embed worker.
    const answerFile = path.join(dataDir, "selective-search-answer.json");
    // TRIVIAL_SEARCH_ANSWER: the floor copy's routes answer it too.
    const dualmindEnv = (dir: string) => ({ DATA_DIR: path.join(dataDir, dir), DUALMIND_ADMIN_PASSWORD: PASSWORD, DUALMIND_LOG_LEVEL: "error", DUALMIND_CHECK_RESPONSES: "false", DUALMIND_EMBED_WORKER: "false", TRIVIAL_SEARCH_ANSWER: answerFile });
    const trivial = await serve({ name: "trivial Next", cwd: trivialDir, env: { TRIVIAL_SEARCH_ANSWER: answerFile } });
    servers.push(trivial);
    const measured: { server: Server; cookie: string }[] = [];
    if (BASELINE) {
      const before = await serve({ name: "before", cwd: path.resolve(BASELINE), env: dualmindEnv("before") });
      servers.push(before);
      measured.push({ server: before, cookie: await signIn(before.url) });
    }
    const after = await serve({ name: BASELINE ? "after" : "dualmind", cwd: floorDir ?? ROOT, env: dualmindEnv("after") });
    servers.push(after);
    measured.push({ server: after, cookie: await signIn(after.url) });
    // The trivial app's same-shape route answers what dualmind answers (read on its first request, after this).
    const answer = await fetch(`${after.url}${SELECTIVE_SEARCH}`, { headers: { authorization: `Bearer ${token}` } });
    if (!answer.ok) throw new Error(`the selective search answered ${answer.status}`);
    fs.writeFileSync(answerFile, await answer.text());

    const list = shapes({ token, cookie: "" });
    // results[shape][server] = one Run per round
    const results = list.map(() => new Map<string, Run[]>());
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, shape] of list.entries()) {
        const runs = [...(await cells([{ name: "trivial", base: trivial.url, shot: shape.trivial, pid: trivial.child.pid }, ...measured.map(({ server, cookie }) => ({ name: server.name, base: server.url, shot: shape.dualmind(cookie), pid: server.child.pid }))]))];
        for (const [name, run] of runs) results[i].set(name, [...(results[i].get(name) ?? []), run]);
        process.stderr.write(`api-framework: round ${round + 1}/${ROUNDS} ${shape.name}: ${runs.map(([n, r]) => `${n} ${r.rps.toFixed(0)} req/s`).join(", ")}\n`);
      }
    }

    const rows = list.map((shape, i) => {
      const t = results[i].get("trivial")!;
      const row: Record<string, string | number> = { request: shape.name, "trivial Next req/s": range(t.map((r) => r.rps)) };
      for (const { server } of measured) {
        const runs = results[i].get(server.name)!;
        row[`${server.name} req/s`] = range(runs.map((r) => r.rps));
        // Ratios pair each round with the trivial run of the same round.
        row[`${server.name} ÷ trivial`] = range(runs.map((r, k) => r.rps / t[k].rps), 2);
      }
      row["goal"] = shape.goal;
      row["trivial p95 ms"] = range(t.map((r) => r.p95), 1);
      for (const { server } of measured) {
        const runs = results[i].get(server.name)!;
        row[`${server.name} p95 ms`] = range(runs.map((r) => r.p95), 1);
        row[`${server.name} p95 ÷ trivial`] = range(runs.map((r, k) => r.p95 / t[k].p95), 2);
      }
      if (BASELINE) {
        // Each round's after ÷ before, the two measured in the same slices' turns.
        const before = results[i].get("before")!;
        row["after p95 ÷ before"] = range(results[i].get("after")!.map((r, k) => r.p95 / before[k].p95), 2);
      }
      const wrong = [...results[i].values()].flat().reduce((a, r) => a + r.wrong, 0);
      row["wrong answers"] = wrong;
      return row;
    });
    const what = BASELINE ? `before = ${path.resolve(BASELINE)}, after = this checkout` : FLOOR ? "dualmind = a copy of this checkout with the two floor routes" : "dualmind = this checkout";
    printTable(
      `dualmind ÷ a trivial Next app (same next, same machine): ${CONCURRENCY} keep-alive clients, ${SECONDS} one-second slices per cell taken in turns with the other servers, ${ROUNDS} rounds (ranges over rounds), ${DOCUMENTS} documents, production settings (no response checking); ${what}`,
      rows,
    );
    // The same cells by the CPU each server spent per answer: a shared machine's load moves rates far more than this.
    const cpuRows = list.flatMap((shape, i) => {
      const t = results[i].get("trivial")!;
      if (t.some((r) => r.cpuUs === null)) return [];
      const row: Record<string, string | number> = { request: shape.name, "trivial CPU µs/request": range(t.map((r) => r.cpuUs!)) };
      for (const { server } of measured) {
        const runs = results[i].get(server.name)!;
        row[`${server.name} CPU µs/request`] = range(runs.map((r) => r.cpuUs ?? NaN));
        // As a throughput ratio (trivial's CPU per answer ÷ this server's), comparable with the goals above.
        row[`${server.name} trivial ÷ CPU`] = range(runs.map((r, k) => t[k].cpuUs! / (r.cpuUs ?? NaN)), 2);
      }
      row["goal"] = shape.goal;
      return [row];
    });
    if (cpuRows.length) printTable("The same cells by CPU time per answer (the server process's user + system time from /proc over the answers it gave in its slices; ranges over rounds)", cpuRows);
  } finally {
    for (const s of servers) await s.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(trivialDir, { recursive: true, force: true });
    if (floorDir) fs.rmSync(floorDir, { recursive: true, force: true });
  }
}
