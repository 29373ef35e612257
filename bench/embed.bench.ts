/**
 * Vector search at 10k and 100k chunks (384-d, builtin embedder), one run,
 * side by side: our HNSW index (usearch, int8, rescored exactly), our
 * SimHash-prefilter + exact rescoring, our exact mode, raw exact sqlite-vec
 * KNN (vec0 float, cosine) on the same vectors, and Orama's vector search on
 * the same vectors; how each grows with size; the library comparison behind
 * the HNSW choice (usearch f32/f16/i8 vs SimHash: build,
 * memory, disk, query, recall, filtered search); with BENCH_EMBED_1M=1 also
 * HNSW and SimHash vs raw vec0 at 1M vectors (several minutes more, so
 * opt-in; BENCH_EMBED_ONLY_1M=1 runs only that); BENCH_EMBED_LIBRARIES=0 leaves out the library comparison (its
 * 100k builds are most of the run). Plus worker throughput through the
 * queue.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { create, insertMultiple, search } from "@orama/orama";
import type Database from "better-sqlite3";
import { resetConfigForTests } from "../lib/config";
import { annDirOf, buildAnnIndex, closeAnnIndexes } from "../lib/embed/ann-index";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { registerEmbeddable } from "../lib/embed/embeddables";
import { getEmbedder, resetEmbedderForTests } from "../lib/embed/model";
import { BuiltinProvider } from "../lib/embed/providers/builtin";
import { enqueueEmbeddings } from "../lib/embed/queue";
import { ensureVecIndex, indexVector, knnSearch, rebuildVecIndex, simhashCodec, vectorToBlob } from "../lib/embed/vector-index";
import { compareAnnLibraries } from "./ann-compare";
import { drainEmbedQueues } from "../lib/embed/worker";
import { loadTextWindows } from "./corpus";
import { growthRows, recordSamples, type SizedSamples } from "./growth";
import { percentile, printTable } from "./table";

const QUERIES = 100;
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const K = 10;
const MILLION = 1_000_000;
/** Raw exact KNN at 1M costs about half a second a query: fewer queries keep the opt-in run in minutes. */
const QUERIES_1M = 50;
const RAW_LABEL = "raw sqlite-vec exact KNN (vec0 float, cosine)";
const SIMHASH_LABEL = "dualmind (simhash + rescore)";
const HNSW_LABEL = "dualmind (HNSW usearch i8 + rescore)";

/** Which KNN path knnSearch takes: the SimHash one (threshold out of reach) or the HNSW one (every set). */
function knnThroughHnsw(on: boolean): void {
  process.env.DUALMIND_ANN_MIN_VECTORS = on ? "1" : String(Number.MAX_SAFE_INTEGER);
  resetConfigForTests();
  closeAnnIndexes();
}

function rssMb(): number {
  global.gc?.();
  return process.memoryUsage().rss / 2 ** 20;
}

function dirMb(dir: string): number {
  return fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0) / 2 ** 20;
}

/** Build the HNSW index the way `embeddings rebuild-index` does (from the BLOBs, saved beside index.db): time, memory, disk. */
function buildHnsw({ sqlite, file, fingerprintId }: { sqlite: Database.Database; file: string; fingerprintId: string }): { ms: number; rss: number; disk: number } {
  knnThroughHnsw(true);
  const before = rssMb();
  const [, ms] = time(() => buildAnnIndex({ source: { db: sqlite, schema: "main" }, fingerprintId, kind: "chunk", dim: 384, fresh: true }));
  return { ms, rss: rssMb() - before, disk: dirMb(annDirOf(file)) };
}

/** Pages of the fingerprint's SimHash vec0 tables (the codes and their chunk metadata). */
function simhashDiskMb(sqlite: Database.Database, fingerprintId: string, n: number): number {
  try {
    return (sqlite.prepare("select sum(pgsize) as b from dbstat where name like ?").get(`vec_${fingerprintId}%`) as { b: number }).b / 2 ** 20;
  } catch {
    return (n * simhashCodec(384).bits) / 8 / 2 ** 20;
  }
}

