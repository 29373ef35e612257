/**
 * SQLite beside PostgreSQL in one run, on the same synthesized notes
 * (bench/corpus.ts) and the same queries, through the one stores() backend
 * interface the routes use (lib/stores/backend.ts):
 * - ingest: putDocuments, batches of BATCH notes as an agent sends them;
 * - embed: each backend's embed worker draining the queue ingest filled
 *   (builtin provider, DUALMIND_EMBED_BATCH_SIZE per batch, default 32);
 *   on SQLite, past DUALMIND_ANN_MIN_VECTORS the HNSW index is then built as
 *   `embeddings rebuild-index` builds it (timed apart);
 * - full-text: search mode=fts limit 10 (the route's defaults otherwise),
 *   two-word queries, and one broad query (two words in most notes);
 * - vectors: search mode=vector group=chunk limit 10, recall@10 against the
 *   same backend's exact answer; the PostgreSQL server here has no pgvector,
 *   so its route answers by the exact real[] scan up to EXACT_SCAN_LIMIT
 *   vectors and lexically above (fallback vectors_unavailable) — both
 *   reported as they are — plus that exact scan timed with the limit lifted
 *   on a few queries; and pgvector HNSW on PGlite (WebAssembly PostgreSQL in
 *   this process, labelled "PGlite"), loaded with the same vectors;
 * - API: `next start` without and with DATABASE_URL, CONCURRENCY keep-alive
 *   clients (api.bench.ts's loop), search fts, req/s and p95.
 *
 * - full-text ranking: the same top 10 chunks and scores (group=chunk, 4
 *   decimals) on both for every timed query, and MRR@10 on the known-item
 *   set of bench/search-docs.bench.ts (first size only).
 *
 * BENCH_PG_ONLY=fts runs ingest, full-text, ranking and the API rows only
 * (no embedding, vectors or PGlite: a short run); BENCH_PG_QUALITY=0 skips
 * the known-item set; BENCH_PG_API=0 the API rows (and the `next build` they
 * may need). BENCH_PG_KEEP=<dir> keeps the SQLite data dir and the PostgreSQL
 * cluster of each size under <dir> between runs: a later run with the same
 * dir finds the notes there and skips ingest (its rows then say so).
 *
 * Opt-in sizes: 10,000 notes by default (a few minutes); 100k with
 * `BENCH_PG_SIZES=10000,100000 npm run bench -- pg.bench` (most of an hour on
 * 2 cores). PostgreSQL: BENCH_PG_URL, else a throwaway Debian cluster
 * (tests/pg/harness.ts: fsync off, so ingest is a lower bound for a durable
 * server) on BENCH_PG_PORT or a free port; BENCH_PG_API_PORT fixes the port
 * of `next start`. BENCH_PG_PGLITE_VECTORS caps the PGlite set (default
 * 20,000: its HNSW inserts run in WebAssembly), BENCH_PG_EXACT_QUERIES the
 * queries of the lifted exact scan (default 5).
 */
import { pgEngine, SQLITE_ENGINE } from "../lib/db/engine";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { closeAllDatabases } from "../lib/db/connection";
import { closePgHandle, openPgHandle } from "../lib/db/pg";
import { rowsOf, withStoreTx, type SqlRunner } from "../lib/db/pg-store";
import { getConfig, resetConfigForTests } from "../lib/config";
import { getEmbedder } from "../lib/embed/model";
import { rebuildAnnIndexes } from "../lib/embed/vector-index";
import { drainEmbedQueues } from "../lib/embed/worker";
import { drainEmbedQueuesPg } from "../lib/index/embed-queue-pg";
import { putDocumentsSchema } from "../lib/index/ingest";
import { searchInputSchema, type SearchResult } from "../lib/index/search";
import { EXACT_SCAN_LIMIT, normalizeVector, pgvectorSupportPg, putChunkEmbeddingsPg, vectorNeighboursPg } from "../lib/index/vectors-pg";
import { storesOn, type StoresBackend } from "../lib/stores/backend";
import { openStore } from "../lib/stores/stores";
import { openStorePg } from "../lib/stores/engines/pg";
import { RELIABILITY_TOKEN, ensureProductionBuild, startServer } from "../tests/fixtures/next-server";
import { CONCURRENCY, SECONDS, WARMUP_REQUESTS, hammer } from "./api.bench";
import { loadTextWindows, noteAt } from "./corpus";
import { withBenchDataDir } from "./index.bench";
import { benchPostgres } from "./pg-server";
import { insertPlaceholderChunks, openPgliteStores } from "./pg-store.bench";
import { percentile, printTable } from "./table";
import { buildDocQuerySet, loadMarkdownCorpus } from "./doc-queries";
import { CHUNK_DEPTH, evaluateDocEngine, type DocEngine, type DocEvalRow } from "./search-eval";

