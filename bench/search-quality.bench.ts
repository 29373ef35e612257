/**
 * Search quality by mode, measured as a user would see it, and what each mode
 * costs as the store grows: the measurement behind DEFAULT_SEARCH_MODE and
 * FUSION_WEIGHTS. Three parts, one run:
 * 1. chunk-level known items (exact / typo / loose queries over node_modules
 *    markdown chunks): the original set, kept as it was;
 * 2. document-level known items (bench/known-items.ts: a sentence cut from
 *    its document before indexing, two thirds of its words as the query), each
 *    search mode against raw SQLite FTS5 bm25 over whole documents (porter and
 *    unicode61) and MiniSearch, on the same documents and queries — on three
 *    pinned samples (seeds; their paths and hashes in
 *    bench/known-items-manifest.tsv), reported per seed and as the mean;
 * 3. p50/p95 latency per mode at 10k and 100k chunks (BENCH_QUALITY_SIZES to
 *    change: a comma list of chunk counts).
 * BENCH_QUALITY_PARTS=chunk,document,latency runs only the parts named.
 */
import fs from "node:fs";
import path from "node:path";
import { getStoreDb } from "../lib/db/connection";
import { drainEmbedQueues } from "../lib/embed/worker";
import { ingestDocument } from "../lib/index/ingest";
import { DEFAULT_SEARCH_MODE, searchInputSchema, searchStore, type SearchTuning } from "../lib/index/search";
import { FUSION_WEIGHTS } from "../lib/retrieval";
import { openStore } from "../lib/stores/stores";
import { CHUNK_KIND } from "../lib/index/chunk-embeddings";
import { buildAnnIndexes } from "./ann-warm";
import { loadTextWindows } from "./corpus";
import { growthRows, recordSamples, type SizedSamples } from "./growth";
import { buildKnownItemSet, drawPinnedSamples, formatManifest, KNOWN_ITEM_SEEDS, loadPinnedSample, parseManifest, type KnownItemSet, type PinnedDoc } from "./known-items";
import type { CorpusDoc } from "./doc-queries";
import {
  buildLabelledSet,
  dualmindEngine,
  evaluateDocEngine,
  evaluateMode,
  miniSearchDocEngine,
  prepareCorpus,
  rawFts5DocEngine,
  scratchStore,
  searchAccepts,
  writeCorpusFiles,
  type DocEngine,
  type DocEvalRow,
  type LabelledQuery,
} from "./search-eval";
import { percentile, printTable } from "./table";

/** Document ranking as it was before the whole-document index: best chunk, no field evidence. */
const CHUNKS_ALONE: SearchTuning = { document: { wholeDocument: 0, fieldBoost: 0, shortQuery: { wholeDocument: 0, fieldBoost: 0 } } };

/** The whole-document leg as it read documents_fts before bm25OfRows: the index's best documents, exhaustively below the broad-query threshold. */
const WHOLE_DOCUMENT_AS_BEFORE = "whole-document leg as before (index's top 500 documents ranked by FTS5)";

/** The default with one ranking choice undone (lib/index/search.ts EXACT_FORM_BOOST, DOCUMENT_SCORING), to show what each adds. */
function ablations(): [string, SearchTuning][] {
  return [
    ["as before (documents by their chunks alone, no field evidence)", CHUNKS_ALONE],
    ["one weighting for every query length (whole-document 1, field 1)", { document: { minTerms: 0 } }],
    ["without the exact-form factor", { exactFormBoost: 0 }],
    ["without the proximity factor", { proximity: { weight: 0, window: 5 } }],
    [WHOLE_DOCUMENT_AS_BEFORE, { wholeDocumentLeg: "index_top" }],
  ];
}

/** Search modes as a caller picks them; `group=document` rows appear once the search input accepts the option. */
function modeConfigs(): [string, Record<string, unknown>][] {
  const defaultMode = searchInputSchema.parse({ q: "probe" }).mode;
  const modes: [string, Record<string, unknown>][] = [
    ["fts (all words)", { mode: "fts" }],
    ["fts (any word)", { mode: "fts", match: "any" }],
    ["vector", { mode: "vector" }],
    ["hybrid (provider weights)", { mode: "hybrid" }],
    [`default (${defaultMode})`, {}],
  ];
  const grouped = modes.filter(([, p]) => p.mode !== "vector").map(([label, p]): [string, Record<string, unknown>] => [`${label}, group=document`, { ...p, group: "document" }]);
  return [...modes, ...grouped.filter(([, p]) => searchAccepts(p))];
}

