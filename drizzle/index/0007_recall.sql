CREATE TABLE `learnings` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`agent_id` text NOT NULL,
	`predicate` text NOT NULL,
	`args` text NOT NULL,
	`description` text NOT NULL,
	`confidence` real NOT NULL,
	`semantic_handle` text NOT NULL,
	`handle_version` integer NOT NULL,
	`handle_hash` text NOT NULL,
	`seen_count` integer DEFAULT 1 NOT NULL,
	`created_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `learnings_hash_uq` ON `learnings` (`handle_hash`);--> statement-breakpoint
CREATE INDEX `learnings_last_seen_idx` ON `learnings` (`last_seen_at`);--> statement-breakpoint
CREATE TABLE `reasoning_traces` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`agent_id` text NOT NULL,
	`intent_verb` text NOT NULL,
	`intent_target` text NOT NULL,
	`shard_type` text NOT NULL,
	`key_files` text NOT NULL,
	`outcome` text NOT NULL,
	`key_issue` text NOT NULL,
	`error_tags` text NOT NULL,
	`summary_descriptor` text NOT NULL,
	`descriptor_version` integer NOT NULL,
	`descriptor_hash` text NOT NULL,
	`embed_skipped_at` integer,
	`seen_count` integer DEFAULT 1 NOT NULL,
	`created_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `reasoning_traces_hash_uq` ON `reasoning_traces` (`descriptor_hash`);--> statement-breakpoint
CREATE INDEX `reasoning_traces_last_seen_idx` ON `reasoning_traces` (`last_seen_at`);--> statement-breakpoint
CREATE INDEX `reasoning_traces_stratum_idx` ON `reasoning_traces` (`shard_type`,`outcome`,`last_seen_at`);--> statement-breakpoint
CREATE INDEX `reasoning_traces_skipped_idx` ON `reasoning_traces` (`embed_skipped_at`);--> statement-breakpoint
CREATE TABLE `recall_event_hits` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`event_id` integer NOT NULL,
	`rank` integer NOT NULL,
	`artifact` text NOT NULL,
	`ref_id` integer NOT NULL,
	`score` real NOT NULL,
	`summary` text NOT NULL,
	`relevant` integer,
	`rated_by` text,
	`rated_at` integer,
	FOREIGN KEY (`event_id`) REFERENCES `recall_events`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `recall_event_hits_event_idx` ON `recall_event_hits` (`event_id`,`rank`);--> statement-breakpoint
CREATE INDEX `recall_event_hits_unrated_idx` ON `recall_event_hits` (`rated_at`);--> statement-breakpoint
CREATE TABLE `recall_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`agent_id` text NOT NULL,
	`query` text NOT NULL,
	`mode` text NOT NULL,
	`fallback_reason` text,
	`latency_ms` real NOT NULL,
	`cache_hit` integer NOT NULL,
	`hit_count` integer NOT NULL,
	`top_score` real,
	`warning` integer NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `recall_events_created_idx` ON `recall_events` (`created_at`);--> statement-breakpoint
CREATE TABLE `reflection_settings` (
	`id` integer PRIMARY KEY NOT NULL,
	`settings` text NOT NULL,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL
);