const SIZES = (process.env.BENCH_PG_SIZES ?? "10000").split(",").map(Number);
const BATCH = 200;
const FTS_QUERIES = 200;
const BROAD_REPEATS = 10;
const VECTOR_QUERIES = 30;
const EXACT_QUERIES = Number(process.env.BENCH_PG_EXACT_QUERIES ?? 5);
const PGLITE_VECTORS = Number(process.env.BENCH_PG_PGLITE_VECTORS ?? 20_000);
/** The query budget (DUALMIND_QUERY_BUDGET_MS) while SQLite's exact vector answers are computed. */
const EXACT_BUDGET_MS = 60_000;
const API_PORT = process.env.BENCH_PG_API_PORT ? Number(process.env.BENCH_PG_API_PORT) : undefined;
const STORE = "bench";
const FTS_ONLY = process.env.BENCH_PG_ONLY === "fts";
const API = process.env.BENCH_PG_API !== "0";
const KEEP = process.env.BENCH_PG_KEEP ? path.resolve(process.env.BENCH_PG_KEEP) : null;
const K = 10;

type Row = Record<string, string | number>;
type Timed = { samples: number[]; errors: number; hits: number };

const words = (text: string) => [...new Set(text.toLowerCase().match(/[a-z]{6,}/g) ?? [])];

/** FTS_QUERIES two-word queries, each two words of one note, spread over the corpus (as in pg-store.bench.ts). */
export function twoWordQueries(windows: string[], size: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < FTS_QUERIES && i < size; i += Math.max(1, Math.floor(size / FTS_QUERIES))) {
    const w = words(noteAt({ windows, index: i }).text);
    if (w.length >= 2) out.push(`${w[Math.floor(w.length / 3)]} ${w[Math.floor((2 * w.length) / 3)]}`);
  }
  return out;
}

/** The two words (of 6+ letters) in the most notes of a sample, and the share of notes holding both. */
function broadQuery(windows: string[], size: number): { q: string; share: number } {
  const sample = Array.from({ length: Math.min(size, 2_000) }, (_, k) => words(noteAt({ windows, index: Math.floor((k * size) / Math.min(size, 2_000)) }).text));
  const df = new Map<string, number>();
  for (const w of sample.flat()) df.set(w, (df.get(w) ?? 0) + 1);
  const [a, b] = [...df.entries()].sort((x, y) => y[1] - x[1] || x[0].localeCompare(y[0])).map(([w]) => w);
  return { q: `${a} ${b}`, share: sample.filter((w) => w.includes(a) && w.includes(b)).length / sample.length };
}

/**
 * Run the first query once untimed, then time every query; a refused query
 * (e.g. 422 over the query budget) counts as an error and has no result.
 */
async function timeQueries(queries: string[], run: (q: string) => Promise<SearchResult>): Promise<Timed & { results: (SearchResult | null)[] }> {
  await run(queries[0]).catch(() => null);
  const t: Timed & { results: (SearchResult | null)[] } = { samples: [], errors: 0, hits: 0, results: [] };
  for (const q of queries) {
    const started = performance.now();
    const r = await run(q).catch(() => null);
    t.samples.push(performance.now() - started);
    t.results.push(r);
    if (!r) t.errors++;
    else if (r.results.length > 0) t.hits++;
  }
  return t;
}

const ids = (r: SearchResult) => r.results.map((h) => h.id);
const overlap = (got: number[], want: number[]) => (want.length === 0 ? 1 : got.filter((id) => want.includes(id)).length / want.length);
const ratio = (pg: number, lite: number) => (Number.isFinite(pg) && Number.isFinite(lite) && lite > 0 ? `${(pg / lite).toFixed(2)}×` : "");
const errs = (t: Timed) => (t.errors ? ` (${t.errors} refused)` : "");