async function chunkLevelSet(): Promise<void> {
  const store = "quality";
  const corpus = await prepareCorpus({ root: path.resolve("node_modules"), include: "**/*.md", store });
  try {
    const queries = buildLabelledSet(corpus.chunks, 300);
    const configs: [string, Record<string, unknown>, SearchTuning?][] = [
      ["fts (all words)", { mode: "fts" }],
      ["fts (any word)", { mode: "fts", match: "any" }],
      ["vector", { mode: "vector" }],
      ["hybrid all-words w_vec=0.5", { mode: "hybrid", match: "all", w_vec: 0.5 }],
      ...[0.02, 0.05, 0.1, 0.2, 0.5, 1].map((w) => [`hybrid any-word w_vec=${w}`, { mode: "hybrid", match: "any", w_vec: w }] as [string, Record<string, unknown>]),
      [`default (${DEFAULT_SEARCH_MODE}, builtin w_vec=${FUSION_WEIGHTS.builtin.vec})`, {}],
      ...ablations().map(([label, tuning]): [string, Record<string, unknown>, SearchTuning] => [`default, ${label}`, {}, tuning]),
    ];
    const rows = [];
    for (const [label, params, tuning] of configs) {
      const r = await evaluateMode(store, queries, label, params, tuning);
      rows.push({ config: r.label, "MRR@10": r.mrr.toFixed(3), "hit@10": r.hit10.toFixed(3), "MRR exact": r.byType.exact.toFixed(3), "MRR typo": r.byType.typo.toFixed(3), "MRR loose": r.byType.loose.toFixed(3), "p50 ms": percentile(r.latencies, 50), "p95 ms": percentile(r.latencies, 95) });
    }
    printTable(`Known-item search quality: ${queries.length} queries (exact / typo / loose thirds) over ${corpus.chunks.length} chunks of node_modules markdown, builtin embedder`, rows);
  } finally {
    corpus.cleanup();
  }
}

const DOC_CORPUS = 500;
const DOC_QUERIES = 300;
/** Source root folder name: its files are indexed as `source/<ROOT_NAME>/<path>`. */
const ROOT_NAME = "corpus";
/** The checked-in list of the documents each seed's sample uses (paths and hashes, no text). */
const MANIFEST = path.join(__dirname, "known-items-manifest.tsv");

/** The set must never leak its answer into the index, and must be the same on every run. */
function checkKnownItemSet(original: CorpusDoc[], set: KnownItemSet, seed: number): void {
  if (JSON.stringify(buildKnownItemSet({ docs: original, count: DOC_QUERIES, seed })) !== JSON.stringify(set)) throw new Error("the known-item set is not deterministic");
  for (const q of set.queries) {
    if (!original.find((d) => d.path === q.target)?.text.includes(q.sentence)) throw new Error(`query sentence not found in ${q.target}`);
    if (set.docs.some((d) => d.text.includes(q.sentence))) throw new Error(`removed sentence still indexed (${q.target})`);
  }
}

/**
 * The pinned samples: read from the checked-in manifest, or drawn afresh from
 * today's node_modules and written there with BENCH_KNOWN_ITEMS_RESAMPLE=1 (or
 * when there is no manifest yet).
 */
function pinnedManifest(root: string): { manifest: PinnedDoc[]; drawn: boolean } {
  if (process.env.BENCH_KNOWN_ITEMS_RESAMPLE !== "1" && fs.existsSync(MANIFEST)) return { manifest: parseManifest(fs.readFileSync(MANIFEST, "utf8")), drawn: false };
  const manifest = drawPinnedSamples({ root, limit: DOC_CORPUS });
  fs.writeFileSync(MANIFEST, formatManifest(manifest));
  return { manifest, drawn: true };
}

