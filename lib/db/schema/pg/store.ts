import { bigint, boolean, doublePrecision, index, integer, json, pgTable, primaryKey, real, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql, type InferSelectModel } from "drizzle-orm";

/**
 * One store's index on PostgreSQL: these tables live in the store's own
 * schema (`store_<name>`, lib/stores/engines/pg.ts), the way each SQLite store
 * has its own index.db. drizzle-kit generates them unqualified (drizzle/pg/store);
 * the store migrator applies them with search_path set to the store's schema.
 * Hand-written SQL (drizzle/pg/store) adds what drizzle-kit cannot express
 * or would schema-qualify: foreign keys, the generated tsvector column and
 * its GIN index.
 *
 * Dialect differences from ../index.ts (SQLite), on purpose:
 * - epoch-ms columns are bigint (mode number);
 * - `meta` is `store_meta`: a store's transaction resolves names through
 *   search_path = store schema, then public (the governance ledger), so no
 *   store table may share a name with a governance table (tested);
 * - memory tags are text[]; a memory's whole file text is kept (`content`):
 *   in PostgreSQL mode the table, not a folder, is the memories' truth, and
 *   `memories export` writes it back out byte for byte.
 */
const epochMs = (name: string) => bigint(name, { mode: "number" });

/** Key/value facts about this store (name, description, created_at, schema_version). */
export const storeMeta = pgTable("store_meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

/** One indexed text: a memory, or a document sent by API. */
export const documents = pgTable(
  "documents",
  {
    docId: bigint("doc_id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    path: text("path").notNull(),
    origin: text("origin", { enum: ["file", "api"] }).notNull(),
    kind: text("kind", { enum: ["memory", "markdown", "code", "text"] }).notNull(),
    sha256: text("sha256").notNull(),
    bytes: integer("bytes").notNull(),
    mtime: epochMs("mtime").notNull(),
    /** Kept for `api` documents; a memory's text is its memories row. */
    content: text("content"),
    indexedAt: epochMs("indexed_at").notNull(),
  },
  (t) => [uniqueIndex("documents_path_uq").on(t.path), index("documents_kind_idx").on(t.kind), index("documents_mtime_idx").on(t.mtime)],
);

/** Chunks keep their id across re-ingests while their chunk_id is unchanged (vectors stay joined). */
export const chunks = pgTable(
  "chunks",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    chunkId: text("chunk_id").notNull(),
    /** References documents (on delete cascade): hand-written in 0001, drizzle-kit would qualify it with "public". */
    docId: bigint("doc_id", { mode: "number" }).notNull(),
    chunkIndex: integer("chunk_index").notNull(),
    chunkSha256: text("chunk_sha256").notNull(),
    chunkingVersion: integer("chunking_version").notNull(),
    startByte: integer("start_byte").notNull(),
    endByte: integer("end_byte").notNull(),
    text: text("text").notNull(),
    /** Length in FTS5 tokens (lib/index/engines/pg-fulltext.ts); null until tokenized (migration 0012's backfill). */
    ftsLen: integer("fts_len"),
  },
  (t) => [uniqueIndex("chunks_chunk_id_uq").on(t.chunkId), uniqueIndex("chunks_doc_index_uq").on(t.docId, t.chunkIndex), index("chunks_version_idx").on(t.chunkingVersion)],
);

/**
 * The full-text statistics of FTS5's bm25 (hand-written in 0012 with their
 * impact index and the delete trigger that keeps them; written by
 * lib/index/engines/pg-fulltext.ts): each chunk's count of each token, each
 * token's row count, and the rows and tokens of all tokenized chunks.
 */
export const ftsPostings = pgTable("fts_postings", {
  chunkId: bigint("chunk_id", { mode: "number" }).notNull(),
  term: text("term").notNull(),
  tf: integer("tf").notNull(),
  len: integer("len").notNull(),
  imp: real("imp").notNull(),
});
export const ftsTerms = pgTable("fts_terms", {
  term: text("term").primaryKey(),
  rows: integer("rows").notNull(),
});
export const ftsTotals = pgTable("fts_totals", {
  id: integer("id").primaryKey(),
  rows: bigint("rows", { mode: "number" }).notNull(),
  tokens: bigint("tokens", { mode: "number" }).notNull(),
});

/**
 * A chunk's vector per embedding model, L2-normalized, as real[]: portable
 * to any PostgreSQL (an exact scan works without extensions) and castable
 * to pgvector's vector(dim) where that is installed.
 */
export const chunkEmbeddings = pgTable(
  "chunk_embeddings",
  {
    /** chunks.id (on delete cascade, hand-written in 0001). */
    chunkRowId: bigint("chunk_row_id", { mode: "number" }).notNull(),
    fingerprintId: text("fingerprint_id").notNull(),
    inputHash: text("input_hash").notNull(),
    dimension: integer("dimension").notNull(),
    embedding: real("embedding").array().notNull(),
    embeddedAt: epochMs("embedded_at").notNull(),
  },
  (t) => [uniqueIndex("chunk_embeddings_uq").on(t.chunkRowId, t.fingerprintId), index("chunk_embeddings_fingerprint_idx").on(t.fingerprintId)],
);

/** Memories: in PostgreSQL mode this table is their truth (export/import move them to and from a folder). */
export const memories = pgTable(
  "memories",
  {
    /** `<category path>/<slug>` without `.md`. */
    path: text("path").primaryKey(),
    category: text("category").notNull(),
    tags: text("tags").array().notNull().default([]),
    tokenEstimate: integer("token_estimate").notNull(),
    source: text("source"),
    createdAt: epochMs("created_at").notNull(),
    updatedAt: epochMs("updated_at").notNull(),
    expiresAt: epochMs("expires_at"),
    summary: text("summary"),
    /** The memory file's whole text (frontmatter + body), exactly as `memories export` writes it. */
    content: text("content").notNull(),
  },
  (t) => [index("memories_category_idx").on(t.category), index("memories_updated_idx").on(t.updatedAt), index("memories_expires_idx").on(t.expiresAt)],
);
export type PgMemoryRow = InferSelectModel<typeof memories>;

export const categories = pgTable(
  "categories",
  {
    path: text("path").primaryKey(),
    parentPath: text("parent_path"),
    description: text("description"),
  },
  (t) => [index("categories_parent_idx").on(t.parentPath)],
);

/**
 * Write-behind embedding queue (the SQLite twin is ../embed.ts embed_queue):
 * one row per artifact waiting for a vector of the configured model. Replicas
 * claim ready rows with FOR UPDATE SKIP LOCKED and a lease (claimed_by,
 * claimed_until): a replica that dies mid-batch loses its claim when the
 * lease runs out and another takes the rows over (lib/embed/worker-pg.ts).
 */
export const embedQueue = pgTable(
  "embed_queue",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    /** "chunk" (chunks.id in ref_id); kept apart like SQLite's queue so other kinds can join. */
    kind: text("kind").notNull(),
    refId: bigint("ref_id", { mode: "number" }).notNull(),
    inputHash: text("input_hash").notNull(),
    enqueuedAt: epochMs("enqueued_at").notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: epochMs("next_attempt_at").notNull(),
    lastError: text("last_error"),
    /** Set when retries are exhausted or the failure is permanent: the row waits for an admin, never blocks the queue. */
    parkedAt: epochMs("parked_at"),
    claimedBy: text("claimed_by"),
    claimedUntil: epochMs("claimed_until"),
  },
  (t) => [
    uniqueIndex("embed_queue_item_uq").on(t.kind, t.refId),
    index("embed_queue_ready_idx").on(t.nextAttemptAt, t.id).where(sql`parked_at is null`),
    index("embed_queue_parked_idx").on(t.parkedAt).where(sql`parked_at is not null`),
  ],
);

