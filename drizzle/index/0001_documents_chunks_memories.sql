CREATE TABLE `categories` (
	`path` text PRIMARY KEY NOT NULL,
	`parent_path` text,
	`description` text
);
--> statement-breakpoint
CREATE INDEX `categories_parent_idx` ON `categories` (`parent_path`);--> statement-breakpoint
CREATE TABLE `chunks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`chunk_id` text NOT NULL,
	`doc_id` integer NOT NULL,
	`chunk_index` integer NOT NULL,
	`chunk_sha256` text NOT NULL,
	`chunking_version` integer NOT NULL,
	`start_byte` integer NOT NULL,
	`end_byte` integer NOT NULL,
	`text` text NOT NULL,
	FOREIGN KEY (`doc_id`) REFERENCES `documents`(`doc_id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `chunks_chunk_id_uq` ON `chunks` (`chunk_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `chunks_doc_index_uq` ON `chunks` (`doc_id`,`chunk_index`);--> statement-breakpoint
CREATE INDEX `chunks_version_idx` ON `chunks` (`chunking_version`);--> statement-breakpoint
CREATE TABLE `documents` (
	`doc_id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`path` text NOT NULL,
	`origin` text NOT NULL,
	`kind` text NOT NULL,
	`sha256` text NOT NULL,
	`bytes` integer NOT NULL,
	`mtime` integer NOT NULL,
	`content` text,
	`indexed_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `documents_path_uq` ON `documents` (`path`);--> statement-breakpoint
CREATE INDEX `documents_kind_idx` ON `documents` (`kind`);--> statement-breakpoint
CREATE INDEX `documents_mtime_idx` ON `documents` (`mtime`);--> statement-breakpoint
CREATE TABLE `memories` (
	`path` text PRIMARY KEY NOT NULL,
	`category` text NOT NULL,
	`tags` text DEFAULT '[]' NOT NULL,
	`token_estimate` integer NOT NULL,
	`source` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`expires_at` integer,
	`summary` text
);
--> statement-breakpoint
CREATE INDEX `memories_category_idx` ON `memories` (`category`);--> statement-breakpoint
CREATE INDEX `memories_updated_idx` ON `memories` (`updated_at`);--> statement-breakpoint
CREATE INDEX `memories_expires_idx` ON `memories` (`expires_at`);