/**
 * A labelled known-item query set over real text (markdown under
 * node_modules), and MRR@10 / hit@10 per search mode. Used by the
 * search-quality benchmark and by a test that holds hybrid to its promise
 * (never below the better of its two signals).
 */
import Database from "better-sqlite3";
import MiniSearch from "minisearch";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { resetEmbedderForTests } from "../lib/embed/model";
import { drainEmbedQueues } from "../lib/embed/worker";
import { reindexStore } from "../lib/index/reindex";
import { searchInputSchema, searchStore, type SearchTuning } from "../lib/index/search";
import { createStore, openStore } from "../lib/stores/stores";

export type LabelledQuery = { q: string; target: string; type: "exact" | "typo" | "loose" };

const STOP = new Set("this that with from have will your when what which their there these those them then than into also been were they more some such only other about would could should after before under over each most very just like make made does done using used uses".split(" "));

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function contentWords(text: string): string[] {
  return (text.toLowerCase().match(/[a-z]{4,}/g) ?? []).filter((w) => !STOP.has(w));
}

function typo(word: string, r: () => number): string {
  const i = 1 + Math.floor(r() * (word.length - 2));
  return word.slice(0, i) + word[i + 1] + word[i] + word.slice(i + 2);
}

/** Known-item queries in three styles: exact words, misspelled words, and loose recall with one stray word. */
export function buildLabelledSet(chunks: { path: string; text: string }[], count: number, seed = 7): LabelledQuery[] {
  const r = rng(seed);
  const usable = chunks.filter((c) => contentWords(c.text).length >= 12);
  const out: LabelledQuery[] = [];
  for (let i = 0; out.length < count && i < usable.length * 2; i++) {
    const c = usable[Math.floor(r() * usable.length)];
    const words = contentWords(c.text);
    const type = (["exact", "typo", "loose"] as const)[out.length % 3];
    const at = Math.floor(r() * (words.length - 4));
    let q: string[];
    if (type === "exact") q = words.slice(at, at + 3);
    else if (type === "typo") {
      q = words.slice(at, at + 3);
      const order = q.map((w, j) => [w.length, j] as const).sort((a, b) => b[0] - a[0]);
      for (const [, j] of order.slice(0, 2)) q[j] = typo(q[j], r);
    } else {
      q = Array.from({ length: 4 }, () => words[Math.floor(r() * words.length)]);
      const other = contentWords(usable[Math.floor(r() * usable.length)].text);
      q.splice(Math.floor(r() * 5), 0, other[Math.floor(r() * other.length)] ?? "stray");
    }
    out.push({ q: q.join(" "), target: c.path, type });
  }
  return out;
}

