/**
 * System 1 index, side by side with MiniSearch 7.2 and Orama 3.1 (both in
 * memory) in the same run:
 * 1. a real corpus nobody here wrote: every markdown file under node_modules/;
 * 2. synthesized notes (real text windows from node_modules, assembled by
 *    bench/corpus.ts `noteAt`) at 10k and 100k documents, and at 1M when
 *    `BENCH_INDEX_1M=1` is set, then how each cost grows. 1M is opt-in: at
 *    100k dualmind's two builds already take minutes, 1M is ten times that
 *    plus ~20 GB of temp disk, and MiniSearch and Orama would outgrow V8's
 *    default heap (they are skipped, with the reason printed, unless
 *    NODE_OPTIONS=--max-old-space-size=<MB> makes room). Progress goes to
 *    stderr.
 *
 * dualmind is measured twice on the notes: batch PUT through the documents
 * API's domain path (zod parse + putDocuments, batches as an agent sends
 * them), and a full reindex of the same notes written as files under a source
 * root, followed by the reindex of the unchanged tree.
 *
 * 3. The two-word queries once more, the broad-query path (the word lists)
 *    beside FTS5 scoring every match (the bench's own baseline:
 *    withoutWordLists), interleaved query by query: first call (nothing
 *    cached), second call, later calls, agreement with FTS5 scoring every
 *    match, MiniSearch on the same queries.
 *    `BENCH_INDEX_PARTS=broad` runs only this part, on a store kept in
 *    `BENCH_INDEX_KEEP=<dir>/<size>` (built by batch PUT the first time), so
 *    a re-run skips the minutes of ingest.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import { create, insertMultiple, search, type AnyOrama } from "@orama/orama";
import MiniSearch from "minisearch";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { listIndexableFiles } from "../lib/index/files";
import { decodeText, putDocuments, putDocumentsSchema } from "../lib/index/ingest";
import { ftsMatchFor } from "../lib/index/fulltext";
import { searchFullText } from "./fts-chunks";
import { reindexStore } from "../lib/index/reindex";
import { searchInputSchema, searchStore } from "../lib/index/search";
import { clearFullTextMemos } from "../lib/retrieval";
import { LISTED_TABLES } from "../lib/index/word-list-upkeep";
import { buildWordLists, wordListsStatus } from "../lib/retrieval/word-lists";
import { createStore, openStore } from "../lib/stores/stores";
import { loadTextWindows, noteAt, notesBetween, type Note } from "./corpus";
import { percentile, printTable } from "./table";

const QUERIES = 300;
/**
 * Fewer on the notes: at 100k one Orama or match=any query takes a tenth of
 * a second or more, and 300 of each would add minutes; 100 still give a p95.
 */
const NOTE_QUERIES = 100;
/**
 * BENCH_INDEX_SIZES=1000000 (comma-separated) runs only the sizes named, e.g.
 * the 1M run alone when a machine cannot spare the smaller ones as well.
 */
const SIZES = process.env.BENCH_INDEX_SIZES
  ? process.env.BENCH_INDEX_SIZES.split(",").map(Number)
  : process.env.BENCH_INDEX_1M === "1"
    ? [10_000, 100_000, 1_000_000]
    : [10_000, 100_000];
/** Notes per PUT: 2 KB notes × 200 stay well under the 1 MB default body limit (the API allows 500 per batch). */
const API_BATCH = 200;
/** Notes generated and handed to an in-memory engine at a time, so the corpus never sits in memory whole. */
const BUILD_BATCH = 1000;

/** Deterministic queries: two longer words from every k-th document, as a user who half-remembers a page would type. */
function makeQueries(texts: string[], wanted = QUERIES): string[] {
  const queries: string[] = [];
  const step = Math.max(1, Math.floor(texts.length / wanted));
  for (let i = 0; i < texts.length && queries.length < wanted; i += step) {
    const words = (texts[i].toLowerCase().match(/[a-z]{6,}/g) ?? []).filter((w, j, all) => all.indexOf(w) === j);
    if (words.length >= 2) queries.push(`${words[Math.floor(words.length / 3)]} ${words[Math.floor((2 * words.length) / 3)]}`);
  }
  return queries;
}

type Timed = { samples: number[]; top: (string | undefined)[] };

/** One warm-up call (so no engine pays first-call costs in its timings), then every query timed. */
function timeQueries(queries: string[], run: (q: string) => string | undefined): Timed {
  run(queries[0]);
  const samples: number[] = [];
  const top: (string | undefined)[] = [];
  for (const q of queries) {
    const t = performance.now();
    top.push(run(q));
    samples.push(performance.now() - t);
  }
  return { samples, top };
}

const answered = (top: (string | undefined)[]) => top.filter(Boolean).length;
const sameTop = (a: Timed, b: Timed) => a.top.filter((p, i) => p !== undefined && p === b.top[i]).length;

function searchDualmind({ store, match }: { store: string; match: "all" | "any" }): (q: string) => string | undefined {
  const handle = openStore({ store });
  return (q) => searchFullText({ handle, input: searchInputSchema.parse({ q, limit: 10, match }) }).results[0]?.path;
}

/** index.db plus its WAL: a fresh build is mostly still in the WAL. */
function storeDbBytes({ dataDir, store }: { dataDir: string; store: string }): number {
  const db = path.join(dataDir, "stores", store, "index.db");
  return [db, `${db}-wal`].reduce((n, f) => n + (fs.existsSync(f) ? fs.statSync(f).size : 0), 0);
}

function chunkCount(store: string): number {
  return (getStoreDb({ store }).sqlite.prepare("select count(*) as n from chunks").get() as { n: number }).n;
}

/**
 * A fresh DATA_DIR (and the given env) for one measurement; databases closed,
 * env restored and temp dirs removed afterwards, whatever happens. `keep`: that
 * DATA_DIR instead, made when missing and left in place (a bench reusing what it seeded).
 */
