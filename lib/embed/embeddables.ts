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

/**
 * A registry of kinds (this one, and PostgreSQL's in lib/index/embed-kinds-pg.ts) lives on globalThis: Next bundles
 * instrumentation (which registers the kinds and runs the worker) apart from the route handlers that re-embed and
 * report drift, and all of them must see the same kinds. Registering a kind again replaces it.
 */
export function kindRegistry<T extends { kind: string }>(key: string): { register: (e: T) => void; all: () => Map<string, T> } {
  const g = globalThis as unknown as Record<string, Map<string, T> | undefined>;
  const all = () => (g[key] ??= new Map());
  return { register: (e) => void all().set(e.kind, e), all };
}

const kinds = kindRegistry<Embeddable>("__dualmindEmbeddables");

/**
 * Kinds are registered by the entry points (lib/embeddable-kinds.ts), not by
 * importing feature areas from here. Nothing registered means an entry point
 * forgot to: say so, rather than let the worker drop every queued item as
 * "deleted" or drift report nothing.
 */
function registered(): Map<string, Embeddable> {
  const r = kinds.all();
  if (r.size === 0) throw new Error("no embeddable kinds are registered: the entry point must call registerEmbeddableKinds() (lib/embeddable-kinds.ts)");
  return r;
}

export const registerEmbeddable = kinds.register;

export function getEmbeddable(kind: string): Embeddable | undefined {
  return registered().get(kind);
}

export function listEmbeddables(): Embeddable[] {
  return [...registered().values()];
}

/** Tests only: forget every kind, to check that an entry point registers them. */
export function clearEmbeddablesForTests(): void {
  kinds.all().clear();
}
