-- Per-agent retrieval counts by the hour (the activity summary's searches, recalls and remembers, with failures):
-- counted in memory on the request path and merged here in batches. Keys come from server-issued agent ids and
-- configured stores only; rows older than DUALMIND_ACTIVITY_COUNTS_MAX_DAYS are dropped. Hand-written.
CREATE TABLE "retrieval_counts" (
	"hour_ts" bigint NOT NULL,
	"agent_id" text NOT NULL,
	"store" text NOT NULL,
	"kind" text NOT NULL,
	"count" bigint DEFAULT 0 NOT NULL,
	"failures" bigint DEFAULT 0 NOT NULL,
	PRIMARY KEY("agent_id", "hour_ts", "store", "kind")
);--> statement-breakpoint
CREATE INDEX "retrieval_counts_hour_idx" ON "retrieval_counts" USING btree ("hour_ts");