export async function withBenchDataDir<T>({ env, tempDirs = [], keep }: { env: (dataDir: string) => Record<string, string>; tempDirs?: string[]; keep?: string }, run: (dataDir: string) => Promise<T> | T): Promise<T> {
  const dataDir = keep ? (fs.mkdirSync(keep, { recursive: true }), keep) : fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-"));
  const saved = { ...process.env };
  Object.assign(process.env, { DATA_DIR: dataDir, DUALMIND_DISABLE_VECTORS: "true", ...env(dataDir) });
  resetConfigForTests();
  try {
    return await run(dataDir);
  } finally {
    closeAllDatabases();
    process.env = saved;
    resetConfigForTests();
    for (const dir of [...(keep ? [] : [dataDir]), ...tempDirs]) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Heap after a full collection. tsx gives no --expose-gc, so the flag is set
 * at run time and `gc` taken from a fresh context (a V8 feature Node keeps);
 * undefined when even that is refused, and then no heap figure is printed.
 */
const collectGarbage: (() => void) | undefined = (() => {
  const g = globalThis as { gc?: () => void };
  if (typeof g.gc === "function") return g.gc;
  try {
    v8.setFlagsFromString("--expose-gc");
    return vm.runInNewContext("gc") as () => void;
  } catch {
    return undefined;
  }
})();

function heapAfterGc(): number | undefined {
  if (!collectGarbage) return undefined;
  collectGarbage();
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

const mb = (bytes: number | undefined) => (bytes === undefined ? undefined : bytes / 1e6);

/** Orama answers synchronously when no hook or component is async (the case here); anything else would skew the timings. */
function sync<T>(value: T | Promise<T>): T {
  if (value instanceof Promise) throw new Error("Orama went async; the timings would include the event loop");
  return value;
}

function createOrama(): AnyOrama {
  return create({ schema: { path: "string", text: "string" } as const });
}

function searchOrama(orama: AnyOrama): (q: string) => string | undefined {
  // threshold 0: every term must match (Orama's default; it matches terms as prefixes).
  return (q) => (sync(search(orama, { term: q, properties: ["text"], limit: 10, threshold: 0 })).hits[0]?.document as { path?: string } | undefined)?.path;
}

function createMiniSearch(): MiniSearch<Note> {
  return new MiniSearch<Note>({ fields: ["text"], storeFields: ["path"] });
}

function searchMiniSearch(mini: MiniSearch<Note>): (q: string) => string | undefined {
  return (q) => mini.search(q, { combineWith: "AND" })[0]?.path as string | undefined;
}

// ---- 1. the real markdown under node_modules ---------------------------------

async function benchNodeModulesMarkdown(): Promise<void> {
  const corpus = path.resolve("node_modules");
  await withBenchDataDir(
    { env: () => ({ DUALMIND_SOURCE_ROOTS: `bench=${corpus}`, DUALMIND_SOURCE_INCLUDE: "**/*.md", DUALMIND_SOURCE_EXCLUDE: "**/.git/**" }) },
    (dataDir) => {
      createStore({ input: { name: "bench" }, actor: "bench" });
      const files = listIndexableFiles({ store: "bench" }).files;
      const docs: Note[] = [];
      for (const f of files) {
        const text = decodeText(fs.readFileSync(f.abs));
        if (text !== null) docs.push({ id: docs.length, path: f.docPath, text });
      }
      const megabytes = docs.reduce((n, d) => n + Buffer.byteLength(d.text), 0) / 1e6;

      const full = reindexStore({ handle: getStoreDb({ store: "bench" }) });
      const unchanged = reindexStore({ handle: getStoreDb({ store: "bench" }) });
      const chunks = chunkCount("bench");
      const dbBytes = storeDbBytes({ dataDir, store: "bench" });

      let t = performance.now();
      const mini = createMiniSearch();
      mini.addAll(docs);
      const miniMs = performance.now() - t;
      t = performance.now();
      createMiniSearch().addAll(docs);
      const miniAgainMs = performance.now() - t;

      const queries = makeQueries(docs.map((d) => d.text));
      const fts = timeQueries(queries, searchDualmind({ store: "bench", match: "all" }));
      const ftsAny = timeQueries(queries, searchDualmind({ store: "bench", match: "any" }));
      const ms = timeQueries(queries, searchMiniSearch(mini));

      printTable(`Corpus: ${docs.length} markdown files under node_modules/ (${megabytes.toFixed(1)} MB), ${queries.length} queries of two words`, [
        { engine: "dualmind (FTS5, on disk)", "full index files/s": Math.round(docs.length / (full.duration_ms / 1000)), "full index s": full.duration_ms / 1000, "unchanged reindex files/s": Math.round(docs.length / (Math.max(1, unchanged.duration_ms) / 1000)), "query p50 ms": percentile(fts.samples, 50), "query p95 ms": percentile(fts.samples, 95), "queries with a hit": answered(fts.top), size: `${chunks} chunks, ${(dbBytes / 1e6).toFixed(1)} MB db` },
        { engine: "dualmind, match=any", "full index files/s": "", "full index s": "", "unchanged reindex files/s": "", "query p50 ms": percentile(ftsAny.samples, 50), "query p95 ms": percentile(ftsAny.samples, 95), "queries with a hit": answered(ftsAny.top), size: "" },
        { engine: "MiniSearch 7.2 (in memory)", "full index files/s": Math.round(docs.length / (miniMs / 1000)), "full index s": miniMs / 1000, "unchanged reindex files/s": `${Math.round(docs.length / (miniAgainMs / 1000))} (rebuilds: no persistence)`, "query p50 ms": percentile(ms.samples, 50), "query p95 ms": percentile(ms.samples, 95), "queries with a hit": answered(ms.top), size: `${docs.length} documents, heap only` },
      ]);
      printTable("Agreement", [
        {
          "same top document": `${sameTop(fts, ms)}/${queries.length}`,
          note: "dualmind ranks chunks (bm25; match=all needs both words in one chunk), MiniSearch whole documents (BM25+, AND over the document)",
        },
      ]);
    },
  );
}

// ---- 2. synthesized notes at 10k, 100k (and 1M) -----------------------------

type Build = { seconds: number; heapBytes?: number };
/** An in-memory engine's build and queries, or why it was not run at this size. */
type InMemory = { build: Build; timed: Timed } | { skipped: string };
type InMemoryEngine = "mini" | "orama";
type SizeResult = {
  count: number;
  api: { seconds: number; chunks: number; dbBytes: number };
  reindex: { seconds: number; chunks: number; dbBytes: number };
  unchanged: { seconds: number };
  inMemory: Record<InMemoryEngine, InMemory>;
  queries: { fts: Timed; ftsAny: Timed; n: number };
  planners: BroadComparison[];
  generateSeconds: number;
  /** The process's resident set at its highest while dualmind built, reindexed and queried this size (sampled per batch and per progress step). */
  peakRssBytes: number;
  /** The notes as files under the source root (what the reindex reads). */
  sourceBytes: number;
};

/**
 * Whether an in-memory engine can be built at `count` notes without running
 * V8 out of heap (an OOM kills the whole bench run): its measured growth at
 * the previous size, scaled linearly (an overestimate: vocabularies grow
 * slower than corpora), on top of the live heap now. Raise the limit with
 * NODE_OPTIONS=--max-old-space-size=<MB> to run it anyway.
 */
function skipReason({ engine, count, previous }: { engine: InMemoryEngine; count: number; previous?: SizeResult }): string | undefined {
  const engines = process.env.BENCH_INDEX_ENGINES?.split(",");
  if (engines && !engines.includes(engine === "mini" ? "minisearch" : "orama")) return `skipped: BENCH_INDEX_ENGINES=${engines.join(",")}`;
  if (!previous && count > 100_000) return `skipped: no smaller size in this run to estimate its heap from (at 100k MiniSearch grew the heap by ~0.7 GB, Orama by ~2 GB)`;
  const before = previous?.inMemory[engine];
  if (!previous || !before || !("build" in before) || before.build.heapBytes === undefined) return undefined;
  const estimate = (before.build.heapBytes * count) / previous.count;
  const limit = v8.getHeapStatistics().heap_size_limit;
  // Garbage is not live: without a gc to count only live data, heapUsed is the honest upper bound.
  if ((heapAfterGc() ?? process.memoryUsage().heapUsed) + estimate < limit) return undefined;
  return `skipped: needs ~${(estimate / 1e9).toFixed(1)} GB heap (${label(previous.count)} × ${count / previous.count}), V8 limit ${(limit / 1e9).toFixed(1)} GB`;
}

/**
 * Build an in-memory engine from the notes, BUILD_BATCH at a time, and time
 * the queries on it. Heap growth is what the engine keeps (documents
 * included, if it keeps them); the engine is dropped on return, so the next
 * one starts from the same heap.
 */
function measureInMemory<E>({ windows, count, queries, make, add, searcher }: { windows: string[]; count: number; queries: string[]; make: () => E; add: (engine: E, notes: Note[]) => void; searcher: (engine: E) => (q: string) => string | undefined }): { build: Build; timed: Timed } {
  const before = heapAfterGc();
  const t = performance.now();
  const engine = make();
  for (let from = 0; from < count; from += BUILD_BATCH) add(engine, notesBetween({ windows, from, to: Math.min(count, from + BUILD_BATCH) }));
  const seconds = (performance.now() - t) / 1000;
  const after = heapAfterGc();
  const heapBytes = before === undefined || after === undefined ? undefined : after - before;
  return { build: { seconds, heapBytes }, timed: timeQueries(queries, searcher(engine)) };
}

/** Where a long run is, on stderr (the results file keeps stdout only), so a 1M run is not half an hour of silence. */
function progress({ count, step, since }: { count: number; step: string; since: number }): void {
  const load = os.loadavg().map((x) => x.toFixed(1)).join(" / ");
  process.stderr.write(`index bench ${label(count)}: ${step} (${((performance.now() - since) / 1000).toFixed(1)} s into this size; ${new Date().toISOString().slice(11, 19)} UTC, load ${load}, RSS ${(process.memoryUsage.rss() / 1e6).toFixed(0)} MB)\n`);
}

/** Writes the notes under `root`; returns their bytes. */
function writeNotesAsFiles({ windows, count, root }: { windows: string[]; count: number; root: string }): number {
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const note = noteAt({ windows, index: i });
    const file = path.join(root, note.path);
    if (i % 1000 === 0) fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, note.text);
    bytes += Buffer.byteLength(note.text);
  }
  return bytes;
}

/** Peak resident set, sampled where the work is (the bench is synchronous, so a timer would never fire). */
function rssTracker(): { sample: () => void; peak: () => number } {
  let peak = process.memoryUsage.rss();
  return { sample: () => void (peak = Math.max(peak, process.memoryUsage.rss())), peak: () => peak };
}

async function benchNotes({ windows, count, previous }: { windows: string[]; count: number; previous?: SizeResult }): Promise<SizeResult> {
  const sourceDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-notes-"));
  return withBenchDataDir({ env: () => ({ DUALMIND_SOURCE_ROOTS: `files=${sourceDir}`, DUALMIND_SOURCE_INCLUDE: "**/*.md" }), tempDirs: [sourceDir] }, async (dataDir) => {
    const started = performance.now();
    // What assembling the notes costs by itself: every engine below pays it once inside its own timing.
    let t = performance.now();
    for (let i = 0; i < count; i++) noteAt({ windows, index: i });
    const generateSeconds = (performance.now() - t) / 1000;

    const rss = rssTracker();
    createStore({ input: { name: "api" }, actor: "bench" });
    const handle = openStore({ store: "api" });
    t = performance.now();
    for (let from = 0; from < count; from += API_BATCH) {
      const documents = notesBetween({ windows, from, to: Math.min(count, from + API_BATCH) }).map((n) => ({ path: n.path, content: n.text }));
      putDocuments({ handle, input: putDocumentsSchema.parse({ documents }), actor: "bench" });
      rss.sample();
    }
    const api = { seconds: (performance.now() - t) / 1000, chunks: chunkCount("api"), dbBytes: storeDbBytes({ dataDir, store: "api" }) };
    progress({ count, step: `batch PUT done: ${api.seconds.toFixed(1)} s, ${api.chunks} chunks, ${(api.dbBytes / 1e6).toFixed(0)} MB db, peak RSS ${(rss.peak() / 1e6).toFixed(0)} MB`, since: started });

    const sourceBytes = writeNotesAsFiles({ windows, count, root: sourceDir });
    progress({ count, step: "notes written as files", since: started });
    createStore({ input: { name: "files" }, actor: "bench" });
    const full = reindexStore({ handle: getStoreDb({ store: "files" }), onProgress: rss.sample });
    if (full.counts.added !== count) throw new Error(`reindex added ${full.counts.added} of ${count} notes`);
    const reindex = { seconds: full.duration_ms / 1000, chunks: chunkCount("files"), dbBytes: storeDbBytes({ dataDir, store: "files" }) };
    progress({ count, step: `full reindex done: ${reindex.seconds.toFixed(1)} s, ${reindex.chunks} chunks, ${(reindex.dbBytes / 1e6).toFixed(0)} MB db, peak RSS ${(rss.peak() / 1e6).toFixed(0)} MB`, since: started });
    const again = reindexStore({ handle: getStoreDb({ store: "files" }), onProgress: rss.sample });
    if (again.counts.unchanged !== count) throw new Error(`unchanged reindex saw ${again.counts.unchanged} of ${count} notes unchanged`);

    // Every engine answers the same queries, drawn from evenly spaced notes; the API store's paths are the notes' own paths.
    progress({ count, step: `unchanged reindex done: ${(again.duration_ms / 1000).toFixed(2)} s`, since: started });
    const queries = makeQueries(Array.from({ length: NOTE_QUERIES }, (_, j) => noteAt({ windows, index: Math.floor((j * count) / NOTE_QUERIES) }).text), NOTE_QUERIES);
    const fts = timeQueries(queries, searchDualmind({ store: "api", match: "all" }));
    const ftsAny = timeQueries(queries, searchDualmind({ store: "api", match: "any" }));
    rss.sample();
    progress({ count, step: `dualmind queries done: match=all p50 ${percentile(fts.samples, 50).toFixed(1)} / p95 ${percentile(fts.samples, 95).toFixed(1)} ms, match=any p50 ${percentile(ftsAny.samples, 50).toFixed(1)} / p95 ${percentile(ftsAny.samples, 95).toFixed(1)} ms`, since: started });
    const planners = await compareBroadPlanners({ store: "api", queries });
    progress({ count, step: "broad-query planners compared", since: started });

    const skipMini = skipReason({ engine: "mini", count, previous });
    const mini = skipMini ? { skipped: skipMini } : measureInMemory({ windows, count, queries, make: createMiniSearch, add: (m, notes) => m.addAll(notes), searcher: searchMiniSearch });
    const skipOrama = skipReason({ engine: "orama", count, previous });
    const orama = skipOrama
      ? { skipped: skipOrama }
      : measureInMemory({ windows, count, queries, make: createOrama, add: (o, notes) => void sync(insertMultiple(o, notes.map((n) => ({ path: n.path, text: n.text })), BUILD_BATCH)), searcher: searchOrama });
    progress({ count, step: "MiniSearch and Orama done", since: started });

    return {
      count,
      api,
      reindex,
      unchanged: { seconds: again.duration_ms / 1000 },
      inMemory: { mini, orama },
      queries: { fts, ftsAny, n: queries.length },
      planners,
      generateSeconds,
      peakRssBytes: rss.peak(),
      sourceBytes,
    };
  });
}

const label = (count: number) => (count >= 1_000_000 ? `${count / 1_000_000}M` : `${count / 1000}k`);
const perSecond = (count: number, seconds: number) => Math.round(count / Math.max(seconds, 0.001));

function printNotesTables(r: SizeResult): void {
  const built = (m: InMemory) => {
    if ("skipped" in m) return { "docs/s": "", seconds: "", size: m.skipped };
    const b = m.build;
    return { "docs/s": perSecond(r.count, b.seconds), seconds: b.seconds, size: b.heapBytes === undefined ? "n/a (no gc available)" : `${(b.heapBytes / 1e6).toFixed(0)} MB heap growth` };
  };
  const db = (x: { chunks: number; dbBytes: number }) => `${x.chunks} chunks, ${(x.dbBytes / 1e6).toFixed(0)} MB db`;
  printTable(`Indexing ${label(r.count)} synthesized notes (real text windows, 1–3 KB each; assembling them alone takes ${r.generateSeconds.toFixed(2)} s, inside every build time)`, [
    { engine: `dualmind, batch PUT (${API_BATCH} per batch, API domain path)`, "docs/s": perSecond(r.count, r.api.seconds), seconds: r.api.seconds, size: db(r.api) },
    { engine: "dualmind, full reindex from files", "docs/s": perSecond(r.count, r.reindex.seconds), seconds: r.reindex.seconds, size: db(r.reindex) },
    { engine: "dualmind, unchanged reindex (re-scan, nothing to do)", "docs/s": perSecond(r.count, r.unchanged.seconds), seconds: r.unchanged.seconds, size: `${(r.sourceBytes / 1e6).toFixed(0)} MB of note files; peak RSS ${(r.peakRssBytes / 1e6).toFixed(0)} MB over PUT, both reindexes and the queries` },
    { engine: "MiniSearch 7.2 (in memory; a restart rebuilds)", ...built(r.inMemory.mini) },
    { engine: "Orama 3.1 (in memory, keeps every document; a restart rebuilds)", ...built(r.inMemory.orama) },
  ]);
  const q = r.queries;
  const mini = r.inMemory.mini;
  const row = (engine: string, t: Timed | InMemory) => {
    if ("skipped" in t) return { engine, "p50 ms": "", "p95 ms": "", "queries with a hit": t.skipped, "same top note as MiniSearch": "" };
    const timed = "timed" in t ? t.timed : t;
    return {
      engine,
      "p50 ms": percentile(timed.samples, 50),
      "p95 ms": percentile(timed.samples, 95),
      "queries with a hit": `${answered(timed.top)}/${q.n}`,
      "same top note as MiniSearch": "timed" in mini ? `${sameTop(timed, mini.timed)}/${q.n}` : "n/a",
    };
  };
  printTable(`FTS on ${label(r.count)} notes: ${q.n} two-word queries`, [
    row("dualmind FTS5 (match=all, default)", q.fts),
    row("dualmind FTS5, match=any", q.ftsAny),
    row("MiniSearch 7.2 (AND)", mini),
    row("Orama 3.1 (threshold 0: all terms, as prefixes)", r.inMemory.orama),
  ]);
  const miniTimes = "timed" in mini ? { all: mini.timed.samples } : undefined;
  printBroadPlanners({ count: r.count, comparisons: r.planners, mini: miniTimes });
}

function build(r: SizeResult, engine: InMemoryEngine): Build | undefined {
  const m = r.inMemory[engine];
  return "build" in m ? m.build : undefined;
}

function inMemoryPercentile(r: SizeResult, engine: InMemoryEngine, p: number): number | undefined {
  const m = r.inMemory[engine];
  return "timed" in m ? percentile(m.timed.samples, p) : undefined;
}

/** Per engine and metric, the value at each size and how it grew (each step is 10× the notes). */
function printGrowthTable(results: SizeResult[]): void {
  const metrics: { engine: string; metric: string; value: (r: SizeResult) => number | undefined }[] = [
    { engine: "dualmind batch PUT", metric: "seconds", value: (r) => r.api.seconds },
    { engine: "dualmind batch PUT", metric: "db MB", value: (r) => mb(r.api.dbBytes) },
    { engine: "dualmind full reindex", metric: "seconds", value: (r) => r.reindex.seconds },
    { engine: "dualmind full reindex", metric: "db MB", value: (r) => mb(r.reindex.dbBytes) },
    { engine: "dualmind unchanged reindex", metric: "seconds", value: (r) => r.unchanged.seconds },
    { engine: "dualmind full ÷ unchanged reindex", metric: "times faster", value: (r) => r.reindex.seconds / Math.max(r.unchanged.seconds, 0.001) },
    { engine: "dualmind (PUT, reindexes, queries)", metric: "peak RSS MB", value: (r) => mb(r.peakRssBytes) },
    { engine: "note files (source root)", metric: "MB of text", value: (r) => mb(r.sourceBytes) },
    { engine: "MiniSearch", metric: "build seconds", value: (r) => build(r, "mini")?.seconds },
    { engine: "MiniSearch", metric: "heap MB", value: (r) => mb(build(r, "mini")?.heapBytes) },
    { engine: "Orama", metric: "build seconds", value: (r) => build(r, "orama")?.seconds },
    { engine: "Orama", metric: "heap MB", value: (r) => mb(build(r, "orama")?.heapBytes) },
    { engine: "dualmind match=all", metric: "query p50 ms", value: (r) => percentile(r.queries.fts.samples, 50) },
    { engine: "dualmind match=all", metric: "query p95 ms", value: (r) => percentile(r.queries.fts.samples, 95) },
    { engine: "dualmind match=any", metric: "query p50 ms", value: (r) => percentile(r.queries.ftsAny.samples, 50) },
    { engine: "dualmind match=any", metric: "query p95 ms", value: (r) => percentile(r.queries.ftsAny.samples, 95) },
    { engine: "MiniSearch", metric: "query p50 ms", value: (r) => inMemoryPercentile(r, "mini", 50) },
    { engine: "MiniSearch", metric: "query p95 ms", value: (r) => inMemoryPercentile(r, "mini", 95) },
    { engine: "Orama", metric: "query p50 ms", value: (r) => inMemoryPercentile(r, "orama", 50) },
    { engine: "Orama", metric: "query p95 ms", value: (r) => inMemoryPercentile(r, "orama", 95) },
  ];
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b <= 0 ? "n/a" : `${(a / b).toFixed(1)}×`);
  printTable(`How cost grows with size: ${results.map((r) => label(r.count)).join(", ")} notes${SIZES.includes(1_000_000) ? "" : " (1M: set BENCH_INDEX_1M=1)"}`, metrics.map((m) => {
    const row: Record<string, string | number> = { engine: m.engine, metric: m.metric };
    results.forEach((r, i) => {
      const v = m.value(r);
      row[label(r.count)] = v ?? "n/a";
      if (i > 0) row[`${label(r.count)}/${label(results[i - 1].count)}`] = ratio(v, m.value(results[i - 1]));
    });
    return row;
  }));
}

