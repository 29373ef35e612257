/**
 * Calibrates the vector similarity floor (lib/retrieval/floor.ts) for the
 * builtin embedder: the distribution of cosine similarities between a query
 * and text it is NOT about, next to the similarity of the query to the text
 * it IS about. Queries and documents are the document known-item set of
 * bench/search-docs.bench.ts (real node_modules markdown); documents are
 * chunked by dualmind's own chunker. Also: single nonsense words, which
 * should have no neighbours at all.
 * Deterministic: same corpus, same queries, same vectors on every run.
 */
import path from "node:path";
import { BuiltinProvider } from "../lib/embed/providers/builtin";
import { chunkDocument } from "../lib/index/chunking";
import { SIMILARITY_FLOOR } from "../lib/retrieval/floor";
import { buildDocQuerySet, loadMarkdownCorpus, seededRandom } from "./doc-queries";
import { printTable } from "./table";

const DOCS = 300;
const QUERIES = 200;
const NONSENSE = ["xqzvbt", "qwzzkp flarnix", "zzyzx", "blorptastic", "jkfdlsa", "asdfghjkl", "vorpal snickersnee", "quuxbazfrob"];

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

function pct(sorted: number[], p: number): string {
  if (sorted.length === 0) return "-";
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))].toFixed(3);
}

export default async function run() {
  const provider = new BuiltinProvider();
  const original = loadMarkdownCorpus({ root: path.resolve("node_modules"), limit: DOCS });
  const set = buildDocQuerySet({ docs: original, count: QUERIES });
  const chunks = set.docs.flatMap((d) => chunkDocument({ path: d.path, kind: "markdown", text: d.text }).map((c) => ({ path: d.path, vector: provider.embedOne(c.text) })));
  const rand = seededRandom("similarity-floor");

  const unrelated: number[] = [];
  /** Per query: the document of each chunk, best first, with its similarity (to score candidate floors). */
  const rankings: { target: string; ranked: { path: string; s: number }[] }[] = [];
  const unrelatedBest: number[] = [];
  const relatedBest: number[] = [];
  for (const q of set.queries) {
    const qv = provider.embedOne(q.q);
    let best = -1;
    let bestOther = -1;
    for (const c of chunks) {
      const s = dot(qv, c.vector);
      if (c.path === q.target) best = Math.max(best, s);
      else {
        bestOther = Math.max(bestOther, s);
        if (rand() < 0.05) unrelated.push(s); // a seeded sample of unrelated pairs
      }
    }
    rankings.push({ target: q.target, ranked: chunks.map((c) => ({ path: c.path, s: dot(qv, c.vector) })).sort((a, b) => b.s - a.s).slice(0, 200) });
    relatedBest.push(best);
    unrelatedBest.push(bestOther);
  }
  // Short queries (the first three content words of each query): agents often ask in a few words.
  const unrelatedShort: number[] = [];
  const relatedShortBest: number[] = [];
  for (const q of set.queries) {
    const short = q.q.split(/\s+/).filter((w) => w.length > 3).slice(0, 3).join(" ");
    const qv = provider.embedOne(short);
    let best = -1;
    for (const c of chunks) {
      const s = dot(qv, c.vector);
      if (c.path === q.target) best = Math.max(best, s);
      else if (rand() < 0.05) unrelatedShort.push(s);
    }
    relatedShortBest.push(best);
  }
  const nonsenseBest = NONSENSE.map((w) => {
    const qv = provider.embedOne(w);
    return Math.max(...chunks.map((c) => dot(qv, c.vector)));
  });
  const sort = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const rows = [
    { pairs: "query × chunk of another document (sample)", values: sort(unrelated) },
    { pairs: "query × its best chunk elsewhere (max over unrelated)", values: sort(unrelatedBest) },
    { pairs: "query × best chunk of its own document", values: sort(relatedBest) },
    { pairs: "3-word query × chunk of another document (sample)", values: sort(unrelatedShort) },
    { pairs: "3-word query × best chunk of its own document", values: sort(relatedShortBest) },
    { pairs: "nonsense word × its best chunk", values: sort(nonsenseBest) },
  ];
  const floor = SIMILARITY_FLOOR.builtin;
  printTable(
    `Builtin embedder cosine similarity: ${set.queries.length} queries × ${chunks.length} chunks of ${set.docs.length} node_modules markdown documents (floor now ${floor})`,
    rows.map((r) => ({
      pairs: r.pairs,
      n: r.values.length,
      p50: pct(r.values, 50),
      p90: pct(r.values, 90),
      p95: pct(r.values, 95),
      p99: pct(r.values, 99),
      max: r.values.length ? r.values[r.values.length - 1].toFixed(3) : "-",
      "share ≥ floor": (r.values.filter((v) => v >= floor).length / Math.max(1, r.values.length)).toFixed(3),
    })),
  );

  // What each candidate floor costs (vector-only MRR@10 of the target document) and buys (unrelated pairs let through).
  const candidates = [0, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25];
  printTable(
    "Candidate floors: vector-only document MRR@10 over the same queries, and the share of unrelated pairs above the floor",
    candidates.map((f) => {
      let rr = 0;
      let empty = 0;
      for (const r of rankings) {
        const docs: string[] = [];
        for (const h of r.ranked) {
          if (h.s < f) break;
          if (!docs.includes(h.path)) docs.push(h.path);
          if (docs.length === 10) break;
        }
        if (docs.length === 0) empty++;
        const rank = docs.indexOf(r.target) + 1;
        if (rank > 0) rr += 1 / rank;
      }
      return {
        floor: f,
        "vector MRR@10": (rr / rankings.length).toFixed(3),
        "queries left empty": empty,
        "unrelated pairs ≥ floor": (unrelated.filter((v) => v >= f).length / unrelated.length).toFixed(3),
        "3-word unrelated ≥ floor": (unrelatedShort.filter((v) => v >= f).length / unrelatedShort.length).toFixed(3),
        "3-word own doc ≥ floor": (relatedShortBest.filter((v) => v >= f).length / relatedShortBest.length).toFixed(3),
        "nonsense words with a neighbour": nonsenseBest.filter((v) => v >= f).length + "/" + nonsenseBest.length,
      };
    }),
  );
}
