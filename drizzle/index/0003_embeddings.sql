CREATE TABLE `embed_queue` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`ref_id` integer NOT NULL,
	`input_hash` text NOT NULL,
	`enqueued_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`last_error` text,
	`claimed_by` text,
	`claimed_until` integer,
	`parked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `embed_queue_item_uq` ON `embed_queue` (`kind`,`ref_id`);--> statement-breakpoint
CREATE INDEX `embed_queue_ready_idx` ON `embed_queue` (`parked_at`,`next_attempt_at`);--> statement-breakpoint
CREATE TABLE `embedding_cache` (
	`key` text PRIMARY KEY NOT NULL,
	`vector` blob NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `embedding_models` (
	`fingerprint_id` text PRIMARY KEY NOT NULL,
	`info` text NOT NULL,
	`first_seen_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `embeddings` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`ref_id` integer NOT NULL,
	`fingerprint_id` text NOT NULL,
	`dim` integer NOT NULL,
	`task` text NOT NULL,
	`input_hash` text NOT NULL,
	`vector` blob NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `embeddings_item_uq` ON `embeddings` (`kind`,`ref_id`,`fingerprint_id`);--> statement-breakpoint
CREATE INDEX `embeddings_fp_idx` ON `embeddings` (`fingerprint_id`,`kind`);