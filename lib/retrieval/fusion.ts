import type { Fingerprint } from "../embed/providers";

/**
 * The one fusion policy of search, recall and remember: lexical and vector evidence are always both considered, how
 * much each counts calibrated per provider and model by measurement (fusionPolicyFor, keyed by the model's
 * fingerprint). Three forms of the same weights: ranked lists (search) fuseByRank; relative scores (remember)
 * fuseScores; gated absolute scores (recall, one min_score) fuseGatedScores — the last two never below the lexical
 * evidence, so a weak embedder can break ties and bring what the words cannot find, but not bury what they found.
 * builtin's rank weight 0.004 keeps every bm25 order (its largest contribution is below the smallest gap between two
 * bm25 ranks in the pool) and appends what bm25 cannot find: hybrid ≥ bm25 by construction (measured:
 * bench/search-quality.bench.ts, docs/memory-quality.md). Neural providers start at equal weights until measured;
 * a request can override (w_fts / w_vec, remember's weights.vector).
 */
export type FusionWeights = { fts: number; vec: number };

/** Weights for ranked lists (RRF) per provider, when no calibration for the model is known. */
export const FUSION_WEIGHTS: Record<Fingerprint["provider"], FusionWeights> = {
  builtin: { fts: 1, vec: 0.004 },
  openai: { fts: 1, vec: 1 },
  transformers: { fts: 1, vec: 1 },
};

/**
 * Weight of the cosine beside the relative lexical score (fuseScores), per provider. builtin on LoCoMo
 * (bench/memory-quality.bench.ts, remember over 788 turns, evidence recall@10, docs/memory-quality.md):
 * w_vec 0 / 0.01 / 0.2 / 1 → 0.729 / 0.729 / 0.731 / 0.719 (without the coverage weighing: 0.709 / 0.705 /
 * 0.703 / 0.689); ranking by the cosine first (remember before this policy) 0.281, raw FTS5 bm25 0.580.
 * No weight is better than the words alone by more than one question of 231, so builtin gets 0: its cosine still brings the rows the words cannot find and orders equal relevances (remember's
 * tie-break), as its 0.004 rank weight does in search, but never reorders what the words found.
 */
export const SCORE_VECTOR_WEIGHTS: Record<Fingerprint["provider"], number> = {
  builtin: 0,
  openai: 1,
  transformers: 1,
};

/**
 * Weight of the cosine's lead over an absolute lexical score where one threshold gates the result (recall: the share
 * of the query's words a row holds × LEXICAL_SCALE, gated by min_score; fuseGatedScores), per provider. builtin on
 * the recall paraphrase set (bench/memory-quality.bench.ts part `recall`, docs/memory-quality.md, k = 5, gate 0.25):
 * w 0 / 0.5 / 1 → hit@5 0.80, MRR@5 0.80 and the target passing the gate for 0.78 of queries each, precision of what
 * passes 0.975 / 0.975 / 0.951. 1 is the better of the two signals, as recall scored before this policy: a row only
 * the vectors find (a paraphrase with no shared word) keeps its cosine, where 0 would gate every such row out.
 * Adding the whole cosine instead (fuseScores' form, w 0.5 / 1) let more unrelated rows through the gate
 * (precision 0.89 / 0.71).
 */
export const GATED_VECTOR_WEIGHTS: Record<Fingerprint["provider"], number> = {
  builtin: 1,
  openai: 1,
  transformers: 1,
};

/** A measured calibration for one model, keyed by `provider/model` (the fingerprint's identity a person can read). */
export type FusionCalibration = { ranks: FusionWeights; scoreVector: number; gatedVector: number; measuredOn: string };
/**
 * Calibrations measured for a model, keyed by provider/model: they win over the provider's defaults. The builtin
 * embedder's model name is its configuration (dimension and n-gram hashing), the same wherever it runs.
 */
export const FUSION_CALIBRATIONS: Record<string, FusionCalibration> = {};

