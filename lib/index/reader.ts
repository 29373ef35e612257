import { and, asc, desc, eq, gt, lt, sql } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import type { PgStoreHandle, PgStoreTx } from "../db/pg-store";
import { engineStep, read, row as rowOf, select, tablePair, type AnyStoreHandle, type On, type Op } from "../db/port";
import * as sqliteIndex from "../db/schema/index";
import type { ChunkRow, DocumentRow } from "../db/schema/index";
import * as sqliteEmbed from "../db/schema/embed";
import type { EmbeddingRow } from "../db/schema/embed";
import * as pg from "../db/schema/pg/store";
import { getFingerprintInfo, readActiveFingerprintId } from "../embed/model";
import { configuredFingerprint } from "../embed/status";
import { AppError } from "../errors";
import { getProofsByArtifact, type Provenance } from "../governance/ledger";
import { CHUNK_KIND } from "./chunk-embeddings";
import { CHUNKING_VERSION } from "./chunking";
import { documentBytes } from "./document-fts";

/**
 * The search reader: one chunk inside its document, with the chunks beside it, the document's metadata and where its
 * vector came from; read only, one reading over both engines (lib/db/port.ts) but for readChunkVector.
 */
const tables = {
  chunks: tablePair(sqliteIndex.chunks, pg.chunks),
  documents: tablePair(sqliteIndex.documents, pg.documents),
  memories: tablePair(sqliteIndex.memories, pg.memories),
  embedQueue: tablePair(sqliteEmbed.embedQueue, pg.embedQueue),
};

/** Bytes of the document shown on each side of the chunk: a page costs the same whatever the document's size (the reader says how much it left out). */
export const READER_CONTEXT_BYTES = 16_000;

export type ReaderNeighbour = { chunkId: string; chunkIndex: number; preview: string };

/**
 * Where the chunk's vector stands, from what search would do with it:
 * - `embedded`: a vector from the store's serving model, made from this exact text;
 * - `stale`: a vector from the serving model, but made from older text (drifted);
 * - `other_model`: vectors only from models that no longer serve this store (drifted);
 * - `pending` / `parked`: waiting in the embed queue (parked: given up after repeated failures);
 * - `not_embedded`: no vector and nothing queued (e.g. vectors disabled, or the store never embedded).
 */
export type VectorState = "embedded" | "stale" | "other_model" | "pending" | "parked" | "not_embedded";

export type ChunkVector = {
  state: VectorState;
  /** One sentence a person can read: what the state means for search. */
  explanation: string;
  /** The model serving the store's vector search, when it has one. */
  servingModel: { id: string; provider: string; model: string; dimension: number } | null;
  /** Vectors stored for this chunk, one per model that embedded it. */
  vectors: { fingerprintId: string; model: string | null; dimension: number; inputHash: string; createdAt: number; serving: boolean; matchesText: boolean }[];
  queue: { enqueuedAt: number; attempts: number; lastError: string | null; parkedAt: number | null } | null;
  /** The governance ledger's record of each vector made for this chunk: which model, from which input, when, by whom. */
  provenance: { modelName: string; modelVersion: string; fingerprint: string | null; inputHash: string; chunkingVersion: string | null; recordedBy: string; createdAt: number }[];
};

export type ChunkReader = {
  store: string;
  document: {
    docId: number;
    path: string;
    kind: DocumentRow["kind"];
    origin: DocumentRow["origin"];
    sha256: string;
    bytes: number;
    updatedAt: number;
    indexedAt: number;
    chunks: number;
    /** For memories: the memory path (for the Memories page), tags and summary from its frontmatter. */
    memory: { path: string; tags: string[]; summary: string | null } | null;
  };
  chunk: {
    id: number;
    chunkId: string;
    chunkIndex: number;
    chunkSha256: string;
    chunkingVersion: number;
    /** Chunked by older rules than this build's: the next reindex rebuilds it. */
    stale: boolean;
    startByte: number;
    endByte: number;
  };
  /** The document around the chunk, as indexed: `chunk` is exactly the chunk's text. */
  text: { before: string; chunk: string; after: string; omittedBefore: number; omittedAfter: number };
  neighbours: { prev: ReaderNeighbour | null; next: ReaderNeighbour | null };
  vector: ChunkVector;
};

export type ChunkWithDoc = Pick<ChunkRow, "id" | "chunkId" | "docId" | "chunkIndex" | "chunkSha256" | "chunkingVersion" | "startByte" | "endByte" | "text"> &
  Pick<DocumentRow, "path" | "kind" | "origin" | "sha256" | "bytes" | "content" | "indexedAt"> & { mtime: number; chunks: number };

export type Span = Pick<ChunkRow, "startByte" | "endByte" | "text">;