function time<T>(fn: () => T): [T, number] {
  const s = performance.now();
  const r = fn();
  return [r, performance.now() - s];
}

type Knn = { label: string; t: number[]; recall: number };

/** The reference: raw exact vec0 KNN, timed, whose answers are the truth recall is scored against. */
function rawExactKnn({ sqlite, queries }: { sqlite: Database.Database; queries: Float32Array[] }): { raw: Knn; truth: number[][] } {
  const rawKnn = sqlite.prepare("select rowid from raw_vec where embedding match ? and k = ?");
  const truth: number[][] = [];
  const t: number[] = [];
  for (const q of queries) {
    const [r, ms] = time(() => rawKnn.all(q, K) as { rowid: number }[]);
    truth.push(r.map((x) => Number(x.rowid)));
    t.push(ms);
  }
  return { raw: { label: RAW_LABEL, t, recall: 1 }, truth };
}

/** Time one method over every query and score its recall@K against the exact answers. */
function measureKnn({ label, queries, truth, fn }: { label: string; queries: Float32Array[]; truth: number[][]; fn: (q: Float32Array) => number[] }): Knn {
  const t: number[] = [];
  let hit = 0;
  queries.forEach((q, qi) => {
    const [ids, ms] = time(() => fn(q));
    t.push(ms);
    hit += ids.filter((id) => truth[qi].includes(id)).length / K;
  });
  return { label, t, recall: hit / queries.length };
}

function knnRow({ n, m, rawP50 }: { n: number; m: Knn; rawP50: number }): Record<string, string | number> {
  return {
    chunks: n,
    method: m.label,
    "p50 ms": percentile(m.t, 50),
    "p95 ms": percentile(m.t, 95),
    "p50 vs raw vec0": `${(percentile(m.t, 50) / rawP50).toFixed(2)}×`,
    "recall@10 vs exact": m.recall.toFixed(3),
  };
}

/** Query vectors: the opening words of other windows (known-item style). */
function knnQueries(texts: string[], count: number, provider: BuiltinProvider): Float32Array[] {
  return Array.from({ length: count }, (_, i) => provider.embedOne(texts[(i * 7919) % texts.length].split(/\s+/).slice(0, 8).join(" ")));
}

/**
 * Texts for n vectors: every window of the corpus once (about 175k exist),
 * then new pairings of real text (the first half of one window, the second
 * half of another) until n.
 */
function* textsUpTo(windows: string[], n: number): Generator<string> {
  for (let i = 0; i < n; i++) {
    if (i < windows.length) {
      yield windows[i];
      continue;
    }
    const a = i % windows.length;
    const b = (a + Math.floor(i / windows.length) * 7919) % windows.length;
    yield [...windows[a].split("\n").slice(0, 2), ...windows[b].split("\n").slice(2)].join("\n");
  }
}

/**
 * 1M vectors: SimHash + rescore vs raw vec0 float KNN. Embedding 1M texts
 * through the queue would take the worker minutes, so they are embedded in
 * process and written as the worker writes them (a BLOB per row), and the
 * SimHash index is built the way a rebuild builds it, from the BLOBs.
 */
