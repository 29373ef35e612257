/**
 * Tests are an entry point like the server and the CLI: they call domain
 * functions directly, so they register the embeddable kinds the way
 * bootstrapApp() and runCli() do (tests/embeddable-kinds.test.ts checks those).
 */
import { registerEmbeddableKinds } from "@/lib/embeddable-kinds";

registerEmbeddableKinds();