const PREVIEW_CHARS = 160;

function preview(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > PREVIEW_CHARS ? `${flat.slice(0, PREVIEW_CHARS - 1)}…` : flat;
}

export function memoryPathOf(docPath: string): string | null {
  const m = /^memory\/(.+)\.md$/.exec(docPath);
  return m ? m[1] : null;
}

type VectorChunk = Pick<ChunkRow, "id" | "chunkSha256">;
type QueueRow = ChunkVector["queue"];

/** SQLite: vectors in `embeddings`, the serving model from the store's meta, proofs in governance.db. */
function readChunkVectorSqlite({ handle, chunk, queue }: { handle: StoreHandle; chunk: VectorChunk; queue: QueueRow }): ChunkVector {
  const active = readActiveFingerprintId({ handle }) ?? null;
  const rows = handle.sqlite
    .prepare("select fingerprint_id as fingerprintId, dim, input_hash as inputHash, created_at as createdAt from embeddings where kind = ? and ref_id = ? order by created_at desc")
    .all(CHUNK_KIND, chunk.id) as Pick<EmbeddingRow, "fingerprintId" | "dim" | "inputHash" | "createdAt">[];
  return chunkVectorOf({
    chunk,
    active: active ? (getFingerprintInfo({ handle, fingerprintId: active }) ?? { id: active }) : null,
    modelOf: (fingerprintId) => getFingerprintInfo({ handle, fingerprintId }),
    vectors: rows.map((r) => ({ fingerprintId: r.fingerprintId, dimension: r.dim, inputHash: r.inputHash, createdAt: r.createdAt })),
    queue,
    provenance: getProofsByArtifact({ input: chunkVectorArtifact({ store: handle.store, chunkRowId: chunk.id }) }).provenance,
  });
}

/** PostgreSQL: vectors in `chunk_embeddings`, proofs in the same database's ledger; the serving model is the configured one, another model named by its fingerprint only. */
async function readChunkVectorPg({ tx, handle, chunk, queue }: { tx: PgStoreTx; handle: PgStoreHandle; chunk: VectorChunk; queue: QueueRow }): Promise<ChunkVector> {
  const { fp } = await configuredFingerprint();
  const e = pg.chunkEmbeddings;
  const vectors = await tx
    .select({ fingerprintId: e.fingerprintId, dimension: e.dimension, inputHash: e.inputHash, createdAt: e.embeddedAt })
    .from(e)
    .where(eq(e.chunkRowId, chunk.id))
    .orderBy(desc(e.embeddedAt));
  const proofs = await getProofsByArtifact({ input: chunkVectorArtifact({ store: handle.store, chunkRowId: chunk.id }), caller: undefined, handle: { kind: "pg", db: tx } });
  return chunkVectorOf({ chunk, active: fp, modelOf: (fingerprintId) => (fp && fingerprintId === fp.id ? fp : null), vectors, queue, provenance: proofs.provenance });
}

function readChunkVector(chunk: VectorChunk, queue: QueueRow): Op<ChunkVector> {
  return engineStep({
    sqlite: (handle) => readChunkVectorSqlite({ handle, chunk, queue }),
    pg: (tx, handle) => readChunkVectorPg({ tx, handle, chunk, queue }),
  });
}

/** The ledger's key for a chunk's vector proofs (both backends). */
export function chunkVectorArtifact({ store, chunkRowId }: { store: string; chunkRowId: number }) {
  return { artifact_type: `${CHUNK_KIND}_vector`, artifact_id: String(chunkRowId), store };
}

type ModelInfo = { id: string; provider?: string; model?: string; dimension?: number };

