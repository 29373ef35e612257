import { tableEmbeddable } from "./embed-kinds-pg";

/** Chunks are embedded as their own text; the chunk's sha256 is the input hash. */
export const CHUNK_KIND = "chunk";

export const chunkEmbeddable = tableEmbeddable({ kind: CHUNK_KIND, artifactType: "chunk", table: "chunks", textColumn: "text", hashColumn: "chunk_sha256", versionColumn: "chunking_version" });
