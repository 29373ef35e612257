import { sql, type SQL } from "drizzle-orm";
import { chunkEmbeddings } from "../db/schema/pg/store";
import type { PgStoreTx } from "../db/pg-store";

/**
 * Chunk vectors on PostgreSQL. They are stored L2-normalized as real[]
 * (chunk_embeddings), so cosine similarity is a dot product and any
 * PostgreSQL can answer a KNN with an exact scan, no extension needed.
 *
 * The scan is exact and linear, so it is bounded: when more than
 * EXACT_SCAN_LIMIT vectors of the model pass the filters, the vector leg
 * does not answer and says `vectors_unavailable` (the search then answers
 * lexically and says so) — never a silent empty answer. The limit is set by
 * measurement (bench/pg-store.bench.ts, bench/results/pg-store.md:
 * PostgreSQL 15, 384 dimensions, 2 shared cores at load ~9): p50/p95
 * 0.15/0.23 s at 1,000 vectors, 0.68/0.84 s at 5,000, 1.76/2.63 s at 10,169
 * — SQL evaluates the dot product element by element (unnest), ~0.1–0.2 ms
 * per vector. 5,000 keeps a filtered vector search under a second here;
 * past it, pgvector.
 *
 * pgvector (HNSW) is not used yet: the Debian PostgreSQL here has no pgvector
 * package and PGlite 0.5 ships it as a separate package, so its SQL could not
 * be tested. The storage is ready for it: real[] casts to vector(dim), and an
 * HNSW index on `(embedding::vector(dim)) vector_cosine_ops` per dimension is
 * the planned fast path (stores-pg.ts reports pgvector's presence).
 */
export const EXACT_SCAN_LIMIT = 5_000;

/** A vector as a PostgreSQL array literal (numbers only, so nothing from a request reaches SQL text). */
function arrayLiteral(v: ArrayLike<number>): string {
  const parts: string[] = new Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (!Number.isFinite(x)) throw new Error("vector has a non-finite component");
    parts[i] = String(x);
  }
  return `{${parts.join(",")}}`;
}

/** v / |v| (a zero vector stays zero: it is similar to nothing). */
export function normalizeVector(v: ArrayLike<number>): number[] {
  let norm = 0;
  for (let i = 0; i < v.length; i++) norm += v[i] * v[i];
  norm = Math.sqrt(norm);
  return Array.from(v, (x) => (norm > 0 ? x / norm : 0));
}

export type ChunkVector = { chunkRowId: number; inputHash: string; vector: ArrayLike<number> };

/** Store (or replace) chunk vectors of one model; vectors are normalized here. */
export async function putChunkEmbeddingsPg({ tx, fingerprintId, items, now = Date.now() }: { tx: PgStoreTx; fingerprintId: string; items: ChunkVector[]; now?: number }): Promise<number> {
  if (items.length === 0) return 0;
  const rows = items.map((i) => ({ chunkRowId: i.chunkRowId, fingerprintId, inputHash: i.inputHash, dimension: i.vector.length, embedding: normalizeVector(i.vector), embeddedAt: now }));
  await tx
    .insert(chunkEmbeddings)
    .values(rows)
    .onConflictDoUpdate({
      target: [chunkEmbeddings.chunkRowId, chunkEmbeddings.fingerprintId],
      set: { inputHash: sql`excluded.input_hash`, dimension: sql`excluded.dimension`, embedding: sql`excluded.embedding`, embeddedAt: sql`excluded.embedded_at` },
    });
  return rows.length;
}

/** Chunks with no vector of this model yet (oldest first): what an embedder works through. */
export async function listChunksWithoutEmbeddingPg({ tx, fingerprintId, limit }: { tx: PgStoreTx; fingerprintId: string; limit: number }): Promise<{ id: number; chunkSha256: string; text: string }[]> {
  const rows = (
    await tx.execute(sql`select c.id, c.chunk_sha256 as "chunkSha256", c.text from chunks c
      where not exists (select 1 from chunk_embeddings e where e.chunk_row_id = c.id and e.fingerprint_id = ${fingerprintId})
      order by c.id limit ${limit}`)
  ).rows as { id: string | number; chunkSha256: string; text: string }[];
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

export type PgVectorNeighbours =
  | { ok: true; method: "exact"; scanned: number; hits: { id: number; similarity: number }[] }
  | { ok: false; reason: "vectors_unavailable"; message: string };

/**
 * The k chunks closest to `query` (cosine, exact) among this model's vectors
 * that pass `where` (SQL over c = chunks, d = documents), closest first, ties
 * by id. Refuses (vectors_unavailable) above EXACT_SCAN_LIMIT candidates.
 */
export async function vectorNeighboursPg({ tx, fingerprintId, query, k, where, limit = EXACT_SCAN_LIMIT }: { tx: PgStoreTx; fingerprintId: string; query: ArrayLike<number>; k: number; where: SQL[]; limit?: number }): Promise<PgVectorNeighbours> {
  const filters = sql.join([sql`e.fingerprint_id = ${fingerprintId}`, sql`e.dimension = ${query.length}`, ...where], sql` and `);
  const from = sql`chunk_embeddings e join chunks c on c.id = e.chunk_row_id join documents d on d.doc_id = c.doc_id where ${filters}`;
  const [{ n }] = (await tx.execute(sql`select count(*)::int as n from (select 1 from ${from} limit ${limit + 1}) s`)).rows as { n: number }[];
  if (n > limit) {
    return { ok: false, reason: "vectors_unavailable", message: `more than ${limit} vectors match; the exact scan (no pgvector index here) is limited to ${limit} — narrow the search with filters` };
  }
  if (n === 0) return { ok: true, method: "exact", scanned: 0, hits: [] };
  const q = arrayLiteral(normalizeVector(query));
  const rows = (
    await tx.execute(sql`select c.id, (select sum(a::float8 * b) from unnest(e.embedding, ${q}::real[]) as t(a, b)) as similarity
      from ${from} order by similarity desc, c.id limit ${k}`)
  ).rows as { id: string | number; similarity: number | string }[];
  return { ok: true, method: "exact", scanned: n, hits: rows.map((r) => ({ id: Number(r.id), similarity: Number(r.similarity) })) };
}