async function knnAtOneMillion({ provider, fingerprintId, growth }: { provider: BuiltinProvider; fingerprintId: string; growth: SizedSamples }) {
  const n = MILLION;
  const h = getStoreDb({ store: "bench1m" });
  const { sqlite } = h;
  sqlite.exec("create virtual table raw_vec using vec0(embedding float[384] distance_metric=cosine)");
  const ins = sqlite.prepare("insert into embeddings(kind, ref_id, fingerprint_id, dim, task, input_hash, vector, created_at) values ('chunk', ?, ?, 384, 'document', '', ?, 0)");
  const insRaw = sqlite.prepare("insert into raw_vec(rowid, embedding) values (?, ?)");
  const windows = loadTextWindows(n);
  let embedMs = 0;
  let writeMs = 0;
  let batch: Float32Array[] = [];
  let written = 0;
  const flush = () => {
    const [, ms] = time(() =>
      sqlite.transaction(() => {
        for (const v of batch) {
          written++;
          ins.run(written, fingerprintId, vectorToBlob(v));
          insRaw.run(BigInt(written), v);
        }
      })(),
    );
    writeMs += ms;
    batch = [];
  };
  for (const text of textsUpTo(windows, n)) {
    const [v, ms] = time(() => provider.embedOne(text));
    embedMs += ms;
    batch.push(v);
    if (batch.length === 10_000) flush();
  }
  flush();
  const [indexed, indexMs] = time(() => rebuildVecIndex({ handle: h, fingerprintId: fingerprintId, actor: "test" }));
  const hnsw = buildHnsw({ sqlite, file: h.file, fingerprintId });

  const queries = knnQueries(windows, QUERIES_1M, provider);
  const { raw, truth } = rawExactKnn({ sqlite, queries });
  const ann = measureKnn({ label: HNSW_LABEL, queries, truth, fn: (q) => knnSearch({ handle: h, kind: "chunk", fingerprintId, query: q, k: K }).hits.map((x) => x.refId) });
  knnThroughHnsw(false);
  const ours = measureKnn({ label: SIMHASH_LABEL, queries, truth, fn: (q) => knnSearch({ handle: h, kind: "chunk", fingerprintId, query: q, k: K }).hits.map((x) => x.refId) });
  const rawP50 = percentile(raw.t, 50);
  for (const m of [raw, ann, ours]) recordSamples(growth, { method: m.label, size: n, samples: m.t });
  printTable(`Vector KNN at 1M vectors, k=${K}, ${QUERIES_1M} queries (${windows.length} real windows + recombined halves of them)`, [knnRow({ n, m: raw, rawP50 }), knnRow({ n, m: ann, rawP50 }), knnRow({ n, m: ours, rawP50 })]);
  printTable("Building 1M vectors", [
    { stage: "embed in process (builtin)", items: n, s: embedMs / 1000, "memory MB": "—", "disk MB": "—" },
    { stage: "write BLOBs + raw vec0 float rows", items: written, s: writeMs / 1000, "memory MB": "—", "disk MB": "—" },
    { stage: "rebuildVecIndex (SimHash codes from the BLOBs)", items: indexed, s: indexMs / 1000, "memory MB": "in SQLite", "disk MB": Math.round(simhashDiskMb(sqlite, fingerprintId, n)) },
    { stage: "buildAnnIndex (HNSW usearch i8 from the BLOBs, saved beside index.db)", items: n, s: hnsw.ms / 1000, "memory MB": Math.round(hnsw.rss), "disk MB": Math.round(hnsw.disk) },
  ]);
}

