import { registerEmbeddable, type Embeddable } from "./embed/embeddables";
import { nodeEmbeddable } from "./graph/nodes";
import { thoughtEmbeddable } from "./graph/thoughts";
import { chunkEmbeddable } from "./index/chunk-embeddings";
import { learningEmbeddable } from "./recall/learnings";
import { traceEmbeddable } from "./recall/traces";

/**
 * Every embeddable kind. lib/embed knows kinds only through its registry, so
 * it never imports the areas above it; the entry points register these:
 * bootstrapApp() (server instrumentation, `npm start`, the worker, MCP over
 * stdio) and runCli() (the CLI). tests/embeddable-kinds.test.ts checks that
 * each entry does and that every kind the app enqueues is here.
 */
export const EMBEDDABLE_KINDS: readonly Embeddable[] = [chunkEmbeddable, traceEmbeddable, learningEmbeddable, thoughtEmbeddable, nodeEmbeddable];

/** Idempotent: registering again replaces each kind with itself. */
export function registerEmbeddableKinds(): void {
  for (const e of EMBEDDABLE_KINDS) registerEmbeddable(e);
}