export type FusionPolicy = {
  /** The fingerprint the weights belong to (provider/model and its id), or "lexical" when no vectors answer. */
  key: string;
  ranks: FusionWeights;
  scoreVector: number;
  /** The vector weight of gated absolute scores (recall, fuseGatedScores). */
  gatedVector: number;
  /** "measured": a calibration for this model; "provider": the provider's defaults; "request": a caller's override. */
  source: "measured" | "provider" | "request" | "lexical";
  /** What the policy is, in a sentence (explain). */
  detail: string;
};

type FingerprintLike = Pick<Fingerprint, "provider" | "model"> & { id?: string };

/** The fusion policy for the model that embedded the query (null: no vectors, lexical only). Overrides come from the request. */
export function fusionPolicyFor({ fingerprint: fp, override = {} }: { fingerprint: FingerprintLike | null; override?: { fts?: number; vec?: number; scoreVector?: number } }): FusionPolicy {
  if (!fp) return { key: "lexical", ranks: { fts: 1, vec: 0 }, scoreVector: 0, gatedVector: 0, source: "lexical", detail: "no query vector: lexical evidence alone" };
  const name = `${fp.provider}/${fp.model}`;
  const measured = FUSION_CALIBRATIONS[name];
  const base = measured ?? { ranks: FUSION_WEIGHTS[fp.provider], scoreVector: SCORE_VECTOR_WEIGHTS[fp.provider], gatedVector: GATED_VECTOR_WEIGHTS[fp.provider] };
  const ranks = { fts: override.fts ?? base.ranks.fts, vec: override.vec ?? base.ranks.vec };
  const scoreVector = override.scoreVector ?? base.scoreVector;
  const overridden = override.fts !== undefined || override.vec !== undefined || override.scoreVector !== undefined;
  const source = overridden ? "request" : measured ? "measured" : "provider";
  const key = fp.id ? `${name}#${fp.id}` : name;
  return {
    key,
    ranks,
    scoreVector,
    gatedVector: base.gatedVector,
    source,
    detail: `fusion for ${key} (${source === "measured" ? `measured: ${measured!.measuredOn}` : source === "request" ? "the request's weights" : `${fp.provider} defaults`}): ranks w_fts ${ranks.fts}, w_vec ${ranks.vec}; scores lexical + ${scoreVector} × cosine; gated scores lexical + ${base.gatedVector} × the cosine's lead`,
  };
}

export const RRF_K = 60;

/** One leg's contribution to a fused score: weight / (k + rank), 0 when the leg did not find it. */
export function rrfTerm(weight: number, rank: number | undefined): number {
  return rank === undefined ? 0 : weight / (RRF_K + rank);
}

/** Weighted reciprocal rank fusion of two ranked legs (1-based ranks). */
export function fuseByRank({ ftsRank, vecRank, weights }: { ftsRank: number | undefined; vecRank: number | undefined; weights: FusionWeights }): number {
  return rrfTerm(weights.fts, ftsRank) + rrfTerm(weights.vec, vecRank);
}

/**
 * Relevance from scores: the lexical score (relative to the best lexical hit, 0–1; 0 when the words did not find
 * it) plus the policy's vector weight × the cosine (0 without a current vector). Never below the lexical evidence.
 */
export function fuseScores({ lexical, vector, policy }: { lexical: number | undefined; vector: number | undefined; policy: Pick<FusionPolicy, "scoreVector"> }): number {
  return (lexical ?? 0) + policy.scoreVector * Math.max(0, vector ?? 0);
}

/**
 * Relevance from absolute scores that one threshold gates (recall): the lexical score plus the policy's gated vector
 * weight × what the cosine has over it. Never below the lexical evidence; with weight 1 it is the better of the two,
 * so a gate calibrated on either signal alone stays calibrated, and a row the words miss (a paraphrase) keeps its cosine.
 */
export function fuseGatedScores({ lexical, vector, policy }: { lexical: number | undefined; vector: number | undefined; policy: Pick<FusionPolicy, "gatedVector"> }): number {
  const l = lexical ?? 0;
  return l + policy.gatedVector * Math.max(0, (vector ?? 0) - l);
}

/** exp(−age/τ) with τ in days; null when recency decay is off. */
export function recencyDecay(updatedAt: number, now: number, tauDays: number | undefined): number | null {
  if (!tauDays) return null;
  return Math.exp(-Math.max(0, now - updatedAt) / (tauDays * 86_400_000));
}
