import type { StoreHandle } from "../db/connection";
import type { ChunkRow, DocumentRow } from "../db/schema/index";
import type { EmbedQueueRow, EmbeddingRow } from "../db/schema/embed";
import type { ProvenanceRow } from "../db/schema/governance";
import { getFingerprintInfo, readActiveFingerprintId } from "../embed/model";
import { AppError } from "../errors";
import { getProofsByArtifact } from "../governance/ledger";
import { CHUNK_KIND } from "./chunk-embeddings";
import { CHUNKING_VERSION } from "./chunking";
import { documentBytes } from "./document-fts";

/**
 * The search reader: one chunk shown inside its document, with the chunks
 * beside it, the document's metadata and where its vector came from. Read
 * only; the dashboard's reader page is a thin view over this.
 */

/**
 * Bytes of the document shown on each side of the chunk. A document may be
 * megabytes of source; the reader shows the neighbourhood and says how much
 * it left out, so a page costs the same whatever the document's size.
 */
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

type MemoryMetaRow = { tags: string; summary: string | null };

function readChunkVector({ handle, chunk }: { handle: StoreHandle; chunk: Pick<ChunkRow, "id" | "chunkSha256"> }): ChunkVector {
  const { sqlite } = handle;
  const active = readActiveFingerprintId({ handle }) ?? null;
  const rows = sqlite
    .prepare("select fingerprint_id as fingerprintId, dim, input_hash as inputHash, created_at as createdAt from embeddings where kind = ? and ref_id = ? order by created_at desc")
    .all(CHUNK_KIND, chunk.id) as Pick<EmbeddingRow, "fingerprintId" | "dim" | "inputHash" | "createdAt">[];
  const q = sqlite
    .prepare("select enqueued_at as enqueuedAt, attempts, last_error as lastError, parked_at as parkedAt from embed_queue where kind = ? and ref_id = ?")
    .get(CHUNK_KIND, chunk.id) as Pick<EmbedQueueRow, "enqueuedAt" | "attempts" | "lastError" | "parkedAt"> | undefined;
  const provenance = getProofsByArtifact(chunkVectorArtifact({ store: handle.store, chunkRowId: chunk.id })).provenance;
  return chunkVectorOf({
    chunk,
    active: active ? (getFingerprintInfo({ handle, fingerprintId: active }) ?? { id: active }) : null,
    modelOf: (fingerprintId) => getFingerprintInfo({ handle, fingerprintId }),
    vectors: rows.map((r) => ({ fingerprintId: r.fingerprintId, dimension: r.dim, inputHash: r.inputHash, createdAt: r.createdAt })),
    queue: q ?? null,
    provenance,
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
  provenance: Pick<ProvenanceRow, "modelName" | "modelVersion" | "fingerprint" | "inputHash" | "chunkingVersion" | "recordedBy" | "createdAt">[];
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
    modelName: p.modelName,
    modelVersion: p.modelVersion,
    fingerprint: p.fingerprint,
    inputHash: p.inputHash,
    chunkingVersion: p.chunkingVersion,
    recordedBy: p.recordedBy,
    createdAt: p.createdAt,
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

/**
 * One chunk in its document: the text around it (bounded by
 * READER_CONTEXT_BYTES on each side), the chunks just before and after, the
 * document's metadata and the state and provenance of its vector. An
 * unknown chunk id is a not_found error.
 */
export function readChunkInDocument({ handle, chunkId }: { handle: StoreHandle; chunkId: string }): ChunkReader {
  const { sqlite } = handle;
  const row = sqlite
    .prepare(
      `select c.id, c.chunk_id as chunkId, c.doc_id as docId, c.chunk_index as chunkIndex, c.chunk_sha256 as chunkSha256,
         c.chunking_version as chunkingVersion, c.start_byte as startByte, c.end_byte as endByte, c.text,
         d.path, d.kind, d.origin, d.sha256, d.bytes, d.mtime, d.content, d.indexed_at as indexedAt,
         (select count(*) from chunks x where x.doc_id = c.doc_id) as chunks
       from chunks c join documents d on d.doc_id = c.doc_id where c.chunk_id = ?`,
    )
    .get(chunkId) as ChunkWithDoc | undefined;
  if (!row) throw new AppError("not_found", `no chunk ${chunkId} in store ${handle.store}`);

  const { lo: wantLo, hi: wantHi } = readerWindow(row);
  const spans = sqlite
    .prepare("select start_byte as startByte, end_byte as endByte, text from chunks where doc_id = ? and end_byte > ? and start_byte < ? order by start_byte")
    .all(row.docId, wantLo, wantHi) as Span[];
  const neighbour = sqlite.prepare("select chunk_id as chunkId, chunk_index as chunkIndex, substr(text, 1, 400) as text from chunks where doc_id = ? and chunk_index = ?");
  const memoryPath = row.kind === "memory" ? memoryPathOf(row.path) : null;
  const memoryRow = memoryPath ? (sqlite.prepare("select tags, summary from memories where path = ?").get(memoryPath) as MemoryMetaRow | undefined) : undefined;
  return assembleChunkReader({
    store: handle.store,
    row,
    spans,
    prev: neighbour.get(row.docId, row.chunkIndex - 1) as NeighbourRow | undefined,
    next: neighbour.get(row.docId, row.chunkIndex + 1) as NeighbourRow | undefined,
    memory: memoryPath && memoryRow ? { path: memoryPath, tags: JSON.parse(memoryRow.tags) as string[], summary: memoryRow.summary } : null,
    vector: readChunkVector({ handle, chunk: row }),
  });
}

/** The byte window around a chunk whose chunks a reader reads (both backends). */
export function readerWindow(row: { startByte: number; endByte: number }): { lo: number; hi: number } {
  return { lo: Math.max(0, row.startByte - READER_CONTEXT_BYTES), hi: row.endByte + READER_CONTEXT_BYTES };
}

export type NeighbourRow = Pick<ChunkRow, "chunkId" | "chunkIndex"> & { text: string };

/** The reader from the rows each backend read: the chunk with its document, the chunks overlapping its window (in order), its neighbours, memory metadata and vector. */
export function assembleChunkReader({
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
