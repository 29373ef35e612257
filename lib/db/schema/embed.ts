import { sqliteTable, text, integer, blob, index, primaryKey, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { InferSelectModel } from "drizzle-orm";

/**
 * Embedding tables of a store's index.db, shared by every embeddable kind
 * (chunk, trace, learning, thought, node). The vec0 indexes over them are
 * created per model fingerprint at run time (see lib/embed/vector-index.ts),
 * so a re-embed builds a new index beside the one serving.
 */

/** Write-behind queue: one row per artifact waiting for a vector from the configured model. */
export const embedQueue = sqliteTable(
  "embed_queue",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    kind: text("kind").notNull(),
    refId: integer("ref_id").notNull(),
    inputHash: text("input_hash").notNull(),
    enqueuedAt: integer("enqueued_at").notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    lastError: text("last_error"),
    claimedBy: text("claimed_by"),
    claimedUntil: integer("claimed_until"),
    parkedAt: integer("parked_at"),
  },
  (t) => [
    uniqueIndex("embed_queue_item_uq").on(t.kind, t.refId),
    index("embed_queue_ready_idx").on(t.parkedAt, t.nextAttemptAt),
    index("embed_queue_pending_age_idx").on(t.parkedAt, t.enqueuedAt),
  ],
);

/**
 * Live status counters per (name, kind), kept exact by triggers in the same
 * transaction as every queue, artifact, vector and active-model write
 * (drizzle/index/0010_live_status_counters.sql): queue_pending, queue_parked,
 * artifacts, fresh, stale. getStoreStatus reads these instead of scanning.
 */
export const statusCounters = sqliteTable(
  "status_counters",
  {
    name: text("name").notNull(),
    kind: text("kind").notNull(),
    value: integer("value").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.name, t.kind] })],
);

/**
 * Change log of `embeddings`, appended by triggers in the same transaction as
 * every insert, vector update and delete (drizzle/index/0011_embedding_log.sql).
 * lib/embed/ann-index.ts replays it to keep its derived index current.
 */
export const embeddingLog = sqliteTable("embedding_log", {
  seq: integer("seq").primaryKey({ autoIncrement: true }),
  embeddingId: integer("embedding_id").notNull(),
  fingerprintId: text("fingerprint_id").notNull(),
  kind: text("kind").notNull(),
});

/** The durable copy of every vector (float32 BLOB), with what made it. */
export const embeddings = sqliteTable(
  "embeddings",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    kind: text("kind").notNull(),
    refId: integer("ref_id").notNull(),
    fingerprintId: text("fingerprint_id").notNull(),
    dim: integer("dim").notNull(),
    task: text("task", { enum: ["document", "query"] }).notNull(),
    inputHash: text("input_hash").notNull(),
    vector: blob("vector", { mode: "buffer" }).notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("embeddings_item_uq").on(t.kind, t.refId, t.fingerprintId), index("embeddings_fp_idx").on(t.fingerprintId, t.kind)],
);
export type EmbeddingRow = InferSelectModel<typeof embeddings>;

/** sha256(fingerprint id + text) → vector, so identical text is embedded once. */
export const embeddingCache = sqliteTable("embedding_cache", {
  key: text("key").primaryKey(),
  vector: blob("vector", { mode: "buffer" }).notNull(),
  createdAt: integer("created_at").notNull(),
});
export type EmbeddingCacheRow = InferSelectModel<typeof embeddingCache>;

/** Every model fingerprint this store has seen; meta.active_fingerprint names the one serving. */
export const embeddingModels = sqliteTable("embedding_models", {
  fingerprintId: text("fingerprint_id").primaryKey(),
  info: text("info").notNull(),
  firstSeenAt: integer("first_seen_at").notNull(),
});

/**
 * Recent vector/hybrid queries with the vector leg's top results and the
 * model that made them: replayed against a candidate model before a switch.
 */
export const searchLog = sqliteTable(
  "search_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    ts: integer("ts").notNull(),
    q: text("q").notNull(),
    mode: text("mode").notNull(),
    fingerprintId: text("fingerprint_id").notNull(),
    /** JSON array of chunk rowids, best first. */
    resultIds: text("result_ids").notNull(),
  },
  (t) => [index("search_log_ts_idx").on(t.ts)],
);
