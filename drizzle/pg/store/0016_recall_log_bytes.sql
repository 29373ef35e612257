-- The recall log's size in bytes (DUALMIND_RECALL_LOG_MAX_BYTES): each event's bytes (its row and its hits' rows, as
-- lib/recall/events.ts counts them) and the running sum of bytes of every event logged up to it, so the log's size is
-- two key lookups (newest sum - oldest sum + oldest bytes) and the oldest events to drop are one index range. Hand-written.
ALTER TABLE "recall_events" ADD COLUMN IF NOT EXISTS "bytes" bigint DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE "recall_events" ADD COLUMN IF NOT EXISTS "bytes_through" bigint DEFAULT 0 NOT NULL;
--> statement-breakpoint
UPDATE "recall_events" SET "bytes" = 128 + octet_length("agent_id") + octet_length("query") + coalesce(octet_length("fallback_reason"), 0)
  + coalesce((SELECT sum(64 + octet_length(h."summary")) FROM "recall_event_hits" h WHERE h."event_id" = "recall_events"."id"), 0);
--> statement-breakpoint
UPDATE "recall_events" SET "bytes_through" = c.t FROM (SELECT "id", sum("bytes") OVER (ORDER BY "id") AS t FROM "recall_events") AS c WHERE c."id" = "recall_events"."id";
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "recall_events_bytes_through_idx" ON "recall_events" ("bytes_through");
