/**
 * The store index on PostgreSQL beside SQLite, in the same run, on the same
 * synthesized notes (bench/corpus.ts): 6,000 notes, 10,169 chunks (BENCH_PG_STORE_NOTES
 * changes the note count):
 * - ingest: the documents API's domain path (putDocuments, one function for both engines),
 *   batches of 200 notes as an agent sends them;
 * - full-text: the one search entry point of each backend (searchStore /
 *   searchStorePg, mode=fts, group=chunk), two-word queries, p50/p95;
 * - ranking: idf × ts_rank (search-pg.ts) against FTS5 bm25 on the known-item
 *   set of bench/search-docs.bench.ts (300 queries, 500 node_modules markdown
 *   documents, each query's sentence cut from its document), MRR@10 / hit@10;
 * - vectors: PostgreSQL's exact cosine scan over real[] (no pgvector on the
 *   Debian server here) at growing sizes, which decided EXACT_SCAN_LIMIT
 *   (sizes above the limit are measured with the limit lifted).
 *
 * - pgvector (PGlite, labelled so): the HNSW path of lib/index/vectors-pg.ts
 *   against the exact real[] scan, in one PGlite database (two store schemas,
 *   the exact one with its HNSW index dropped), the same notes embedded by the
 *   builtin provider, at 1k/5k/10k vectors: recall@10 against exact cosine in
 *   JS, p50/p95, and the time to store the vectors (HNSW maintains its index).
 *   BENCH_PG_STORE_ONLY=pglite runs only this part.
 *
 * PostgreSQL is a real server: BENCH_PG_URL when set, else a throwaway
 * cluster started like the test suite's (tests/pg/harness.ts, Debian's
 * postgresql package, durability off — fsync=off, synchronous_commit=off —
 * so ingest figures are a lower bound for a durable server). It runs on the
 * same machine, over TCP on loopback.
 */
import path from "node:path";
import { sql } from "drizzle-orm";
import { closePgHandle, openPgHandle } from "../lib/db/pg";
import { migrateStoreSchema, useStoreSchema, withStoreTx, type SqlRunner } from "../lib/db/pg-store";
import { BuiltinProvider } from "../lib/embed/providers/builtin";
import { computeFingerprint } from "../lib/embed/providers";
import { putDocuments, putDocumentsSchema } from "../lib/index/ingest";
import { searchInputSchema, searchStore } from "../lib/index/search";
import { searchStorePg } from "../lib/index/search-pg";
import { EXACT_SCAN_LIMIT, hnswIndexName, listChunksWithoutEmbeddingPg, normalizeVector, pgvectorSupportPg, putChunkEmbeddingsPg, vectorNeighboursPg } from "../lib/index/vectors-pg";
import { createStore, openStore } from "../lib/stores/stores";
import { createStorePg, openStorePg } from "../lib/stores/engines/pg";
import { benchPostgres } from "./pg-server";
import { loadTextWindows, notesBetween } from "./corpus";
import { buildDocQuerySet, loadMarkdownCorpus } from "./doc-queries";
import { CHUNK_DEPTH, evaluateDocEngine, type DocEngine, type DocEvalRow } from "./search-eval";
import { withBenchDataDir } from "./index.bench";
import { percentile, printTable } from "./table";

const NOTES = Number(process.env.BENCH_PG_STORE_NOTES ?? 6_000);
const BATCH = 200;
const QUERIES = 200;
const VECTOR_QUERIES = 30;

function makeQueries(texts: string[]): string[] {
  const out: string[] = [];
  const step = Math.max(1, Math.floor(texts.length / QUERIES));
  for (let i = 0; i < texts.length && out.length < QUERIES; i += step) {
    const words = [...new Set(texts[i].toLowerCase().match(/[a-z]{6,}/g) ?? [])];
    if (words.length >= 2) out.push(`${words[Math.floor(words.length / 3)]} ${words[Math.floor((2 * words.length) / 3)]}`);
  }
  return out;
}

async function timeAll(queries: string[], run: (q: string) => Promise<number>): Promise<{ samples: number[]; hits: number }> {
  await run(queries[0]);
  const samples: number[] = [];
  let hits = 0;
  for (const q of queries) {
    const t = performance.now();
    hits += (await run(q)) > 0 ? 1 : 0;
    samples.push(performance.now() - t);
  }
  return { samples, hits };
}

const row = (backend: string, ingestMs: number, chunks: number, t: { samples: number[]; hits: number }, n: number) => ({
  backend,
  notes: NOTES,
  chunks,
  "ingest s": ingestMs / 1000,
  "chunks/s": Math.round(chunks / (ingestMs / 1000)),
  "fts p50 ms": percentile(t.samples, 50),
  "fts p95 ms": percentile(t.samples, 95),
  "queries with hits": `${t.hits}/${n}`,
});

