/**
 * Every module that registers an embeddable kind, imported for its side
 * effect. The worker, drift and re-embed import this so all kinds are known
 * in every process (server, `npm run worker`, CLI), whatever was loaded first.
 */
import "../graph/kinds";
import "../index/chunk-embeddings";
import "../recall/kinds";

export {};