export default async function indexBench(): Promise<void> {
  if (process.env.BENCH_INDEX_PARTS === "broad") return benchBroadPlannersOnly();
  if (process.env.BENCH_INDEX_PARTS === "doc-leg") return benchDocumentLegsOnly();
  if (process.env.BENCH_INDEX_PARTS === "word-lists") return benchWordLists();
  // Sizes picked by hand (a 1M run alone) leave out the small real-corpus section too.
  if (!process.env.BENCH_INDEX_SIZES) await benchNodeModulesMarkdown();
  const windows = loadTextWindows(Number.MAX_SAFE_INTEGER);
  const results: SizeResult[] = [];
  for (const count of SIZES) {
    const r = await benchNotes({ windows, count, previous: results.at(-1) });
    printNotesTables(r);
    results.push(r);
  }
  printGrowthTable(results);
}

// ---- 3. two-word queries: the broad-query planner, old beside new -----------

/** Calls timed per query and side after its first two (`later`). */
const LATER_CALLS = 3;
/** One turn of the event loop, as a server has between requests. */
const nextTurn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * The bench's own FTS5 baseline: `run` inside an open read transaction on
 * the store's connection, where the word lists step aside (FTS5 keeps a
 * transaction's writes in memory, so the lists never answer inside one) and
 * FTS5 ranks every match, as it did for every broad query before the lists.
 */
