import type Database from "better-sqlite3";
import type { StoreHandle } from "../db/connection";

/**
 * Each embeddable kind (chunk, trace, learning, thought, node) registers how
 * to read its current text and input hash by ref id. The worker, drift and
 * re-embed are written once against this interface.
 */
export type Embeddable = {
  kind: string;
  /** Current text and hash for these ref ids; missing ids were deleted. */
  load(sqlite: Database.Database, refIds: number[]): Map<number, { text: string; inputHash: string }>;
  /** Every live artifact's (ref id, input hash), for drift and re-embed. */
  listAll(sqlite: Database.Database): Iterable<{ refId: number; inputHash: string }>;
  /** Artifact type recorded in provenance, e.g. "chunk". */
  artifactType: string;
  chunkingVersion?: (sqlite: Database.Database, refId: number) => number | null;
  /**
   * Bring derived texts (descriptors, handles) rendered by an older version up
   * to date before a re-embed lists what needs vectors. Runs in the re-embed's
   * transaction; returns how many rows changed.
   */
  backfill?: (handle: StoreHandle) => number;
};

/**
 * The registry lives on globalThis: Next bundles instrumentation (which
 * registers the kinds and runs the worker) apart from the route handlers that
 * re-embed and report drift, and all of them must see the same kinds.
 */
const g = globalThis as unknown as { __dualmindEmbeddables?: Map<string, Embeddable> };
function registry(): Map<string, Embeddable> {
  g.__dualmindEmbeddables ??= new Map();
  return g.__dualmindEmbeddables;
}

/**
 * Kinds are registered by the entry points (lib/embeddable-kinds.ts), not by
 * importing feature areas from here. Nothing registered means an entry point
 * forgot to: say so, rather than let the worker drop every queued item as
 * "deleted" or drift report nothing.
 */
function registered(): Map<string, Embeddable> {
  const r = registry();
  if (r.size === 0) throw new Error("no embeddable kinds are registered: the entry point must call registerEmbeddableKinds() (lib/embeddable-kinds.ts)");
  return r;
}

export function registerEmbeddable(e: Embeddable): void {
  registry().set(e.kind, e);
}

export function getEmbeddable(kind: string): Embeddable | undefined {
  return registered().get(kind);
}

export function listEmbeddables(): Embeddable[] {
  return [...registered().values()];
}

/** Tests only: forget every kind, to check that an entry point registers them. */
export function clearEmbeddablesForTests(): void {
  registry().clear();
}
