import { sql } from "drizzle-orm";
import { rowsOf } from "../db/pg-store";
import { CHUNKING_VERSION } from "./chunking";
import { tableEmbeddable, type PgEmbeddable } from "./embed-kinds-pg";

/** Chunks are embedded as their own text; the chunk's sha256 is the input hash. */
export const CHUNK_KIND = "chunk";

export const chunkEmbeddable = tableEmbeddable({ kind: CHUNK_KIND, artifactType: "chunk", table: "chunks", textColumn: "text", hashColumn: "chunk_sha256", versionColumn: "chunking_version" });

/** PostgreSQL: chunks' own text, the chunk's sha256 as input hash; their vectors go to chunk_embeddings, not `embeddings`. */
export const chunkEmbeddablePg: PgEmbeddable = {
  kind: CHUNK_KIND,
  artifactType: CHUNK_KIND,
  async load({ tx, refIds }) {
    const rows = refIds.length ? await rowsOf<{ id: string; text: string; chunkSha256: string }>({ tx, query: sql`select id, text, chunk_sha256 as "chunkSha256" from chunks where id in ${refIds}` }) : [];
    return new Map(rows.map((r) => [Number(r.id), { text: r.text, inputHash: r.chunkSha256, chunkingVersion: CHUNKING_VERSION }]));
  },
  missingVectors: (fingerprintId) =>
    sql`select c.id as ref_id, c.chunk_sha256 as input_hash from chunks c left join chunk_embeddings e on e.chunk_row_id = c.id and e.fingerprint_id = ${fingerprintId}
      where e.chunk_row_id is null or e.input_hash <> c.chunk_sha256`,
};