/** Where a chunk's vector stands, from the rows each backend read (the state rules live here, once). */
export function chunkVectorOf({
  chunk,
  active,
  modelOf,
  vectors: rows,
  queue: q,
  provenance: proofs,
}: {
  chunk: { chunkSha256: string };
  /** The model serving the store's vector search (its id at least), when it has one. */
  active: ModelInfo | null;
  modelOf: (fingerprintId: string) => { provider: string; model: string } | null;
  vectors: { fingerprintId: string; dimension: number; inputHash: string; createdAt: number }[];
  queue: ChunkVector["queue"];
  provenance: Pick<Provenance, "model_name" | "model_version" | "fingerprint" | "input_hash" | "chunking_version" | "recorded_by" | "created_at">[];
}): ChunkVector {
  const servingModel = active && active.provider !== undefined && active.model !== undefined && active.dimension !== undefined ? { id: active.id, provider: active.provider, model: active.model, dimension: active.dimension } : null;
  const vectors = rows.map((r) => {
    const info = modelOf(r.fingerprintId);
    return {
      fingerprintId: r.fingerprintId,
      model: info ? `${info.provider}:${info.model}` : null,
      dimension: r.dimension,
      inputHash: r.inputHash,
      createdAt: r.createdAt,
      serving: r.fingerprintId === active?.id,
      matchesText: r.inputHash === chunk.chunkSha256,
    };
  });
  const provenance = proofs.map((p) => ({
    modelName: p.model_name,
    modelVersion: p.model_version,
    fingerprint: p.fingerprint,
    inputHash: p.input_hash,
    chunkingVersion: p.chunking_version,
    recordedBy: p.recorded_by,
    createdAt: p.created_at,
  }));

  const serving = vectors.find((v) => v.serving);
  let state: VectorState;
  let explanation: string;
  if (serving?.matchesText) {
    state = "embedded";
    explanation = "This chunk's vector is from the model serving this store and was made from its current text: vector search can find it.";
  } else if (q && q.parkedAt !== null) {
    state = "parked";
    explanation = `Embedding gave up after ${q.attempts} attempt(s)${q.lastError ? ` (${q.lastError})` : ""}: until it is retried, only full-text search finds this chunk.`;
  } else if (q) {
    state = "pending";
    explanation = "Waiting in the embed queue: until its vector is made, only full-text search finds this chunk.";
  } else if (serving) {
    state = "stale";
    explanation = "Drifted: the vector was made from older text than the chunk holds now, so vector search leaves it out until it is re-embedded.";
  } else if (vectors.length > 0) {
    state = "other_model";
    explanation = "Drifted: its vectors are from a model that no longer serves this store, so vector search leaves it out until a re-embed.";
  } else {
    state = "not_embedded";
    explanation = "Not embedded yet, and not queued (vectors may be disabled): only full-text search finds this chunk.";
  }
  return { state, explanation, servingModel, vectors, queue: q ?? null, provenance };
}

/** One chunk in its document: the text around it (READER_CONTEXT_BYTES each side), its neighbour chunks, the document's metadata and its vector's state and provenance; an unknown id is not_found. */
export function readChunkInDocument<H extends AnyStoreHandle>({ handle, chunkId }: { handle: H; chunkId: string }): On<H, ChunkReader> {
  return read(handle, chunkInDocument(handle.store, chunkId), { snapshot: true });
}

/** A chunk with its document's row, by chunk id: what the chunk API and the reader read of it. */
function* chunkWithDocument(chunkId: string): Op<ChunkWithDoc | undefined> {
  const [row] = yield* select({ c: tables.chunks, d: tables.documents }, (db, { c, d }) =>
    db
      .select({
        id: c.id,
        chunkId: c.chunkId,
        docId: c.docId,
        chunkIndex: c.chunkIndex,
        chunkSha256: c.chunkSha256,
        chunkingVersion: c.chunkingVersion,
        startByte: c.startByte,
        endByte: c.endByte,
        text: c.text,
        path: d.path,
        kind: d.kind,
        origin: d.origin,
        sha256: d.sha256,
        bytes: d.bytes,
        mtime: d.mtime,
        content: d.content,
        indexedAt: d.indexedAt,
        chunks: sql<number>`(select count(*) from chunks x where x.doc_id = ${c.docId})`.mapWith(Number),
      })
      .from(c)
      .innerJoin(d, eq(d.docId, c.docId))
      .where(eq(c.chunkId, chunkId)),
  );
  return row;
}

export type ChunkDetail = { id: number; chunk_id: string; path: string; kind: string; chunk_index: number; chunk_sha256: string; chunking_version: number; start_byte: number; end_byte: number; text: string; stale: boolean };

/** One chunk with its document's path and kind; `stale` when chunked by older rules than this build's. */
export function getChunkByChunkId<H extends AnyStoreHandle>({ handle, chunkId }: { handle: H; chunkId: string }): On<H, ChunkDetail> {
  const op = function* (): Op<ChunkDetail> {
    const found = yield* chunkWithDocument(chunkId);
    if (!found) throw new AppError("not_found", `no chunk ${chunkId}`);
    const { id, path, kind, chunkIndex, chunkSha256, chunkingVersion, startByte, endByte, text } = found;
    return { id, chunk_id: found.chunkId, path, kind, chunk_index: chunkIndex, chunk_sha256: chunkSha256, chunking_version: chunkingVersion, start_byte: startByte, end_byte: endByte, text, stale: chunkingVersion !== CHUNKING_VERSION };
  };
  return read(handle, op());
}

