/**
 * A labelled known-item query set over real text (markdown under
 * node_modules), and MRR@10 / hit@10 per search mode. Used by the
 * search-quality benchmark and by a test that holds hybrid to its promise
 * (never below the better of its two signals).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { resetEmbedderForTests } from "../lib/embed/model";
import { drainEmbedQueues } from "../lib/embed/worker";
import { reindexStore } from "../lib/index/reindex";
import { searchInputSchema, searchStore } from "../lib/index/search";
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

/** Index markdown files under `root` into a fresh store, embed every chunk, return the store's chunks. */
export async function prepareCorpus({ root, include, store }: { root: string; include: string; store: string }) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-search-eval-"));
  Object.assign(process.env, { DATA_DIR: dataDir, DUALMIND_SOURCE_ROOTS: `${store}=${root}`, DUALMIND_SOURCE_INCLUDE: include, DUALMIND_SOURCE_EXCLUDE: "**/.git/**", DUALMIND_LOG_LEVEL: "warn", DUALMIND_EMBED_BACKLOG_WATERMARK: "10000000" });
  resetConfigForTests();
  resetEmbedderForTests();
  createStore({ input: { name: store }, actor: "eval" });
  reindexStore({ handle: getStoreDb(store) });
  await drainEmbedQueues({ stores: [store], batchSize: 256 });
  const chunks = getStoreDb(store)
    .sqlite.prepare("select d.path, c.text from chunks c join documents d on d.doc_id = c.doc_id order by c.id")
    .all() as { path: string; text: string }[];
  return {
    chunks,
    cleanup: () => {
      closeAllDatabases();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type EvalRow = { label: string; mrr: number; hit10: number; byType: Record<string, number>; latencies: number[] };

export async function evaluateMode(store: string, queries: LabelledQuery[], label: string, params: Record<string, unknown>): Promise<EvalRow> {
  let mrr = 0;
  let hits = 0;
  const byType: Record<string, { mrr: number; n: number }> = {};
  const latencies: number[] = [];
  for (const lq of queries) {
    const input = searchInputSchema.parse({ q: lq.q, limit: 10, ...params });
    const started = performance.now();
    const res = await searchStore({ handle: openStore({ store }), core: null, input });
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
