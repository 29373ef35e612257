import { sqliteTable, text, integer, index, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { InferSelectModel } from "drizzle-orm";

/** Key/value facts about this database file (schema version, created_at). */
export const meta = sqliteTable("meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

export const users = sqliteTable(
  "users",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    username: text("username").notNull(),
    /** scrypt$N$r$p$saltB64$hashB64 */
    passwordHash: text("password_hash").notNull(),
    role: text("role", { enum: ["viewer", "admin"] }).notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    disabledAt: integer("disabled_at"),
  },
  (t) => [uniqueIndex("users_username_uq").on(t.username)],
);
export type User = InferSelectModel<typeof users>;

export const apiTokens = sqliteTable(
  "api_tokens",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** sha256 hex of the full token; the token itself is never stored. */
    tokenHash: text("token_hash").notNull(),
    /** First characters of the token, so people can tell tokens apart. */
    displayPrefix: text("display_prefix").notNull(),
    label: text("label").notNull(),
    agentId: text("agent_id").notNull(),
    /** JSON array of "read" | "write" | "admin" */
    scopes: text("scopes").notNull(),
    /** JSON array of store names, or NULL for every store. */
    stores: text("stores"),
    createdBy: text("created_by").notNull(),
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at"),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("api_tokens_hash_uq").on(t.tokenHash), index("api_tokens_agent_idx").on(t.agentId)],
);
export type ApiTokenRow = InferSelectModel<typeof apiTokens>;

/** Append-only, hash-chained: hash = sha256(prev_hash + canonical row). */
export const auditLog = sqliteTable(
  "audit_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    ts: integer("ts").notNull(),
    actor: text("actor").notNull(),
    action: text("action").notNull(),
    target: text("target"),
    reason: text("reason"),
    details: text("details"),
    prevHash: text("prev_hash").notNull(),
    hash: text("hash").notNull(),
  },
  (t) => [index("audit_log_ts_idx").on(t.ts), index("audit_log_actor_idx").on(t.actor)],
);
export type AuditRow = InferSelectModel<typeof auditLog>;
