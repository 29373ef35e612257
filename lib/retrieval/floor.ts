import type { Fingerprint } from "../embed/providers";

/**
 * Vector neighbours less similar than this (cosine) are not returned: below
 * it a neighbour is no closer than unrelated text usually is, so it is
 * noise, not an answer, and an answer left empty by it says
 * `below_similarity_floor`.
 *
 * builtin, measured by bench/similarity-floor.bench.ts (200 known-item
 * queries × 2,685 chunks of real node_modules markdown). Similarity of a
 * query to a chunk of a document it is not about: p50 0.024, p90 0.107,
 * p95 0.136, p99 0.197 for the full queries (13.5 words); p50 0.011, p90
 * 0.088, p95 0.119, p99 0.185 for three-word queries, the way agents often
 * ask. The floor is 0.12, the 95th percentile of unrelated pairs for short
 * queries: it turns away 95% of unrelated short-query pairs and 92.5% of
 * long ones (0.05, the old cut, let 23–33% through), and costs nothing
 * measurable on the known-item set (vector-only document MRR@10 0.420 with
 * or without it, no query left empty). Higher costs real answers: at 0.15
 * only 58% of short queries still reach their own document (68% at 0.12),
 * at 0.20 seven long queries are left empty. Hashed character n-grams give
 * any word some similarity to text sharing its letters (a nonsense word's
 * closest chunk scores 0.27–0.36), so the floor removes the long tail of
 * junk neighbours, not every one.
 *
 * openai / transformers: not measurable offline here, and unrelated-pair
 * similarity differs by model (≈0.0–0.2 for OpenAI text-embedding-3, ≈0.3–0.5
 * for some local models), so they keep the permissive 0.05 until measured
 * for the model in use.
 */
export const SIMILARITY_FLOOR: Record<Fingerprint["provider"], number> = {
  builtin: 0.12,
  openai: 0.05,
  transformers: 0.05,
};

export function similarityFloorFor(provider: Fingerprint["provider"]): number {
  return SIMILARITY_FLOOR[provider];
}