async function withoutWordLists<T>(sqlite: import("better-sqlite3").Database, run: () => Promise<T>): Promise<T> {
  sqlite.exec("begin");
  try {
    return await run();
  } finally {
    sqlite.exec("rollback");
  }
}

type SideTimes = { first: number[]; second: number[]; later: number[]; overlap: number[]; identical: number };
type Side = "lists" | "fts5";
const SIDES: Side[] = ["lists", "fts5"];
type BroadComparison = { entry: string; reference: string; match: "all" | "any"; bySide: Record<Side, SideTimes> };

/**
 * Each query both ways from a cold start (per-process memos cleared: a
 * query's first call in a fresh process), one event-loop turn between
 * calls. The two sides alternate which goes first, query by query, so both
 * see the same load. Agreement: overlap of the top 10 with FTS5 scoring
 * every match (chunks: the exhaustive statement itself; documents: the
 * route without the lists).
 */
async function compareBroadPlanners({ store, queries }: { store: string; queries: string[] }): Promise<BroadComparison[]> {
  const handle = openStore({ store });
  const exhaustive = handle.sqlite.prepare("select rowid from chunks_fts where chunks_fts match ? order by bm25(chunks_fts), rowid limit 10").pluck();
  const chunks = async (q: string, match: "all" | "any") => searchFullText({ handle, input: searchInputSchema.parse({ q, limit: 10, match }) }).results.map((r) => r.id);
  const documents = async (q: string, match: "all" | "any") => (await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, limit: 10, match, mode: "fts" }) })).results.map((r) => r.path);
  const entries: { entry: string; reference: string; run: (q: string, match: "all" | "any") => Promise<(string | number)[]>; referenceOf: (q: string, match: "all" | "any") => Promise<(string | number)[]> }[] = [
    { entry: "searchFullText (group=chunk)", reference: "FTS5 scoring every match", run: chunks, referenceOf: async (q: string, match: "all" | "any") => exhaustive.all(ftsMatchFor({ input: searchInputSchema.parse({ q, match }), match })) as number[] },
    { entry: "searchStore (the route's default, group=document)", reference: "the route without the lists", run: documents, referenceOf: (q: string, match: "all" | "any") => withoutWordLists(handle.sqlite, () => documents(q, match)) },
  ];
  const out: BroadComparison[] = [];
  for (const { entry, reference, run, referenceOf } of entries) {
    for (const match of ["all", "any"] as const) {
      const fresh = (): SideTimes => ({ first: [], second: [], later: [], overlap: [], identical: 0 });
      const bySide: Record<Side, SideTimes> = { lists: fresh(), fts5: fresh() };
      for (const [i, q] of queries.entries()) {
        const want: (string | number)[] = await referenceOf(q, match);
        for (const side of i % 2 ? [...SIDES].reverse() : SIDES) {
          const times = bySide[side];
          clearFullTextMemos();
          await nextTurn();
          const timed = async (into: number[]) => {
            const t = performance.now();
            const got = side === "lists" ? await run(q, match) : await withoutWordLists(handle.sqlite, () => run(q, match));
            into.push(performance.now() - t);
            return got;
          };
          await timed(times.first);
          await nextTurn();
          await timed(times.second);
          let got: (string | number)[] = [];
          for (let c = 0; c < LATER_CALLS; c++) {
            await nextTurn();
            got = await timed(times.later);
          }
          times.overlap.push(want.length === 0 ? (got.length === 0 ? 1 : 0) : want.filter((x) => got.includes(x)).length / want.length);
          if (JSON.stringify(got) === JSON.stringify(want)) times.identical++;
        }
      }
      out.push({ entry, reference, match, bySide });
      process.stderr.write(`index bench: broad queries compared for ${entry}, match=${match}\n`);
    }
  }
  return out;
}

