/** System 1 index: documents, chunks, memories, categories, search, verify, reindex jobs. */
import { z } from "zod";
import { CONFIDENCE_BANDS, RETRIEVAL_REASONS } from "../../retrieval";
import { count, deletedResponse, epochMs, exact, flags } from "./common";

/** Why a search, recall or remember answer is empty or weak (lib/retrieval/reasons.ts); null when it is neither. */
export const retrievalReason = exact({ code: z.enum(RETRIEVAL_REASONS), message: z.string(), /** backlog: items waiting for vectors (above the watermark, or before the first vectors exist). */ count: count.optional() });
/** Vectors could not answer, so another signal did: why (backlog carries its count). */
export const retrievalFallback = exact({ reason: z.string(), message: z.string(), count: count.optional() });
/** explain=true: each stage of the pipeline with its candidates and time. */
export const retrievalExplain = exact({
  stages: z.array(
    exact({
      stage: z.enum(["readiness", "lexical", "vector", "fusion", "filters", "grouping"]),
      ms: z.number(),
      candidates: count,
      detail: z.string(),
      top: z.array(exact({ key: z.string(), rank: z.number().int(), score: z.number() })),
    }),
  ),
  total_ms: z.number(),
});

export const ingestResult = exact({
  path: z.string(),
  doc_id: z.number().int(),
  status: z.enum(["added", "changed", "unchanged"]),
  chunks: count,
  /** Rowids of chunks written by this call (the embed step enqueues these). */
  inserted_chunk_rowids: z.array(z.number().int()),
  removed_chunk_rowids: z.array(z.number().int()),
});
export const putDocumentsResponse = exact({ documents: z.array(ingestResult) });

export const documentSummary = exact({
  doc_id: z.number().int(),
  path: z.string(),
  origin: z.string(),
  kind: z.string(),
  sha256: z.string(),
  bytes: count,
  mtime: z.number(),
  indexed_at: epochMs,
  chunks: count,
});
export const documentListResponse = exact({ documents: z.array(documentSummary), total: count });
export const documentDeletedResponse = deletedResponse;

export const chunkDetail = exact({
  id: z.number().int(),
  chunk_id: z.string(),
  path: z.string(),
  kind: z.string(),
  chunk_index: count,
  chunk_sha256: z.string(),
  chunking_version: z.number().int(),
  stale: z.boolean(),
  start_byte: count,
  end_byte: count,
  text: z.string(),
});

export const memory = exact({
  path: z.string(),
  category: z.string(),
  slug: z.string(),
  tags: z.array(z.string()),
  token_estimate: count,
  source: z.string().nullable(),
  created_at: epochMs,
  updated_at: epochMs,
  expires_at: epochMs.nullable(),
  summary: z.string().nullable(),
  /** Of what this answer shows: path, tags, source and summary, and the body where it is returned. */
  flags,
});
export const memoryWithBody = memory.extend({ body: z.string() });
export const memoryListResponse = exact({ total: count, memories: z.array(memory) });
/** GET with `path` reads one memory (with its body); any other query filters the list. */
export const memoryReadOrListResponse = z.union([memoryWithBody, memoryListResponse]);
export const recentMemoriesResponse = exact({ memories: z.array(memory) });

/** A deleted memory kept in its store's trash until purge_at (DUALMIND_MEMORY_TRASH_DAYS). */
export const trashedMemory = exact({
  id: z.string(),
  path: z.string(),
  deleted_at: epochMs,
  deleted_by: z.string(),
  purge_at: epochMs,
  summary: z.string().nullable(),
  tags: z.array(z.string()),
  token_estimate: count,
  /** Of what this answer shows: path, tags and summary, and the body where it is returned. */
  flags,
});
export const trashedMemoryWithBody = trashedMemory.extend({ body: z.string() });
export const memoryTrashResponse = exact({ retention_days: count, trash: z.array(trashedMemory) });
/** GET with `id` reads one trash entry (with its body); without, the list. */
export const memoryTrashReadOrListResponse = z.union([trashedMemoryWithBody, memoryTrashResponse]);

export const categoryChild = exact({ path: z.string(), name: z.string(), description: z.string().nullable(), memories: count, children: count });
/** A page of child categories: `total` of them, `next_offset` where the next page starts (past `limit` or DUALMIND_LIST_MAX_BYTES), null at the end. */
export const categoryListResponse = exact({ parent: z.string().nullable(), categories: z.array(categoryChild), total: count, next_offset: count.nullable() });
/** The MCP browse tool: a page of child categories (`categories_next_offset` continues it) plus a page of the memories under the parent. */
export const categoryBrowseResponse = exact({ parent: z.string().nullable(), categories: z.array(categoryChild), categories_total: count, categories_next_offset: count.nullable(), total: count, memories: z.array(memory) });