export default async function pgStoreBench(): Promise<void> {
  if (process.env.BENCH_PG_STORE_ONLY !== "pglite") await serverBench();
  await pgliteVectorBench();
}

async function serverBench(): Promise<void> {
  const pgServer = await benchPostgres("bench_store");
  if (!pgServer) return;
  const { url, server } = pgServer;
  try {
    const windows = loadTextWindows(20_000);
    const notes = notesBetween({ windows, from: 0, to: NOTES });
    const queries = makeQueries(notes.map((n) => n.text));
    const batches = Array.from({ length: Math.ceil(notes.length / BATCH) }, (_, i) => putDocumentsSchema.parse({ documents: notes.slice(i * BATCH, (i + 1) * BATCH).map((n) => ({ path: n.path, content: n.text })) }));
    const input = (q: string) => searchInputSchema.parse({ q, mode: "fts", group: "chunk", limit: 10 });
    const rows = [];

    rows.push(
      await withBenchDataDir({ env: () => ({}) }, async () => {
        createStore({ input: { name: "bench" }, actor: "bench" });
        const handle = openStore({ store: "bench" });
        const t0 = performance.now();
        for (const b of batches) putDocuments({ handle, input: b, actor: "bench" });
        const ingestMs = performance.now() - t0;
        const chunks = (handle.sqlite.prepare("select count(*) as n from chunks").get() as { n: number }).n;
        const t = await timeAll(queries, async (q) => (await searchStore({ handle, core: null, input: input(q) })).results.length);
        return row("SQLite (FTS5 bm25)", ingestMs, chunks, t, queries.length);
      }),
    );

    const pg = await openPgHandle({ url, max: 4 });
    try {
      await rankingQuality(pg);
      await createStorePg({ pg, input: { name: "bench" }, actor: "bench" });
      const handle = await openStorePg({ pg, store: "bench" });
      const t0 = performance.now();
      for (const b of batches) await putDocuments({ handle, input: b, actor: "bench" });
      const ingestMs = performance.now() - t0;
      const chunks = await withStoreTx({ handle, work: async (tx) => ((await tx.execute(sql`select count(*)::int as n from chunks`)).rows[0] as { n: number }).n });
      const t = await timeAll(queries, async (q) => (await searchStorePg({ handle, core: null, input: input(q) })).results.length);
      rows.push(row("PostgreSQL 15 (tsvector GIN, idf × ts_rank)", ingestMs, chunks, t, queries.length));
      printTable(`Store index: ingest and full-text, SQLite vs PostgreSQL, same notes, same run`, rows);

      // Vectors: embed every chunk with the builtin provider, then time exact scans of growing sets (via the limit filter on ids).
      const provider = new BuiltinProvider();
      const fp = await computeFingerprint(provider);
      const tEmbed = performance.now();
      for (;;) {
        const todo = await withStoreTx({ handle, work: (tx) => listChunksWithoutEmbeddingPg({ tx, fingerprintId: fp.id, limit: 500 }) });
        if (todo.length === 0) break;
        const vectors = await provider.embed(todo.map((c) => c.text), "document");
        await withStoreTx({ handle, work: (tx) => putChunkEmbeddingsPg({ tx, fingerprintId: fp.id, items: todo.map((c, i) => ({ chunkRowId: c.id, inputHash: c.chunkSha256, vector: vectors[i] })) }) });
      }
      const embedMs = performance.now() - tEmbed;
      const qvecs = await provider.embed(queries.slice(0, VECTOR_QUERIES), "query");
      const vrows = [];
      for (const size of [1_000, 5_000, chunks]) {
        if (size > chunks) continue;
        const samples: number[] = [];
        for (const q of qvecs) {
          const t = performance.now();
          const r = await withStoreTx({ handle, readOnly: true, work: (tx) => vectorNeighboursPg({ tx, fingerprintId: fp.id, query: q, k: 60, where: [sql`c.id <= ${size}`], limit: Math.max(size, EXACT_SCAN_LIMIT) }) });
          samples.push(performance.now() - t);
          if (!r.ok) throw new Error(r.message);
        }
        vrows.push({ vectors: size, dimension: fp.dimension, "exact scan p50 ms": percentile(samples, 50), "exact scan p95 ms": percentile(samples, 95) });
      }
      printTable(`PostgreSQL exact cosine scan over real[] (k=60; EXACT_SCAN_LIMIT=${EXACT_SCAN_LIMIT}; embedding + storing ${chunks} vectors took ${(embedMs / 1000).toFixed(1)} s)`, vrows);
    } finally {
      await closePgHandle(pg);
    }
  } finally {
    server?.stop();
  }
}

