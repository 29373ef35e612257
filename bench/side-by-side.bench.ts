/**
 * Search, recall and remember latency of two or more checkouts in one run,
 * on the same data, under the same load: each checkout answers in its own
 * child process (bench/side-by-side-worker.ts, started in that checkout, its
 * own lib and its own store built from one corpus file), and the rows
 * alternate between them a few queries at a time, the order rotating from
 * batch to batch, so a load change hits every side alike. Each call's wall
 * time and the answering process's CPU time during it are both reported: on
 * a machine shared with other work the scheduler moves wall time by several
 * times between neighbouring rows, CPU time far less.
 *
 * BENCH_SIDE_CHECKOUTS=label=dir,label=dir,… names the checkouts (a built
 * one: node_modules present; `.` is this one); the first is the reference of
 * the ratio columns. Without it the bench says so and does nothing.
 * BENCH_SIDE_SIZES (default 10000,100000): documents, traces and thoughts
 * each per size (nodes a tenth), one store per size per checkout.
 * BENCH_SIDE_QUERIES (default 60): queries per row.
 * BENCH_SIDE_ROWS=<text>,<text>: only the rows whose name holds one of them
 * (say `recall lexical,remember`). BENCH_SIDE_SAMPLES=<file>: every call's
 * input and times, per row and side, written there as JSON.
 * BENCH_SIDE_PARTS (default search,recall,remember): which to build and time
 * (search alone needs only the documents; recall or remember alone write no
 * documents, so they can be added to a kept search store). A build stopped
 * part way resumes where each table's rows end.
 * BENCH_SIDE_KEEP=<dir>: keep each checkout's stores in <dir>/<label>/<size>
 * and reuse them on the next run (building 100k takes many minutes).
 * BENCH_SIDE_BUILD_ONLY=1: build (or find) the stores, time nothing.
 * BENCH_SIDE_COPY=to=from,…: checkout `to` starts from a copy of `from`'s
 * built store (same schema: say two commits of one branch) instead of
 * building its own.
 *
 * Rows: search in each mode (fts with any word, vector, hybrid) and group
 * (chunk, document); recall by signals (hybrid, vector, lexical); remember.
 * "first sight" rows ask queries no earlier row asked; "repeated" rows ask a
 * set once untimed, then time the same set again.
 *
 * Each ratio comes with its 90% interval: the row's queries resampled with
 * replacement (the same queries for every side: a query hard on one side is
 * hard on the other) and the ratio taken again, 2,000 times. A p95 of 60
 * calls is its third-slowest call: one collection or a scheduler hiccup moves
 * it, and the interval shows by how much.
 */
import { fork, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadTextWindows } from "./corpus";
import { buildLabelledSet } from "./search-eval";
import { OBJECTS, QUALIFIERS, VERBS } from "./side-by-side-data";
import { percentile, printTable } from "./table";
import { seededRandom } from "../lib/eval/probes";

const BATCH = 5;

type Side = { label: string; dir: string; child: ChildProcess; dataDir: string };
type Row = Record<string, string | number>;
type Query = Record<string, unknown>;

function checkouts(): { label: string; dir: string }[] {
  return (process.env.BENCH_SIDE_CHECKOUTS ?? "")
    .split(",")
    .filter(Boolean)
    .map((pair) => {
      const [label, dir] = pair.split("=");
      return { label, dir: path.resolve(dir) };
    });
}

/** The next message of one kind from a child (a failure is thrown with the child's stack). */
function next<T>(child: ChildProcess, op: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const on = (m: { op: string; error?: string }) => {
      if (m.op !== op && m.op !== "failed") return;
      child.off("message", on);
      if (m.op === "failed") reject(new Error(m.error));
      else resolve(m as T);
    };
    child.on("message", on);
  });
}

