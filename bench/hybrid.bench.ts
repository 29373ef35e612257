/**
 * Hybrid search (bm25 + vectors, fused) at 10k and 100k chunks, one run,
 * side by side on the same texts, vectors and queries:
 * - dualmind: the real `searchStore` (mode=hybrid) over a store whose
 *   documents went through ingest and whose chunks the real worker embedded;
 * - raw: the same fusion by hand on a bare SQLite file: FTS5 bm25 top-50 +
 *   vec0 float KNN top-50 + weighted reciprocal rank fusion in JS, with
 *   dualmind's default k, weights and similarity cut;
 * - Orama hybrid search (its own BM25 and vector search, score fusion).
 * Every timing includes embedding the query, as a caller would pay it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";
import { create, insertMultiple, search, type AnyOrama } from "@orama/orama";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { getEmbedder, resetEmbedderForTests } from "../lib/embed/model";
import { blobToVector } from "../lib/embed/vector-index";
import { drainEmbedQueues } from "../lib/embed/worker";
import { ingestDocument } from "../lib/index/ingest";
import { searchInputSchema, searchStore } from "../lib/index/search";
import { buildFtsMatch, FUSION_WEIGHTS, RRF_K, SIMILARITY_FLOOR } from "../lib/retrieval";

const MIN_VECTOR_SIMILARITY = SIMILARITY_FLOOR.builtin;
import { createStore, openStore } from "../lib/stores/stores";
import { loadTextWindows } from "./corpus";
import { growthRows, recordSamples, sizeLabel, type SizedSamples } from "./growth";
import { buildLabelledSet, type LabelledQuery } from "./search-eval";
import { percentile, printTable } from "./table";

const SIZES = [10_000, 100_000];
const QUERIES = 100;
const K = 10;
/** Candidates per signal before fusion: dualmind's POOL in lib/index/search.ts. */
const POOL = 50;
/** Dualmind's defaults for the builtin provider: the baseline fuses exactly as it does. */
const WEIGHTS = FUSION_WEIGHTS.builtin;
const STORE = "hybrid";

type Chunk = { id: number; path: string; text: string; vector: Float32Array };
type Answer = { ids: number[]; paths: string[] };
type Method = { label: string; answer: (q: string) => Promise<Answer> };

const windowPath = (i: number) => `bench/w${String(i).padStart(6, "0")}.txt`;

function seconds(since: number): number {
  return (performance.now() - since) / 1000;
}

/** Ingest windows [from, to) as API documents (the real ingest step), then let the real worker embed them. */
async function growStore({ texts, from, to }: { texts: string[]; from: number; to: number }): Promise<{ ingestS: number; embedS: number }> {
  const handle = getStoreDb({ store: STORE });
  const started = performance.now();
  for (let at = from; at < to; at += 1000) {
    handle.sqlite.transaction(() => {
      for (let i = at; i < Math.min(to, at + 1000); i++) ingestDocument({ handle, path: windowPath(i), origin: "api", text: texts[i], mtime: 0 });
    })();
  }
  const ingestS = seconds(started);
  const embedStarted = performance.now();
  await drainEmbedQueues({ stores: [STORE], batchSize: 256 });
  return { ingestS, embedS: seconds(embedStarted) };
}

/** Chunks (with the vectors the worker wrote) above a chunk id: what the baselines are fed. */
function chunksAfter(afterId: number): Chunk[] {
  const rows = getStoreDb({ store: STORE })
    .sqlite.prepare(
      `select c.id, d.path, c.text, e.vector from chunks c join documents d on d.doc_id = c.doc_id
       join embeddings e on e.kind = 'chunk' and e.ref_id = c.id where c.id > ? order by c.id`,
    )
    .all(afterId) as { id: number; path: string; text: string; vector: Buffer }[];
  return rows.map((r) => ({ id: r.id, path: r.path, text: r.text, vector: blobToVector(r.vector) }));
}

