-- Forgetting by policy (lib/index/forgetting.ts): a store's policy per kind of item (forget_policy), each run of it
-- (forget_run: who, dry or real, counts per rule) and each item a real run retired (forget_retired: which rule, why).
-- A retired item keeps its own rows: item_state marks it retired, and restore returns it as it was. Hand-written.
CREATE TABLE IF NOT EXISTS `forget_policy` (
	`kind` text PRIMARY KEY NOT NULL CHECK (`kind` in ('memory', 'learning', 'trace', 'thought')),
	`ttl_days` real,
	`ttl_since` text NOT NULL DEFAULT 'written' CHECK (`ttl_since` in ('written', 'used')),
	`max_items` integer,
	`unused_days` real,
	`honour_expires_at` integer NOT NULL DEFAULT 0,
	`protected_ids` text NOT NULL DEFAULT '[]',
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS `forget_run` (
	`id` text PRIMARY KEY NOT NULL,
	`at` integer NOT NULL,
	`actor` text NOT NULL,
	`dry_run` integer NOT NULL,
	`max_items` integer NOT NULL,
	`counts` text NOT NULL DEFAULT '{}',
	`retired` integer NOT NULL,
	`remaining` integer NOT NULL,
	`ids_sha256` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS `forget_run_at_idx` ON `forget_run` (`at`);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS `forget_retired` (
	`kind` text NOT NULL,
	`item_id` text NOT NULL,
	`run_id` text NOT NULL,
	`rule` text NOT NULL,
	`why` text NOT NULL,
	`title` text NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY (`kind`, `item_id`, `run_id`)
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS `forget_retired_at_idx` ON `forget_retired` (`at`);