export default async function run() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-embed-"));
  process.env.DATA_DIR = dataDir;
  process.env.DUALMIND_LOG_LEVEL = "warn";
  resetConfigForTests();
  resetEmbedderForTests();
  try {
    const texts = loadTextWindows(100_000);
    const provider = new BuiltinProvider();
    const fp = await getEmbedder().fingerprint;
    const [vectors, embedMs] = time(() => texts.map((t) => provider.embedOne(t)));
    const queries = knnQueries(texts, QUERIES, provider);

    const rows: Record<string, string | number>[] = [];
    const annComparison: Record<string, string | number>[] = [];
    const growth: SizedSamples = new Map();
    // BENCH_EMBED_ONLY_1M=1 (with BENCH_EMBED_1M=1): only the 1M table and growth, when a machine cannot spare the smaller sizes too.
    const onlyMillion = process.env.BENCH_EMBED_1M === "1" && process.env.BENCH_EMBED_ONLY_1M === "1";
    for (const n of onlyMillion ? [] : [10_000, texts.length]) {
      const store = `bench${n}`;
      const h = getStoreDb({ store });
      const { sqlite } = h;
      ensureVecIndex({ handle: h, fingerprintId: fp.id, dim: 384 });
      sqlite.exec("create virtual table raw_vec using vec0(embedding float[384] distance_metric=cosine)");
      const ins = sqlite.prepare("insert into embeddings(kind, ref_id, fingerprint_id, dim, task, input_hash, vector, created_at) values ('chunk', ?, ?, 384, 'document', '', ?, 0) returning id");
      const insRaw = sqlite.prepare("insert into raw_vec(rowid, embedding) values (?, ?)");
      sqlite.transaction(() => {
        for (let i = 0; i < n; i++) {
          const { id } = ins.get(i + 1, fp.id, vectorToBlob(vectors[i])) as { id: number };
          indexVector({ handle: h, fingerprintId: fp.id, embeddingId: id, kind: "chunk", vector: vectors[i] });
          insRaw.run(BigInt(i + 1), vectors[i]);
        }
      })();
      const { raw, truth } = rawExactKnn({ sqlite, queries });
      const chunkKnn = (q: Float32Array, allowedRefIds?: number[]) => knnSearch({ handle: h, kind: "chunk", fingerprintId: fp.id, query: q, k: K, allowedRefIds }).hits.map((x) => x.refId);
      const hnsw = buildHnsw({ sqlite, file: h.file, fingerprintId: fp.id });
      const ann = measureKnn({ label: HNSW_LABEL, queries, truth, fn: (q) => chunkKnn(q) });
      // A filter keeping every 10th chunk: through the graph (widened by its selectivity) vs ranking the allowed set exactly.
      const allowed = Array.from({ length: Math.floor(n / 10) }, (_, i) => i * 10 + 1);
      const exactAllowed = (q: Float32Array) => knnSearch({ handle: h, kind: "chunk", fingerprintId: fp.id, query: q, k: K, exact: true, allowedRefIds: allowed }).hits.map((x) => x.refId);
      const filteredTruth = queries.map(exactAllowed);
      const annFiltered = measureKnn({ label: `${HNSW_LABEL}, filter keeps 10% (recall vs exact among them)`, queries, truth: filteredTruth, fn: (q) => chunkKnn(q, allowed) });
      const exactFiltered = measureKnn({ label: "dualmind exact=true, filter keeps 10%", queries, truth: filteredTruth, fn: exactAllowed });
      knnThroughHnsw(false);
      const ours = measureKnn({ label: SIMHASH_LABEL, queries, truth, fn: (q) => chunkKnn(q) });
      if (n === texts.length && process.env.BENCH_EMBED_LIBRARIES !== "0") {
        const [, simhashMs] = time(() => rebuildVecIndex({ handle: h, fingerprintId: fp.id, actor: "bench" }));
        annComparison.push(
          ...compareAnnLibraries({
            vectors: vectors.slice(0, n),
            queries,
            truth,
            ours: [
              { label: "dualmind SimHash + rescore (filters: exact scan of the allowed set)", buildMs: simhashMs, rssMb: "in SQLite", diskMb: simhashDiskMb(sqlite, fp.id, n), setup: () => knnThroughHnsw(false), search: (q) => chunkKnn(q), filtered: (q, allowed) => chunkKnn(q, [...allowed]) },
              { label: "dualmind HNSW usearch i8 + rescore (filters: over-fetch + post-filter)", buildMs: hnsw.ms, rssMb: hnsw.rss, diskMb: hnsw.disk, setup: () => {
                  knnThroughHnsw(true);
                  chunkKnn(queries[0]); // load the saved file before timing, as a running server has it
                },
                search: (q) => chunkKnn(q), filtered: (q, allowed) => chunkKnn(q, [...allowed]) },
            ],
          }),
        );
        knnThroughHnsw(false);
      }
      const exact = measureKnn({ label: "dualmind exact=true", queries, truth, fn: (q) => knnSearch({ handle: h, kind: "chunk", fingerprintId: fp.id, query: q, k: K, exact: true }).hits.map((x) => x.refId) });

      const orama = create({ schema: { id: "string", embedding: "vector[384]" } as const });
      await insertMultiple(orama, vectors.slice(0, n).map((v, i) => ({ id: String(i + 1), embedding: Array.from(v) })));
      const oramaT: number[] = [];
      let oramaHit = 0;
      for (let qi = 0; qi < queries.length; qi++) {
        const s = performance.now();
        const res = await search(orama, { mode: "vector", vector: { value: Array.from(queries[qi]), property: "embedding" }, similarity: 0, limit: K, includeVectors: false });
        oramaT.push(performance.now() - s);
        oramaHit += res.hits.map((x) => Number((x.document as { id: string }).id)).filter((id) => truth[qi].includes(id)).length / K;
      }
      const rawP50 = percentile(raw.t, 50);
      const measured = [raw, ann, annFiltered, ours, exact, exactFiltered, { label: "Orama vector search", t: oramaT, recall: oramaHit / queries.length }];
      for (const m of measured) {
        rows.push(knnRow({ n, m, rawP50 }));
        recordSamples(growth, { method: m.label, size: n, samples: m.t });
      }
    }
    if (rows.length) printTable(`Vector KNN, k=${K}, ${QUERIES} queries, 384-d builtin vectors of real text`, rows);
    if (annComparison.length) printTable(`Choosing the approximate index: libraries on the same ${texts.length} vectors and queries (filtered: 10% of the vectors allowed; memory = process RSS growth while building)`, annComparison);
    if (process.env.BENCH_EMBED_1M === "1") await knnAtOneMillion({ provider, fingerprintId: fp.id, growth });
    printTable(`Vector KNN: how p50 grows with size${process.env.BENCH_EMBED_1M === "1" ? ` (1M: ${QUERIES_1M} queries)` : " (1M: run with BENCH_EMBED_1M=1)"}`, growthRows(growth));
    if (onlyMillion) return;

    // Worker throughput through the real queue (claim → embed → write → index), builtin provider.
    const wStore = "benchworker";
    const h = getStoreDb({ store: wStore });
    h.sqlite.exec("create table bench_texts(id integer primary key, body text not null)");
    registerEmbeddable({
      kind: "benchtext",
      artifactType: "benchtext",
      load: ({ handle, refIds: ids }) => new Map((handle.sqlite.prepare("select id, body from bench_texts where id in (select value from json_each(?))").all(JSON.stringify(ids)) as { id: number; body: string }[]).map((r) => [r.id, { text: r.body, inputHash: sha256(r.body) }])),
      listAll: () => [],
    });
    const n = 10_000;
    const insT = h.sqlite.prepare("insert into bench_texts(id, body) values (?, ?)");
    h.sqlite.transaction(() => texts.slice(0, n).forEach((t, i) => insT.run(i + 1, t)))();
    const [, enqueueMs] = time(() => enqueueEmbeddings({ handle: h, items: texts.slice(0, n).map((t, i) => ({ kind: "benchtext", refId: i + 1, inputHash: sha256(t) })) }));
    const s = performance.now();
    const drained = await drainEmbedQueues({ stores: [wStore] });
    const drainMs = performance.now() - s;
    printTable("Embedding throughput (builtin provider, 384-d)", [
      { stage: "embed only (in memory)", items: texts.length, "items/s": Math.round(texts.length / (embedMs / 1000)) },
      { stage: "enqueue (writer side)", items: n, "items/s": Math.round(n / (enqueueMs / 1000)) },
      { stage: "worker: claim → embed → provenance → write BLOB + index + cache", items: drained.embedded, "items/s": Math.round(drained.embedded / (drainMs / 1000)) },
    ]);
  } finally {
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
