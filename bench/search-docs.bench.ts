/**
 * Document-level known-item retrieval (issue 16, item 3): the baseline for
 * retrieval work. Each query is a sentence cut out of its document before
 * indexing, minus a seeded third of its words (bench/doc-queries.ts); the
 * answer is that document. Side by side in one run, on the same documents
 * and queries:
 * - dualmind per mode, through the real ingest path, embed worker (builtin
 *   embedder) and search; its chunk hits map to documents in
 *   first-appearance order;
 * - raw SQLite FTS5 bm25 over whole documents (porter and unicode61), the
 *   query's words quoted and OR-ed;
 * - MiniSearch over whole documents (defaults, and fuzzy + prefix);
 * - a few diagnostic rows that change one thing at a time (chunks vs whole
 *   documents, stemming, stopwords) to show where the gap comes from.
 * Deterministic: the corpus, queries, index and rankings are the same on a rerun.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import MiniSearch from "minisearch";
import { searchInputSchema, searchStore, type SearchTuning } from "../lib/index/search";
import { openStore } from "../lib/stores/stores";
import { buildDocQuerySet, loadMarkdownCorpus, STOPWORDS, wordsOf, type CorpusDoc, type DocQuery } from "./doc-queries";
import { prepareCorpus } from "./search-eval";
import { percentile, printTable } from "./table";

const CORPUS_DOCS = 500;
const QUERIES = 300;
const K = 10;
/** Chunk hits asked of chunk-level engines: enough that ten distinct documents are almost always among them. */
const CHUNK_DEPTH = 50;
const STORE = "docs";
/** Source root folder name: its files are indexed as `source/corpus/<path>`. */
const ROOT_NAME = "corpus";

/**
 * The one place this bench calls dualmind's search (lib/index is being
 * reshaped: after that merge, only this function changes). Returns the
 * document path of each chunk hit, best first, and the mode that answered.
 */
async function searchDualmindChunks({ store, q, params, tuning }: { store: string; q: string; params: Record<string, unknown>; tuning?: SearchTuning }): Promise<{ paths: string[]; mode: string; effectiveMode: string }> {
  // Document-grouped answers list each document once: the first K are the ranking.
  const limit = params.group === "document" ? K : CHUNK_DEPTH;
  const res = await searchStore({ handle: openStore({ store }), core: null, input: searchInputSchema.parse({ q, limit, ...params }), tuning });
  return { paths: res.results.map((h) => h.path), mode: res.mode, effectiveMode: res.effectiveMode };
}

type Engine = { label: string; search: (q: string) => Promise<string[]> | string[] };
type Row = { label: string; mrr: number; hit1: number; hit10: number; latencies: number[] };

/** 1-based rank of `target` among the first K distinct documents of `paths` (first appearance wins), or 0. */
function documentRank(paths: string[], target: string): number {
  const seen: string[] = [];
  for (const p of paths) {
    if (seen.includes(p)) continue;
    seen.push(p);
    if (p === target) return seen.length;
    if (seen.length === K) break;
  }
  return 0;
}

async function evaluate(engine: Engine, queries: DocQuery[]): Promise<Row> {
  let rr = 0;
  let hit1 = 0;
  let hit10 = 0;
  const latencies: number[] = [];
  for (const query of queries) {
    const started = performance.now();
    const paths = await engine.search(query.q);
    latencies.push(performance.now() - started);
    const rank = documentRank(paths, query.target);
    if (rank > 0) {
      rr += 1 / rank;
      hit10++;
      if (rank === 1) hit1++;
    }
  }
  const n = queries.length;
  return { label: engine.label, mrr: rr / n, hit1: hit1 / n, hit10: hit10 / n, latencies };
}

/** The query's words, lowercased, deduplicated, each a quoted FTS5 string, OR-ed: never raw text into MATCH. */
function orMatch(q: string, dropStopwords = false): string | null {
  const words = [...new Set(wordsOf(q).map((w) => w.toLowerCase()))].filter((w) => !dropStopwords || !STOPWORDS.has(w));
  return words.length ? words.map((w) => `"${w.replaceAll('"', '""')}"`).join(" OR ") : null;
}

const withoutStopwords = (q: string) => wordsOf(q).filter((w) => !STOPWORDS.has(w.toLowerCase())).join(" ");

/** An in-memory FTS5 table over `rows` (one per document or per chunk) searched by bm25 with OR-ed quoted words. */
function rawFts5({ rows, tokenize, take, dropStopwords = false }: { rows: { path: string; text: string }[]; tokenize: string; take: number; dropStopwords?: boolean }): { search: (q: string) => string[]; close: () => void } {
  const db = new Database(":memory:");
  // `tokenize` is one of this file's literals, never input.
  db.exec(`create virtual table t using fts5(text, tokenize='${tokenize}')`);
  const insert = db.prepare("insert into t(rowid, text) values (?, ?)");
  db.transaction(() => rows.forEach((r, i) => insert.run(i + 1, r.text)))();
  const query = db.prepare("select rowid as id from t where t match ? order by bm25(t), rowid limit ?");
  return {
    search: (q) => {
      const match = orMatch(q, dropStopwords);
      return match === null ? [] : (query.all(match, take) as { id: number }[]).map((r) => rows[r.id - 1].path);
    },
    close: () => db.close(),
  };
}