/** PostgreSQL ranking vs bm25 on the same known-item set, through each backend's search entry point. */
async function rankingQuality(pg: Awaited<ReturnType<typeof openPgHandle>>): Promise<void> {
  const original = loadMarkdownCorpus({ root: path.resolve("node_modules"), limit: 500 });
  const set = buildDocQuerySet({ docs: original, count: 300 });
  const docs = set.docs.map((d) => ({ path: `corpus/${d.path}`, content: d.text }));
  const queries = set.queries.map((q) => ({ q: q.q, target: `corpus/${q.target}` }));
  const batches = Array.from({ length: Math.ceil(docs.length / 100) }, (_, i) => putDocumentsSchema.parse({ documents: docs.slice(i * 100, (i + 1) * 100) }));
  const modes: [string, Record<string, unknown>][] = [
    ["fts, all words, chunks", { mode: "fts", group: "chunk" }],
    ["fts, any word, chunks", { mode: "fts", match: "any", group: "chunk" }],
    ["fts, any word, group=document", { mode: "fts", match: "any", group: "document" }],
  ];
  const rows: DocEvalRow[] = [];
  await withBenchDataDir({ env: () => ({}) }, async () => {
    createStore({ input: { name: "quality" }, actor: "bench" });
    const handle = openStore({ store: "quality" });
    for (const b of batches) putDocuments({ handle, input: b, actor: "bench" });
    for (const [label, params] of modes) {
      const engine: DocEngine = { label: `SQLite bm25: ${label}`, search: async (q) => (await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, limit: CHUNK_DEPTH, ...params }) })).results.map((h) => h.path) };
      rows.push(await evaluateDocEngine(engine, queries));
    }
  });
  await createStorePg({ pg, input: { name: "quality" }, actor: "bench" });
  const handle = await openStorePg({ pg, store: "quality" });
  for (const b of batches) await putDocuments({ handle, input: b, actor: "bench" });
  for (const [label, params] of modes) {
    const engine: DocEngine = { label: `PostgreSQL idf × ts_rank: ${label}`, search: async (q) => (await searchStorePg({ handle, core: null, input: searchInputSchema.parse({ q, limit: CHUNK_DEPTH, ...params }) })).results.map((h) => h.path) };
    rows.push(await evaluateDocEngine(engine, queries));
  }
  printTable(
    `Ranking: PostgreSQL (idf × ts_rank, lib/index/search-pg.ts) vs SQLite FTS5 bm25, document-level known-item set (${queries.length} queries, ${docs.length} node_modules markdown documents)`,
    rows.map((r) => ({ engine: r.label, "MRR@10": r.mrr.toFixed(3), "hit@1": r.hit1.toFixed(3), "hit@10": r.hit10.toFixed(3), "p50 ms": percentile(r.latencies, 50) })),
  );
}

const PGLITE_SIZES = [1_000, 5_000, 10_000];
const PGLITE_QUERIES = 20;

/** A PGlite database with pgvector created and these store schemas migrated; inStore runs work in one transaction on a schema. */
export async function openPgliteStores(schemas: string[]) {
  const { PGlite } = await import("@electric-sql/pglite");
  const { vector } = await import("@electric-sql/pglite-pgvector");
  const { drizzle } = await import("drizzle-orm/pglite");
  const client = await PGlite.create({ extensions: { vector } });
  const db = drizzle(client);
  const inStore = <T>(schema: string, work: (tx: SqlRunner) => PromiseLike<T>) =>
    db.transaction(async (tx) => {
      await useStoreSchema({ tx, schema });
      return await work(tx);
    });
  try {
    await db.execute(sql`create extension vector`);
    for (const schema of schemas) {
      await db.execute(sql`create schema ${sql.identifier(schema)}`);
      await inStore(schema, (tx) => migrateStoreSchema({ tx, schema }));
    }
  } catch (e) {
    await client.close();
    throw e;
  }
  return { client, inStore };
}

/** One empty document and chunk per id (row id = doc id = chunk id), for vectors to hang on. */
export async function insertPlaceholderChunks(tx: SqlRunner, ids: number[]): Promise<void> {
  await tx.execute(sql`insert into documents (doc_id, path, origin, kind, sha256, bytes, mtime, indexed_at) values ${sql.join(ids.map((id) => sql`(${id}, ${`notes/${id}.md`}, 'api', 'markdown', ${`s${id}`}, 1, 0, 0)`), sql`, `)}`);
  await tx.execute(sql`insert into chunks (id, chunk_id, doc_id, chunk_index, chunk_sha256, chunking_version, start_byte, end_byte, text) values ${sql.join(ids.map((id) => sql`(${id}, ${`c${id}`}, ${id}, 0, ${`h${id}`}, 1, 0, 1, '')`), sql`, `)}`);
}

