CREATE TABLE `chains` (
	`id` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`thought_count` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `kg_frame_evidence` (
	`frame_id` text NOT NULL,
	`thought_id` text NOT NULL,
	`stance` text DEFAULT 'supports' NOT NULL,
	`created_at` integer NOT NULL,
	`created_by` text NOT NULL,
	PRIMARY KEY(`frame_id`, `thought_id`),
	FOREIGN KEY (`frame_id`) REFERENCES `kg_frame`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`thought_id`) REFERENCES `thoughts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `kg_frame_evidence_thought_idx` ON `kg_frame_evidence` (`thought_id`);--> statement-breakpoint
CREATE TABLE `kg_frame` (
	`id` text PRIMARY KEY NOT NULL,
	`node_id` text NOT NULL,
	`column` text NOT NULL,
	`properties` text DEFAULT '{}' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`created_by` text NOT NULL,
	FOREIGN KEY (`node_id`) REFERENCES `kg_node`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `kg_frame_node_idx` ON `kg_frame` (`node_id`,`column`);--> statement-breakpoint
CREATE TABLE `kg_node` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`name` text NOT NULL,
	`display_name` text NOT NULL,
	`entity_type` text NOT NULL,
	`scope` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`created_by` text NOT NULL,
	`attributes` text DEFAULT '{}' NOT NULL,
	`tags` text DEFAULT '[]' NOT NULL,
	`embed_hash` text NOT NULL,
	`auto_extracted` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `kg_node_id_uq` ON `kg_node` (`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `kg_node_name_type_uq` ON `kg_node` (`name`,`entity_type`);--> statement-breakpoint
CREATE INDEX `kg_node_type_idx` ON `kg_node` (`entity_type`,`updated_at`);--> statement-breakpoint
CREATE TABLE `kg_relation_evidence` (
	`relation_id` text NOT NULL,
	`thought_id` text NOT NULL,
	`stance` text DEFAULT 'supports' NOT NULL,
	`created_at` integer NOT NULL,
	`created_by` text NOT NULL,
	PRIMARY KEY(`relation_id`, `thought_id`),
	FOREIGN KEY (`relation_id`) REFERENCES `kg_relation`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`thought_id`) REFERENCES `thoughts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `kg_relation_evidence_thought_idx` ON `kg_relation_evidence` (`thought_id`);--> statement-breakpoint
CREATE TABLE `kg_relation` (
	`id` text PRIMARY KEY NOT NULL,
	`from_id` text NOT NULL,
	`to_id` text NOT NULL,
	`relationship_type` text NOT NULL,
	`bidirectional` integer DEFAULT false NOT NULL,
	`weight` real NOT NULL,
	`confidence` real NOT NULL,
	`temporal_start` integer,
	`temporal_end` integer,
	`attributes` text DEFAULT '{}' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`created_by` text NOT NULL,
	FOREIGN KEY (`from_id`) REFERENCES `kg_node`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`to_id`) REFERENCES `kg_node`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "kg_relation_no_self_loop" CHECK("kg_relation"."from_id" <> "kg_relation"."to_id"),
	CONSTRAINT "kg_relation_weight_range" CHECK("kg_relation"."weight" between 0 and 1 and "kg_relation"."confidence" between 0 and 1)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `kg_relation_edge_uq` ON `kg_relation` (`from_id`,`to_id`,`relationship_type`);--> statement-breakpoint
CREATE INDEX `kg_relation_from_idx` ON `kg_relation` (`from_id`,`weight`);--> statement-breakpoint
CREATE INDEX `kg_relation_to_idx` ON `kg_relation` (`to_id`,`weight`);--> statement-breakpoint
CREATE TABLE `thoughts` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`content` text NOT NULL,
	`framework` text NOT NULL,
	`chain_id` text,
	`thought_number` integer,
	`total_thoughts` integer,
	`timestamp` integer NOT NULL,
	`importance` real DEFAULT 0.5 NOT NULL,
	`relevance` real DEFAULT 0.5 NOT NULL,
	`tags` text DEFAULT '[]' NOT NULL,
	`category` text,
	`novelty` real,
	`consistency` real,
	`utility` real,
	`feedback_count` integer DEFAULT 0 NOT NULL,
	`content_hash` text NOT NULL,
	`created_by` text NOT NULL,
	FOREIGN KEY (`chain_id`) REFERENCES `chains`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `thoughts_id_uq` ON `thoughts` (`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `thoughts_chain_number_uq` ON `thoughts` (`chain_id`,`thought_number`);--> statement-breakpoint
CREATE INDEX `thoughts_timestamp_idx` ON `thoughts` (`timestamp`);--> statement-breakpoint
CREATE INDEX `thoughts_framework_idx` ON `thoughts` (`framework`,`timestamp`);--> statement-breakpoint
CREATE INDEX `thoughts_novelty_pending_idx` ON `thoughts` (`seq`) WHERE novelty is null;--> statement-breakpoint
CREATE TABLE `working_memory` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`expires_at` integer,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `working_memory_expires_idx` ON `working_memory` (`expires_at`);