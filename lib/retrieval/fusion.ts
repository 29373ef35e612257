import type { Fingerprint } from "../embed/providers";

/**
 * Reciprocal rank fusion weights per provider, set by measurement on a
 * labelled known-item set (bench/search-quality.bench.ts,
 * bench/search-docs.bench.ts), not by habit.
 *
 * The builtin hashed embedder is weaker than bm25 there (MRR@10 0.29 vs
 * 0.55) and equal weights rank below bm25 alone (0.46). Small weights win by
 * a hair on one corpus (0.02: 0.554) and lose by a hair on another (0.634 vs
 * 0.641), so builtin gets 0.004: its largest contribution, 0.004/61, is below
 * the smallest gap between two bm25 ranks in the pool (1/(110·111)), so it
 * can never reorder bm25's hits. It only breaks exact ties and appends what
 * bm25 cannot find (misspellings): hybrid ≥ bm25 by construction.
 * Neural providers (not measurable offline here) start at equal weights;
 * override per request with w_fts / w_vec.
 */
export const FUSION_WEIGHTS: Record<Fingerprint["provider"], { fts: number; vec: number }> = {
  builtin: { fts: 1, vec: 0.004 },
  openai: { fts: 1, vec: 1 },
  transformers: { fts: 1, vec: 1 },
};
export const RRF_K = 60;

export type FusionWeights = { fts: number; vec: number };

/** One leg's contribution to a fused score: weight / (k + rank), 0 when the leg did not find it. */
export function rrfTerm(weight: number, rank: number | undefined): number {
  return rank === undefined ? 0 : weight / (RRF_K + rank);
}

/** Weighted reciprocal rank fusion of two ranked legs (1-based ranks). */
export function fuseByRank({ ftsRank, vecRank, weights }: { ftsRank: number | undefined; vecRank: number | undefined; weights: FusionWeights }): number {
  return rrfTerm(weights.fts, ftsRank) + rrfTerm(weights.vec, vecRank);
}

/** exp(−age/τ) with τ in days; null when recency decay is off. */
export function recencyDecay(updatedAt: number, now: number, tauDays: number | undefined): number | null {
  if (!tauDays) return null;
  return Math.exp(-Math.max(0, now - updatedAt) / (tauDays * 86_400_000));
}