const pctl = (xs: number[]) => `${percentile(xs, 50).toFixed(1)} / ${percentile(xs, 95).toFixed(1)} / ${Math.max(...xs).toFixed(1)}`;

function printBroadPlanners({ count, comparisons, mini }: { count: number; comparisons: BroadComparison[]; mini?: { all: number[]; any?: number[] } }): void {
  const n = comparisons[0]?.bySide.lists.first.length ?? 0;
  const rows: Record<string, string | number>[] = [];
  for (const c of comparisons) {
    for (const p of SIDES) {
      const t = c.bySide[p];
      rows.push({
        entry: c.entry,
        match: c.match,
        planner: p === "lists" ? "word lists (the shipped path)" : "FTS5 scoring every match (bench baseline)",
        "1st call p50 / p95 / max ms": pctl(t.first),
        "2nd call p50 / p95 / max ms": pctl(t.second),
        [`later (${LATER_CALLS} each) p50 / p95 / max ms`]: pctl(t.later),
        "overlap@10": (t.overlap.reduce((a, b) => a + b, 0) / t.overlap.length).toFixed(3),
        "identical top 10": `${t.identical}/${t.first.length} (vs ${c.reference})`,
      });
    }
  }
  for (const [match, samples] of [["all", mini?.all], ["any", mini?.any]] as const) {
    if (!samples) continue;
    rows.push({
      entry: "MiniSearch 7.2 (in memory, whole notes)",
      match,
      planner: match === "all" ? "combineWith AND" : "combineWith OR",
      "1st call p50 / p95 / max ms": "",
      "2nd call p50 / p95 / max ms": "",
      [`later (${LATER_CALLS} each) p50 / p95 / max ms`]: `${pctl(samples)} (each query once, after one warm-up call)`,
      "overlap@10": "",
      "identical top 10": "",
    });
  }
  const load = os.loadavg().map((x) => x.toFixed(1)).join(" / ");
  printTable(`Two-word queries on ${label(count)} notes (${n} queries): word lists beside FTS5 scoring every match, interleaved query by query (load average at the end ${load})`, rows);
}

