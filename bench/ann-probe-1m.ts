/**
 * Opt-in probe behind lib/embed/ann-index.ts's graph settings at 1M vectors
 * (issue 19: recall@10 ≥ 0.95 at ≤ 10 ms): the same 1M texts as
 * embed.bench.ts's 1M table (every real window once, then recombined halves),
 * embedded once with the builtin provider and cached as one f32 file; exact
 * top 10 by usearch's exact search; then one usearch graph per setting, built
 * the way the app builds it (int8 codes, cosine, ids in order) and searched
 * as knnSearch searches it (ask the graph for searchDepth candidates, keep
 * max(2k, k+20), rank those by exact cosine on the f32 vectors).
 *
 *   npx tsx bench/ann-probe-1m.ts
 *   BENCH_PROBE_N=300000 BENCH_PROBE_EA=128,384 BENCH_PROBE_EF=256,512 npx tsx bench/ann-probe-1m.ts
 *
 * BENCH_PROBE_DIR keeps the vectors between runs (default: the temp dir);
 * BENCH_PROBE_M (16), BENCH_PROBE_QUERIES (100), BENCH_PROBE_THREADS (2).
 * Recall is given two ways: ids (a returned id is one of the exact top 10)
 * and ties (a returned vector is at least as similar as the exact 10th,
 * within 1e-4: the ann-benchmarks convention, since the recombined texts
 * make exact ties common).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Index, MetricKind, ScalarKind, exactSearch } from "usearch";
import { BuiltinProvider } from "../lib/embed/providers/builtin";
import { loadTextWindows } from "./corpus";
import { percentile, printTable } from "./table";

const DIM = 384;
const K = 10;
const KEEP = Math.max(2 * K, K + 20);
const N = Number(process.env.BENCH_PROBE_N ?? 1_000_000);
const QUERIES = Number(process.env.BENCH_PROBE_QUERIES ?? 100);
const THREADS = Number(process.env.BENCH_PROBE_THREADS ?? 2);
const M = Number(process.env.BENCH_PROBE_M ?? 16);
const EAS = (process.env.BENCH_PROBE_EA ?? "384").split(",").map(Number);
const EFS = (process.env.BENCH_PROBE_EF ?? "256,384,512,1024").split(",").map(Number);
const DIR = process.env.BENCH_PROBE_DIR ?? path.join(os.tmpdir(), "dualmind-ann-probe");

/** The 1M bench's texts (embed.bench.ts textsUpTo): real windows, then recombined halves. */
function textAt(windows: string[], i: number): string {
  if (i < windows.length) return windows[i];
  const a = i % windows.length;
  const b = (a + Math.floor(i / windows.length) * 7919) % windows.length;
  return [...windows[a].split("\n").slice(0, 2), ...windows[b].split("\n").slice(2)].join("\n");
}

function log(s: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${s}\n`);
}

function vectors(provider: BuiltinProvider, windows: string[]): Float32Array {
  fs.mkdirSync(DIR, { recursive: true });
  const file = path.join(DIR, `vectors-${N}.f32`);
  if (fs.existsSync(file) && fs.statSync(file).size === N * DIM * 4) {
    const buf = fs.readFileSync(file);
    return new Float32Array(buf.buffer, buf.byteOffset, N * DIM);
  }
  const out = new Float32Array(N * DIM);
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    out.set(provider.embedOne(textAt(windows, i)), i * DIM);
    if (i % 100_000 === 99_999) log(`embedded ${i + 1}`);
  }
  log(`embedded ${N} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  fs.writeFileSync(file, Buffer.from(out.buffer));
  return out;
}

function cosine(all: Float32Array, id: number, q: Float32Array): number {
  let dot = 0;
  let nv = 0;
  const o = id * DIM;
  for (let d = 0; d < DIM; d++) {
    const x = all[o + d];
    dot += x * q[d];
    nv += x * x;
  }
  return dot / Math.sqrt(nv || 1);
}

function rssMb(): number {
  return process.memoryUsage().rss / 2 ** 20;
}