/** Vectors by sha256(fingerprint id + text): identical text is embedded once per model (chunks repeated across documents, re-ingests). */
export const embeddingCache = pgTable("embedding_cache", {
  key: text("key").primaryKey(),
  embedding: real("embedding").array().notNull(),
  createdAt: epochMs("created_at").notNull(),
});

/**
 * Vectors of every embeddable kind but chunks (trace, learning; thoughts and
 * graph nodes join by kind), one per (kind, ref_id, model), L2-normalized
 * real[] like chunk_embeddings and searched the same way (lib/index/vectors-pg.ts:
 * pgvector HNSW where installed, else a bounded exact scan). input_hash is the
 * hash of the text the vector was made from: a row whose text changed since
 * is not current and is never returned.
 */
export const embeddings = pgTable(
  "embeddings",
  {
    kind: text("kind").notNull(),
    refId: bigint("ref_id", { mode: "number" }).notNull(),
    fingerprintId: text("fingerprint_id").notNull(),
    inputHash: text("input_hash").notNull(),
    dimension: integer("dimension").notNull(),
    /** Always "document": queries are embedded on the fly and never stored here. */
    task: text("task", { enum: ["document", "query"] }).notNull(),
    embedding: real("embedding").array().notNull(),
    embeddedAt: epochMs("embedded_at").notNull(),
  },
  (t) => [uniqueIndex("embeddings_item_uq").on(t.kind, t.refId, t.fingerprintId), index("embeddings_fingerprint_kind_idx").on(t.fingerprintId, t.kind)],
);