const searchMode = z.enum(["fts", "vector", "hybrid"]);
export const searchHit = exact({
  store: z.string(),
  id: z.number().int(),
  chunk_id: z.string(),
  path: z.string(),
  kind: z.string(),
  chunk_index: count,
  score: z.number(),
  /** How well the hit answers the query: high, medium or low (lib/retrieval/confidence.ts). */
  confidence: z.enum(CONFIDENCE_BANDS).optional(),
  /** With include_retired: the state of a memory that is not active (retired, proposed, rejected). */
  item_status: z.enum(["active", "retired", "proposed", "rejected"]).optional(),
  snippet: z.string(),
  /** [start, end) offsets of matched terms within `snippet`. */
  highlights: z.array(z.tuple([z.number().int(), z.number().int()])),
  updated_at: epochMs,
  /** With `explain`: each signal's part of the score, and why the hit ranked where it did. */
  signals: exact({
    fts: exact({ rank: z.number().int(), score: z.number() }).nullable(),
    vector: exact({ rank: z.number().int(), distance: z.number(), similarity: z.number() }).nullable(),
    fused: z.number(),
    decay: z.number().nullable(),
    /** group=document: how the document's chunks made its score. */
    document: exact({ chunks: count, best_chunk: z.number(), combined: z.number(), field_boost: z.number() }).nullable().optional(),
    why: z.string().optional(),
  }).optional(),
  /** group=document: the document's best passages (the hit itself is the best one). */
  passages: z
    .array(exact({ id: z.number().int(), chunk_id: z.string(), chunk_index: count, score: z.number(), snippet: z.string(), highlights: z.array(z.tuple([z.number().int(), z.number().int()])) }))
    .optional(),
  /** group=document: how many of the document's chunks matched. */
  matched_chunks: count.optional(),
  /** Of what the hit shows: its path, snippet and passages' snippets (offsets are within the field named). */
  flags,
});
export const searchResponse = exact({
  mode: searchMode,
  /** What actually answered: differs from `mode` only on a fallback, which is then explained. */
  effective_mode: searchMode,
  group: z.enum(["chunk", "document"]),
  query: z.string(),
  match: z.string().nullable(),
  results: z.array(searchHit),
  has_more: z.boolean(),
  stores: z.array(z.string()),
  degraded: z.boolean(),
  fallback: retrievalFallback.nullable(),
  reason: retrievalReason.nullable(),
  vectors: exact({
    model: exact({ id: z.string(), provider: z.string(), model: z.string(), dimension: z.number().int() }),
    method: z.string(),
    index_available: z.boolean(),
    index_reason: z.string().nullable(),
    pending_embeddings: count,
    /** Neighbours less similar than this were not returned (per provider, measured). */
    similarity_floor: z.number(),
    below_floor: count,
  }).nullable(),
  /** Hybrid: the weights, and the model they are calibrated for (lib/retrieval/fusion.ts): measured, the provider's defaults, or the request's. */
  fusion: exact({ w_fts: z.number(), w_vec: z.number(), k: z.number(), recency_tau_days: z.number().nullable(), calibration: z.string(), calibration_source: z.enum(["measured", "provider", "request", "lexical"]) }).nullable(),
  warnings: z.array(exact({ code: z.string(), message: z.string() })),
  /** Only while a store's full-text index is being rebuilt (tokenizer migration or reindex --fts-only): lexical hits cover `done` of `total` chunks. */
  fts_rebuild: z.array(exact({ store: z.string(), pending: z.literal(true), done: count, total: count })).optional(),
  explain: retrievalExplain.optional(),
});

export const verifyResponse = exact({
  store: z.string(),
  ok: z.boolean(),
  consistent: z.boolean(),
  in_sync: z.boolean(),
  chunking_version: z.number().int(),
  counts: exact({ files: count, file_documents: count, api_documents: count, chunks: count, memories: count, skipped: count }),
  integrity: z.string(),
  fts_missing: count,
  fts_extra: count,
  memories_without_document: z.array(z.string()),
  hash_mismatches: z.array(z.string()),
  missing_files: z.array(z.string()),
  not_indexed: z.array(z.string()),
  /** Files under memory/ that cannot be indexed as they are (name, size, encoding, frontmatter, conflict markers), with the reason; any makes in_sync false. */
  unindexable: z.array(exact({ path: z.string(), reason: z.string() })),
  stale_chunks: count,
  /** The store's running total (DUALMIND_MAX_STORE_BYTES) beside a recount from its rows; a disagreement makes consistent false. */
  usage: exact({ bytes: count, documents: count, recounted_bytes: count, recounted_documents: count }),
  duration_ms: z.number(),
});

const reindexCounts = exact({ scanned: count, added: count, changed: count, unchanged: count, removed: count, skipped: count });
const reindexKindCounts = exact({ scanned: count, added: count, changed: count, unchanged: count, removed: count });
export const reindexJob = exact({
  id: z.string(),
  kind: z.literal("reindex"),
  store: z.string(),
  actor: z.string(),
  status: z.enum(["running", "succeeded", "failed"]),
  progress: exact({ phase: z.enum(["scanning", "writing"]), done: count, total: count }).nullable(),
  result: exact({
    store: z.string(),
    counts: reindexCounts,
    /** The counts split into documents and memories; null on jobs recorded before the split. */
    by_kind: exact({ documents: reindexKindCounts, memories: reindexKindCounts }).nullable(),
    /** `symlink`: links under a scanned folder, never followed. */
    skipped_by: exact({ binary: count, oversized: count, bad_name: count, symlink: count }),
    /** Skipped links that lead outside their folder (or nowhere); at most 100. */
    links_outside_root: z.array(z.string()),
    /** Files under memory/ that could not be indexed, with the reason; absent on jobs recorded before it was kept. */
    unindexable: z.array(exact({ path: z.string(), reason: z.string() })).optional(),
    /** Paths the run added, changed or removed (at most 20). */
    changed_paths: z.array(z.string()).optional(),
    duration_ms: z.number(),
  }).nullable(),
  error: z.string().nullable(),
  /** 1, plus one per takeover after the process running it died. */
  attempts: z.number().int().min(1),
  started_at: epochMs,
  heartbeat_at: epochMs,
  finished_at: epochMs.nullable(),
});
export const jobResponse = exact({ job: reindexJob });
