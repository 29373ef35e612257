/**
 * The measurement behind lib/embed/ann-index.ts's choice of library: usearch
 * at three precisions (f32, f16, i8) on the same vectors and queries as the
 * SimHash path, on build time, memory, disk, query time, recall@10 and
 * filtered search (10% of the vectors allowed). hnswlib-node was compared here
 * too until it left the dependencies (it compiles at install); its last
 * numbers are in bench/results/archive.md.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Index, MetricKind, ScalarKind } from "usearch";
import { percentile } from "./table";

const K = 10;

type Built = {
  label: string;
  buildMs: number;
  rssMb: number;
  diskMb: number;
  search: (q: Float32Array, k: number) => number[];
  /** Nearest k among the allowed ids only. */
  filtered: (q: Float32Array, k: number, allowed: Set<number>) => number[];
};

function rssMb(): number {
  global.gc?.();
  return process.memoryUsage().rss / 2 ** 20;
}

function diskOf(save: (file: string) => void): number {
  const file = path.join(os.tmpdir(), `dualmind-ann-${process.pid}-${Date.now()}`);
  save(file);
  const mb = fs.statSync(file).size / 2 ** 20;
  fs.rmSync(file, { force: true });
  return mb;
}

function flat(vectors: Float32Array[]): Float32Array {
  const dim = vectors[0].length;
  const out = new Float32Array(vectors.length * dim);
  vectors.forEach((v, i) => out.set(v, i * dim));
  return out;
}

function buildUsearch(vectors: Float32Array[], quantization: ScalarKind): Built {
  const before = rssMb();
  const s = performance.now();
  const index = new Index({ dimensions: vectors[0].length, metric: MetricKind.Cos, quantization, connectivity: 16, expansion_add: 128, expansion_search: 256, multi: false });
  const keys = BigUint64Array.from(vectors, (_, i) => BigInt(i + 1));
  index.add(keys, flat(vectors), 0);
  const buildMs = performance.now() - s;
  const search = (q: Float32Array, k: number) => Array.from(index.search(q, k, 1).keys, Number);
  return {
    label: `usearch 2.26 HNSW (${quantization}, M=16, ef=256)`,
    buildMs,
    rssMb: rssMb() - before,
    diskMb: diskOf((f) => index.save(f)),
    search,
    // No predicate search in the JS binding: over-fetch in proportion to the filter, then post-filter.
    filtered: (q, k, allowed) => {
      const want = Math.min(index.size(), Math.ceil((k * vectors.length * 2) / allowed.size));
      return search(q, want).filter((id) => allowed.has(id)).slice(0, k);
    },
  };
}

function exactTopK(vectors: Float32Array[], q: Float32Array, k: number, allowed?: Set<number>): number[] {
  const scored: { id: number; s: number }[] = [];
  vectors.forEach((v, i) => {
    if (allowed && !allowed.has(i + 1)) return;
    let s = 0;
    for (let j = 0; j < v.length; j++) s += v[j] * q[j];
    scored.push({ id: i + 1, s });
  });
  return scored.sort((a, b) => b.s - a.s).slice(0, k).map((x) => x.id);
}

function timed(queries: Float32Array[], truth: number[][], fn: (q: Float32Array) => number[]): { p50: number; p95: number; recall: number } {
  const t: number[] = [];
  let hit = 0;
  queries.forEach((q, qi) => {
    const s = performance.now();
    const ids = fn(q);
    t.push(performance.now() - s);
    hit += ids.filter((id) => truth[qi].includes(id)).length / Math.min(K, truth[qi].length);
  });
  return { p50: percentile(t, 50), p95: percentile(t, 95), recall: hit / queries.length };
}

/** A KNN already built elsewhere (dualmind's own paths), measured beside the libraries. */
export type MeasuredKnn = { label: string; buildMs: number; rssMb: number | string; diskMb: number; setup?: () => void; search: (q: Float32Array) => number[]; filtered: (q: Float32Array, allowed: Set<number>) => number[] };

/**
 * One row per KNN at this size: dualmind's paths (`ours`, ids = ref ids
 * 1..n) and each library built here on the same vectors. `truth` is the
 * exact top-10 over ids 1..n.
 */
export function compareAnnLibraries({ vectors, queries, truth, ours }: { vectors: Float32Array[]; queries: Float32Array[]; truth: number[][]; ours: MeasuredKnn[] }): Record<string, string | number>[] {
  const n = vectors.length;
  const allowed = new Set(Array.from({ length: Math.floor(n / 10) }, (_, i) => i * 10 + 1));
  const filteredTruth = queries.map((q) => exactTopK(vectors, q, K, allowed));
  const rows: Record<string, string | number>[] = [];
  const row = (label: string, build: { buildMs: number; rssMb: number | string; diskMb: number }, plain: ReturnType<typeof timed>, filt: ReturnType<typeof timed>) =>
    rows.push({
      vectors: n,
      method: label,
      "build s": build.buildMs / 1000,
      "memory MB": typeof build.rssMb === "number" ? Math.round(build.rssMb) : build.rssMb,
      "disk MB": Math.round(build.diskMb),
      "p50 ms": plain.p50,
      "p95 ms": plain.p95,
      "recall@10": plain.recall.toFixed(3),
      "filtered 10% p50 ms": filt.p50,
      "filtered recall@10": filt.recall.toFixed(3),
    });
  for (const m of ours) {
    m.setup?.();
    row(m.label, m, timed(queries, truth, m.search), timed(queries, filteredTruth, (q) => m.filtered(q, allowed)));
  }
  const libs: (() => Built)[] = [() => buildUsearch(vectors, ScalarKind.F32), () => buildUsearch(vectors, ScalarKind.F16), () => buildUsearch(vectors, ScalarKind.I8)];
  for (const make of libs) {
    const b = make();
    row(b.label, b, timed(queries, truth, (q) => b.search(q, K)), timed(queries, filteredTruth, (q) => b.filtered(q, K, allowed)));
  }
  return rows;
}
