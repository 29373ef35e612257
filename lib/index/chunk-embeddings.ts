import type { ChunkRow } from "../db/schema/index";
import type { Embeddable, EmbeddableRef } from "../embed/embeddables";

/** Chunks are embedded as their own text; the chunk's sha256 is the input hash. */
export const CHUNK_KIND = "chunk";

type ChunkTextRow = Pick<ChunkRow, "id" | "text"> & { hash: string };

export const chunkEmbeddable: Embeddable = {
  kind: CHUNK_KIND,
  artifactType: "chunk",
  load({ handle, refIds }) {
    const rows = handle.sqlite
      .prepare("select id, text, chunk_sha256 as hash from chunks where id in (select value from json_each(?))")
      .all(JSON.stringify(refIds)) as ChunkTextRow[];
    return new Map(rows.map((r) => [r.id, { text: r.text, inputHash: r.hash }]));
  },
  listAll({ handle }) {
    return handle.sqlite.prepare("select id as refId, chunk_sha256 as inputHash from chunks").all() as EmbeddableRef[];
  },
  chunkingVersion({ handle, refId }) {
    return (handle.sqlite.prepare("select chunking_version as chunkingVersion from chunks where id = ?").get(refId) as Pick<ChunkRow, "chunkingVersion"> | undefined)?.chunkingVersion ?? null;
  },
};
