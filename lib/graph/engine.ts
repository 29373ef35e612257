/**
 * The graph's steps that differ per engine (the audit ledger, the embedding
 * queue and vectors): the store repositories' shared ones. Full-text listings
 * keep their two queries beside the repository that runs them.
 */
export { audit, enqueueVectors, forgetVectors } from "../index/engine-steps";
