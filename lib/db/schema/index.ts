import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Schema of one store's index.db. Virtual tables (FTS5, vec0) and triggers
 * live in hand-written migrations under drizzle/index/, outside this diff.
 */
export const meta = sqliteTable("meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

/** One indexed text: a memory file, a file under a source root, or a document sent by API. */
export const documents = sqliteTable(
  "documents",
  {
    docId: integer("doc_id").primaryKey({ autoIncrement: true }),
    /** Normalized with `/`: `memory/<category>/<slug>.md`, `source/<root>/<rel>`, or the API path. */
    path: text("path").notNull(),
    /** `file` rows mirror a file on disk (reindex owns them); `api` rows exist only here. */
    origin: text("origin", { enum: ["file", "api"] }).notNull(),
    kind: text("kind", { enum: ["memory", "markdown", "code", "text"] }).notNull(),
    sha256: text("sha256").notNull(),
    bytes: integer("bytes").notNull(),
    mtime: integer("mtime").notNull(),
    /** ctime (ms) and inode of a `file` row's file when its content was last read (null: not recorded yet); with size and mtime they let a reindex skip reading it. */
    ctime: integer("ctime"),
    inode: integer("inode"),
    /** Kept only for `api` documents: files are their own source of truth. */
    content: text("content"),
    indexedAt: integer("indexed_at").notNull(),
  },
  (t) => [uniqueIndex("documents_path_uq").on(t.path), index("documents_kind_idx").on(t.kind), index("documents_mtime_idx").on(t.mtime)],
);
export type DocumentRow = typeof documents.$inferSelect;

/**
 * Chunks carry a stable integer rowid (`id`): an unchanged chunk keeps it
 * across re-ingests, so vectors stored by rowid stay joined.
 */
export const chunks = sqliteTable(
  "chunks",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** sha256(path, chunk_index, chunk_sha256, chunking_version), hex: the same on every machine. */
    chunkId: text("chunk_id").notNull(),
    docId: integer("doc_id")
      .notNull()
      .references(() => documents.docId, { onDelete: "cascade" }),
    chunkIndex: integer("chunk_index").notNull(),
    chunkSha256: text("chunk_sha256").notNull(),
    chunkingVersion: integer("chunking_version").notNull(),
    startByte: integer("start_byte").notNull(),
    endByte: integer("end_byte").notNull(),
    text: text("text").notNull(),
  },
  (t) => [uniqueIndex("chunks_chunk_id_uq").on(t.chunkId), uniqueIndex("chunks_doc_index_uq").on(t.docId, t.chunkIndex), index("chunks_version_idx").on(t.chunkingVersion)],
);
export type ChunkRow = typeof chunks.$inferSelect;

