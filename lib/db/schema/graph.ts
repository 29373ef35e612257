import { sql, type InferSelectModel } from "drizzle-orm";
import { check, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex, type AnySQLiteColumn } from "drizzle-orm/sqlite-core";

/**
 * Thoughts, chains, the knowledge graph and working memory of one store's
 * index.db. Thoughts and nodes have an INTEGER `seq` (the ref id their
 * vectors are filed under in `embeddings`) and a uuid `id` for the API.
 * FTS5 tables and their triggers live in the hand-written graph_fts migration.
 */

export const FRAMEWORKS = ["conversation", "debug", "build", "stuck", "review"] as const;
export const ENTITY_TYPES = ["issue", "person", "system", "concept", "tool", "framework", "custom"] as const;
export const FRAME_COLUMNS = ["semantic", "episodic", "procedural", "custom"] as const;
export const EVIDENCE_STANCES = ["supports", "contradicts"] as const;

export const chains = sqliteTable("chains", {
  id: text("id").primaryKey(),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
  /** Kept equal to count(thoughts in the chain) by every write, in the same transaction. */
  thoughtCount: integer("thought_count").notNull().default(0),
});
export type ChainRow = InferSelectModel<typeof chains>;

export const thoughts = sqliteTable(
  "thoughts",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    id: text("id").notNull(),
    content: text("content").notNull(),
    framework: text("framework", { enum: FRAMEWORKS }).notNull(),
    chainId: text("chain_id").references(() => chains.id, { onDelete: "set null" }),
    thoughtNumber: integer("thought_number"),
    totalThoughts: integer("total_thoughts"),
    timestamp: integer("timestamp").notNull(),
    importance: real("importance").notNull().default(0.5),
    relevance: real("relevance").notNull().default(0.5),
    tags: text("tags").notNull().default("[]"),
    category: text("category"),
    /** 1 − max cosine to the previous thoughts; null until the thought's vector exists. */
    novelty: real("novelty"),
    consistency: real("consistency"),
    /** Moving average of feedback; null until the first feedback. */
    utility: real("utility"),
    feedbackCount: integer("feedback_count").notNull().default(0),
    /** sha256 of the embedded text (the content). */
    contentHash: text("content_hash").notNull(),
    createdBy: text("created_by").notNull(),
  },
  (t) => [
    uniqueIndex("thoughts_id_uq").on(t.id),
    uniqueIndex("thoughts_chain_number_uq").on(t.chainId, t.thoughtNumber),
    index("thoughts_timestamp_idx").on(t.timestamp),
    index("thoughts_chain_time_idx").on(t.chainId, t.timestamp, t.seq),
    index("thoughts_framework_idx").on(t.framework, t.timestamp),
    index("thoughts_novelty_pending_idx").on(t.seq).where(sql`novelty is null`),
  ],
);
export type ThoughtRow = InferSelectModel<typeof thoughts>;

export const kgNodes = sqliteTable(
  "kg_node",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    id: text("id").notNull(),
    /** Canonical key: trimmed, lower-cased, single-spaced; unique per entity type. */
    name: text("name").notNull(),
    displayName: text("display_name").notNull(),
    entityType: text("entity_type", { enum: ENTITY_TYPES }).notNull(),
    scope: text("scope"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    createdBy: text("created_by").notNull(),
    attributes: text("attributes").notNull().default("{}"),
    tags: text("tags").notNull().default("[]"),
    /** sha256 of the embedded text (see nodeEmbeddingText). */
    embedHash: text("embed_hash").notNull(),
    autoExtracted: integer("auto_extracted", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [uniqueIndex("kg_node_id_uq").on(t.id), uniqueIndex("kg_node_name_type_uq").on(t.name, t.entityType), index("kg_node_type_idx").on(t.entityType, t.updatedAt)],
);
export type KgNodeRow = InferSelectModel<typeof kgNodes>;

export const kgFrames = sqliteTable(
  "kg_frame",
  {
    id: text("id").primaryKey(),
    nodeId: text("node_id")
      .notNull()
      .references(() => kgNodes.id, { onDelete: "cascade" }),
    column: text("column", { enum: FRAME_COLUMNS }).notNull(),
    properties: text("properties").notNull().default("{}"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    createdBy: text("created_by").notNull(),
  },
  (t) => [index("kg_frame_node_idx").on(t.nodeId, t.column)],
);
export type KgFrameRow = InferSelectModel<typeof kgFrames>;

export const kgRelations = sqliteTable(
  "kg_relation",
  {
    id: text("id").primaryKey(),
    fromId: text("from_id")
      .notNull()
      .references(() => kgNodes.id, { onDelete: "cascade" }),
    toId: text("to_id")
      .notNull()
      .references(() => kgNodes.id, { onDelete: "cascade" }),
    relationshipType: text("relationship_type").notNull(),
    bidirectional: integer("bidirectional", { mode: "boolean" }).notNull().default(false),
    weight: real("weight").notNull(),
    confidence: real("confidence").notNull(),
    temporalStart: integer("temporal_start"),
    temporalEnd: integer("temporal_end"),
    attributes: text("attributes").notNull().default("{}"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    createdBy: text("created_by").notNull(),
  },
  (t) => [
    uniqueIndex("kg_relation_edge_uq").on(t.fromId, t.toId, t.relationshipType),
    index("kg_relation_from_idx").on(t.fromId, t.weight),
    index("kg_relation_to_idx").on(t.toId, t.weight),
    check("kg_relation_no_self_loop", sql`${t.fromId} <> ${t.toId}`),
    check("kg_relation_weight_range", sql`${t.weight} between 0 and 1 and ${t.confidence} between 0 and 1`),
  ],
);
export type KgRelationRow = InferSelectModel<typeof kgRelations>;

/** Links a frame or relation to a thought that supports (or contradicts) it; both sides cascade on delete. */
function evidenceTable(name: string, targetColumn: string, target: () => AnySQLiteColumn) {
  return sqliteTable(
    name,
    {
      targetId: text(targetColumn)
        .notNull()
        .references(target, { onDelete: "cascade" }),
      thoughtId: text("thought_id")
        .notNull()
        .references(() => thoughts.id, { onDelete: "cascade" }),
      stance: text("stance", { enum: EVIDENCE_STANCES }).notNull().default("supports"),
      createdAt: integer("created_at").notNull(),
      createdBy: text("created_by").notNull(),
    },
    (t) => [primaryKey({ columns: [t.targetId, t.thoughtId] }), index(`${name}_thought_idx`).on(t.thoughtId)],
  );
}

export const kgFrameEvidence = evidenceTable("kg_frame_evidence", "frame_id", () => kgFrames.id);

export const kgRelationEvidence = evidenceTable("kg_relation_evidence", "relation_id", () => kgRelations.id);

/** A small per-store scratchpad; rows past expires_at are never returned and are swept on write. */
export const workingMemory = sqliteTable(
  "working_memory",
  {
    key: text("key").primaryKey(),
    value: text("value").notNull(),
    expiresAt: integer("expires_at"),
    updatedAt: integer("updated_at").notNull(),
    updatedBy: text("updated_by").notNull(),
  },
  (t) => [index("working_memory_expires_idx").on(t.expiresAt)],
);
export type WorkingMemoryRow = InferSelectModel<typeof workingMemory>;
