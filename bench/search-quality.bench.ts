/**
 * Search quality by mode on a labelled known-item set over real text: the
 * measurement behind DEFAULT_SEARCH_MODE and FUSION_WEIGHTS.
 */
import path from "node:path";
import { DEFAULT_SEARCH_MODE, FUSION_WEIGHTS } from "../lib/index/search";
import { buildLabelledSet, evaluateMode, prepareCorpus } from "./search-eval";
import { percentile, printTable } from "./table";

export default async function run() {
  const store = "quality";
  const corpus = await prepareCorpus({ root: path.resolve("node_modules"), include: "**/*.md", store });
  try {
    const queries = buildLabelledSet(corpus.chunks, 300);
    const configs: [string, Record<string, unknown>][] = [
      ["fts (all words)", { mode: "fts" }],
      ["fts (any word)", { mode: "fts", match: "any" }],
      ["vector", { mode: "vector" }],
      ["hybrid all-words w_vec=0.5", { mode: "hybrid", match: "all", w_vec: 0.5 }],
      ...[0.02, 0.05, 0.1, 0.2, 0.5, 1].map((w) => [`hybrid any-word w_vec=${w}`, { mode: "hybrid", match: "any", w_vec: w }] as [string, Record<string, unknown>]),
      [`default (${DEFAULT_SEARCH_MODE}, builtin w_vec=${FUSION_WEIGHTS.builtin.vec})`, {}],
    ];
    const rows = [];
    for (const [label, params] of configs) {
      const r = await evaluateMode(store, queries, label, params);
      rows.push({ config: r.label, "MRR@10": r.mrr.toFixed(3), "hit@10": r.hit10.toFixed(3), "MRR exact": r.byType.exact.toFixed(3), "MRR typo": r.byType.typo.toFixed(3), "MRR loose": r.byType.loose.toFixed(3), "p50 ms": percentile(r.latencies, 50), "p95 ms": percentile(r.latencies, 95) });
    }
    printTable(`Known-item search quality: ${queries.length} queries (exact / typo / loose thirds) over ${corpus.chunks.length} chunks of node_modules markdown, builtin embedder`, rows);
  } finally {
    corpus.cleanup();
  }
}