/** The index of markdown memories; the files under memory/ are the source of truth. */
export const memories = sqliteTable(
  "memories",
  {
    /** `<category path>/<slug>` without `.md`. */
    path: text("path").primaryKey(),
    category: text("category").notNull(),
    /** JSON array of strings. */
    tags: text("tags").notNull().default("[]"),
    tokenEstimate: integer("token_estimate").notNull(),
    source: text("source"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    expiresAt: integer("expires_at"),
    summary: text("summary"),
  },
  (t) => [index("memories_category_idx").on(t.category), index("memories_updated_idx").on(t.updatedAt), index("memories_expires_idx").on(t.expiresAt)],
);
export type MemoryRow = typeof memories.$inferSelect;

export const categories = sqliteTable(
  "categories",
  {
    path: text("path").primaryKey(),
    parentPath: text("parent_path"),
    description: text("description"),
  },
  (t) => [index("categories_parent_idx").on(t.parentPath)],
);

/** The kinds of item whose state item_state holds (lib/index/item-state.ts). */
export const ITEM_KINDS = ["memory", "learning", "trace", "thought", "node", "relation", "frame"] as const;
export const ITEM_STATUSES = ["active", "retired", "proposed", "rejected"] as const;

/**
 * Governed memory's per-item state: a row only for an item that was ever invalidated, restored or superseded (an
 * item without one is active). Event time: valid_from/valid_to; record time: recorded_at/retired_at. `history` is
 * the JSON list of its transitions (drizzle/index/0022_item_state.sql).
 */
export const itemState = sqliteTable(
  "item_state",
  {
    kind: text("kind", { enum: ITEM_KINDS }).notNull(),
    itemId: text("item_id").notNull(),
    status: text("status", { enum: ITEM_STATUSES }).notNull().default("active"),
    validFrom: integer("valid_from"),
    validTo: integer("valid_to"),
    recordedAt: integer("recorded_at").notNull(),
    retiredAt: integer("retired_at"),
    supersedes: text("supersedes"),
    supersededBy: text("superseded_by"),
    reason: text("reason"),
    decidedBy: text("decided_by"),
    history: text("history").notNull().default("[]"),
    updatedAt: integer("updated_at").notNull(),
    /** A fact's subject and property, normalized (lib/index/facts.ts); null when the item was not written as a fact. */
    factKey: text("fact_key"),
    /** What the fact states for its key (compared to tell a new value from the same one). */
    factValue: text("fact_value"),
  },
  // The fact-key lookup's range per kind and status (lib/index/fact-match.ts; drizzle/index/0026_fact_lookup_idx.sql).
  (t) => [primaryKey({ columns: [t.kind, t.itemId] }), index("item_state_fact_lookup_idx").on(t.kind, t.status, t.factKey).where(sql`fact_key is not null`)],
);
export type ItemStateRow = typeof itemState.$inferSelect;

/** The kinds forgetting policies apply to (lib/index/forgetting.ts): the kinds a store accumulates by itself. */
export const FORGET_KINDS = ["memory", "learning", "trace", "thought"] as const;

/** A store's forgetting policy for one kind of item (drizzle/index/0024_forget_policy.sql); a kind without a row is never forgotten. */
export const forgetPolicy = sqliteTable("forget_policy", {
  kind: text("kind", { enum: FORGET_KINDS }).primaryKey(),
  ttlDays: real("ttl_days"),
  ttlSince: text("ttl_since", { enum: ["written", "used"] }).notNull().default("written"),
  maxItems: integer("max_items"),
  unusedDays: real("unused_days"),
  honourExpiresAt: integer("honour_expires_at", { mode: "boolean" }).notNull().default(false),
  /** JSON list of item ids the policy never retires. */
  protectedIds: text("protected_ids").notNull().default("[]"),
  updatedAt: integer("updated_at").notNull(),
  updatedBy: text("updated_by").notNull(),
});
export type ForgetPolicyRow = typeof forgetPolicy.$inferSelect;

/** One run of a store's forgetting policies, dry or real: who, when, the per-call limit, counts per rule. */
export const forgetRun = sqliteTable(
  "forget_run",
  {
    id: text("id").primaryKey(),
    at: integer("at").notNull(),
    actor: text("actor").notNull(),
    dryRun: integer("dry_run", { mode: "boolean" }).notNull(),
    maxItems: integer("max_items").notNull(),
    /** JSON: rule → items (retired, or for a dry run, that would be). */
    counts: text("counts").notNull().default("{}"),
    retired: integer("retired").notNull(),
    remaining: integer("remaining").notNull(),
    /** sha256 of the run's item list (kind/id lines, in order): what the audit entry vouches for. */
    idsSha256: text("ids_sha256").notNull(),
  },
  (t) => [index("forget_run_at_idx").on(t.at)],
);
export type ForgetRunRow = typeof forgetRun.$inferSelect;

/** Each item a real run retired: by which rule and why (the item's own rows are kept; restore returns it). */
export const forgetRetired = sqliteTable(
  "forget_retired",
  {
    kind: text("kind", { enum: FORGET_KINDS }).notNull(),
    itemId: text("item_id").notNull(),
    runId: text("run_id").notNull(),
    rule: text("rule").notNull(),
    why: text("why").notNull(),
    title: text("title").notNull(),
    at: integer("at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.itemId, t.runId] }), index("forget_retired_at_idx").on(t.at)],
);
export type ForgetRetiredRow = typeof forgetRetired.$inferSelect;
/** Contradictions between facts that could not be resolved (lib/index/facts.ts): one row per item and the item it contradicts. */
export const itemContradictions = sqliteTable(
  "item_contradictions",
  {
    kind: text("kind", { enum: ITEM_KINDS }).notNull(),
    itemId: text("item_id").notNull(),
    otherId: text("other_id").notNull(),
    factKey: text("fact_key").notNull(),
    reason: text("reason").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.itemId, t.otherId] })],
);
export type ItemContradictionRow = typeof itemContradictions.$inferSelect;

/** The kinds a write policy governs: every item kind but traces, which record what happened rather than claim anything. */
export const REVIEWABLE_KINDS = ["memory", "learning", "thought", "node", "relation", "frame"] as const;

/** A store's write policy, at most one row (drizzle/index/0023_write_policy.sql): JSON, read by lib/index/write-policy.ts. */
export const writePolicy = sqliteTable("write_policy", {
  id: integer("id").primaryKey(),
  policy: text("policy").notNull(),
  updatedAt: integer("updated_at").notNull(),
  updatedBy: text("updated_by").notNull(),
});
export type WritePolicyRow = typeof writePolicy.$inferSelect;

/** The provenance of a write that landed as a proposal (its state is its item_state row). */
export const proposals = sqliteTable(
  "proposals",
  {
    kind: text("kind", { enum: REVIEWABLE_KINDS }).notNull(),
    itemId: text("item_id").notNull(),
    proposedBy: text("proposed_by").notNull(),
    tokenLabel: text("token_label"),
    proposedAt: integer("proposed_at").notNull(),
    why: text("why", { enum: ["untrusted", "flagged"] }).notNull(),
    flags: text("flags").notNull().default("[]"),
  },
  (t) => [primaryKey({ columns: [t.kind, t.itemId] }), index("proposals_at_idx").on(t.proposedAt)],
);
export type ProposalRow = typeof proposals.$inferSelect;
