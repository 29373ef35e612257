-- Hand-written: deleted memories kept, restorable, for DUALMIND_MEMORY_TRASH_DAYS (lib/index/memories-pg.ts):
-- the memory's whole text as it was (frontmatter + body), the path it had, who deleted it and when.
-- On SQLite the same lives as files in memory/.trash/.
CREATE TABLE IF NOT EXISTS "memory_trash" (
  "id" text PRIMARY KEY,
  "path" text NOT NULL,
  "content" text NOT NULL,
  "deleted_at" bigint NOT NULL,
  "deleted_by" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "memory_trash_deleted_at_idx" ON "memory_trash" USING btree ("deleted_at");