/** A kept DATA_DIR (BENCH_INDEX_KEEP): env as withBenchDataDir sets it, nothing removed afterwards. */
async function withKeptDataDir<T>(dataDir: string, run: () => Promise<T>): Promise<T> {
  fs.mkdirSync(dataDir, { recursive: true });
  const saved = { ...process.env };
  Object.assign(process.env, { DATA_DIR: dataDir, DUALMIND_DISABLE_VECTORS: "true" });
  resetConfigForTests();
  try {
    return await run();
  } finally {
    closeAllDatabases();
    process.env = saved;
    resetConfigForTests();
  }
}

/** The kept store `api` of `count` notes by batch PUT, unless <keep>/<count> already holds it; whether it was built now. */
function seedKeptStore({ keep, count, windows }: { keep: string; count: number; windows: string[] }): boolean {
  if (fs.existsSync(path.join(keep, String(count), "stores", "api", "index.db"))) return false;
  createStore({ input: { name: "api" }, actor: "bench" });
  const handle = openStore({ store: "api" });
  for (let from = 0; from < count; from += API_BATCH) {
    putDocuments({ handle, input: putDocumentsSchema.parse({ documents: notesBetween({ windows, from, to: Math.min(count, from + API_BATCH) }).map((n) => ({ path: n.path, content: n.text })) }), actor: "bench" });
  }
  return true;
}

