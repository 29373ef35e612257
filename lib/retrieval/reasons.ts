/**
 * Why a retrieval answer is empty or weak, in one vocabulary for search,
 * recall and remember (docs/ARCHITECTURE.md, "Retrieval answers are honest").
 *
 * - store_empty: nothing to search in (no chunks / traces / thoughts).
 * - no_match: searched, nothing matched.
 * - below_similarity_floor: the only vector neighbours were less similar than
 *   unrelated text usually is (see floor.ts), so they were not returned.
 * - backlog: items wait for vectors — more than the watermark (the store is
 *   degraded), or none of what is searched has one yet (awaitingFirstVectors:
 *   a fresh store, not degraded); answered lexically, `count` says how many.
 * - model_mismatch: the store's vectors are from another model; answered lexically.
 * - provider_error: the query could not be embedded (down, slow, wrong); answered lexically.
 * - vectors_unavailable: vectors cannot answer at all here; answered lexically.
 * - weak_match: there are hits, but the best of them holds little of the
 *   query (confidence band low, see confidence.ts): guesses, not answers.
 */
export const RETRIEVAL_REASONS = ["store_empty", "no_match", "below_similarity_floor", "backlog", "model_mismatch", "provider_error", "vectors_unavailable", "weak_match"] as const;
export type RetrievalReasonCode = (typeof RETRIEVAL_REASONS)[number];
/** The reasons that mean "answered lexically instead of with vectors". */
export type FallbackReasonCode = Extract<RetrievalReasonCode, "backlog" | "model_mismatch" | "provider_error" | "vectors_unavailable">;

export type RetrievalReason = { code: RetrievalReasonCode; message: string; /** backlog: the items waiting for vectors. */ count?: number };
export type Fallback = { reason: FallbackReasonCode; message: string; count?: number };

/**
 * The reason an answer carries: null when it has hits and every signal
 * asked for answered. An empty answer says why (the store is empty, a
 * fallback left it empty, the vectors were all below the floor, or nothing
 * matched); a non-empty answer that fell back says so.
 */
export function answerReason({ found, searchable, fallback, belowFloor, weak = null }: { found: number; searchable: number; fallback: Fallback | null; belowFloor: number; /** weak_match (confidence.ts) when the hits are guesses. */ weak?: RetrievalReason | null }): RetrievalReason | null {
  if (found > 0) return fallback ? { code: fallback.reason, message: weak ? `${fallback.message}; ${weak.message}` : fallback.message, ...(fallback.count !== undefined ? { count: fallback.count } : {}) } : weak;
  if (searchable === 0) return { code: "store_empty", message: "nothing is stored here yet to search" };
  if (fallback) return { code: fallback.reason, message: `${fallback.message}; nothing matched lexically`, ...(fallback.count !== undefined ? { count: fallback.count } : {}) };
  if (belowFloor > 0) return { code: "below_similarity_floor", message: `${belowFloor} vector neighbour(s) were less similar than unrelated text usually is, and were left out; nothing matched the words` };
  return { code: "no_match", message: "nothing matched the query" };
}

/** One line for people (CLI): the reason an answer is empty or weak, or "" when there is none. */
export function reasonLine(reason: RetrievalReason | null): string {
  if (!reason) return "";
  return `${reason.code}${reason.count !== undefined ? ` (${reason.count})` : ""}: ${reason.message}`;
}
