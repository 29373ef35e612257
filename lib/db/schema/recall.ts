import { sqliteTable, text, integer, real, index, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { InferSelectModel } from "drizzle-orm";

/**
 * Reflection recall tables of a store's index.db. Vectors live in the shared
 * `embeddings` table (kind "trace" / "learning", ref_id = this table's id)
 * with their fingerprint, dim and task; FTS5 over descriptors and handles is
 * in the hand-written recall_fts migration.
 */

/** One agent's attempt at something: structured fields plus the sanitized descriptor that is embedded. */
export const reasoningTraces = sqliteTable(
  "reasoning_traces",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    agentId: text("agent_id").notNull(),
    intentVerb: text("intent_verb").notNull(),
    intentTarget: text("intent_target").notNull(),
    shardType: text("shard_type").notNull(),
    keyFiles: text("key_files").notNull(),
    outcome: text("outcome", { enum: ["success", "failure"] }).notNull(),
    keyIssue: text("key_issue").notNull(),
    errorTags: text("error_tags").notNull(),
    summaryDescriptor: text("summary_descriptor").notNull(),
    descriptorVersion: integer("descriptor_version").notNull(),
    descriptorHash: text("descriptor_hash").notNull(),
    /** Set when backpressure skipped the vector for this trace (success traces first). */
    embedSkippedAt: integer("embed_skipped_at"),
    seenCount: integer("seen_count").notNull().default(1),
    createdAt: integer("created_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [
    uniqueIndex("reasoning_traces_hash_uq").on(t.descriptorHash),
    index("reasoning_traces_last_seen_idx").on(t.lastSeenAt),
    index("reasoning_traces_stratum_idx").on(t.shardType, t.outcome, t.lastSeenAt),
    index("reasoning_traces_skipped_idx").on(t.embedSkippedAt),
  ],
);
export type ReasoningTraceRow = InferSelectModel<typeof reasoningTraces>;

/** Something an agent learned, as a predicate with args, and the handle that is embedded. */
export const learnings = sqliteTable(
  "learnings",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    agentId: text("agent_id").notNull(),
    predicate: text("predicate").notNull(),
    args: text("args").notNull(),
    description: text("description").notNull(),
    confidence: real("confidence").notNull(),
    semanticHandle: text("semantic_handle").notNull(),
    handleVersion: integer("handle_version").notNull(),
    handleHash: text("handle_hash").notNull(),
    seenCount: integer("seen_count").notNull().default(1),
    createdAt: integer("created_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (t) => [uniqueIndex("learnings_hash_uq").on(t.handleHash), index("learnings_last_seen_idx").on(t.lastSeenAt)],
);
export type LearningRow = InferSelectModel<typeof learnings>;

/** Per-store reflection settings: one row (id = 1), edited by admins. */
export const reflectionSettings = sqliteTable("reflection_settings", {
  id: integer("id").primaryKey(),
  settings: text("settings").notNull(),
  updatedAt: integer("updated_at").notNull(),
  updatedBy: text("updated_by").notNull(),
});

/** One row per recall: what was asked, how it was answered, how fast. */
export const recallEvents = sqliteTable(
  "recall_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    agentId: text("agent_id").notNull(),
    query: text("query").notNull(),
    mode: text("mode", { enum: ["hybrid", "vector", "lexical"] }).notNull(),
    fallbackReason: text("fallback_reason"),
    latencyMs: real("latency_ms").notNull(),
    cacheHit: integer("cache_hit", { mode: "boolean" }).notNull(),
    hitCount: integer("hit_count").notNull(),
    topScore: real("top_score"),
    warning: integer("warning", { mode: "boolean" }).notNull(),
    createdAt: integer("created_at").notNull(),
    /** This event's bytes with its hits', and the sum over every event logged up to this one (lib/recall/events.ts). */
    bytes: integer("bytes").notNull().default(0),
    bytesThrough: integer("bytes_through").notNull().default(0),
  },
  (t) => [index("recall_events_created_idx").on(t.createdAt), index("recall_events_bytes_through_idx").on(t.bytesThrough)],
);
export type RecallEventRow = InferSelectModel<typeof recallEvents>;

/** The hits a recall returned, so people can rate them; `relevant` is null until rated. */
export const recallEventHits = sqliteTable(
  "recall_event_hits",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    eventId: integer("event_id")
      .notNull()
      .references(() => recallEvents.id, { onDelete: "cascade" }),
    rank: integer("rank").notNull(),
    artifact: text("artifact", { enum: ["trace", "learning"] }).notNull(),
    refId: integer("ref_id").notNull(),
    score: real("score").notNull(),
    summary: text("summary").notNull(),
    relevant: integer("relevant", { mode: "boolean" }),
    ratedBy: text("rated_by"),
    ratedAt: integer("rated_at"),
  },
  (t) => [index("recall_event_hits_event_idx").on(t.eventId, t.rank), index("recall_event_hits_unrated_idx").on(t.ratedAt)],
);
export type RecallEventHitRow = InferSelectModel<typeof recallEventHits>;