/** BENCH_INDEX_PARTS=broad: the planner comparison alone at each size, on kept stores, beside MiniSearch on the same queries. */
async function benchBroadPlannersOnly(): Promise<void> {
  const keep = process.env.BENCH_INDEX_KEEP ?? fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-broad-"));
  const windows = loadTextWindows(Number.MAX_SAFE_INTEGER);
  for (const count of SIZES) {
    const started = performance.now();
    const comparisons = await withKeptDataDir(path.join(keep, String(count)), async () => {
      if (seedKeptStore({ keep, count, windows })) progress({ count, step: "kept store built by batch PUT", since: started });
      const queries = makeQueries(Array.from({ length: NOTE_QUERIES }, (_, j) => noteAt({ windows, index: Math.floor((j * count) / NOTE_QUERIES) }).text), NOTE_QUERIES);
      return { queries, comparisons: await compareBroadPlanners({ store: "api", queries }) };
    });
    progress({ count, step: "broad-query planners compared", since: started });
    const skipMini = skipReason({ engine: "mini", count });
    let mini: { all: number[]; any: number[] } | undefined;
    if (skipMini) process.stdout.write(`MiniSearch at ${label(count)}: ${skipMini}\n`);
    else {
      const engine = createMiniSearch();
      for (let from = 0; from < count; from += BUILD_BATCH) engine.addAll(notesBetween({ windows, from, to: Math.min(count, from + BUILD_BATCH) }));
      const or = (q: string) => engine.search(q, { combineWith: "OR" })[0]?.path as string | undefined;
      mini = { all: timeQueries(comparisons.queries, searchMiniSearch(engine)).samples, any: timeQueries(comparisons.queries, or).samples };
      progress({ count, step: "MiniSearch built and queried", since: started });
    }
    printBroadPlanners({ count, comparisons: comparisons.comparisons, mini });
  }
}

/**
 * BENCH_INDEX_PARTS=doc-leg (kept stores, as `broad`): searchStore's
 * whole-document leg on the two-word queries' first sight (caches cleared),
 * the candidates scored alone (from the index's instances, or for a broad
 * query from their own text) beside the index's best documents ranked
 * (`index_top`, what a broad query did before), alternating which goes
 * first; CPU time of the call (user + system: steadier than wall time on a
 * shared machine) and wall time; agreement of the top 10 documents.
 */
