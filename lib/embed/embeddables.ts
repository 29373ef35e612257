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