/** The engines each sample is measured with, in table order. */
function documentEngines({ store, docs }: { store: string; docs: CorpusDoc[] }): { engines: DocEngine[]; close: () => void } {
  const porter = rawFts5DocEngine({ label: "raw FTS5 bm25, whole docs, porter", docs, tokenize: "porter" });
  const unicode = rawFts5DocEngine({ label: "raw FTS5 bm25, whole docs, unicode61", docs, tokenize: "unicode61" });
  const engines: DocEngine[] = [
    // group=document is the default group, so its rows would repeat the ungrouped ones here.
    ...modeConfigs()
      .filter(([label]) => !label.endsWith("group=document"))
      .map(([label, params]) => dualmindEngine({ store, label: `dualmind ${label}`, params })),
    ...ablations().map(([label, tuning]) => dualmindEngine({ store, label: `dualmind default, ${label}`, params: {}, tuning })),
    porter,
    unicode,
    miniSearchDocEngine({ label: "MiniSearch, whole docs (defaults)", docs }),
  ];
  return { engines, close: () => (porter.close(), unicode.close()) };
}

type SeedRun = { seed: number; docs: number; chunks: number; multiChunk: number; queries: number; avgWords: number; dropped: number; rows: DocEvalRow[] };

/** Index one pinned sample through the real reindex path and measure every engine on its queries. */
async function measureSample({ root, manifest, seed }: { root: string; manifest: PinnedDoc[]; seed: number }): Promise<SeedRun> {
  const pinned = loadPinnedSample({ root, manifest, seed });
  const original = pinned.docs;
  const set = buildKnownItemSet({ docs: original, count: DOC_QUERIES, seed });
  checkKnownItemSet(original, set, seed);
  // Every engine sees the same documents under the names dualmind's index gives them.
  const docs = set.docs.map((d) => ({ path: `source/${ROOT_NAME}/${d.path}`, text: d.text }));
  const queries = set.queries.map((q) => ({ ...q, target: `source/${ROOT_NAME}/${q.target}` }));
  const store = "known";
  const files = writeCorpusFiles({ docs: set.docs, rootName: ROOT_NAME });
  const closers: (() => void)[] = [files.remove];
  try {
    const corpus = await prepareCorpus({ root: files.root, include: "**/*.md", store });
    closers.push(corpus.cleanup);
    const indexedDocs = new Set(corpus.chunks.map((c) => c.path));
    if (indexedDocs.size !== docs.length) throw new Error(`indexed ${indexedDocs.size} of ${docs.length} documents`);
    const { engines, close } = documentEngines({ store, docs });
    closers.push(close);
    const rows: DocEvalRow[] = [];
    for (const engine of engines) rows.push(await evaluateDocEngine(engine, queries));
    const multiChunk = queries.filter((q) => corpus.chunks.filter((c) => c.path === q.target).length > 1).length;
    const avgWords = queries.reduce((n, q) => n + q.q.split(" ").length, 0) / queries.length;
    return { seed, docs: docs.length, chunks: corpus.chunks.length, multiChunk, queries: queries.length, avgWords, dropped: pinned.missing.length + pinned.changed.length, rows };
  } finally {
    for (const close of closers.reverse()) close();
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
/** The raw FTS5 baseline of one run: the better of its two tokenizers. */
const rawBaseline = (rows: DocEvalRow[]) => Math.max(...rows.filter((r) => r.label.startsWith("raw FTS5")).map((r) => r.mrr));

async function documentLevelSet(): Promise<void> {
  const root = path.resolve("node_modules");
  const { manifest, drawn } = pinnedManifest(root);
  const runs: SeedRun[] = [];
  for (const seed of KNOWN_ITEM_SEEDS) runs.push(await measureSample({ root, manifest, seed }));
  // The baseline is the better raw FTS5 row of each seed, averaged: never lower than either raw row's mean.
  const raw = mean(runs.map((r) => rawBaseline(r.rows)));
  const labels = runs[0].rows.map((r) => r.label);
  const byLabel = (label: string) => runs.map((run) => run.rows.find((r) => r.label === label)!);
  printTable(
    `Document-level known items (bench/known-items.ts), mean of ${runs.length} pinned samples (seeds ${runs.map((r) => r.seed).join(", ")}): ${runs.map((r) => r.queries).join(" / ")} queries over ${runs.map((r) => r.docs).join(" / ")} node_modules markdown documents (${runs.map((r) => r.chunks).join(" / ")} chunks), builtin embedder`,
    labels.map((label) => {
      const rows = byLabel(label);
      const latencies = rows.flatMap((r) => r.latencies);
      return {
        engine: label,
        "MRR@10": mean(rows.map((r) => r.mrr)).toFixed(3),
        "× raw FTS5": (mean(rows.map((r) => r.mrr)) / raw).toFixed(3),
        "hit@1": mean(rows.map((r) => r.hit1)).toFixed(3),
        "hit@10": mean(rows.map((r) => r.hit10)).toFixed(3),
        "p50 ms": percentile(latencies, 50),
        "p95 ms": percentile(latencies, 95),
      };
    }),
  );
  printTable(
    "Document-level known items, per seed: MRR@10 (× that seed's better raw FTS5 row)",
    labels.map((label) => ({ engine: label, ...Object.fromEntries(byLabel(label).map((r, i) => [`seed ${runs[i].seed}`, `${r.mrr.toFixed(3)} (${(r.mrr / rawBaseline(runs[i].rows)).toFixed(2)}×)`])) })),
  );
  const defaults = byLabel(labels.find((l) => l.startsWith("dualmind default ("))!);
  const pinnedNote = drawn
    ? `The samples were drawn afresh from today's node_modules and written to bench/known-items-manifest.tsv.`
    : `The samples are the ones pinned in bench/known-items-manifest.tsv (path, package@version, sha256 per document); ${runs.map((r) => `seed ${r.seed}: ${r.dropped} pinned document(s) missing or changed`).join("; ")}${runs.some((r) => r.dropped) ? " — those are left out, so the figures are not those of the checked-in table" : ""}.`;
  process.stdout.write(
    [
      `"× raw FTS5" is MRR@10 over the mean of each seed's better raw FTS5 row (${raw.toFixed(3)}). Goal (issue 16): default ≥ 1.05×; now ${(mean(defaults.map((r) => r.mrr)) / raw).toFixed(3)}× (per seed ${defaults.map((r, i) => (r.mrr / rawBaseline(runs[i].rows)).toFixed(2)).join(", ")}).`,
      `How each set is built: ${DOC_CORPUS} markdown files drawn by a seeded shuffle from every file under node_modules (2–256 KB, changelogs/licences and similar skipped, exact and same-opening duplicates dropped; ${runs.map((r) => r.multiChunk).join(" / ")} targets span several chunks);`,
      `${DOC_QUERIES} targets in a shuffle with the same seed; from each, one prose sentence of 8–40 words found in no other document of the sample is cut before indexing, and the query is the rest of it after dropping a seeded third of its words (${runs.map((r) => r.avgWords.toFixed(1)).join(" / ")} words on average).`,
      pinnedNote,
      `dualmind rows ask for 50 hits, mapped to documents in first-appearance order; whole-document engines return 10 documents. Raw FTS5 and MiniSearch are in memory; dualmind reads its on-disk index. Latency columns pool the three samples' queries.`,
      "",
    ].join("\n") + "\n",
  );
}

const LATENCY_QUERIES = 100;

/** Each query under each tuning of the default in turn, the order rotating from query to query: latencies per tuning, side by side under the same load. */
async function interleaved(store: string, queries: LabelledQuery[], configs: [string, SearchTuning][]): Promise<[string, number[]][]> {
  const latencies = configs.map((): number[] => []);
  for (const [i, lq] of queries.entries()) {
    for (let j = 0; j < configs.length; j++) {
      const c = (i + j) % configs.length;
      const input = searchInputSchema.parse({ q: lq.q, limit: 10 });
      const started = performance.now();
      await searchStore({ handle: openStore({ store }), core: null, input, tuning: configs[c][1] });
      latencies[c].push(performance.now() - started);
    }
  }
  return configs.map(([label], c) => [label, latencies[c]]);
}

/** One text window per document (one chunk each), ingested through the real path and embedded by the real worker, grown size by size. */
async function latencyBySize(): Promise<void> {
  const sizes = (process.env.BENCH_QUALITY_SIZES ?? "10000,100000").split(",").map(Number).sort((a, b) => a - b);
  const windows = loadTextWindows(sizes.at(-1)!);
  const store = "latency";
  const scratch = scratchStore({ store });
  const samples: SizedSamples = new Map();
  const rows: Record<string, string | number>[] = [];
  const annBuilds: string[] = [];
  try {
    let have = 0;
    for (const size of sizes.filter((n) => n <= windows.length)) {
      const handle = getStoreDb({ store });
      for (let at = have; at < size; at += 1000) {
        handle.sqlite.transaction(() => {
          for (let i = at; i < Math.min(size, at + 1000); i++) ingestDocument({ handle, path: `bench/w${String(i).padStart(6, "0")}.txt`, origin: "api", text: windows[i], mtime: 0 });
        })();
      }
      have = size;
      await drainEmbedQueues({ stores: [store], batchSize: 256 });
      // The approximate index built first, as a server's background build leaves it: the rows time queries, not a build in progress.
      const annStarted = performance.now();
      const annVectors = await buildAnnIndexes({ handle, kinds: [CHUNK_KIND] });
      annBuilds.push(`${annVectors} vectors at ${size} documents: ${((performance.now() - annStarted) / 1000).toFixed(1)} s`);
      const chunks = (handle.sqlite.prepare("select count(*) as n from chunks").get() as { n: number }).n;
      const queries = buildLabelledSet(windows.slice(0, size).map((text, i) => ({ path: String(i), text })), LATENCY_QUERIES);
      // The last row is the baseline in the same run: the default as it ranked before the exact-form factor and best-chunk grouping.
      const baseline: [string, Record<string, unknown>, SearchTuning?] = ["default, as before (no exact-form factor, damped sum)", {}, { exactFormBoost: 0, document: { ...CHUNKS_ALONE.document, combine: "damped_sum", damping: 0.3 } }];
      const chunksAlone: [string, Record<string, unknown>, SearchTuning?] = ["default, as before (documents by their chunks alone, no field evidence)", {}, CHUNKS_ALONE];
      // The proximity factor's cost, on equally warm caches: the default without it, then the default again right after.
      const noProximity: [string, Record<string, unknown>, SearchTuning?][] = [
        ["default, without the proximity factor", {}, { proximity: { weight: 0, window: 5 } }],
        ["default, again (right after the row above)", {}],
      ];
      for (const [label, params, tuning] of [...modeConfigs(), chunksAlone, baseline, ...noProximity] as [string, Record<string, unknown>, SearchTuning?][]) {
        const r = await evaluateMode(store, queries, label, params, tuning);
        recordSamples(samples, { method: label, size: chunks, samples: r.latencies });
        rows.push({ chunks, mode: label, "p50 ms": percentile(r.latencies, 50), "p95 ms": percentile(r.latencies, 95) });
      }
      // The whole-document leg old and new on the same queries, alternating which goes first: queries drawn with another seed,
      // so that they are new to this store's caches for whichever runs first.
      const fresh = buildLabelledSet(windows.slice(0, size).map((text, i) => ({ path: String(i), text })), LATENCY_QUERIES, 11);
      for (const [label, latencies] of await interleaved(store, fresh, [
        [`default, ${WHOLE_DOCUMENT_AS_BEFORE} (interleaved, first sight)`, { wholeDocumentLeg: "index_top" }],
        ["default, whole-document leg on the candidates (interleaved, first sight)", {}],
      ])) {
        recordSamples(samples, { method: label, size: chunks, samples: latencies });
        rows.push({ chunks, mode: label, "p50 ms": percentile(latencies, 50), "p95 ms": percentile(latencies, 95) });
      }
    }
  } finally {
    scratch.cleanup();
  }
  printTable(`Search latency by mode: ${LATENCY_QUERIES} known-item queries (exact / typo / loose thirds) per size, one text window per document, builtin 384-d vectors, limit 10, the HNSW index built before timing (${annBuilds.join("; ")})`, rows);
  printTable("Search latency by mode: how p50 grows with size", growthRows(samples));
}

/** BENCH_QUALITY_PARTS: a comma list of `chunk`, `document`, `latency` to run only those parts (default: all three). */
export default async function run() {
  const parts = new Set((process.env.BENCH_QUALITY_PARTS ?? "chunk,document,latency").split(",").map((p) => p.trim()));
  if (parts.has("chunk")) await chunkLevelSet();
  if (parts.has("document")) await documentLevelSet();
  if (parts.has("latency")) await latencyBySize();
}