/**
 * Vector queries and the chunks the active model answered (the SQLite twin is
 * ../embed.ts search_log): a re-embed's candidate model is compared against
 * them before an admin switches (lib/index/reembed-pg.ts). The last 1,000 are kept.
 */
export const searchLog = pgTable(
  "search_log",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    ts: epochMs("ts").notNull(),
    q: text("q").notNull(),
    mode: text("mode").notNull(),
    fingerprintId: text("fingerprint_id").notNull(),
    /** chunks.id of the vector leg's answer, best first. */
    resultIds: bigint("result_ids", { mode: "number" }).array().notNull(),
  },
  (t) => [index("search_log_fingerprint_idx").on(t.fingerprintId, t.id)],
);

/**
 * Reflection recall (the SQLite twin is ../recall.ts). Lists are text[] and a
 * learning's args json (kept as written, key order included); the descriptor
 * and the handle get a generated english tsvector with a GIN index (hand-written
 * in 0004), as SQLite has FTS5 with porter over them.
 */
export const reasoningTraces = pgTable(
  "reasoning_traces",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    agentId: text("agent_id").notNull(),
    intentVerb: text("intent_verb").notNull(),
    intentTarget: text("intent_target").notNull(),
    shardType: text("shard_type").notNull(),
    keyFiles: text("key_files").array().notNull(),
    outcome: text("outcome", { enum: ["success", "failure"] }).notNull(),
    keyIssue: text("key_issue").notNull(),
    errorTags: text("error_tags").array().notNull(),
    summaryDescriptor: text("summary_descriptor").notNull(),
    descriptorVersion: integer("descriptor_version").notNull(),
    descriptorHash: text("descriptor_hash").notNull(),
    /** Set when backpressure skipped the vector for this trace (success traces first). */
    embedSkippedAt: epochMs("embed_skipped_at"),
    seenCount: integer("seen_count").notNull().default(1),
    createdAt: epochMs("created_at").notNull(),
    lastSeenAt: epochMs("last_seen_at").notNull(),
  },
  (t) => [
    uniqueIndex("reasoning_traces_hash_uq").on(t.descriptorHash),
    index("reasoning_traces_last_seen_idx").on(t.lastSeenAt),
    index("reasoning_traces_stratum_idx").on(t.shardType, t.outcome, t.lastSeenAt),
    index("reasoning_traces_skipped_idx").on(t.embedSkippedAt),
  ],
);