async function main() {
  const provider = new BuiltinProvider();
  const windows = loadTextWindows(N);
  const all = vectors(provider, windows);
  // The bench's query formula (embed.bench.ts knnQueries): the opening eight words of other windows.
  const queries = Array.from({ length: QUERIES }, (_, i) => provider.embedOne(windows[(i * 7919) % windows.length].split(/\s+/).slice(0, 8).join(" ")));
  const qnorm = queries.map((q) => {
    const n = Math.sqrt(q.reduce((s, x) => s + x * x, 0)) || 1;
    return q.map((x) => x / n);
  });
  const t0 = performance.now();
  const truth = queries.map((q) => {
    const m = exactSearch(all, q, DIM, K, MetricKind.Cos, THREADS) as { keys: BigUint64Array };
    return Array.from(m.keys, Number);
  });
  const tenth = truth.map((ids, qi) => Math.min(...ids.map((id) => cosine(all, id, qnorm[qi]))));
  log(`exact truth for ${QUERIES} queries in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const rows: Record<string, string | number>[] = [];
  for (const ea of EAS) {
    const rss0 = rssMb();
    const index = new Index({ dimensions: DIM, metric: MetricKind.Cos, quantization: ScalarKind.I8, connectivity: M, expansion_add: ea, expansion_search: 64, multi: false });
    const b0 = performance.now();
    const cpu0 = process.cpuUsage();
    const PAGE = 10_000;
    for (let s = 0; s < N; s += PAGE) {
      const e = Math.min(N, s + PAGE);
      const keys = new BigUint64Array(e - s);
      for (let i = s; i < e; i++) keys[i - s] = BigInt(i);
      index.add(keys, all.subarray(s * DIM, e * DIM), THREADS);
      if (e % 100_000 === 0) log(`ea ${ea}: added ${e}`);
    }
    const buildS = (performance.now() - b0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const memMb = rssMb() - rss0;
    const file = path.join(DIR, `probe-${N}-m${M}-ea${ea}.usearch`);
    index.save(file);
    const fileMb = fs.statSync(file).size / 2 ** 20;
    const load = os.loadavg().map((x) => x.toFixed(1)).join(" / ");
    const cells: string[] = [];
    for (const ef of EFS) {
      const search = (q: Float32Array) => {
        const m = index.search(q, Math.min(Math.max(KEEP, ef), N), 1) as { keys: BigUint64Array };
        const ids = Array.from(m.keys.subarray(0, KEEP), Number);
        return ids
          .map((id) => ({ id, s: cosine(all, id, q) }))
          .sort((x, y) => y.s - x.s)
          .slice(0, K);
      };
      for (const q of qnorm) search(q); // warm
      const times: number[] = [];
      let idHits = 0;
      let tieHits = 0;
      qnorm.forEach((q, qi) => {
        const s0 = performance.now();
        const got = search(q);
        times.push(performance.now() - s0);
        const want = new Set(truth[qi]);
        for (const g of got) {
          if (want.has(g.id)) idHits++;
          if (g.s >= tenth[qi] - 1e-4) tieHits++;
        }
      });
      const cell = `ef ${ef}: **${(idHits / (QUERIES * K)).toFixed(3)}** (ties ${(tieHits / (QUERIES * K)).toFixed(3)}) @ ${percentile(times, 50).toFixed(2)} / ${percentile(times, 95).toFixed(2)}`;
      log(`ea ${ea} ${cell}`);
      cells.push(cell);
    }
    rows.push({
      vectors: N,
      codes: "i8",
      M,
      expansion_add: ea,
      "build s": buildS.toFixed(0),
      "build CPU s": ((cpu.user + cpu.system) / 1e6).toFixed(0),
      "load avg after": load,
      "memory MB": memMb.toFixed(0),
      "file MB": fileMb.toFixed(0),
      [`recall@10 by id (ties within 1e-4), rescored ${KEEP}: p50 / p95 ms, by search depth`]: cells.join("; "),
    });
    fs.rmSync(file, { force: true });
  }
  printTable(`usearch graphs at ${N} vectors (builtin 384-d, ${QUERIES} queries, ${THREADS} build threads, single-threaded search)`, rows);
}

void main();