async function withQueryBudget<T>(ms: number, work: () => Promise<T>): Promise<T> {
  const saved = process.env.DUALMIND_QUERY_BUDGET_MS;
  process.env.DUALMIND_QUERY_BUDGET_MS = String(ms);
  resetConfigForTests();
  try {
    return await work();
  } finally {
    if (saved === undefined) delete process.env.DUALMIND_QUERY_BUDGET_MS;
    else process.env.DUALMIND_QUERY_BUDGET_MS = saved;
    resetConfigForTests();
  }
}

type Side = { name: string; backend: StoresBackend };

export default async function pgBench(): Promise<void> {
  if (API) ensureProductionBuild();
  const windows = loadTextWindows(20_000);
  for (const size of SIZES) await benchSize(windows, size);
}

async function benchSize(windows: string[], size: number): Promise<void> {
  const load = [os.loadavg()[0]];
  const pgServer = await benchPostgres(`bench_pg_${size}`, { keepDir: KEEP ? path.join(KEEP, `pg-${size}`) : undefined });
  if (!pgServer) return;
  const { url, server } = pgServer;
  const pg = await openPgHandle({ url, max: 4 });
  // 100k notes take past the default store quota (DUALMIND_MAX_STORE_BYTES counts their full-text entries too).
  const env = () => ({ DUALMIND_DISABLE_VECTORS: "false", DUALMIND_LOG_LEVEL: "error", DUALMIND_MAX_STORE_BYTES: String(64 * 2 ** 30) });
  try {
    await withBenchDataDir({ env, keep: KEEP ? path.join(KEEP, `sqlite-${size}`) : undefined }, async (dataDir) => {
      const sqlite: Side = { name: "SQLite", backend: storesOn(SQLITE_ENGINE) };
      const postgres: Side = { name: "PostgreSQL", backend: storesOn(pgEngine(pg)) };
      const both = [sqlite, postgres];
      const cell: Record<string, Record<string, number | string>> = {};
      const put = (measure: string, side: Side, v: number | string) => ((cell[measure] ??= {})[side.name] = v);

      const started = performance.now();
      // Progress on stderr (a 100k run is long); the tables go to stdout.
      const step = (what: string) => process.stderr.write(`pg.bench ${size}: ${what} (${((performance.now() - started) / 1000).toFixed(0)} s, load ${os.loadavg()[0].toFixed(1)})\n`);
      // Ingest: the same batches through each backend's putDocuments.
      const batches = Array.from({ length: Math.ceil(size / BATCH) }, (_, b) => b * BATCH);
      const chunks: Record<string, number> = {};
      for (const side of both) {
        // A kept store (BENCH_PG_KEEP) with this size's notes is used as it is.
        const kept = KEEP ? await side.backend.describeStore({ store: STORE }).catch(() => null) : null;
        if (kept && kept.counts.documents === size) {
          chunks[side.name] = kept.counts.chunks;
          put(`ingest: notes/s (putDocuments, ${BATCH} per call)`, side, "kept from an earlier run");
          put("ingest: chunks written", side, chunks[side.name]);
          continue;
        }
        await side.backend.createStore({ input: { name: STORE }, actor: "bench" });
        const t0 = performance.now();
        for (const from of batches) {
          const documents = Array.from({ length: Math.min(BATCH, size - from) }, (_, k) => noteAt({ windows, index: from + k })).map((n) => ({ path: n.path, content: n.text }));
          await side.backend.putDocuments({ store: STORE, input: putDocumentsSchema.parse({ documents }), actor: "bench" });
        }
        const s = (performance.now() - t0) / 1000;
        chunks[side.name] = (await side.backend.describeStore({ store: STORE })).counts.chunks;
        put(`ingest: notes/s (putDocuments, ${BATCH} per call)`, side, size / s);
        put("ingest: chunks written", side, chunks[side.name]);
      }

      if (size === SIZES[0] && process.env.BENCH_PG_QUALITY !== "0") await rankingQuality(both);
      step("embed");
      // Embed: each backend's worker drains the queue ingest filled.
      const fp = await getEmbedder().fingerprint;
      const handlePg = await openStorePg({ pg, store: STORE });
      const embedMeasure = `embed: chunks/s (worker drains the queue, builtin, batches of ${getConfig().embed.batchSize})`;
      let t0 = performance.now();
      let drained = { embedded: 0 };
      let drainedPg = { embedded: 0 };
      if (!FTS_ONLY) {
      drained = await drainEmbedQueues({ stores: [STORE] });
      put(embedMeasure, sqlite, drained.embedded / ((performance.now() - t0) / 1000));
      t0 = performance.now();
      drainedPg = await drainEmbedQueuesPg({ handles: [handlePg] });
      put(embedMeasure, postgres, drainedPg.embedded / ((performance.now() - t0) / 1000));
      if (drained.embedded >= getConfig().annMinVectors) {
        t0 = performance.now();
        rebuildAnnIndexes({ handle: openStore({ store: STORE }), fingerprintId: fp.id });
        put("embed: HNSW index build s (SQLite: usearch, rebuild-index)", sqlite, (performance.now() - t0) / 1000);
        put("embed: HNSW index build s (SQLite: usearch, rebuild-index)", postgres, "no pgvector here");
      }
      }

      step("full-text");
      // Full-text, the same queries on both.
      const queries = twoWordQueries(windows, size);
      const broad = broadQuery(windows, size);
      const fts = (q: string) => searchInputSchema.parse({ q, mode: "fts", limit: K });
      for (const side of both) {
        const t = await timeQueries(queries, (q) => side.backend.search({ store: STORE, input: fts(q) }));
        put(`fts: ${queries.length} two-word queries, p50 ms`, side, percentile(t.samples, 50));
        put(`fts: ${queries.length} two-word queries, p95 ms`, side, percentile(t.samples, 95));
        put("fts: two-word queries with hits", side, `${t.hits}/${queries.length}${errs(t)}`);
        const b = await timeQueries(Array(BROAD_REPEATS).fill(broad.q), (q) => side.backend.search({ store: STORE, input: fts(q) }));
        put(`fts: broad "${broad.q}" (${Math.round(broad.share * 100)}% of notes), p50 ms`, side, percentile(b.samples, 50));
        put("fts: broad, p95 ms", side, b.errors ? `${percentile(b.samples, 95).toFixed(2)}${errs(b)}` : percentile(b.samples, 95));
      }
      // The same answers: top 10 chunks (group=chunk) with their scores to 4 decimals, every query on both backends.
      const chunkFts = (q: string) => searchInputSchema.parse({ q, mode: "fts", group: "chunk", limit: K });
      const top10 = (r: SearchResult | null) => (r ? r.results.map((h) => `${h.path}#${h.chunk_index} ${h.score.toFixed(4)}`).join("|") : "refused");
      let same = 0;
      const agreeing = [...queries, broad.q];
      for (const q of agreeing) {
        const [a, b] = [await sqlite.backend.search({ store: STORE, input: chunkFts(q) }).catch(() => null), await postgres.backend.search({ store: STORE, input: chunkFts(q) }).catch(() => null)];
        if (a && top10(a) === top10(b)) same++;
      }
      put("fts: same top 10 chunks and scores (group=chunk, 4 decimals) as SQLite", postgres, `${same}/${agreeing.length}`);
      // The route's default (group=document: chunk evidence with whole-document bm25), documents and scores.
      let sameDocs = 0;
      for (const q of agreeing) {
        const [a, b] = [await sqlite.backend.search({ store: STORE, input: fts(q) }).catch(() => null), await postgres.backend.search({ store: STORE, input: fts(q) }).catch(() => null)];
        if (a && top10(a) === top10(b)) sameDocs++;
      }
      put("fts: same top 10 documents and scores (group=document, the route's default, 4 decimals) as SQLite", postgres, `${sameDocs}/${agreeing.length}`);
      for (const side of both) {
        const t = await timeQueries(queries, (q) => side.backend.search({ store: STORE, input: chunkFts(q) }));
        put(`fts group=chunk: ${queries.length} two-word queries, p50 ms`, side, percentile(t.samples, 50));
        put(`fts group=chunk: two-word, p95 ms`, side, percentile(t.samples, 95));
        const b = await timeQueries(Array(BROAD_REPEATS).fill(broad.q), (q) => side.backend.search({ store: STORE, input: chunkFts(q) }));
        put("fts group=chunk: broad, p50 ms", side, percentile(b.samples, 50));
        put("fts group=chunk: broad, p95 ms", side, b.errors ? `${percentile(b.samples, 95).toFixed(2)}${errs(b)}` : percentile(b.samples, 95));
      }

      const vrows: Row[] = [];
      if (!FTS_ONLY) {
      step("vectors");
      // Vectors through the route's search, recall@10 against each backend's own exact answer.
      const vq = queries.slice(0, VECTOR_QUERIES);
      const vec = (q: string, exact = false) => searchInputSchema.parse({ q, mode: "vector", group: "chunk", limit: K, exact });
      const exactLite = new Map<string, number[]>();
      // The exact reference may pass the 1 s query budget at 100k: lifted for it (and its own row, labelled so).
      const te = await withQueryBudget(EXACT_BUDGET_MS, async () => {
        for (const q of vq) exactLite.set(q, ids(await sqlite.backend.search({ store: STORE, input: vec(q, true) })));
        return timeQueries(vq, (q) => sqlite.backend.search({ store: STORE, input: vec(q, true) }));
      });
      for (const side of both) {
        const t = await timeQueries(vq, (q) => side.backend.search({ store: STORE, input: vec(q) }));
        const recall = t.results.reduce((acc, res, i) => acc + (res ? overlap(ids(res), exactLite.get(vq[i]) ?? []) : 0), 0);
        const r = t.results.at(-1);
        const how = r?.fallback ? `answered ${r.effective_mode} (fallback: ${r.fallback.reason})` : side === postgres ? `${r?.vectors?.method} (real[] scan, up to ${EXACT_SCAN_LIMIT} vectors)` : `${r?.vectors?.method}`;
        put("vector (route, mode=vector): how it answers", side, how);
        put("vector (route): p50 ms", side, percentile(t.samples, 50));
        put("vector (route): p95 ms", side, percentile(t.samples, 95));
        vrows.push({ engine: `${side.name}: search mode=vector (the route's path)`, answers: `${how}${errs(t)}`, vectors: drained.embedded, queries: vq.length, "recall@10": side === sqlite ? (recall / vq.length).toFixed(3) : r?.fallback ? "n/a (lexical)" : "1.000 (exact)", "p50 ms": percentile(t.samples, 50), "p95 ms": percentile(t.samples, 95) });
      }
      vrows.push({ engine: `SQLite: search mode=vector exact=true (query budget ${EXACT_BUDGET_MS / 1000} s)`, answers: "exact", vectors: drained.embedded, queries: vq.length, "recall@10": "1.000", "p50 ms": percentile(te.samples, 50), "p95 ms": percentile(te.samples, 95) });

      step("PostgreSQL exact scan");
      // The PostgreSQL exact scan over real[] with its limit lifted (what the route would do without EXACT_SCAN_LIMIT).
      const qvecs = (await getEmbedder().provider.embed(vq, "query")).map((v) => normalizeVector(v));
      const exactSamples: number[] = [];
      // Its own pool without the 30 s statement timeout: at 100k one scan takes about that long.
      const unlimited = await openPgHandle({ url, max: 1, timeouts: { statementMs: 0, lockMs: 0, idleInTransactionMs: 0 } });
      try {
        const handleUnlimited = await openStorePg({ pg: unlimited, store: STORE });
        for (const q of qvecs.slice(0, EXACT_QUERIES)) {
          const started = performance.now();
          const r = await withStoreTx({ handle: handleUnlimited, readOnly: true, work: (tx) => vectorNeighboursPg({ tx, fingerprintId: fp.id, query: q, k: K, where: [], limit: Number.MAX_SAFE_INTEGER }) });
          exactSamples.push(performance.now() - started);
          if (!r.ok) throw new Error(r.message);
        }
      } finally {
        await closePgHandle(unlimited);
      }
      vrows.push({ engine: `PostgreSQL: vectorNeighboursPg exact scan over real[], limit ${EXACT_SCAN_LIMIT} lifted`, answers: "exact", vectors: drainedPg.embedded, queries: exactSamples.length, "recall@10": "1.000", "p50 ms": percentile(exactSamples, 50), "p95 ms": percentile(exactSamples, 95) });
      put(`vector: PostgreSQL exact scan, limit lifted, p50 ms (${exactSamples.length} queries)`, postgres, percentile(exactSamples, 50));
      step("PGlite HNSW");
      // A failure here (PGlite is WebAssembly in this process) must not cost the API rows after it.
      vrows.push(...(await pgliteHnsw({ handlePg, fingerprintId: fp.id, qvecs }).catch((e: Error) => [{ engine: "PGlite pgvector HNSW", answers: `failed: ${e.message}` }])));
      }

      if (API) {
      step("API");
      // The API route: next start over each backend, the same requests.
      closeAllDatabases();
      const apiRuns: [string, string][] = [
        [`two-word "${queries[0]}"`, `/api/v1/stores/${STORE}/search?q=${encodeURIComponent(queries[0])}&mode=fts&limit=${K}`],
        [`broad "${broad.q}"`, `/api/v1/stores/${STORE}/search?q=${encodeURIComponent(broad.q)}&mode=fts&limit=${K}`],
      ];
      const pgDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-pg-api-"));
      try {
        for (const [side, serverEnv, dir] of [
          [sqlite, {}, dataDir],
          [postgres, { DATABASE_URL: url }, pgDataDir],
        ] as const) {
          // No worker: it would compete with the measured requests for the CPU.
          const next = await startServer({ dataDir: dir, env: { DUALMIND_EMBED_WORKER: "false", ...serverEnv }, port: API_PORT });
          try {
            const rps: number[] = [];
            for (const [label, route] of apiRuns) {
              const r = await hammer(`${next.url}${route}`, { authorization: `Bearer ${RELIABILITY_TOKEN}` });
              rps.push(r.rps);
              put(`API (next start, ${CONCURRENCY} keep-alive clients, ${SECONDS} s after ${WARMUP_REQUESTS} untimed): GET search fts, ${label}: req/s`, side, r.rps);
              put(`API: ${label}: p95 ms`, side, r.errors ? `${r.p95.toFixed(2)} (not 200: ${Object.entries(r.errorsByStatus).map(([status, n]) => `${n} × ${status}`).join(", ")})` : r.p95);
            }
            // The goal's ratio on each backend: the broad query's throughput over the selective (two-word) one's.
            put("API: broad ÷ two-word req/s (%)", side, rps[0] > 0 ? Number(((100 * rps[1]) / rps[0]).toFixed(1)) : "n/a");
          } finally {
            await next.stop();
          }
        }
      } finally {
        fs.rmSync(pgDataDir, { recursive: true, force: true });
      }
      }

      load.push(os.loadavg()[0]);
      const num = (v: number | string | undefined) => (typeof v === "number" ? v : NaN);
      printTable(
        `${size} notes (${chunks.SQLite} chunks on SQLite, ${chunks.PostgreSQL} on PostgreSQL): SQLite vs PostgreSQL ${await serverVersion(pg)} (a local server, no pgvector), same notes and queries, one run; load average (1 min) ${load.map((l) => l.toFixed(1)).join(" → ")}`,
        Object.entries(cell).map(([measure, v]) => ({ measure, SQLite: v.SQLite ?? "", PostgreSQL: v.PostgreSQL ?? "", "PG ÷ SQLite": ratio(num(v.PostgreSQL), num(v.SQLite)) })),
      );
      if (!FTS_ONLY) printTable(`${size} notes: vector KNN, k=${K}, builtin ${fp.dimension}-d vectors of the same chunks; recall@10 against the same engine's exact top 10`, vrows);
    });
  } finally {
    await closePgHandle(pg);
    server?.stop();
  }
}