export const learnings = pgTable(
  "learnings",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    agentId: text("agent_id").notNull(),
    predicate: text("predicate").notNull(),
    args: json("args").$type<Record<string, unknown>>().notNull(),
    description: text("description").notNull(),
    confidence: doublePrecision("confidence").notNull(),
    semanticHandle: text("semantic_handle").notNull(),
    handleVersion: integer("handle_version").notNull(),
    handleHash: text("handle_hash").notNull(),
    seenCount: integer("seen_count").notNull().default(1),
    createdAt: epochMs("created_at").notNull(),
    lastSeenAt: epochMs("last_seen_at").notNull(),
  },
  (t) => [uniqueIndex("learnings_hash_uq").on(t.handleHash), index("learnings_last_seen_idx").on(t.lastSeenAt)],
);

/** Per-store reflection settings: one row (id = 1), edited by admins; the JSON as SQLite keeps it. */
export const reflectionSettings = pgTable("reflection_settings", {
  id: integer("id").primaryKey(),
  settings: text("settings").notNull(),
  updatedAt: epochMs("updated_at").notNull(),
  updatedBy: text("updated_by").notNull(),
});

/** One row per recall: what was asked, how it was answered, how fast. */
export const recallEvents = pgTable(
  "recall_events",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    agentId: text("agent_id").notNull(),
    query: text("query").notNull(),
    mode: text("mode", { enum: ["hybrid", "vector", "lexical"] }).notNull(),
    fallbackReason: text("fallback_reason"),
    latencyMs: doublePrecision("latency_ms").notNull(),
    cacheHit: boolean("cache_hit").notNull(),
    hitCount: integer("hit_count").notNull(),
    topScore: doublePrecision("top_score"),
    warning: boolean("warning").notNull(),
    createdAt: epochMs("created_at").notNull(),
    /** This event's bytes with its hits', and the sum over every event logged up to this one (lib/recall/events.ts). */
    bytes: bigint("bytes", { mode: "number" }).notNull().default(0),
    bytesThrough: bigint("bytes_through", { mode: "number" }).notNull().default(0),
  },
  (t) => [index("recall_events_created_idx").on(t.createdAt), index("recall_events_bytes_through_idx").on(t.bytesThrough)],
);

/** The hits a recall returned; `relevant` is null until rated. */
export const recallEventHits = pgTable(
  "recall_event_hits",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    /** recall_events.id (on delete cascade, hand-written in 0004). */
    eventId: bigint("event_id", { mode: "number" }).notNull(),
    rank: integer("rank").notNull(),
    artifact: text("artifact", { enum: ["trace", "learning"] }).notNull(),
    refId: bigint("ref_id", { mode: "number" }).notNull(),
    score: doublePrecision("score").notNull(),
    summary: text("summary").notNull(),
    relevant: boolean("relevant"),
    ratedBy: text("rated_by"),
    ratedAt: epochMs("rated_at"),
  },
  (t) => [index("recall_event_hits_event_idx").on(t.eventId, t.rank), index("recall_event_hits_unrated_idx").on(t.ratedAt)],
);

/** Governed memory's per-item state, as ../index.ts itemState (drizzle/pg/store/0019_item_state.sql). */
export const itemState = pgTable(
  "item_state",
  {
    kind: text("kind", { enum: ["memory", "learning", "trace", "thought", "node", "relation", "frame"] }).notNull(),
    itemId: text("item_id").notNull(),
    status: text("status", { enum: ["active", "retired", "proposed", "rejected"] }).notNull().default("active"),
    validFrom: epochMs("valid_from"),
    validTo: epochMs("valid_to"),
    recordedAt: epochMs("recorded_at").notNull(),
    retiredAt: epochMs("retired_at"),
    supersedes: text("supersedes"),
    supersededBy: text("superseded_by"),
    reason: text("reason"),
    decidedBy: text("decided_by"),
    history: text("history").notNull().default("[]"),
    updatedAt: epochMs("updated_at").notNull(),
    factKey: text("fact_key"),
    factValue: text("fact_value"),
  },
  // The fact-key lookup's range per kind and status, the key byte by byte as the lookup compares it (lib/index/fact-match.ts; drizzle/pg/store/0023_fact_lookup_idx.sql).
  (t) => [primaryKey({ columns: [t.kind, t.itemId] }), index("item_state_fact_lookup_idx").on(t.kind, t.status, sql`(${t.factKey} collate "C")`).where(sql`fact_key is not null`)],
);

