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
import path from "node:path";
import { searchInputSchema, type SearchTuning } from "../lib/index/search";
import { buildDocQuerySet, loadMarkdownCorpus, STOPWORDS, wordsOf, type CorpusDoc } from "./doc-queries";
import {
  CHUNK_DEPTH,
  DOC_K,
  dualmindEngine,
  evaluateDocEngine,
  miniSearchDocEngine,
  prepareCorpus,
  rawFts5DocEngine,
  writeCorpusFiles,
  type DocEngine,
  type DocEvalRow,
} from "./search-eval";
import { percentile, printTable } from "./table";

const CORPUS_DOCS = 500;
const QUERIES = 300;
const STORE = "docs";
/** Source root folder name: its files are indexed as `source/corpus/<path>`. */
const ROOT_NAME = "corpus";

const withoutStopwords = (q: string) => wordsOf(q).filter((w) => !STOPWORDS.has(w.toLowerCase())).join(" ");

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

  const files = writeCorpusFiles({ docs: set.docs, rootName: ROOT_NAME });
  const closers: (() => void)[] = [files.remove];
  try {
    const corpus = await prepareCorpus({ root: files.root, include: "**/*.md", store: STORE });
    closers.push(corpus.cleanup);
    const indexedDocs = new Set(corpus.chunks.map((c) => c.path));
    if (indexedDocs.size !== docs.length) throw new Error(`indexed ${indexedDocs.size} of ${docs.length} documents`);

    const dualmind = (label: string, params: Record<string, unknown>, rewrite?: (q: string) => string, tuning?: SearchTuning): DocEngine => dualmindEngine({ store: STORE, label, params, rewrite, tuning });
    const raw = (label: string, rows: { path: string; text: string }[], tokenize: "porter" | "unicode61", take: number, dropStopwords = false): DocEngine => {
      const fts = rawFts5DocEngine({ label, docs: rows, tokenize, take, drop: dropStopwords ? STOPWORDS : undefined });
      closers.push(fts.close);
      return fts;
    };
    const probe = searchInputSchema.parse({ q: "probe" });
    const defaultMode = probe.mode;
    const defaultGroup = probe.group;
    // Document grouping and query building, one change at a time (issue 16 part 2: defaults by measurement).
    const grouping: DocEngine[] = [
      dualmind("fts any, chunks, stopwords kept", { mode: "fts", match: "any", group: "chunk" }, undefined, { stopwords: "keep" }),
      dualmind("fts any, chunks, stopwords dropped", { mode: "fts", match: "any", group: "chunk" }),
      dualmind("fts any, group=document, best chunk only", { mode: "fts", match: "any", group: "document" }, undefined, { document: { combine: "max" } }),
      ...[0.1, 0.2, 0.3].map((damping) =>
        dualmind(`fts any, group=document, best + damped sum ${damping}`, { mode: "fts", match: "any", group: "document" }, undefined, { document: { combine: "damped_sum", damping, fieldBoost: 0 } }),
      ),
      dualmind("fts any, group=document, path/title ×0.2", { mode: "fts", match: "any", group: "document" }, undefined, { document: { fieldBoost: 0.2 } }),
      dualmind("vector, group=document", { mode: "vector", group: "document" }),
      dualmind("hybrid, group=chunk", { mode: "hybrid", group: "chunk" }),
      dualmind("hybrid, group=document", { mode: "hybrid", group: "document" }),
    ];

    const main: DocEngine[] = [
      dualmind("dualmind fts (all words), chunks", { mode: "fts", group: "chunk" }),
      dualmind("dualmind fts (any word), chunks", { mode: "fts", match: "any", group: "chunk" }),
      dualmind("dualmind vector, chunks", { mode: "vector", group: "chunk" }),
      dualmind("dualmind hybrid, equal weights (w_vec=1), chunks", { mode: "hybrid", w_vec: 1, group: "chunk" }),
      dualmind(`dualmind default (${defaultMode}, group=${defaultGroup})`, {}),
      raw("raw FTS5 bm25, whole docs, porter", docs, "porter", DOC_K),
      raw("raw FTS5 bm25, whole docs, unicode61", docs, "unicode61", DOC_K),
      miniSearchDocEngine({ label: "MiniSearch, whole docs (defaults)", docs }),
      miniSearchDocEngine({ label: "MiniSearch, whole docs (fuzzy 0.2 + prefix)", docs, options: { fuzzy: 0.2, prefix: true } }),
    ];
    // One change at a time between dualmind's any-word bm25 over chunks and raw bm25 over documents.
    const diagnostic: DocEngine[] = [
      raw("diag: raw FTS5 unicode61 over dualmind's chunks (best chunk → doc)", corpus.chunks, "unicode61", CHUNK_DEPTH),
      raw("diag: raw FTS5 porter over dualmind's chunks (best chunk → doc)", corpus.chunks, "porter", CHUNK_DEPTH),
      raw("diag: raw FTS5 porter over dualmind's chunks, stopwords dropped", corpus.chunks, "porter", CHUNK_DEPTH, true),
      raw("diag: raw FTS5 porter, whole docs, stopwords dropped", docs, "porter", DOC_K, true),
      dualmind("diag: dualmind hybrid chunks, bench's stopword list dropped from the query", { group: "chunk" }, withoutStopwords),
    ];

    const rows: DocEvalRow[] = [];
    for (const engine of [...main, ...diagnostic, ...grouping]) rows.push(await evaluateDocEngine(engine, queries));
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
        `Chunk-level engines return ${CHUNK_DEPTH} chunks, mapped to documents in first-appearance order; whole-document engines return ${DOC_K} documents. MRR@10 and hit@k are of the target document.`,
        `Raw FTS5 and MiniSearch are in memory; dualmind reads its on-disk index. "diag" rows each change one thing, to locate the gap.`,
        "",
      ].join("\n") + "\n",
    );
  } finally {
    for (const close of closers.reverse()) close();
  }
}