/** The baseline's own file: FTS5 with dualmind's tokenizer and a float vec0 table, nothing else. */
function openRawDb(file: string): Database.Database {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  sqliteVec.load(db);
  db.exec(`create virtual table raw_fts using fts5(text, tokenize='unicode61 remove_diacritics 2');
    create virtual table raw_vec using vec0(embedding float[384] distance_metric=cosine)`);
  return db;
}

function addToRawDb(db: Database.Database, chunks: Chunk[]): void {
  const fts = db.prepare("insert into raw_fts(rowid, text) values (?, ?)");
  const vec = db.prepare("insert into raw_vec(rowid, embedding) values (?, ?)");
  db.transaction(() => {
    for (const c of chunks) {
      fts.run(c.id, c.text);
      vec.run(BigInt(c.id), c.vector);
    }
  })();
}

/** Hybrid by hand: bm25 top-N and float KNN top-N, fused by weighted reciprocal rank. */
function rawHybrid(db: Database.Database, pathOf: Map<number, string>): Method["answer"] {
  const bm25 = db.prepare("select rowid as id from raw_fts where raw_fts match ? order by bm25(raw_fts), rowid limit ?");
  const knn = db.prepare("select rowid as id, distance from raw_vec where embedding match ? and k = ?");
  return async (q) => {
    const [vector] = await getEmbedder().provider.embed([q], "query");
    // The same quoting as dualmind (any word), so both run the same MATCH expression.
    const match = buildFtsMatch(q, { match: "any" });
    const lexical = match ? (bm25.all(match, POOL) as { id: number }[]) : [];
    const nearest = (knn.all(vector, POOL) as { id: number; distance: number }[]).filter((r) => 1 - r.distance >= MIN_VECTOR_SIMILARITY);
    const fused = new Map<number, number>();
    lexical.forEach((r, i) => fused.set(r.id, WEIGHTS.fts / (RRF_K + i + 1)));
    nearest.forEach((r, i) => fused.set(Number(r.id), (fused.get(Number(r.id)) ?? 0) + WEIGHTS.vec / (RRF_K + i + 1)));
    const ids = [...fused].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, K).map(([id]) => id);
    return { ids, paths: ids.map((id) => pathOf.get(id) ?? "") };
  };
}

function dualmindHybrid(): Method["answer"] {
  return async (q) => {
    const res = await searchStore({ handle: openStore({ store: STORE }), core: null, input: searchInputSchema.parse({ q, mode: "hybrid", limit: K }) });
    if (res.effective_mode !== "hybrid") throw new Error(`hybrid fell back to ${res.effective_mode}: ${res.fallback?.message}`);
    return { ids: res.results.map((h) => h.id), paths: res.results.map((h) => h.path) };
  };
}

/**
 * Orama with the nearest equivalent of dualmind's weights: text leads, vectors
 * break near-ties. Its text leg keeps Orama's defaults (terms match as
 * prefixes, any term); `exact: true` would leave it almost nothing to match.
 */
function oramaHybrid(orama: AnyOrama): Method["answer"] {
  return async (q) => {
    const [vector] = await getEmbedder().provider.embed([q], "query");
    const res = await search(orama, {
      mode: "hybrid",
      term: q,
      properties: ["text"],
      vector: { value: Array.from(vector), property: "embedding" },
      similarity: MIN_VECTOR_SIMILARITY,
      hybridWeights: { text: WEIGHTS.fts, vector: WEIGHTS.vec },
      limit: K,
      includeVectors: false,
    });
    const docs = res.hits.map((h) => h.document as { id: string; path: string });
    return { ids: docs.map((d) => Number(d.id)), paths: docs.map((d) => d.path) };
  };
}

type Measured = { label: string; samples: number[]; answers: Answer[] };

async function measure(method: Method, queries: LabelledQuery[]): Promise<Measured> {
  const samples: number[] = [];
  const answers: Answer[] = [];
  for (const lq of queries) {
    const started = performance.now();
    answers.push(await method.answer(lq.q));
    samples.push(performance.now() - started);
  }
  return { label: method.label, samples, answers };
}

