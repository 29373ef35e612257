import { sql, type SQL } from "drizzle-orm";
import { rowsOf, type SqlRunner } from "../db/pg-store";

/**
 * Vectors on PostgreSQL, stored L2-normalized as real[] (cosine = dot
 * product), so any PostgreSQL answers a KNN: through pgvector's HNSW index
 * where an admin created the extension (the app never creates it), else by
 * an exact scan bounded by EXACT_SCAN_LIMIT (past it the vector leg says
 * `vectors_unavailable`). The rules and the limit's measurement are in
 * docs/postgresql.md. Every function takes only `execute` (SqlRunner), so the
 * same SQL runs on PGlite, which ships pgvector (tests/pglite-vectors.test.ts).
 * Other kinds' vectors (`embeddings`) are searched by the same code through a VectorSpace.
 */
export const EXACT_SCAN_LIMIT = 5_000;

/** pgvector's HNSW index takes `vector` up to 2,000 dimensions; larger models keep the exact scan. */
export const HNSW_MAX_DIMENSION = 2_000;


/** A table of vectors: chunks' own, or the kind-generic one (trace, learning, ...). */
export type VectorTable = "chunk_embeddings" | "embeddings";

/** The partial HNSW index of one dimension (the name resolves in the store's schema through search_path). */
export function hnswIndexName({ dimension, table = "chunk_embeddings" }: { dimension: number; table?: VectorTable }): string {
  return `${table}_hnsw_${dimension}`;
}

function hnswDimension(dimension: number): boolean {
  return Number.isInteger(dimension) && dimension >= 1 && dimension <= HNSW_MAX_DIMENSION;
}

export type PgVectorSupport = { pgvector: string | null; iterativeScan: boolean; hnswDimensions: number[] };

/** pgvector's version when the `vector` extension is created in this database (else null), and this store's HNSW indexes on `table`. */
export async function pgvectorSupportPg({ db, table = "chunk_embeddings" }: { db: SqlRunner; table?: VectorTable }): Promise<PgVectorSupport> {
  const [ext] = await rowsOf<{ extversion: string }>({ tx: db, query: sql`select extversion from pg_extension where extname = 'vector'` });
  const pgvector = ext?.extversion ?? null;
  const prefix = hnswIndexName({ dimension: 0, table }).slice(0, -1);
  const idx = pgvector
    ? await rowsOf<{ relname: string }>({ tx: db, query: sql`select c.relname from pg_class c where c.relnamespace = (select oid from pg_namespace where nspname = current_schema()) and c.relkind = 'i' and starts_with(c.relname, ${prefix})` })
    : [];
  const hnswDimensions = idx.map((r) => Number(r.relname.slice(prefix.length))).filter(hnswDimension).sort((a, b) => a - b);
  return { pgvector, iterativeScan: pgvector !== null && versionAtLeast(pgvector, [0, 8]), hnswDimensions };
}

function versionAtLeast(version: string, [major, minor]: [number, number]): boolean {
  const [a = 0, b = 0] = version.split(".").map(Number);
  return a > major || (a === major && b >= minor);
}

/**
 * With pgvector, make sure this store has the HNSW index of `dimension`
 * (cosine, on `(embedding::vector(dim))`, partial on `dimension = dim`).
 * Replicas queue on an advisory lock so one builds it. Returns whether the
 * index exists now. Without pgvector (or past HNSW_MAX_DIMENSION), false.
 */
export async function ensureHnswIndexPg({ db, dimension, table = "chunk_embeddings" }: { db: SqlRunner; dimension: number; table?: VectorTable }): Promise<boolean> {
  if (!hnswDimension(dimension)) return false;
  const [row] = await rowsOf<{ ext: boolean; idx: boolean }>({ tx: db, query: sql`select exists (select 1 from pg_extension where extname = 'vector') as ext, to_regclass(${hnswIndexName({ dimension, table })}) is not null as idx` });
  if (!row?.ext) return false;
  if (row.idx) return true;
  // The chunk table's lock key is the one it always had (replicas of older builds build the same index).
  await db.execute(sql`select pg_advisory_xact_lock(hashtextextended(${table === "chunk_embeddings" ? `dualmind:hnsw:${dimension}` : `dualmind:hnsw:${table}:${dimension}`} || current_schema(), 0))`);
  // The dimension is a checked integer: it is part of a type and an index predicate, which cannot be parameters.
  const d = sql.raw(String(dimension));
  // Building over vectors written before pgvector was created can outlast the statement limit: lift it for the build only.
  const [{ limit }] = await rowsOf<{ limit: string }>({ tx: db, query: sql`select current_setting('statement_timeout') as limit` });
  await db.execute(sql`select set_config('statement_timeout', '0', true)`);
  await db.execute(sql`create index if not exists ${sql.identifier(hnswIndexName({ dimension, table }))} on ${sql.identifier(table)} using hnsw ((embedding::vector(${d})) vector_cosine_ops) where dimension = ${d}`);
  await db.execute(sql`select set_config('statement_timeout', ${limit}, true)`);
  return true;
}

