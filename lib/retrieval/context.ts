/**
 * Context evidence for short rows written in sequence (conversation turns,
 * a chain of thoughts, the steps of a trace): the row that answers a
 * question is often the one next to the row that holds the question's
 * words ("What did you paint?" — "A sunset over the lake."). So a row
 * inherits part of its neighbours' lexical evidence: relevance += weight ×
 * Σ (a neighbouring hit's lexical score − its own), never negative, over the
 * rows just before and after it (scores relative to the best hit). A row
 * thus never rises above the hit it takes its context from, and a row that
 * holds the words itself (a known item) stays above its neighbours. Neighbours are the nearest rows in time of the same chain
 * (or both unchained), within `windowMs`: rows written far apart, or by
 * another chain, are not each other's context.
 *
 * Measured on LoCoMo (bench/memory-quality.bench.ts, docs/memory-quality.md;
 * raw FTS5 over the turns, stopwords dropped, evidence recall@10 0.615):
 * adding weight × the whole neighbouring score, weight 0.2 / 0.3 / 0.5 / 0.7 / 1 →
 * 0.670 / 0.679 / 0.710 / 0.718 / 0.699; the gap form above, seeds the best 10
 * hits, weight 0.5 / 0.7 / 1 → 0.709 / 0.704 / 0.673 (the whole score, 0.711).
 * 0.5 sits inside the flat part of those curves rather than on a peak, so a
 * conversation unlike the two it was measured on is not tuned against.
 */
export const CONTEXT_EVIDENCE = { weight: 0.5, windowMs: 30 * 60_000, seeds: 10 } as const;

/** For each hit (its seq), the rows just before and after it in its chain (null when there is none). */
export type ContextNeighbours = { hit: number; before: number | null; after: number | null };

/**
 * Each neighbour's context score: weight × Σ max(0, the neighbouring hit's lexical score − its own). `hits` are all
 * the lexical hits (a neighbour's own score is read there, 0 when it is not one); `neighbours` those of the seeds.
 */
export function contextScores({ hits, neighbours, weight = CONTEXT_EVIDENCE.weight }: { hits: { seq: number; lexical: number }[]; neighbours: ContextNeighbours[]; weight?: number }): Map<number, number> {
  const lexical = new Map(hits.map((h) => [h.seq, h.lexical]));
  const out = new Map<number, number>();
  for (const n of neighbours) {
    const l = lexical.get(n.hit) ?? 0;
    for (const seq of [n.before, n.after]) {
      const gain = seq === null ? 0 : weight * (l - (lexical.get(seq) ?? 0));
      if (gain > 0) out.set(seq!, (out.get(seq!) ?? 0) + gain);
    }
  }
  return out;
}
