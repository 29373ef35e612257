import { registerEmbeddable, type Embeddable } from "./embed/embeddables";
import { registerPgEmbeddable, type PgEmbeddable } from "./index/embed-kinds-pg";
import { nodeEmbeddable } from "./graph/nodes";
import { nodeEmbeddablePg } from "./graph/nodes";
import { thoughtEmbeddablePg } from "./graph/thoughts";
import { thoughtEmbeddable } from "./graph/thoughts";
import { chunkEmbeddable, chunkEmbeddablePg } from "./index/chunk-embeddings";
import { learningEmbeddable, learningEmbeddablePg } from "./recall/learnings";
import { traceEmbeddable, traceEmbeddablePg } from "./recall/traces";

/**
 * Every embeddable kind. lib/embed knows kinds only through its registry, so
 * it never imports the areas above it; the entry points register these:
 * bootstrapApp() (server instrumentation, `npm start`, the worker, MCP over
 * stdio) and runCli() (the CLI). tests/embeddable-kinds.test.ts checks that
 * each entry does and that every kind the app enqueues is here.
 */
export const EMBEDDABLE_KINDS: readonly Embeddable[] = [chunkEmbeddable, traceEmbeddable, learningEmbeddable, thoughtEmbeddable, nodeEmbeddable];

/**
 * The kinds the PostgreSQL embed worker embeds: each one's text loader.
 * Chunks' vectors go to chunk_embeddings, every other kind's to the
 * kind-generic `embeddings` table. A kind ported to PostgreSQL joins by
 * adding its PgEmbeddable here.
 */
export const EMBEDDABLE_KINDS_PG: readonly PgEmbeddable[] = [chunkEmbeddablePg, traceEmbeddablePg, learningEmbeddablePg, thoughtEmbeddablePg, nodeEmbeddablePg];

/** Idempotent: registering again replaces each kind with itself. */
export function registerEmbeddableKinds(): void {
  for (const e of EMBEDDABLE_KINDS) registerEmbeddable(e);
  for (const e of EMBEDDABLE_KINDS_PG) registerPgEmbeddable(e);
}
