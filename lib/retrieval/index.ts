/** The one retrieval pipeline (docs/ARCHITECTURE.md, "Retrieval"): search, recall and remember score on top of it. */
export { adjacentPairShare, buildFtsMatch, contentWords, exactFormShare, foldWord, matchExpression, matchTerms, MAX_MATCH_TERMS, plainPhrases, queryWords, STOPWORDS, type MatchOptions } from "./match";
export { awaitingFirstVectors, backlogDegrades, planQueryVector, vectorReadiness, type QueryVectorPlan, type VectorReadinessPlan } from "./readiness";
export { similaritiesOf, vectorNeighbours, type VectorCandidate, type VectorSource } from "./knn";
export { FUSION_CALIBRATIONS, FUSION_WEIGHTS, GATED_VECTOR_WEIGHTS, fuseByRank, fuseGatedScores, fuseScores, fusionPolicyFor, recencyDecay, RRF_K, rrfTerm, SCORE_VECTOR_WEIGHTS, type FusionPolicy, type FusionWeights } from "./fusion";
export { SIMILARITY_FLOOR, similarityFloorFor } from "./floor";
export { answerReason, reasonLine, RETRIEVAL_REASONS, type Fallback, type FallbackReasonCode, type RetrievalReason, type RetrievalReasonCode } from "./reasons";
export { bandHits, CONFIDENCE_BANDS, confidenceBand, termCoverage, weakAnswerReason, type ConfidenceBand } from "./confidence";
export { ExplainRecorder, type Explain, type ExplainStage } from "./explain";
export { MARK_CLOSE, MARK_OPEN, snippetFor, snippetsOf, snippetText, stripMarkup } from "./snippet";
export { ftsTokenizerOf } from "./fts-tokens";
export { rankedByBm25 } from "./fts5-bm25";
export { BROAD_MATCH_ROWS, broadTopByBm25, broadTopWithinBudget, clearFullTextMemos, type Bm25Plan, type Bm25Row } from "./bm25-top";
export { clearSelectiveMatchCaches, SELECTIVE_ROWS, selectiveTopByBm25, type SelectiveTop } from "./selective-match";
export { bm25OfRows, MAX_SCANNED_INSTANCES } from "./bm25-rows";
export { wordListScoresOf } from "./word-lists";