async function start({ label, dir, dataDir }: { label: string; dir: string; dataDir: string }): Promise<Side> {
  const child = fork(path.join(__dirname, "side-by-side-worker.ts"), [], {
    cwd: dir,
    execArgv: ["--import", "tsx"],
    // The query budget is lifted: a busy shared machine must not turn a slow query into a failed row.
    env: { ...process.env, BENCH_CHECKOUT: dir, BENCH_LABEL: label, DATA_DIR: dataDir, DUALMIND_LOG_LEVEL: "warn", DUALMIND_EMBED_BACKLOG_WATERMARK: "10000000", DUALMIND_QUERY_BUDGET_MS: "600000" },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  await next(child, "ready");
  return { label, dir, child, dataDir };
}

/** Ask a side to close its databases and exit; resolves when it has. */
function stop(side: Side): Promise<void> {
  return new Promise((resolve) => {
    if (side.child.exitCode !== null) return resolve();
    side.child.once("exit", () => resolve());
    side.child.send({ op: "exit" });
  });
}

let queryId = 0;
type Times = { ms: number[]; cpuMs: number[] };

async function ask(side: Side, kind: string, inputs: Query[]): Promise<Times> {
  const id = ++queryId;
  const answer = next<Times>(side.child, "answered");
  side.child.send({ op: "query", id, kind, inputs });
  return answer;
}

/** Every side answers `inputs` in batches, the side order rotating per batch; wall and CPU times per side. */
async function alternate(sides: Side[], kind: string, inputs: Query[]): Promise<Times[]> {
  const out = sides.map((): Times => ({ ms: [], cpuMs: [] }));
  for (let b = 0; b * BATCH < inputs.length; b++) {
    const batch = inputs.slice(b * BATCH, (b + 1) * BATCH);
    for (let j = 0; j < sides.length; j++) {
      const s = (b + j) % sides.length;
      const t = await ask(sides[s], kind, batch);
      out[s].ms.push(...t.ms);
      out[s].cpuMs.push(...t.cpuMs);
    }
  }
  return out;
}

const pair = (xs: number[]) => `${percentile(xs, 50).toFixed(2)} / ${percentile(xs, 95).toFixed(2)}`;
const RESAMPLES = 2000;

/** `xs` ÷ `ref` at percentile p, with its 90% paired bootstrap interval (sample i of both sides answered query i). */
function ratioWithInterval(xs: number[], ref: number[], p: number): string {
  const point = percentile(xs, p) / percentile(ref, p);
  const random = seededRandom(xs.length * 7919 + p);
  const n = Math.min(xs.length, ref.length);
  const ratios: number[] = [];
  for (let r = 0; r < RESAMPLES; r++) {
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < n; i++) {
      const j = Math.floor(random() * n);
      a.push(xs[j]);
      b.push(ref[j]);
    }
    ratios.push(percentile(a, p) / percentile(b, p));
  }
  return `${point.toFixed(2)} (${percentile(ratios, 5).toFixed(2)}–${percentile(ratios, 95).toFixed(2)})`;
}

const ratio = (xs: number[], ref: number[]) => `${ratioWithInterval(xs, ref, 50)} / ${ratioWithInterval(xs, ref, 95)}`;

function searchQueries(windows: string[], size: number, n: number, seed: number): Query[] {
  return buildLabelledSet(windows.slice(0, size).map((text, i) => ({ path: String(i), text })), n, seed).map((l) => ({ q: l.q }));
}

/** Intents of distinct verb, object and qualifier combinations (4,500 of them), each row's seed starting elsewhere. */
function recallQueries(n: number, seed: number): Query[] {
  const combinations = VERBS.length * OBJECTS.length * QUALIFIERS.length;
  return Array.from({ length: n }, (_, q) => {
    const at = (q + seed * 997) % combinations;
    const object = Math.floor(at / VERBS.length) % OBJECTS.length;
    const qualifier = Math.floor(at / (VERBS.length * OBJECTS.length));
    return { intent: { verb: VERBS[at % VERBS.length], target: `${OBJECTS[object]} ${QUALIFIERS[qualifier]}` } };
  });
}

/** Known-item queries over the thoughts' texts (the worker writes thought i from text size - 1 - i). */
function rememberQueries(windows: string[], size: number, n: number, seed: number): Query[] {
  return buildLabelledSet(windows.slice(0, size).map((text, i) => ({ path: String(i), text })), n, seed).map((l) => ({ query: l.q }));
}

type RowSpec = { row: string; kind: string; params: Query; queries: (seed: number) => Query[] };

type Rows = { wall: Row[]; cpu: Row[] };
/** Every call of every row, for BENCH_SIDE_SAMPLES. */
const samples: { row: string; inputs: Query[]; sides: Record<string, Times> }[] = [];

async function measureSize({ sides, windows, size, n, parts, rows }: { sides: Side[]; windows: string[]; size: number; n: number; parts: Set<string>; rows: Rows }): Promise<void> {
  const specs: RowSpec[] = [];
  for (const group of ["chunk", "document"]) {
    for (const [mode, extra] of [["fts", { match: "any" }], ["vector", {}], ["hybrid", {}]] as const) {
      specs.push({ row: `search ${mode === "fts" ? "fts (any word)" : mode}, group=${group}`, kind: "search", params: { mode, group, ...extra }, queries: (seed) => searchQueries(windows, size, n, seed) });
    }
  }
  for (const signals of ["hybrid", "vector", "lexical"]) specs.push({ row: `recall ${signals}`, kind: "recall", params: { signals }, queries: (seed) => recallQueries(n, seed) });
  specs.push({ row: "remember", kind: "remember", params: {}, queries: (seed) => rememberQueries(windows, size, n, seed) });
  let seed = 100;
  const only = (process.env.BENCH_SIDE_ROWS ?? "").split(",").filter(Boolean);
  for (const spec of specs) {
    seed += 2;
    if (!parts.has(spec.kind) || (only.length > 0 && !only.some((o) => spec.row.includes(o)))) continue;
    let passSeed = seed - 2;
    for (const pass of ["first sight", "repeated"] as const) {
      const inputs = spec.queries(++passSeed).map((q) => ({ ...q, ...spec.params }));
      if (pass === "repeated") await alternate(sides, spec.kind, inputs);
      const times = await alternate(sides, spec.kind, inputs);
      const [ref] = times;
      const wall: Row = { size, row: `${spec.row}, ${pass}` };
      const cpu: Row = { ...wall };
      for (const [i, side] of sides.entries()) {
        wall[`${side.label} p50 / p95 ms`] = pair(times[i].ms);
        cpu[`${side.label} p50 / p95 ms`] = pair(times[i].cpuMs);
      }
      for (const [i, side] of [...sides.entries()].slice(1)) {
        wall[`${side.label} ÷ ${sides[0].label}, p50 / p95 (90% interval)`] = ratio(times[i].ms, ref.ms);
        cpu[`${side.label} ÷ ${sides[0].label}, p50 / p95 (90% interval)`] = ratio(times[i].cpuMs, ref.cpuMs);
      }
      rows.wall.push(wall);
      rows.cpu.push(cpu);
      samples.push({ row: `${spec.row}, ${pass}`, inputs, sides: Object.fromEntries(sides.map((side, i) => [side.label, times[i]])) });
      process.stderr.write(`side-by-side: wall ${Object.values(wall).join(" | ")}\nside-by-side: cpu ${Object.values(cpu).join(" | ")}\n`);
    }
  }
}

export default async function run() {
  const list = checkouts();
  if (list.length < 2) {
    process.stdout.write("side-by-side: set BENCH_SIDE_CHECKOUTS=label=dir,label=dir (the first is the reference) to compare checkouts.\n");
    return;
  }
  const sizes = (process.env.BENCH_SIDE_SIZES ?? "10000,100000").split(",").map(Number);
  const n = Number(process.env.BENCH_SIDE_QUERIES ?? 60);
  const parts = new Set((process.env.BENCH_SIDE_PARTS ?? "search,recall,remember").split(","));
  const copies = new Map((process.env.BENCH_SIDE_COPY ?? "").split(",").filter(Boolean).map((p) => p.split("=") as [string, string]));
  const keep = process.env.BENCH_SIDE_KEEP;
  const root = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-side-by-side-"));
  const windows = loadTextWindows(Math.max(...sizes));
  const corpusFile = path.join(root, `corpus-${windows.length}.json`);
  fs.mkdirSync(root, { recursive: true });
  fs.writeFileSync(corpusFile, JSON.stringify(windows));
  const builds: Row[] = [];
  const rows: Rows = { wall: [], cpu: [] };
  try {
    for (const size of sizes) {
      const dataDir = (label: string) => path.join(root, label, String(size));
      // Stores first: the sides that build their own in parallel, then the copies.
      const builders = list.filter((c) => !copies.has(c.label));
      await Promise.all(
        builders.map(async (c) => {
          fs.mkdirSync(dataDir(c.label), { recursive: true });
          const side = await start({ ...c, dataDir: dataDir(c.label) });
          const built = next<{ result: Row }>(side.child, "built");
          side.child.send({ op: "build", size, corpusFile, parts: [...parts] });
          builds.push({ size, checkout: c.label, ...(await built).result });
          await stop(side);
        }),
      );
      for (const [to, from] of copies) {
        if (!fs.existsSync(path.join(dataDir(to), `built-${size}-${[...parts].join("-")}.json`))) {
          fs.rmSync(dataDir(to), { recursive: true, force: true });
          fs.cpSync(dataDir(from), dataDir(to), { recursive: true });
        }
      }
      if (process.env.BENCH_SIDE_BUILD_ONLY === "1") continue;
      const sides: Side[] = [];
      for (const c of list) sides.push(await start({ ...c, dataDir: dataDir(c.label) }));
      for (const side of sides) {
        const built = next(side.child, "built");
        side.child.send({ op: "build", size, corpusFile, parts: [...parts] });
        await built;
      }
      try {
        await measureSize({ sides, windows, size, n, parts, rows });
      } finally {
        for (const side of sides) await stop(side);
      }
    }
  } finally {
    if (!keep) fs.rmSync(root, { recursive: true, force: true });
  }
  if (process.env.BENCH_SIDE_SAMPLES) fs.writeFileSync(process.env.BENCH_SIDE_SAMPLES, JSON.stringify(samples));
  printTable("Side by side: building each checkout's store (s; documents, traces and thoughts each of the size, nodes a tenth)", builds);
  const what = `${list.map((c) => `${c.label} = ${c.dir}`).join(", ")}; ${n} queries per row, alternated ${BATCH} at a time, limit 10`;
  printTable(`Side by side, wall time: ${what}`, rows.wall);
  printTable(`Side by side, CPU time of the answering process during each call (what the load moves least): ${what}`, rows.cpu);
}