/**
 * MRR@10 on the document-level known-item set of bench/search-docs.bench.ts (300 queries, 500 node_modules markdown
 * documents), each backend through the same stores() call, in a store of its own.
 */
async function rankingQuality(sides: Side[]): Promise<void> {
  const set = buildDocQuerySet({ docs: loadMarkdownCorpus({ root: path.resolve("node_modules"), limit: 500 }), count: 300 });
  const docs = set.docs.map((d) => ({ path: `corpus/${d.path}`, content: d.text }));
  const queries = set.queries.map((q) => ({ q: q.q, target: `corpus/${q.target}` }));
  const modes: [string, Record<string, unknown>][] = [
    ["fts, all words, chunks", { mode: "fts", group: "chunk" }],
    ["fts, any word, chunks", { mode: "fts", match: "any", group: "chunk" }],
    ["fts, any word, group=document", { mode: "fts", match: "any", group: "document" }],
    ["fts, all words, group=document (the route's default)", { mode: "fts" }],
  ];
  const rows: DocEvalRow[] = [];
  for (const side of sides) {
    await side.backend.createStore({ input: { name: "quality" }, actor: "bench" });
    for (let i = 0; i < docs.length; i += 100) await side.backend.putDocuments({ store: "quality", input: putDocumentsSchema.parse({ documents: docs.slice(i, i + 100) }), actor: "bench" });
    for (const [label, params] of modes) {
      // A refused query (422 over the query budget) is a miss, counted.
      let refused = 0;
      const engine: DocEngine = {
        label: `${side.name}: ${label}`,
        search: async (q) => ((await side.backend.search({ store: "quality", input: searchInputSchema.parse({ q, limit: CHUNK_DEPTH, ...params }) }).catch(() => (refused++, null)))?.results ?? []).map((h) => h.path),
      };
      const row = await evaluateDocEngine(engine, queries);
      rows.push({ ...row, label: refused ? `${row.label} (${refused} refused)` : row.label });
    }
  }
  printTable(
    `Ranking: PostgreSQL vs SQLite on the document-level known-item set (${queries.length} queries, ${docs.length} node_modules markdown documents), same search call`,
    rows.map((r) => ({ engine: r.label, "MRR@10": r.mrr.toFixed(3), "hit@1": r.hit1.toFixed(3), "hit@10": r.hit10.toFixed(3), "p50 ms": percentile(r.latencies, 50) })),
  );
}

