import type Database from "better-sqlite3";
import type { Embeddable } from "../embed/embeddables";
import { enqueueEmbeddings } from "../embed/queue";
import { forgetEmbeddings } from "../embed/vector-index";

/** Chunks are embedded as their own text; the chunk's sha256 is the input hash. */
export const CHUNK_KIND = "chunk";

export const chunkEmbeddable: Embeddable = {
  kind: CHUNK_KIND,
  artifactType: "chunk",
  load(sqlite, refIds) {
    const rows = sqlite
      .prepare("select id, text, chunk_sha256 as hash from chunks where id in (select value from json_each(?))")
      .all(JSON.stringify(refIds)) as { id: number; text: string; hash: string }[];
    return new Map(rows.map((r) => [r.id, { text: r.text, inputHash: r.hash }]));
  },
  listAll(sqlite) {
    return sqlite.prepare("select id as refId, chunk_sha256 as inputHash from chunks").all() as { refId: number; inputHash: string }[];
  },
  chunkingVersion(sqlite, refId) {
    return (sqlite.prepare("select chunking_version as v from chunks where id = ?").get(refId) as { v: number } | undefined)?.v ?? null;
  },
};

/**
 * Keep the embed queue in step with chunk writes, inside the writer's
 * transaction: new chunks wait for a vector, removed ones lose theirs.
 */
export function syncChunkEmbeddings(sqlite: Database.Database, { inserted, removed }: { inserted: number[]; removed: number[] }): void {
  if (removed.length) forgetEmbeddings({ sqlite }, removed.map((refId) => ({ kind: CHUNK_KIND, refId })));
  if (inserted.length) {
    const rows = sqlite
      .prepare("select id as refId, chunk_sha256 as inputHash from chunks where id in (select value from json_each(?))")
      .all(JSON.stringify(inserted)) as { refId: number; inputHash: string }[];
    enqueueEmbeddings({ sqlite }, rows.map((r) => ({ kind: CHUNK_KIND, ...r })));
  }
}