function miniSearchOver(docs: CorpusDoc[], options: { fuzzy?: number; prefix?: boolean }): (q: string) => string[] {
  const index = new MiniSearch<{ id: number; text: string }>({ fields: ["text"] });
  index.addAll(docs.map((d, id) => ({ id, text: d.text })));
  return (q) => index.search(q, options).slice(0, K).map((r) => docs[r.id as number].path);
}

/** Write the (sentence-cut) documents as files under a source root, so they go through the real reindex/ingest path. */
function writeCorpus(docs: CorpusDoc[]): string {
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-search-docs-")), ROOT_NAME);
  for (const d of docs) {
    const file = path.join(dir, ...d.path.split("/"));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, d.text);
  }
  return dir;
}

/** The query set must never leak its answer into the index, and must be the same on every run. */
function checkQuerySet(original: CorpusDoc[], built: ReturnType<typeof buildDocQuerySet>): void {
  const again = buildDocQuerySet({ docs: original, count: QUERIES });
  if (JSON.stringify(again) !== JSON.stringify(built)) throw new Error("the document query set is not deterministic");
  const indexed = new Map(built.docs.map((d) => [d.path, d.text]));
  const source = new Map(original.map((d) => [d.path, d.text]));
  for (const q of built.queries) {
    if (!source.get(q.target)?.includes(q.sentence)) throw new Error(`query sentence not found in ${q.target}`);
    if (built.docs.some((d) => d.text.includes(q.sentence))) throw new Error(`removed sentence still indexed (${q.target})`);
    if (indexed.get(q.target) === source.get(q.target)) throw new Error(`${q.target} was not cut`);
  }
}