/** pgvector HNSW vs the exact real[] scan, both on PGlite (WebAssembly, in this process), same vectors, same queries. */
async function pgliteVectorBench(): Promise<void> {
  const { client, inStore } = await openPgliteStores(["store_hnsw", "store_exact"]);
  try {
    const max = PGLITE_SIZES.at(-1)!;
    const windows = loadTextWindows(20_000);
    const notes = notesBetween({ windows, from: 0, to: max });
    const provider = new BuiltinProvider();
    const fp = await computeFingerprint(provider);
    const vectors: number[][] = [];
    for (let at = 0; at < notes.length; at += 500) vectors.push(...(await provider.embed(notes.slice(at, at + 500).map((n) => n.text), "document")).map((v) => normalizeVector(v)));
    const qvecs = (await provider.embed(makeQueries(notes.map((n) => n.text)).slice(0, PGLITE_QUERIES), "query")).map((v) => normalizeVector(v));
    const support = await inStore("store_hnsw", (tx) => pgvectorSupportPg({ db: tx }));
    const exactTop = (q: number[], size: number) =>
      vectors
        .slice(0, size)
        .map((v, i) => ({ id: i + 1, s: v.reduce((acc, x, j) => acc + x * q[j], 0) }))
        .sort((a, b) => b.s - a.s || a.id - b.id)
        .slice(0, 10)
        .map((h) => h.id);
    const out = [];
    let loaded = 0;
    for (const size of PGLITE_SIZES) {
      const storeMs: Record<string, number> = {};
      for (const schema of ["store_hnsw", "store_exact"]) {
        const t0 = performance.now();
        await inStore(schema, async (tx) => {
          for (let at = loaded; at < size; at += 500) {
            const ids = Array.from({ length: Math.min(500, size - at) }, (_, i) => at + i + 1);
            await insertPlaceholderChunks(tx, ids);
            await putChunkEmbeddingsPg({ tx, fingerprintId: fp.id, items: ids.map((id) => ({ chunkRowId: id, inputHash: `h${id}`, vector: vectors[id - 1] })) });
            if (schema === "store_exact") await tx.execute(sql`drop index if exists ${sql.identifier(hnswIndexName({ dimension: fp.dimension }))}`);
          }
          await tx.execute(sql`analyze`);
        });
        storeMs[schema] = performance.now() - t0;
      }
      loaded = size;
      const engines: [string, string, number | undefined][] = [
        ["store_hnsw", `pgvector ${support.pgvector} HNSW (m=16, ef_construction=64), ef_search=100, iterative scan`, 100],
        ["store_hnsw", `pgvector ${support.pgvector} HNSW, ef_search=200`, 200],
        ["store_hnsw", `pgvector ${support.pgvector} HNSW, ef_search=400 (the default for k ≤ 100)`, undefined],
        ["store_exact", "exact scan over real[] (no pgvector index)", undefined],
      ];
      for (const [schema, label, efSearch] of engines) {
        const samples: number[] = [];
        let recall = 0;
        let method = "";
        for (const q of [qvecs[0], ...qvecs]) {
          const t = performance.now();
          const r = await inStore(schema, (tx) => vectorNeighboursPg({ tx, fingerprintId: fp.id, query: q, k: 10, where: [], limit: size, efSearch }));
          samples.push(performance.now() - t);
          if (!r.ok) throw new Error(r.message);
          method = r.method;
          const want = exactTop(q, size);
          recall += want.filter((id) => r.hits.some((h) => h.id === id)).length / want.length;
        }
        samples.shift(); // the first query warms up
        out.push({ engine: `PGlite: ${label}`, method, vectors: size, dimension: fp.dimension, "recall@10": (recall / (qvecs.length + 1)).toFixed(3), "p50 ms": percentile(samples, 50), "p95 ms": percentile(samples, 95), "store s (this step)": storeMs[schema] / 1000 });
      }
    }
    printTable(`PGlite (WebAssembly PostgreSQL ${(await client.query<{ v: string }>("select current_setting('server_version') as v")).rows[0].v}, in-process; not a server): pgvector HNSW vs the exact real[] scan, k=10, ${qvecs.length} queries, builtin embeddings`, out);
  } finally {
    await client.close();
  }
}
