import type Database from "better-sqlite3";
import { eq } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { preparedOnce } from "../db/statements";
import { embeddings } from "../db/schema/embed";
import { appendAudit } from "../governance/audit";
import { log } from "../log";
import { annNeighbours, buildAnnIndex } from "./ann-index";

/**
 * Vector search over the `embeddings` BLOBs of one store
 * (docs/search-and-retrieval.md): a sqlite-vec `bit[]` index of SimHash codes
 * per model fingerprint picks candidates and exact cosine on their BLOBs
 * ranks them; large sets go first to ann-index.ts. Without sqlite-vec both
 * run in JS, so vector search degrades in speed, never in answers.
 */

const MIN_BITS = 1024;
/** sqlite-vec refuses a KNN with k above this (an SQLITE_ERROR, which would be a 500). */
export const VEC0_MAX_K = 4096;

export type VectorHit = { refId: number; distance: number; embeddingId: number };

function nextPow2(n: number): number {
  let p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Deterministic signs: the same codes on every machine, for every store.
function signTable(rounds: number, width: number): Int8Array[] {
  let state = 0x2545f491;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return state >>> 0;
  };
  return Array.from({ length: rounds }, () => Int8Array.from({ length: width }, () => (next() & 1 ? 1 : -1)));
}

function fwht(a: Float32Array): void {
  for (let h = 1; h < a.length; h <<= 1) {
    for (let i = 0; i < a.length; i += h << 1) {
      for (let j = i; j < i + h; j++) {
        const x = a[j];
        const y = a[j + h];
        a[j] = x + y;
        a[j + h] = x - y;
      }
    }
  }
}

const codecs = new Map<number, { bits: number; encode: (v: Float32Array) => Buffer }>();

/** SimHash codec for a dimension: ≥1024 sign bits from rounds of (random signs → Hadamard). */
export function simhashCodec(dim: number) {
  let codec = codecs.get(dim);
  if (codec) return codec;
  const width = nextPow2(dim);
  const rounds = Math.max(1, Math.ceil(MIN_BITS / width));
  const bits = width * rounds;
  const signs = signTable(rounds, width);
  const buf = new Float32Array(width);
  codec = {
    bits,
    encode(v: Float32Array): Buffer {
      const out = Buffer.alloc(bits / 8);
      for (let r = 0; r < rounds; r++) {
        buf.fill(0);
        const s = signs[r];
        for (let i = 0; i < dim; i++) buf[i] = v[i] * s[i];
        fwht(buf);
        const base = r * width;
        for (let j = 0; j < width; j++) if (buf[j] > 0) out[(base + j) >> 3] |= 1 << ((base + j) & 7);
      }
      return out;
    },
  };
  codecs.set(dim, codec);
  return codec;
}

export function vecIndexTable(fingerprintId: string): string {
  if (!/^[0-9a-f]{16}$/.test(fingerprintId)) throw new Error(`bad fingerprint id ${fingerprintId}`);
  return `vec_${fingerprintId}`;
}