/** Point the app at a fresh temp DATA_DIR with a new empty store (and `env` on top); cleanup closes and removes it. */
export function scratchStore({ store, env = {} }: { store: string; env?: Record<string, string> }): { dataDir: string; cleanup: () => void } {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-search-eval-"));
  // The query budget is lifted: these benches measure ranking and latency, and a busy shared machine must not turn a slow query into a failed run.
  Object.assign(process.env, { DATA_DIR: dataDir, DUALMIND_LOG_LEVEL: "warn", DUALMIND_EMBED_BACKLOG_WATERMARK: "10000000", DUALMIND_QUERY_BUDGET_MS: "600000", ...env });
  resetConfigForTests();
  resetEmbedderForTests();
  createStore({ input: { name: store }, actor: "eval" });
  return {
    dataDir,
    cleanup: () => {
      closeAllDatabases();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Index markdown files under `root` into a fresh store, embed every chunk, return the store's chunks. */
export async function prepareCorpus({ root, include, store }: { root: string; include: string; store: string }) {
  const scratch = scratchStore({ store, env: { DUALMIND_SOURCE_ROOTS: `${store}=${root}`, DUALMIND_SOURCE_INCLUDE: include, DUALMIND_SOURCE_EXCLUDE: "**/.git/**" } });
  reindexStore({ handle: getStoreDb({ store }) });
  await drainEmbedQueues({ stores: [store], batchSize: 256 });
  const chunks = getStoreDb({ store })
    .sqlite.prepare("select d.path, c.text from chunks c join documents d on d.doc_id = c.doc_id order by c.id")
    .all() as { path: string; text: string }[];
  return { chunks, cleanup: scratch.cleanup };
}

export type EvalRow = { label: string; mrr: number; hit10: number; byType: Record<string, number>; latencies: number[] };

export async function evaluateMode(store: string, queries: LabelledQuery[], label: string, params: Record<string, unknown>, tuning?: SearchTuning): Promise<EvalRow> {
  let mrr = 0;
  let hits = 0;
  const byType: Record<string, { mrr: number; n: number }> = {};
  const latencies: number[] = [];
  for (const lq of queries) {
    const input = searchInputSchema.parse({ q: lq.q, limit: 10, ...params });
    const started = performance.now();
    const res = await searchStore({ handle: openStore({ store }), core: null, input, tuning });
    latencies.push(performance.now() - started);
    const rank = res.results.findIndex((h) => h.path === lq.target);
    const rr = rank >= 0 ? 1 / (rank + 1) : 0;
    mrr += rr;
    if (rank >= 0) hits++;
    byType[lq.type] ??= { mrr: 0, n: 0 };
    byType[lq.type].mrr += rr;
    byType[lq.type].n++;
  }
  return {
    label,
    mrr: mrr / queries.length,
    hit10: hits / queries.length,
    byType: Object.fromEntries(Object.entries(byType).map(([k, v]) => [k, v.mrr / v.n])),
    latencies,
  };
}

/* ---------- Document-level known-item evaluation (bench/known-items.ts) ---------- */

/** Documents each engine returns for a query; MRR@10 and hit@k are of the target document. */
export const DOC_K = 10;
/** Chunk hits asked of chunk-level engines: enough that ten distinct documents are almost always among them. */
export const CHUNK_DEPTH = 50;

export type DocEngine = { label: string; search: (q: string) => Promise<string[]> | string[] };
export type DocEvalRow = { label: string; mrr: number; hit1: number; hit10: number; latencies: number[] };

/** 1-based rank of `target` among the first DOC_K distinct documents of `paths` (first appearance wins), or 0. */
export function documentRank(paths: string[], target: string): number {
  const seen = new Set<string>();
  for (const p of paths) {
    if (seen.has(p)) continue;
    seen.add(p);
    if (p === target) return seen.size;
    if (seen.size === DOC_K) break;
  }
  return 0;
}

export async function evaluateDocEngine(engine: DocEngine, queries: { q: string; target: string }[]): Promise<DocEvalRow> {
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

/**
 * Search parameters this build's search input accepts (safeParse): a bench
 * row for an option (e.g. `group=document`) appears once the option exists,
 * so the same bench runs before and after it lands.
 */
export function searchAccepts(params: Record<string, unknown>): boolean {
  return searchInputSchema.safeParse({ q: "probe", ...params }).success;
}

/**
 * dualmind through openStore + searchStore (the one call into lib/index
 * here): the document path of each hit, best first. A fallback would
 * measure another mode under this row's name, so it is an error.
 */
export function dualmindEngine({
  store,
  label,
  params,
  tuning,
  rewrite = (q) => q,
}: {
  store: string;
  label: string;
  params: Record<string, unknown>;
  /** Ranking knobs a bench turns to decide the defaults (the API uses the defaults). */
  tuning?: SearchTuning;
  /** The query as this row sends it (a diagnostic row may drop words first). */
  rewrite?: (q: string) => string;
}): DocEngine {
  return {
    label,
    search: async (q) => {
      const input = searchInputSchema.parse({ q: rewrite(q), limit: CHUNK_DEPTH, ...params });
      const res = await searchStore({ handle: openStore({ store }), core: null, input, tuning });
      if (res.effective_mode !== res.mode) throw new Error(`${label}: answered by ${res.effective_mode}, not ${res.mode}`);
      return (res.results as { path: string }[]).map((h) => h.path);
    },
  };
}

/** An FTS5 tokenizer spec, one of these literals (never input). */
export const TOKENIZERS = { porter: "porter unicode61 remove_diacritics 2", unicode61: "unicode61 remove_diacritics 2" } as const;

/**
 * Raw SQLite FTS5 bm25 (in memory) over `docs` — whole documents, or one row
 * per chunk named by its document: the query's words, lowercased and
 * deduplicated (minus `drop`, when given), each a quoted string, OR-ed.
 * Returns the path of each of the best `take` rows.
 */
export function rawFts5DocEngine({
  label,
  docs,
  tokenize,
  take = DOC_K,
  drop,
}: {
  label: string;
  docs: { path: string; text: string }[];
  tokenize: keyof typeof TOKENIZERS;
  take?: number;
  drop?: ReadonlySet<string>;
}): DocEngine & { close: () => void } {
  const db = new Database(":memory:");
  db.exec(`create virtual table t using fts5(text, tokenize='${TOKENIZERS[tokenize]}')`);
  const insert = db.prepare("insert into t(rowid, text) values (?, ?)");
  db.transaction(() => docs.forEach((d, i) => insert.run(i + 1, d.text)))();
  const query = db.prepare("select rowid as id from t where t match ? order by bm25(t), rowid limit ?");
  return {
    label,
    search: (q) => {
      const words = [...new Set((q.normalize("NFKC").match(/[\p{L}\p{N}\p{M}]+/gu) ?? []).map((w) => w.toLowerCase()))].filter((w) => !drop?.has(w));
      if (words.length === 0) return [];
      return (query.all(words.map((w) => `"${w.replaceAll('"', '""')}"`).join(" OR "), take) as { id: number }[]).map((r) => docs[r.id - 1].path);
    },
    close: () => db.close(),
  };
}

/** MiniSearch (BM25+) over whole documents: its defaults, or with search options (fuzzy, prefix). */
export function miniSearchDocEngine({ label, docs, options = {} }: { label: string; docs: { path: string; text: string }[]; options?: { fuzzy?: number; prefix?: boolean } }): DocEngine {
  const index = new MiniSearch<{ id: number; text: string }>({ fields: ["text"] });
  index.addAll(docs.map((d, id) => ({ id, text: d.text })));
  return { label, search: (q) => index.search(q, options).slice(0, DOC_K).map((r) => docs[r.id as number].path) };
}

/** Write documents as files under a fresh `<tmp>/<rootName>/`, so they go through the real reindex/ingest path. */
export function writeCorpusFiles({ docs, rootName }: { docs: { path: string; text: string }[]; rootName: string }): { root: string; remove: () => void } {
  const root = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-known-items-")), rootName);
  for (const d of docs) {
    const file = path.join(root, ...d.path.split("/"));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, d.text);
  }
  return { root, remove: () => fs.rmSync(path.dirname(root), { recursive: true, force: true }) };
}