function* chunkInDocument(store: string, chunkId: string): Op<ChunkReader> {
  const row = yield* chunkWithDocument(chunkId);
  if (!row) throw new AppError("not_found", `no chunk ${chunkId} in store ${store}`);

  const window = readerWindow(row);
  const spans = yield* select({ c: tables.chunks }, (db, { c }) =>
    db
      .select({ startByte: c.startByte, endByte: c.endByte, text: c.text })
      .from(c)
      .where(and(eq(c.docId, row.docId), gt(c.endByte, window.lo), lt(c.startByte, window.hi)))
      .orderBy(asc(c.startByte)),
  );
  const neighbour = function* (chunkIndex: number): Op<NeighbourRow | undefined> {
    const [found] = yield* select({ c: tables.chunks }, (db, { c }) =>
      db
        .select({ chunkId: c.chunkId, chunkIndex: c.chunkIndex, text: sql<string>`substr(${c.text}, 1, 400)` })
        .from(c)
        .where(and(eq(c.docId, row.docId), eq(c.chunkIndex, chunkIndex))),
    );
    return found;
  };
  const memoryPath = row.kind === "memory" ? memoryPathOf(row.path) : null;
  const memoryRow = memoryPath ? yield* rowOf(tables.memories, (m) => eq(m.path, memoryPath)) : undefined;
  const queue = yield* rowOf(tables.embedQueue, (q) => and(eq(q.kind, CHUNK_KIND), eq(q.refId, row.id)));
  return assembleChunkReader({
    store,
    row,
    spans,
    prev: yield* neighbour(row.chunkIndex - 1),
    next: yield* neighbour(row.chunkIndex + 1),
    // Tags are JSON text on SQLite, an array on PostgreSQL.
    memory: memoryPath && memoryRow ? { path: memoryPath, tags: typeof memoryRow.tags === "string" ? (JSON.parse(memoryRow.tags) as string[]) : memoryRow.tags, summary: memoryRow.summary } : null,
    vector: yield* readChunkVector(row, queue ? { enqueuedAt: queue.enqueuedAt, attempts: queue.attempts, lastError: queue.lastError, parkedAt: queue.parkedAt } : null),
  });
}

/** The byte window around a chunk whose chunks a reader reads. */
function readerWindow(row: { startByte: number; endByte: number }): { lo: number; hi: number } {
  return { lo: Math.max(0, row.startByte - READER_CONTEXT_BYTES), hi: row.endByte + READER_CONTEXT_BYTES };
}

type NeighbourRow = Pick<ChunkRow, "chunkId" | "chunkIndex"> & { text: string };

/** The reader from the rows read: the chunk with its document, the chunks overlapping its window (in order), its neighbours, memory metadata and vector. */
function assembleChunkReader({
  store,
  row,
  spans,
  prev,
  next,
  memory,
  vector,
}: {
  store: string;
  row: ChunkWithDoc;
  spans: Span[];
  prev: NeighbourRow | undefined;
  next: NeighbourRow | undefined;
  memory: ChunkReader["document"]["memory"];
  vector: ChunkVector;
}): ChunkReader {
  const { lo: wantLo, hi: wantHi } = readerWindow(row);
  // Cut at chunk edges (line starts), never inside a character.
  const lo = Math.min(row.startByte, ...spans.filter((s) => s.startByte >= wantLo).map((s) => s.startByte));
  const hi = Math.max(row.endByte, ...spans.filter((s) => s.endByte <= wantHi).map((s) => s.endByte));
  const bytes = documentBytes({ content: row.content, spans: spans.filter((s) => s.startByte >= lo && s.endByte <= hi), lo, hi });
  const toNeighbour = (r: NeighbourRow | undefined): ReaderNeighbour | null => (r ? { chunkId: r.chunkId, chunkIndex: r.chunkIndex, preview: preview(r.text.slice(0, 400)) } : null);

  return {
    store,
    document: {
      docId: row.docId,
      path: row.path,
      kind: row.kind,
      origin: row.origin,
      sha256: row.sha256,
      bytes: row.bytes,
      updatedAt: row.mtime,
      indexedAt: row.indexedAt,
      chunks: row.chunks,
      memory,
    },
    chunk: {
      id: row.id,
      chunkId: row.chunkId,
      chunkIndex: row.chunkIndex,
      chunkSha256: row.chunkSha256,
      chunkingVersion: row.chunkingVersion,
      stale: row.chunkingVersion !== CHUNKING_VERSION,
      startByte: row.startByte,
      endByte: row.endByte,
    },
    text: {
      before: bytes.subarray(0, row.startByte - lo).toString("utf8"),
      chunk: row.text,
      after: bytes.subarray(row.endByte - lo).toString("utf8"),
      omittedBefore: lo,
      omittedAfter: Math.max(0, row.bytes - hi),
    },
    neighbours: { prev: toNeighbour(prev), next: toNeighbour(next) },
    vector,
  };
}