/** Contradictions between facts, as ../index.ts itemContradictions (drizzle/pg/store/0022_fact_keys.sql). */
export const itemContradictions = pgTable(
  "item_contradictions",
  {
    kind: text("kind", { enum: ["memory", "learning", "trace", "thought", "node", "relation", "frame"] }).notNull(),
    itemId: text("item_id").notNull(),
    otherId: text("other_id").notNull(),
    factKey: text("fact_key").notNull(),
    reason: text("reason").notNull(),
    createdAt: epochMs("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.itemId, t.otherId] })],
);

// Thoughts, chains, the knowledge graph and working memory: part of every store's schema.
export * from "./graph";

/** Forgetting by policy, as ../index.ts forgetPolicy, forgetRun and forgetRetired (drizzle/pg/store/0021_forget_policy.sql). */
export const forgetPolicy = pgTable("forget_policy", {
  kind: text("kind", { enum: ["memory", "learning", "trace", "thought"] }).primaryKey(),
  ttlDays: doublePrecision("ttl_days"),
  ttlSince: text("ttl_since", { enum: ["written", "used"] }).notNull().default("written"),
  maxItems: integer("max_items"),
  unusedDays: doublePrecision("unused_days"),
  honourExpiresAt: boolean("honour_expires_at").notNull().default(false),
  protectedIds: text("protected_ids").notNull().default("[]"),
  updatedAt: epochMs("updated_at").notNull(),
  updatedBy: text("updated_by").notNull(),
});

export const forgetRun = pgTable(
  "forget_run",
  {
    id: text("id").primaryKey(),
    at: epochMs("at").notNull(),
    actor: text("actor").notNull(),
    dryRun: boolean("dry_run").notNull(),
    maxItems: integer("max_items").notNull(),
    counts: text("counts").notNull().default("{}"),
    retired: integer("retired").notNull(),
    remaining: integer("remaining").notNull(),
    idsSha256: text("ids_sha256").notNull(),
  },
  (t) => [index("forget_run_at_idx").on(t.at)],
);

export const forgetRetired = pgTable(
  "forget_retired",
  {
    kind: text("kind", { enum: ["memory", "learning", "trace", "thought"] }).notNull(),
    itemId: text("item_id").notNull(),
    runId: text("run_id").notNull(),
    rule: text("rule").notNull(),
    why: text("why").notNull(),
    title: text("title").notNull(),
    at: epochMs("at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.itemId, t.runId] }), index("forget_retired_at_idx").on(t.at)],
);

/** A store's write policy, as ../index.ts writePolicy (drizzle/pg/store/0020_write_policy.sql). */
export const writePolicy = pgTable("write_policy", {
  id: integer("id").primaryKey(),
  policy: text("policy").notNull(),
  updatedAt: epochMs("updated_at").notNull(),
  updatedBy: text("updated_by").notNull(),
});

/** A proposal's provenance, as ../index.ts proposals. */
export const proposals = pgTable(
  "proposals",
  {
    kind: text("kind", { enum: ["memory", "learning", "thought", "node", "relation", "frame"] }).notNull(),
    itemId: text("item_id").notNull(),
    proposedBy: text("proposed_by").notNull(),
    tokenLabel: text("token_label"),
    proposedAt: epochMs("proposed_at").notNull(),
    why: text("why", { enum: ["untrusted", "flagged"] }).notNull(),
    flags: text("flags").notNull().default("[]"),
  },
  (t) => [primaryKey({ columns: [t.kind, t.itemId] }), index("proposals_at_idx").on(t.proposedAt)],
);