export default async function run() {
  const original = loadMarkdownCorpus({ root: path.resolve("node_modules"), limit: CORPUS_DOCS });
  const set = buildDocQuerySet({ docs: original, count: QUERIES });
  checkQuerySet(original, set);
  // Engines outside dualmind see the same documents under the same names as its index does.
  const docs = set.docs.map((d) => ({ path: `source/${ROOT_NAME}/${d.path}`, text: d.text }));
  const queries = set.queries.map((q) => ({ ...q, target: `source/${ROOT_NAME}/${q.target}` }));

  const root = writeCorpus(set.docs);
  const closers: (() => void)[] = [() => fs.rmSync(path.dirname(root), { recursive: true, force: true })];
  try {
    const corpus = await prepareCorpus({ root, include: "**/*.md", store: STORE });
    closers.push(corpus.cleanup);
    const indexedDocs = new Set(corpus.chunks.map((c) => c.path));
    if (indexedDocs.size !== docs.length) throw new Error(`indexed ${indexedDocs.size} of ${docs.length} documents`);

    const dualmind = (label: string, params: Record<string, unknown>, rewrite: (q: string) => string = (q) => q, tuning?: SearchTuning): Engine => ({
      label,
      search: async (q) => {
        const r = await searchDualmindChunks({ store: STORE, q: rewrite(q), params, tuning });
        // A fallback would measure another mode under this row's name.
        if (r.effectiveMode !== r.mode) throw new Error(`${label}: answered by ${r.effectiveMode}, not ${r.mode}`);
        return r.paths;
      },
    });
    const raw = (label: string, rows: { path: string; text: string }[], tokenize: string, take: number, dropStopwords = false): Engine => {
      const fts = rawFts5({ rows, tokenize, take, dropStopwords });
      closers.push(fts.close);
      return { label, search: fts.search };
    };
    const defaultMode = (await searchDualmindChunks({ store: STORE, q: "probe", params: {} })).mode;
    const defaultGroup = searchInputSchema.parse({ q: "probe" }).group;
    // Document grouping and query building, one change at a time (issue 16 part 2: defaults by measurement).
    const grouping = (tokenizer: string): Engine[] => [
      dualmind(`[${tokenizer}] fts any, chunks, stopwords kept`, { mode: "fts", match: "any", group: "chunk" }, undefined, { stopwords: "keep" }),
      dualmind(`[${tokenizer}] fts any, chunks, stopwords dropped`, { mode: "fts", match: "any", group: "chunk" }),
      ...[0.2, 0.3, 0.4].map((damping) =>
        dualmind(`[${tokenizer}] fts any, group=document, best + damped sum ${damping}`, { mode: "fts", match: "any", group: "document" }, undefined, { document: { combine: "damped_sum", damping, fieldBoost: 0 } }),
      ),
      dualmind(`[${tokenizer}] fts any, group=document, damped 0.3 + path/title ×0.2`, { mode: "fts", match: "any", group: "document" }, undefined, { document: { combine: "damped_sum", damping: 0.3, fieldBoost: 0.2 } }),
      dualmind(`[${tokenizer}] vector, group=document`, { mode: "vector", group: "document" }),
      dualmind(`[${tokenizer}] hybrid, group=chunk`, { mode: "hybrid", group: "chunk" }),
      dualmind(`[${tokenizer}] hybrid, group=document`, { mode: "hybrid", group: "document" }),
      dualmind(`[${tokenizer}] default (${defaultMode}, group=${defaultGroup})`, {}),
    ];

    const main: Engine[] = [
      dualmind("dualmind fts (all words), chunks", { mode: "fts", group: "chunk" }),
      dualmind("dualmind fts (any word), chunks", { mode: "fts", match: "any", group: "chunk" }),
      dualmind("dualmind vector, chunks", { mode: "vector", group: "chunk" }),
      dualmind("dualmind hybrid, equal weights (w_vec=1), chunks", { mode: "hybrid", w_vec: 1, group: "chunk" }),
      dualmind(`dualmind default (${defaultMode})`, {}),
      raw("raw FTS5 bm25, whole docs, porter", docs, "porter unicode61 remove_diacritics 2", K),
      raw("raw FTS5 bm25, whole docs, unicode61", docs, "unicode61 remove_diacritics 2", K),
      { label: "MiniSearch, whole docs (defaults)", search: miniSearchOver(docs, {}) },
      { label: "MiniSearch, whole docs (fuzzy 0.2 + prefix)", search: miniSearchOver(docs, { fuzzy: 0.2, prefix: true }) },
    ];
    // One change at a time between dualmind's any-word bm25 over chunks and raw bm25 over documents.
    const diagnostic: Engine[] = [
      raw("diag: raw FTS5 unicode61 over dualmind's chunks (best chunk → doc)", corpus.chunks, "unicode61 remove_diacritics 2", CHUNK_DEPTH),
      raw("diag: raw FTS5 porter over dualmind's chunks (best chunk → doc)", corpus.chunks, "porter unicode61 remove_diacritics 2", CHUNK_DEPTH),
      raw("diag: raw FTS5 porter over dualmind's chunks, stopwords dropped", corpus.chunks, "porter unicode61 remove_diacritics 2", CHUNK_DEPTH, true),
      raw("diag: raw FTS5 porter, whole docs, stopwords dropped", docs, "porter unicode61 remove_diacritics 2", K, true),
      dualmind("diag: dualmind hybrid chunks, bench's stopword list dropped from the query", { group: "chunk" }, withoutStopwords),
    ];

    const rows: Row[] = [];
    for (const engine of [...main, ...diagnostic, ...grouping("unicode61")]) rows.push(await evaluate(engine, queries));
    // Prototype only (the real change is index migration 0009): the same store's chunk FTS rebuilt with porter stemming.
    const store = openStore({ store: STORE });
    store.sqlite.exec(`drop table chunks_fts;
      create virtual table chunks_fts using fts5(text, content='chunks', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2');
      insert into chunks_fts(chunks_fts) values ('rebuild');`);
    for (const engine of grouping("porter")) rows.push(await evaluate(engine, queries));
    const bestRawFts5 = Math.max(...rows.filter((r) => r.label.startsWith("raw FTS5")).map((r) => r.mrr));
    printTable(
      `Document-level known-item retrieval: ${queries.length} queries over ${docs.length} node_modules markdown documents (${corpus.chunks.length} chunks), builtin embedder`,
      rows.map((r) => ({
        engine: r.label,
        "MRR@10": r.mrr.toFixed(3),
        "× best raw FTS5": (r.mrr / bestRawFts5).toFixed(2),
        "hit@1": r.hit1.toFixed(3),
        "hit@10": r.hit10.toFixed(3),
        "p50 ms": percentile(r.latencies, 50),
        "p95 ms": percentile(r.latencies, 95),
      })),
    );
    const avgWords = queries.reduce((n, q) => n + wordsOf(q.q).length, 0) / queries.length;
    process.stdout.write(
      [
        `How the set is built: ${docs.length} markdown files from node_modules (1–64 KB, changelogs/licences and similar boilerplate skipped, deduplicated by content hash, the first ${CORPUS_DOCS} in content-hash order).`,
        `For ${queries.length} of them one prose sentence (≥ 8 content words, ≤ 40 words, not a heading, table, HTML or code line, found in no other document) is cut from the text before indexing;`,
        `the query is that sentence minus a seeded third of its words (${avgWords.toFixed(1)} words on average), and the answer is its document.`,
        `Chunk-level engines return ${CHUNK_DEPTH} chunks, mapped to documents in first-appearance order; whole-document engines return ${K} documents. MRR@10 and hit@k are of the target document.`,
        `Raw FTS5 and MiniSearch are in memory; dualmind reads its on-disk index. "diag" rows each change one thing, to locate the gap.`,
        "",
      ].join("\n") + "\n",
    );
  } finally {
    for (const close of closers.reverse()) close();
  }
}