/** A vector as a PostgreSQL array literal (numbers only, so nothing from a request reaches SQL text). */
export function arrayLiteral(v: ArrayLike<number>): string {
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

/** Rows per insert statement (6 parameters each, well under PostgreSQL's 65,535). */
const PUT_BATCH = 1_000;

/**
 * Store (or replace) chunk vectors of one model; vectors are normalized
 * here. With pgvector, the first write of a dimension builds its HNSW index.
 */
export async function putChunkEmbeddingsPg({ tx, fingerprintId, items, now = Date.now() }: { tx: SqlRunner; fingerprintId: string; items: ChunkVector[]; now?: number }): Promise<number> {
  if (items.length === 0) return 0;
  for (const dimension of new Set(items.map((i) => i.vector.length))) await ensureHnswIndexPg({ db: tx, dimension });
  for (let at = 0; at < items.length; at += PUT_BATCH) {
    const values = items.slice(at, at + PUT_BATCH).map((i) => sql`(${i.chunkRowId}, ${fingerprintId}, ${i.inputHash}, ${i.vector.length}, ${arrayLiteral(normalizeVector(i.vector))}::real[], ${now})`);
    await tx.execute(sql`insert into chunk_embeddings (chunk_row_id, fingerprint_id, input_hash, dimension, embedding, embedded_at) values ${sql.join(values, sql`, `)}
      on conflict (chunk_row_id, fingerprint_id) do update set input_hash = excluded.input_hash, dimension = excluded.dimension, embedding = excluded.embedding, embedded_at = excluded.embedded_at`);
  }
  return items.length;
}

export type KindVector = { kind: string; refId: number; inputHash: string; vector: ArrayLike<number> };

/**
 * Store (or replace) vectors of the non-chunk kinds (embeddings), as
 * putChunkEmbeddingsPg does for chunks: normalized, one row per (kind, ref, model).
 */
export async function putKindEmbeddingsPg({ tx, fingerprintId, items, now = Date.now() }: { tx: SqlRunner; fingerprintId: string; items: KindVector[]; now?: number }): Promise<number> {
  if (items.length === 0) return 0;
  for (const dimension of new Set(items.map((i) => i.vector.length))) await ensureHnswIndexPg({ db: tx, dimension, table: "embeddings" });
  for (let at = 0; at < items.length; at += PUT_BATCH) {
    const values = items.slice(at, at + PUT_BATCH).map((i) => sql`(${i.kind}, ${i.refId}, ${fingerprintId}, ${i.inputHash}, ${i.vector.length}, 'document', ${arrayLiteral(normalizeVector(i.vector))}::real[], ${now})`);
    await tx.execute(sql`insert into embeddings (kind, ref_id, fingerprint_id, input_hash, dimension, task, embedding, embedded_at) values ${sql.join(values, sql`, `)}
      on conflict (kind, ref_id, fingerprint_id) do update set input_hash = excluded.input_hash, dimension = excluded.dimension, task = excluded.task, embedding = excluded.embedding, embedded_at = excluded.embedded_at`);
  }
  return items.length;
}

/** Forget these artifacts' vectors and queue rows (they were deleted), in the caller's transaction. */
export async function forgetKindEmbeddingsPg({ tx, kind, refIds }: { tx: SqlRunner; kind: string; refIds: number[] }): Promise<void> {
  if (refIds.length === 0) return;
  // One array parameter, not a bound list: retention can forget more ids than a statement takes parameters.
  const ids = `{${refIds.map((id) => String(Math.trunc(id))).join(",")}}`;
  await tx.execute(sql`delete from embeddings where kind = ${kind} and ref_id = any(${ids}::bigint[])`);
  await tx.execute(sql`delete from embed_queue where kind = ${kind} and ref_id = any(${ids}::bigint[])`);
}

/** Chunks with no vector of this model yet (oldest first): what an embedder works through. */
export async function listChunksWithoutEmbeddingPg({ tx, fingerprintId, limit }: { tx: SqlRunner; fingerprintId: string; limit: number }): Promise<{ id: number; chunkSha256: string; text: string }[]> {
  const found = await rowsOf<{ id: string | number; chunkSha256: string; text: string }>({
    tx,
    query: sql`select c.id, c.chunk_sha256 as "chunkSha256", c.text from chunks c
      where not exists (select 1 from chunk_embeddings e where e.chunk_row_id = c.id and e.fingerprint_id = ${fingerprintId})
      order by c.id limit ${limit}`,
  });
  return found.map((r) => ({ ...r, id: Number(r.id) }));
}

/**
 * Where a KNN looks: the vectors' table (alias e), what it joins (for
 * filters and to drop stale rows), the hit's id, and filters every row must
 * pass. Built from code (chunkVectorSpace, kindVectorSpace), never from a request.
 */
export type VectorSpace = { table: VectorTable; from: SQL; id: SQL; where: SQL[] };

/** Chunks' vectors; `where` is SQL over c = chunks, d = documents. */
export function chunkVectorSpace(where: SQL[]): VectorSpace {
  return { table: "chunk_embeddings", from: sql`chunk_embeddings e join chunks c on c.id = e.chunk_row_id join documents d on d.doc_id = c.doc_id`, id: sql`c.id`, where };
}

/**
 * One kind's vectors in `embeddings`, joined to the kind's own table so only
 * vectors of a row that still exists with the text they were made from
 * (its current hash) are neighbours. Table and column names are code constants.
 */
export function kindVectorSpace({ kind, table, hashColumn }: { kind: string; table: string; hashColumn: string }): VectorSpace {
  return {
    table: "embeddings",
    from: sql`embeddings e join ${sql.identifier(table)} r on r.id = e.ref_id and r.${sql.identifier(hashColumn)} = e.input_hash`,
    id: sql`e.ref_id`,
    where: [sql`e.kind = ${kind}`],
  };
}

export type PgVectorNeighbours =
  | { ok: true; method: "hnsw" | "exact"; scanned: number | null; hits: { id: number; similarity: number }[] }
  | { ok: false; reason: "vectors_unavailable"; message: string };

/** hnsw.ef_search for k (pgvector's default 40, its maximum 1,000): 400 by measurement (bench/results/pg-store.md). Without iterative scans, over-fetch 10×. */
function efSearch(k: number, iterative: boolean): number {
  return Math.min(1_000, Math.max(400, iterative ? 4 * k : 10 * k));
}

/**
 * The k chunks closest to `query` (cosine) among this model's vectors that pass `where` (SQL over c = chunks,
 * d = documents), closest first, ties by id: an HNSW index walk (approximate, any size), else an exact scan that
 * refuses (vectors_unavailable) above `limit` candidates. A query of another dimension is refused, saying so.
 */
export async function vectorNeighboursPg({ where, ...rest }: { tx: SqlRunner; fingerprintId: string; query: ArrayLike<number>; k: number; where: SQL[]; limit?: number; /** hnsw.ef_search instead of efSearch(k) (the bench's sweep). */ efSearch?: number }): Promise<PgVectorNeighbours> {
  return spaceNeighboursPg({ space: chunkVectorSpace(where), ...rest });
}

/** The same KNN over any VectorSpace (a kind's vectors: kindVectorSpace); hits carry the space's id. */
export async function spaceNeighboursPg({ tx, space, fingerprintId, query, k, limit = EXACT_SCAN_LIMIT, efSearch: ef }: { tx: SqlRunner; space: VectorSpace; fingerprintId: string; query: ArrayLike<number>; k: number; limit?: number; efSearch?: number }): Promise<PgVectorNeighbours> {
  const [stored] = await rowsOf<{ dimension: number }>({ tx, query: sql`select e.dimension from ${sql.identifier(space.table)} e where ${sql.join([sql`e.fingerprint_id = ${fingerprintId}`, ...(space.table === "embeddings" ? space.where : [])], sql` and `)} limit 1` });
  if (stored && stored.dimension !== query.length) {
    return { ok: false, reason: "vectors_unavailable", message: `the query vector has ${query.length} dimensions but this model's stored vectors have ${stored.dimension}: re-embed the store or query with the same model` };
  }
  if (!stored) return { ok: true, method: "exact", scanned: 0, hits: [] };
  const support = await pgvectorSupportPg({ db: tx, table: space.table });
  if (support.hnswDimensions.includes(query.length)) return hnswNeighbours({ tx, space, fingerprintId, query, k, limit, iterative: support.iterativeScan, ef: ef ?? efSearch(k, support.iterativeScan) });
  return exactNeighbours({ tx, space, fingerprintId, query, k, limit });
}

/**
 * The HNSW KNN statement: rows passing the filters ordered by cosine distance
 * to the query. `exact` orders by an expression the index does not have, so
 * it is a scan of the filtered rows (in pgvector's C) instead of an index walk.
 */
export function hnswKnnSql({ fingerprintId, query, k, where, exact = false, space = chunkVectorSpace(where) }: { fingerprintId: string; query: ArrayLike<number>; k: number; where: SQL[]; exact?: boolean; space?: VectorSpace }): SQL {
  if (!hnswDimension(query.length)) throw new Error(`no HNSW index for ${query.length} dimensions`);
  // The dimension is a literal (checked integer): the cast's type modifier and the partial index's predicate need one.
  const d = sql.raw(String(query.length));
  const distance = sql`(e.embedding::vector(${d})) <=> ${arrayLiteral(normalizeVector(query))}::real[]::vector(${d})`;
  const filters = sql.join([sql`e.dimension = ${d}`, sql`e.fingerprint_id = ${fingerprintId}`, ...space.where], sql` and `);
  // ORDER BY the index's own expression, so the planner can walk the index; `+ 0` is not that expression.
  return sql`select ${space.id} as id, ${distance} as distance from ${space.from}
    where ${filters} order by ${exact ? sql`(${distance}) + 0, ${space.id}` : distance} limit ${k}`;
}

async function hnswNeighbours({ tx, space, fingerprintId, query, k, limit, iterative, ef }: { tx: SqlRunner; space: VectorSpace; fingerprintId: string; query: ArrayLike<number>; k: number; limit: number; iterative: boolean; ef: number }): Promise<PgVectorNeighbours> {
  // set_config(…, true): for this transaction only.
  await tx.execute(sql`select set_config('hnsw.ef_search', ${String(Math.min(1_000, Math.max(1, Math.round(ef))))}, true)`);
  if (iterative) await tx.execute(sql`select set_config('hnsw.iterative_scan', 'strict_order', true)`);
  const asHits = (found: { id: string | number; distance: number | string }[]) => found.map((r) => ({ id: Number(r.id), similarity: 1 - Number(r.distance) }));
  let hits = asHits(await rowsOf({ tx, query: hnswKnnSql({ fingerprintId, query, k, where: space.where, space }) }));
  if (hits.length < k) {
    // The walk can stop short under selective filters (or past hnsw.max_scan_tuples): if more rows pass them, rank those
    // exactly — but only up to `limit` of them, as without pgvector: past that the walk's own answer stands.
    const passing = await countPassing({ tx, space, fingerprintId, dimension: query.length, limit });
    if (passing > hits.length && passing <= limit) {
      const all = asHits(await rowsOf({ tx, query: hnswKnnSql({ fingerprintId, query, k, where: space.where, space, exact: true }) }));
      if (all.length > hits.length) hits = all;
    }
  }
  // Ties by id, as the exact scan orders them.
  hits.sort((a, b) => b.similarity - a.similarity || a.id - b.id);
  return { ok: true, method: "hnsw", scanned: null, hits };
}

/** The model's vectors of this dimension in the space that pass its filters. */
function passingRows({ space, fingerprintId, dimension }: { space: VectorSpace; fingerprintId: string; dimension: number }): SQL {
  const filters = sql.join([sql`e.fingerprint_id = ${fingerprintId}`, sql`e.dimension = ${dimension}`, ...space.where], sql` and `);
  return sql`${space.from} where ${filters}`;
}

/** How many rows pass, counted up to limit + 1 (enough to tell "over the limit"). */
async function countPassing({ tx, limit, ...of }: { tx: SqlRunner; space: VectorSpace; fingerprintId: string; dimension: number; limit: number }): Promise<number> {
  const [{ n }] = await rowsOf<{ n: number }>({ tx, query: sql`select count(*)::int as n from (select 1 from ${passingRows(of)} limit ${limit + 1}) s` });
  return n;
}

async function exactNeighbours({ tx, space, fingerprintId, query, k, limit }: { tx: SqlRunner; space: VectorSpace; fingerprintId: string; query: ArrayLike<number>; k: number; limit: number }): Promise<PgVectorNeighbours> {
  const from = passingRows({ space, fingerprintId, dimension: query.length });
  const n = await countPassing({ tx, space, fingerprintId, dimension: query.length, limit });
  if (n > limit) {
    return { ok: false, reason: "vectors_unavailable", message: `more than ${limit} vectors match; the exact scan (no pgvector HNSW index here) is limited to ${limit} — narrow the search with filters` };
  }
  if (n === 0) return { ok: true, method: "exact", scanned: 0, hits: [] };
  const q = arrayLiteral(normalizeVector(query));
  const found = await rowsOf<{ id: string | number; similarity: number | string }>({
    tx,
    query: sql`select ${space.id} as id, (select sum(a::float8 * b) from unnest(e.embedding, ${q}::real[]) as t(a, b)) as similarity
      from ${from} order by similarity desc, ${space.id} limit ${k}`,
  });
  return { ok: true, method: "exact", scanned: n, hits: found.map((r) => ({ id: Number(r.id), similarity: Number(r.similarity) })) };
}
