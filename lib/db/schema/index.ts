import { sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Schema of one store's index.db. Virtual tables (FTS5, vec0) and triggers
 * live in hand-written migrations under drizzle/index/, outside this diff.
 */
export const meta = sqliteTable("meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});
