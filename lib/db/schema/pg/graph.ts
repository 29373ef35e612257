import { bigint, boolean, check, doublePrecision, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { EVIDENCE_STANCES, FRAME_COLUMNS, FRAMEWORKS, ENTITY_TYPES } from "../graph";

/**
 * Thoughts, chains, the knowledge graph and working memory of one store on
 * PostgreSQL (the SQLite twin is ../graph.ts; same columns, so its row
 * shapers serve both). Part of the store schema (re-exported by ./store.ts,
 * which drizzle-kit reads). Hand-written in drizzle/pg/store/0005 because
 * drizzle-kit would qualify them with "public" or cannot express them: the
 * foreign keys and their cascades, and the generated tsvector columns
 * (english stemming, as FTS5's porter tokenizer on SQLite) with GIN indexes.
 *
 * Dialect differences, on purpose: epoch-ms columns are bigint (mode
 * number); `seq` is an identity column (two replicas inserting at once each
 * get their own); JSON columns (tags, attributes, properties, value) stay
 * JSON text as on SQLite, so the shapers parse them the same way; SQLite REAL
 * (8 bytes) is double precision, so scores read back exactly as written.
 */
const epochMs = (name: string) => bigint(name, { mode: "number" });

export const chains = pgTable("chains", {
  id: text("id").primaryKey(),
  createdAt: epochMs("created_at").notNull(),
  updatedAt: epochMs("updated_at").notNull(),
  /** Kept equal to count(thoughts in the chain) by every write, in the same transaction (the chain row is locked first). */
  thoughtCount: integer("thought_count").notNull().default(0),
});

export const thoughts = pgTable(
  "thoughts",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    id: text("id").notNull(),
    content: text("content").notNull(),
    framework: text("framework", { enum: FRAMEWORKS }).notNull(),
    /** chains.id, on delete set null (hand-written in 0005). */
    chainId: text("chain_id"),
    thoughtNumber: integer("thought_number"),
    totalThoughts: integer("total_thoughts"),
    timestamp: epochMs("timestamp").notNull(),
    importance: doublePrecision("importance").notNull().default(0.5),
    relevance: doublePrecision("relevance").notNull().default(0.5),
    tags: text("tags").notNull().default("[]"),
    category: text("category"),
    /** 1 − max cosine to the previous thoughts; null until the thought has a vector (filled in on reads, lib/graph/thoughts.ts). */
    novelty: doublePrecision("novelty"),
    consistency: doublePrecision("consistency"),
    utility: doublePrecision("utility"),
    feedbackCount: integer("feedback_count").notNull().default(0),
    contentHash: text("content_hash").notNull(),
    createdBy: text("created_by").notNull(),
  },
  (t) => [
    uniqueIndex("thoughts_id_uq").on(t.id),
    uniqueIndex("thoughts_chain_number_uq").on(t.chainId, t.thoughtNumber),
    index("thoughts_timestamp_idx").on(t.timestamp),
    index("thoughts_framework_idx").on(t.framework, t.timestamp),
    index("thoughts_novelty_pending_idx").on(t.seq).where(sql`novelty is null`),
  ],
);

export const kgNodes = pgTable(
  "kg_node",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    displayName: text("display_name").notNull(),
    entityType: text("entity_type", { enum: ENTITY_TYPES }).notNull(),
    scope: text("scope"),
    createdAt: epochMs("created_at").notNull(),
    updatedAt: epochMs("updated_at").notNull(),
    createdBy: text("created_by").notNull(),
    attributes: text("attributes").notNull().default("{}"),
    tags: text("tags").notNull().default("[]"),
    embedHash: text("embed_hash").notNull(),
    autoExtracted: boolean("auto_extracted").notNull().default(false),
  },
  (t) => [uniqueIndex("kg_node_id_uq").on(t.id), uniqueIndex("kg_node_name_type_uq").on(t.name, t.entityType), index("kg_node_type_idx").on(t.entityType, t.updatedAt)],
);

export const kgFrames = pgTable(
  "kg_frame",
  {
    id: text("id").primaryKey(),
    /** kg_node.id, on delete cascade (hand-written in 0005). */
    nodeId: text("node_id").notNull(),
    column: text("column", { enum: FRAME_COLUMNS }).notNull(),
    properties: text("properties").notNull().default("{}"),
    createdAt: epochMs("created_at").notNull(),
    updatedAt: epochMs("updated_at").notNull(),
    createdBy: text("created_by").notNull(),
  },
  (t) => [index("kg_frame_node_idx").on(t.nodeId, t.column)],
);

export const kgRelations = pgTable(
  "kg_relation",
  {
    id: text("id").primaryKey(),
    /** kg_node.id both ends, on delete cascade (hand-written in 0005). */
    fromId: text("from_id").notNull(),
    toId: text("to_id").notNull(),
    relationshipType: text("relationship_type").notNull(),
    bidirectional: boolean("bidirectional").notNull().default(false),
    weight: doublePrecision("weight").notNull(),
    confidence: doublePrecision("confidence").notNull(),
    temporalStart: epochMs("temporal_start"),
    temporalEnd: epochMs("temporal_end"),
    attributes: text("attributes").notNull().default("{}"),
    createdAt: epochMs("created_at").notNull(),
    updatedAt: epochMs("updated_at").notNull(),
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

/** Links a frame or relation to a thought that supports (or contradicts) it; both sides cascade on delete (hand-written in 0005). */
function evidenceTable(name: string, targetColumn: string) {
  return pgTable(
    name,
    {
      targetId: text(targetColumn).notNull(),
      thoughtId: text("thought_id").notNull(),
      stance: text("stance", { enum: EVIDENCE_STANCES }).notNull().default("supports"),
      createdAt: epochMs("created_at").notNull(),
      createdBy: text("created_by").notNull(),
    },
    (t) => [primaryKey({ columns: [t.targetId, t.thoughtId] }), index(`${name}_thought_idx`).on(t.thoughtId)],
  );
}

export const kgFrameEvidence = evidenceTable("kg_frame_evidence", "frame_id");
export const kgRelationEvidence = evidenceTable("kg_relation_evidence", "relation_id");

/** A small per-store scratchpad; rows past expires_at are never returned and are swept on write. */
export const workingMemory = pgTable(
  "working_memory",
  {
    key: text("key").primaryKey(),
    value: text("value").notNull(),
    expiresAt: epochMs("expires_at"),
    updatedAt: epochMs("updated_at").notNull(),
    updatedBy: text("updated_by").notNull(),
  },
  (t) => [index("working_memory_expires_idx").on(t.expiresAt)],
);