/** Mean share of the reference's top-10 that the method also returned (1 = same set). */
function topOverlap(answers: Answer[], reference: Answer[]): number {
  const shares = answers.map((a, i) => {
    const ref = new Set(reference[i].ids);
    return ref.size === 0 ? (a.ids.length === 0 ? 1 : 0) : a.ids.filter((id) => ref.has(id)).length / ref.size;
  });
  return shares.reduce((s, x) => s + x, 0) / shares.length;
}

function knownItemHitRate(answers: Answer[], queries: LabelledQuery[]): number {
  return answers.filter((a, i) => a.paths.includes(queries[i].target)).length / queries.length;
}

export default async function run() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-hybrid-"));
  Object.assign(process.env, { DATA_DIR: dataDir, DUALMIND_LOG_LEVEL: "warn", DUALMIND_EMBED_BACKLOG_WATERMARK: "10000000" });
  resetConfigForTests();
  resetEmbedderForTests();
  const raw = openRawDb(path.join(dataDir, "raw-hybrid.db"));
  try {
    const texts = loadTextWindows(SIZES[SIZES.length - 1]);
    // Known-item queries (exact words, misspellings, loose recall) about the first 10k windows: targets exist at every size.
    const queries = buildLabelledSet(texts.slice(0, SIZES[0]).map((text, i) => ({ path: windowPath(i), text })), QUERIES);
    createStore({ input: { name: STORE }, actor: "bench" });
    const orama = create({ schema: { id: "string", path: "string", text: "string", embedding: "vector[384]" } as const });
    const pathOf = new Map<number, string>();
    const methods: Method[] = [
      { label: "raw SQL (FTS5 bm25 + vec0 float KNN + RRF in JS)", answer: rawHybrid(raw, pathOf) },
      { label: "dualmind hybrid (searchStore)", answer: dualmindHybrid() },
      { label: "Orama hybrid", answer: oramaHybrid(orama) },
    ];
    const rows: Record<string, string | number>[] = [];
    const build: Record<string, string | number>[] = [];
    const growth: SizedSamples = new Map();
    let have = 0;
    let lastChunkId = 0;
    for (const n of SIZES) {
      const grown = await growStore({ texts, from: have, to: n });
      const chunks = chunksAfter(lastChunkId);
      lastChunkId = chunks[chunks.length - 1]?.id ?? lastChunkId;
      for (const c of chunks) pathOf.set(c.id, c.path);
      let started = performance.now();
      addToRawDb(raw, chunks);
      const rawS = seconds(started);
      started = performance.now();
      await insertMultiple(orama, chunks.map((c) => ({ id: String(c.id), path: c.path, text: c.text, embedding: Array.from(c.vector) })));
      const oramaS = seconds(started);
      build.push({ chunks: pathOf.size, "added windows": n - have, "dualmind ingest s": grown.ingestS, "dualmind worker embed s": grown.embedS, "raw SQL insert s": rawS, "Orama insert s": oramaS });
      have = n;

      const measured: Measured[] = [];
      for (const m of methods) measured.push(await measure(m, queries));
      const [baseline] = measured;
      const baseP50 = percentile(baseline.samples, 50);
      for (const m of measured) {
        recordSamples(growth, { method: m.label, size: n, samples: m.samples });
        rows.push({
          chunks: pathOf.size,
          method: m.label,
          "p50 ms": percentile(m.samples, 50),
          "p95 ms": percentile(m.samples, 95),
          "p50 vs raw": `${(percentile(m.samples, 50) / baseP50).toFixed(2)}×`,
          "top-10 overlap with raw": topOverlap(m.answers, baseline.answers).toFixed(3),
          "known-item hit@10": knownItemHitRate(m.answers, queries).toFixed(3),
        });
      }
    }
    printTable(`Hybrid search, top ${K}, ${queries.length} known-item queries (exact / typo / loose thirds), builtin 384-d vectors, RRF k=${RRF_K}, w_fts=${WEIGHTS.fts}, w_vec=${WEIGHTS.vec}, pool ${POOL}`, rows);
    printTable("Hybrid: how p50 grows with size", growthRows(growth));
    printTable(`Hybrid: building the corpus (${SIZES.map(sizeLabel).join(" then ")} windows, one run, each step adds to the last)`, build);
  } finally {
    raw.close();
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
