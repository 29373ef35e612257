import type { StoreHandle } from "../db/connection";

/** An artifact's current text and the hash its vector must match. */
export type EmbeddableText = { text: string; inputHash: string };
/** A live artifact, by ref id, with the hash of its current text. */
export type EmbeddableRef = { refId: number; inputHash: string };

/**
 * Each embeddable kind (chunk, trace, learning, thought, node) registers how
 * to read its current text and input hash by ref id. The worker, drift and
 * re-embed are written once against this interface.
 */
export type Embeddable = {
  kind: string;
  /** Current text and hash for these ref ids; missing ids were deleted. */
  load(args: { handle: StoreHandle; refIds: number[] }): Map<number, EmbeddableText>;
  /** Every live artifact's (ref id, input hash), for drift and re-embed. */
  listAll(args: { handle: StoreHandle }): Iterable<EmbeddableRef>;
  /** Artifact type recorded in provenance, e.g. "chunk". */
  artifactType: string;
  chunkingVersion?: (args: { handle: StoreHandle; refId: number }) => number | null;
  /**
   * Bring derived texts (descriptors, handles) rendered by an older version up
   * to date before a re-embed lists what needs vectors. Runs in the re-embed's
   * transaction; returns how many rows changed.
   */
  backfill?: (args: { handle: StoreHandle }) => number;
};

const registry = new Map<string, Embeddable>();

export function registerEmbeddable(e: Embeddable): void {
  registry.set(e.kind, e);
}

export function getEmbeddable(kind: string): Embeddable | undefined {
  return registry.get(kind);
}

export function listEmbeddables(): Embeddable[] {
  return [...registry.values()];
}