async function benchDocumentLegsOnly(): Promise<void> {
  const keep = process.env.BENCH_INDEX_KEEP ?? fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-broad-"));
  const windows = loadTextWindows(Number.MAX_SAFE_INTEGER);
  const legs = ["candidates", "index_top"] as const;
  for (const count of SIZES) {
    const rows = await withKeptDataDir(path.join(keep, String(count)), async () => {
      seedKeptStore({ keep, count, windows });
      const queries = makeQueries(Array.from({ length: NOTE_QUERIES }, (_, j) => noteAt({ windows, index: Math.floor((j * count) / NOTE_QUERIES) }).text), NOTE_QUERIES);
      const handle = openStore({ store: "api" });
      const out: Record<string, string | number>[] = [];
      for (const match of ["any", "all"] as const) {
        const cpu = { candidates: [] as number[], index_top: [] as number[] };
        const wall = { candidates: [] as number[], index_top: [] as number[] };
        let identical = 0;
        let overlap = 0;
        for (const [i, q] of queries.entries()) {
          const got: Record<string, string[]> = {};
          for (const leg of i % 2 ? [...legs].reverse() : legs) {
            clearFullTextMemos();
            await nextTurn();
            const c0 = process.cpuUsage();
            const t0 = performance.now();
            got[leg] = (await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, limit: 10, match, mode: "fts" }), tuning: { wholeDocumentLeg: leg } })).results.map((r) => r.path);
            wall[leg].push(performance.now() - t0);
            const c = process.cpuUsage(c0);
            cpu[leg].push((c.user + c.system) / 1000);
          }
          if (JSON.stringify(got.candidates) === JSON.stringify(got.index_top)) identical++;
          overlap += got.index_top.length ? got.index_top.filter((p) => got.candidates.includes(p)).length / got.index_top.length : 1;
        }
        for (const leg of legs) {
          out.push({
            match,
            "whole-document leg": leg === "candidates" ? "candidates alone (broad: from their text) — new" : "index's best documents (index_top) — before, for broad queries",
            "CPU p50 / p95 / max ms": pctl(cpu[leg]),
            "wall p50 / p95 / max ms": pctl(wall[leg]),
            "same top 10 as the other leg": leg === "candidates" ? `${identical}/${queries.length} (overlap@10 ${(overlap / queries.length).toFixed(3)})` : "",
          });
        }
      }
      return out;
    });
    const load = os.loadavg().map((x) => x.toFixed(1)).join(" / ");
    printTable(`searchStore (route default, group=document, fts) on ${label(count)} notes, ${NOTE_QUERIES} two-word queries, first sight: the whole-document leg (load average at the end ${load})`, rows);
  }
}

/**
 * BENCH_INDEX_PARTS=word-lists (kept stores, as `broad`): the chunk word
 * lists (lib/retrieval/word-lists.ts) built on the kept store (build time,
 * disk), then searchStore (route default) on the two-word queries' first
 * sight, with the lists read and not read alternating query by query (which
 * goes first too); CPU and wall time, and whether the two answers are the
 * same (they must be: both are FTS5's exact ranking).
 */
async function benchWordLists(): Promise<void> {
  const keep = process.env.BENCH_INDEX_KEEP ?? fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-broad-"));
  const windows = loadTextWindows(Number.MAX_SAFE_INTEGER);
  for (const count of SIZES) {
    const rows = await withKeptDataDir(path.join(keep, String(count)), async () => {
      seedKeptStore({ keep, count, windows });
      const queries = makeQueries(Array.from({ length: NOTE_QUERIES }, (_, j) => noteAt({ windows, index: Math.floor((j * count) / NOTE_QUERIES) }).text), NOTE_QUERIES);
      const handle = openStore({ store: "api" });
      const out: Record<string, string | number>[] = [];
      for (const { table, texts } of LISTED_TABLES.filter((t) => t.table === "chunks_fts" || t.table === "documents_fts")) {
        const before = wordListsStatus({ db: handle.sqlite, table });
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const steps = buildWordLists({ db: handle.sqlite, table, texts: texts?.(handle.sqlite) });
        const c = process.cpuUsage(c0);
        const built = { ms: performance.now() - t0, cpu: (c.user + c.system) / 1000 };
        const disk = handle.sqlite.prepare("select (select coalesce(sum(length(entries)), 0) from fts_word_lists where tbl = ?) + (select coalesce(sum(length(lengths)), 0) from fts_row_lengths where tbl = ?)").pluck().get(table, table) as number;
        const status = wordListsStatus({ db: handle.sqlite, table });
        out.push({
          match: `build ${table}`,
          "word lists": before?.status === "ready" ? `already built (${status?.words} words)` : `built now: ${steps} steps, ${(built.ms / 1000).toFixed(1)} s wall, ${(built.cpu / 1000).toFixed(1)} s CPU, ${status?.words} words`,
          "CPU p50 / p95 / max ms": `${(disk / 2 ** 20).toFixed(1)} MB of blobs`,
          "wall p50 / p95 / max ms": "",
          "same top 10 as the other": "",
        });
      }
      for (const match of ["any", "all"] as const) {
        const cpu = { on: [] as number[], off: [] as number[] };
        const wall = { on: [] as number[], off: [] as number[] };
        let identical = 0;
        for (const [i, q] of queries.entries()) {
          const got: Record<string, string> = {};
          for (const side of i % 2 ? (["off", "on"] as const) : (["on", "off"] as const)) {
            clearFullTextMemos();
            await nextTurn();
            const c1 = process.cpuUsage();
            const t1 = performance.now();
            const ask = () => searchStore({ handle, core: null, input: searchInputSchema.parse({ q, limit: 10, match, mode: "fts" }) });
            const r = side === "on" ? await ask() : await withoutWordLists(handle.sqlite, ask);
            wall[side].push(performance.now() - t1);
            const c = process.cpuUsage(c1);
            cpu[side].push((c.user + c.system) / 1000);
            got[side] = JSON.stringify(r.results.map((h) => [h.path, h.score]));
          }
          if (got.on === got.off) identical++;
        }
        for (const side of ["on", "off"] as const) {
          out.push({
            match,
            "word lists": side === "on" ? "read (new)" : "not read (FTS5 scoring every match: the bench's baseline)",
            "CPU p50 / p95 / max ms": pctl(cpu[side]),
            "wall p50 / p95 / max ms": pctl(wall[side]),
            "same top 10 as the other": side === "on" ? `${identical}/${queries.length}` : "",
          });
        }
      }
      return out;
    });
    const load = os.loadavg().map((x) => x.toFixed(1)).join(" / ");
    printTable(`searchStore (route default, group=document, fts) on ${label(count)} notes, ${NOTE_QUERIES} two-word queries, first sight: word lists read or not, alternating (load average at the end ${load})`, rows);
  }
}