async function serverVersion(pg: Awaited<ReturnType<typeof openPgHandle>>): Promise<string> {
  const { rows } = await pg.pool.query<{ v: string }>("select current_setting('server_version') as v");
  return rows[0].v.split(" ")[0];
}

/**
 * pgvector HNSW on PGlite over the PostgreSQL server's own vectors (the
 * first PGLITE_VECTORS chunks), written by putChunkEmbeddingsPg (which builds
 * the index on the first write), queried by vectorNeighboursPg with its
 * default ef_search; recall@10 against exact cosine in JS over the same set.
 */
async function pgliteHnsw({ handlePg, fingerprintId, qvecs }: { handlePg: Awaited<ReturnType<typeof openStorePg>>; fingerprintId: string; qvecs: number[][] }): Promise<Row[]> {
  const vectors = await withStoreTx({ handle: handlePg, readOnly: true, work: (tx) =>
    rowsOf<{ id: string; embedding: number[] }>({ tx, query: sql`select chunk_row_id as id, embedding from chunk_embeddings where fingerprint_id = ${fingerprintId} order by chunk_row_id limit ${PGLITE_VECTORS}` }),
  });
  const { client, inStore: inSchema } = await openPgliteStores(["store_bench"]);
  const inStore = <T>(work: (tx: SqlRunner) => PromiseLike<T>) => inSchema("store_bench", work);
  try {
    const t0 = performance.now();
    for (let at = 0; at < vectors.length; at += 1_000) {
      const page = vectors.slice(at, at + 1_000).map((v) => ({ ...v, id: Number(v.id) }));
      await inStore(async (tx) => {
        await insertPlaceholderChunks(tx, page.map((v) => v.id));
        await putChunkEmbeddingsPg({ tx, fingerprintId, items: page.map((v) => ({ chunkRowId: v.id, inputHash: `h${v.id}`, vector: v.embedding })) });
      });
    }
    const storeS = (performance.now() - t0) / 1000;
    await inStore((tx) => tx.execute(sql`analyze`));
    const support = await inStore((tx) => pgvectorSupportPg({ db: tx }));
    const exactTop = (q: number[]) =>
      vectors
        .map((v) => ({ id: Number(v.id), s: v.embedding.reduce((acc, x, j) => acc + x * q[j], 0) }))
        .sort((a, b) => b.s - a.s || a.id - b.id)
        .slice(0, K)
        .map((h) => h.id);
    const samples: number[] = [];
    let recall = 0;
    let method = "";
    for (const [i, q] of [qvecs[0], ...qvecs].entries()) {
      const started = performance.now();
      const r = await inStore((tx) => vectorNeighboursPg({ tx, fingerprintId, query: q, k: K, where: [], limit: vectors.length }));
      if (!r.ok) throw new Error(r.message);
      // The first query warms the index up.
      if (i === 0) continue;
      samples.push(performance.now() - started);
      method = r.method;
      recall += overlap(r.hits.map((h) => h.id), exactTop(q));
    }
    return [
      {
        engine: `PGlite (WebAssembly PostgreSQL in this process, not a server): pgvector ${support.pgvector} HNSW m=16 ef_construction=64, default ef_search; storing the vectors took ${storeS.toFixed(1)} s`,
        answers: method,
        vectors: vectors.length,
        queries: samples.length,
        "recall@10": (recall / samples.length).toFixed(3),
        "p50 ms": percentile(samples, 50),
        "p95 ms": percentile(samples, 95),
      },
    ];
  } finally {
    await client.close();
  }
}
