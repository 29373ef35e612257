import type { Fingerprint } from "../embed/providers";

/**
 * Vector neighbours less similar than this (cosine) are not returned: no closer than unrelated text usually is, so
 * noise, and an answer left empty by it says `below_similarity_floor`. builtin: 0.12, the 95th percentile of
 * unrelated short-query pairs (bench/similarity-floor.bench.ts, docs/search-and-retrieval.md); higher cuts real
 * answers. openai / transformers keep the permissive 0.05 until measured for the model (unrelated-pair similarity
 * differs by model).
 */
export const SIMILARITY_FLOOR: Record<Fingerprint["provider"], number> = {
  builtin: 0.12,
  openai: 0.05,
  transformers: 0.05,
};

export function similarityFloorFor(provider: Fingerprint["provider"]): number {
  return SIMILARITY_FLOOR[provider];
}