export function vectorToBlob(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

export function blobToVector(b: Buffer): Float32Array {
  // Copy: the Buffer may not be 4-byte aligned.
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/** Create the fingerprint's vec0 index if sqlite-vec is loaded. Returns false when vectors are index-less. */
export function ensureVecIndex({ handle, fingerprintId, dim }: { handle: StoreHandle; fingerprintId: string; dim: number }): boolean {
  if (!handle.vectors.available) return false;
  const { bits } = simhashCodec(dim);
  handle.sqlite.exec(`create virtual table if not exists ${vecIndexTable(fingerprintId)} using vec0(kind text partition key, code bit[${bits}])`);
  return true;
}

export function vecIndexExists({ handle, fingerprintId }: { handle: StoreHandle; fingerprintId: string }): boolean {
  return !!handle.sqlite.prepare("select 1 from sqlite_master where name = ?").get(vecIndexTable(fingerprintId));
}

/** Add or replace one embedding's code in the index (call inside the writer's transaction). */
export function indexVector({ handle, ...args }: { handle: StoreHandle; fingerprintId: string; embeddingId: number; kind: string; vector: Float32Array }): void {
  if (!handle.vectors.available) return;
  const table = vecIndexTable(args.fingerprintId);
  const code = simhashCodec(args.vector.length).encode(args.vector);
  handle.sqlite.prepare(`delete from ${table} where rowid = ?`).run(BigInt(args.embeddingId));
  handle.sqlite.prepare(`insert into ${table}(rowid, kind, code) values (?, ?, vec_bit(?))`).run(BigInt(args.embeddingId), args.kind, code);
}

/**
 * Forget deleted artifacts: their vectors (every model), index entries and
 * queued work. Call inside the deleting transaction.
 */
type EmbeddingRef = { id: number; fp: string };

export function forgetEmbeddings({ handle, items }: { handle: StoreHandle; items: { kind: string; refId: number }[] }): void {
  if (items.length === 0) return;
  const { sqlite } = handle;
  const loaded = handle.vectors.available;
  const rows = sqlite.prepare("select id, fingerprint_id as fp from embeddings where kind = ? and ref_id = ?");
  const del = sqlite.prepare("delete from embeddings where id = ?");
  const dequeue = sqlite.prepare("delete from embed_queue where kind = ? and ref_id = ?");
  for (const it of items) {
    for (const r of rows.all(it.kind, it.refId) as EmbeddingRef[]) {
      if (loaded && vecIndexExists({ handle, fingerprintId: r.fp })) sqlite.prepare(`delete from ${vecIndexTable(r.fp)} where rowid = ?`).run(BigInt(r.id));
      del.run(r.id);
    }
    dequeue.run(it.kind, it.refId);
  }
}

type VectorPageRow = { id: number; kind: string; vector: Buffer };

/** Rebuild a fingerprint's index from the BLOBs alone (no provider call), e.g. after an extension upgrade. Audited. */
export function rebuildVecIndex({ handle, fingerprintId, actor }: { handle: StoreHandle; fingerprintId: string; actor: string }): number {
  if (!handle.vectors.available) return 0;
  const { sqlite } = handle;
  const first = handle.db.select({ dim: embeddings.dim }).from(embeddings).where(eq(embeddings.fingerprintId, fingerprintId)).limit(1).get();
  if (!first) return 0;
  const table = vecIndexTable(fingerprintId);
  // Paged by primary key (`+` keeps the planner off embeddings_fp_idx, whose
  // order is (fingerprint, kind, id): through it every page re-read and
  // re-sorted all earlier rows, so a 1M rebuild grew quadratically).
  const page = sqlite.prepare("select id, kind, vector from embeddings where id > ? and +fingerprint_id = ? order by id limit 1000");
  let n = 0;
  sqlite.transaction(() => {
    sqlite.exec(`drop table if exists ${table}`);
    ensureVecIndex({ handle, fingerprintId, dim: first.dim });
    const ins = sqlite.prepare(`insert into ${table}(rowid, kind, code) values (?, ?, vec_bit(?))`);
    const codec = simhashCodec(first.dim);
    // Paged reads: better-sqlite3 cannot write while an iterator is open.
    for (let after = 0; ; ) {
      const rows = page.all(after, fingerprintId) as VectorPageRow[];
      if (rows.length === 0) break;
      for (const r of rows) ins.run(BigInt(r.id), r.kind, codec.encode(blobToVector(r.vector)));
      n += rows.length;
      after = rows[rows.length - 1].id;
    }
    appendAudit({ actor, action: "store.embeddings.rebuild_index", target: `store:${handle.store}`, details: { vectors: n } });
  })();
  return n;
}

/**
 * Rebuild a fingerprint's approximate (HNSW) indexes from the BLOBs, one per
 * kind large enough to have one, and save them beside index.db. Returns the
 * vectors indexed per kind.
 */
export function rebuildAnnIndexes({ handle, fingerprintId }: { handle: StoreHandle; fingerprintId: string }): Record<string, number> {
  const kinds = handle.sqlite.prepare("select kind, min(dim) as dim from embeddings where fingerprint_id = ? group by kind").all(fingerprintId) as { kind: string; dim: number }[];
  const out: Record<string, number> = {};
  for (const { kind, dim } of kinds) out[kind] = buildAnnIndex({ source: { db: handle.sqlite, schema: "main" }, fingerprintId, kind, dim, fresh: true });
  return out;
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

type Scored = { id: number; ref_id: number; vector: Buffer };
type DistanceRow = { id: number; ref_id: number; distance: number };
/** vec0 hands rowids back as bigint when they exceed 2^53, else number. */
type VecRowidRow = { rowid: number | bigint };

function rankExactly(rows: Iterable<Scored>, query: Float32Array, k: number): VectorHit[] {
  const hits: VectorHit[] = [];
  for (const r of rows) hits.push({ refId: r.ref_id, embeddingId: r.id, distance: 1 - dot(blobToVector(r.vector), query) });
  hits.sort((a, b) => a.distance - b.distance || a.refId - b.refId);
  return hits.slice(0, k);
}

/**
 * Where a KNN reads: a store's own connection (schema `main`), or core
 * attached read-only to a reader connection (schema `core`).
 */
export type KnnSource = { db: Database.Database; schema: "main" | "core"; vectorsLoaded: boolean };

export function knnSourceOf(handle: StoreHandle): KnnSource {
  return { db: handle.sqlite, schema: "main", vectorsLoaded: handle.vectors.available };
}

export type KnnOptions = ({ handle: StoreHandle; source?: never } | { source: KnnSource; handle?: never }) & {
  kind: string;
  fingerprintId: string;
  /** L2-normalized query vector from the same fingerprint. */
  query: Float32Array;
  k: number;
  /** Scan every BLOB instead of the SimHash prefilter. */
  exact?: boolean;
  /** Only these artifacts may be returned (filters applied before ranking). */
  allowedRefIds?: number[];
};

export type KnnMethod = "ann+rescore" | "simhash+rescore" | "exact-scan" | "exact-scan-js";

/** Filtered sets up to this size are ranked exactly (cheaper than over-fetching from the graph). */
const ANN_FILTER_EXACT_MAX = 2_000;
/** Deepest graph search a filtered query may over-fetch before it ranks its allowed set exactly instead. */
const ANN_MAX_FETCH = 4_096;

/** Allowed candidates a filtered graph search aims to rescore: twice the unfiltered pool, since the graph's deeper answers are less sure. */
const filteredPool = (k: number) => Math.max(4 * k, k + 40);

type RefRow = { id: number; ref_id: number };

/**
 * The HNSW path: candidates from the graph (int8 codes), rescored exactly on
 * their BLOBs. A filter widens the graph search by its selectivity (allowed
 * rows ÷ indexed rows) so about filteredPool(k) allowed candidates come back,
 * and only those are read and rescored; null (answer another way: exactly)
 * when no index serves, when the filter keeps so few rows that ranking them
 * exactly is cheaper, or when too few allowed candidates survive to be sure
 * of the top k.
 */
function annKnn({ sqlite, schema, opts, k }: { sqlite: Database.Database; schema: "main" | "core"; opts: Omit<KnnOptions, "handle" | "source">; k: number }): VectorHit[] | null {
  const allowed = opts.allowedRefIds;
  if (allowed && allowed.length <= ANN_FILTER_EXACT_MAX) return null;
  const source = { db: sqlite, schema };
  const search = (want: number) => annNeighbours({ source, fingerprintId: opts.fingerprintId, kind: opts.kind, query: opts.query, want });
  // The model and kind are checked again: the graph's ids are embedding ids, and only these rows may answer. The `+`
  // keeps SQLite on rowid lookups: without it the planner scanned the (kind, ref_id, fingerprint) index for every
  // query, an order of magnitude slower than the lookups at 100k vectors.
  const read = (sql: string, ids: number[]) => preparedOnce({ sqlite, sql }).all(opts.fingerprintId, opts.kind, JSON.stringify(ids));
  const vectorsOf = (ids: number[]) => read(`select id, ref_id, vector from ${schema}.embeddings where +fingerprint_id = ? and +kind = ? and id in (select value from json_each(?))`, ids) as Scored[];
  if (!allowed) {
    const found = search(Math.max(2 * k, k + 20));
    return found ? rankExactly(vectorsOf(found.ids), opts.query, k) : null;
  }
  // The graph's size sets how deep the filter must search.
  const probe = search(0);
  if (!probe) return null;
  const want = Math.min(probe.size, Math.ceil((filteredPool(k) * probe.size) / allowed.length));
  if (want > ANN_MAX_FETCH) return null;
  const found = search(want);
  if (!found) return null;
  // Which candidates the filter keeps, from their ref ids alone: only those BLOBs are read.
  const keep = new Set(allowed);
  const kept = (read(`select id, ref_id from ${schema}.embeddings where +fingerprint_id = ? and +kind = ? and id in (select value from json_each(?))`, found.ids) as RefRow[]).filter((r) => keep.has(r.ref_id));
  // Fewer than k survivors while the graph holds more: the filter cut too deep to trust the pool.
  if (kept.length < k && found.ids.length < found.size) return null;
  return rankExactly(vectorsOf(kept.map((r) => r.id)), opts.query, k);
}

/**
 * k nearest artifacts of one kind by cosine distance (1 − cos), closest
 * first: the one KNN of dualmind, over a store or attached core.
 */
export function knnSearch({ handle, source, ...opts }: KnnOptions): { hits: VectorHit[]; method: KnnMethod } {
  const { db: sqlite, schema, vectorsLoaded } = source ?? knnSourceOf(handle!);
  // `schema` is one of two literals, never request text.
  const embeddingsTable = `${schema}.embeddings`;
  const k = Math.max(1, opts.k);
  if (!opts.exact) {
    try {
      const hits = annKnn({ sqlite, schema, opts, k });
      if (hits) return { hits, method: "ann+rescore" };
    } catch (e) {
      // The graph is derived: whatever fails in it (the native addon, its files), the stored vectors still answer.
      log("warn", "vector index failed; answering from the stored vectors", { reason: e instanceof Error ? e.message : String(e) });
    }
  }
  if (opts.allowedRefIds) {
    // A filtered set is usually small: rank it exactly.
    const rows = sqlite
      .prepare(`select id, ref_id, vector from ${embeddingsTable} where fingerprint_id = ? and kind = ? and ref_id in (select value from json_each(?))`)
      .iterate(opts.fingerprintId, opts.kind, JSON.stringify(opts.allowedRefIds)) as IterableIterator<Scored>;
    return { hits: rankExactly(rows, opts.query, k), method: "exact-scan" };
  }
  const table = vecIndexTable(opts.fingerprintId);
  const indexed = vectorsLoaded && !!preparedOnce({ sqlite, sql: `select 1 from ${schema}.sqlite_master where name = ?` }).get(table);
  if (!opts.exact && indexed) {
    // Oversample: ≥100 candidates keeps recall@10 ≥ 0.95 on our corpus (see bench/embed.bench.ts);
    // deeper lists (fusion pools) get 2k + 50, since vec0's cost grows with k.
    const candidates = Math.min(VEC0_MAX_K, Math.max(100, 2 * k + 50));
    const code = simhashCodec(opts.query.length).encode(opts.query);
    const ids = (preparedOnce({ sqlite, sql: `select rowid from ${schema}.${table} where code match vec_bit(?) and k = ? and kind = ?` }).all(code, candidates, opts.kind) as VecRowidRow[]).map((r) => Number(r.rowid));
    const rows = preparedOnce({ sqlite, sql: `select id, ref_id, vector from ${embeddingsTable} where id in (select value from json_each(?))` }).all(JSON.stringify(ids)) as Scored[];
    return { hits: rankExactly(rows, opts.query, k), method: "simhash+rescore" };
  }
  if (vectorsLoaded) {
    const rows = sqlite
      .prepare(`select id, ref_id, vec_distance_cosine(vector, ?) as distance from ${embeddingsTable} where fingerprint_id = ? and kind = ? order by distance, ref_id limit ?`)
      .all(vectorToBlob(opts.query), opts.fingerprintId, opts.kind, k) as DistanceRow[];
    return { hits: rows.map((r) => ({ refId: r.ref_id, embeddingId: r.id, distance: r.distance })), method: "exact-scan" };
  }
  const rows = sqlite.prepare(`select id, ref_id, vector from ${embeddingsTable} where fingerprint_id = ? and kind = ?`).iterate(opts.fingerprintId, opts.kind) as IterableIterator<Scored>;
  return { hits: rankExactly(rows, opts.query, k), method: "exact-scan-js" };
}
