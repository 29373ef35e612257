-- Facts superseded instead of contradicted (lib/index/facts.ts): an item written as a fact (a subject and property,
-- or an exclusive relation or frame) records its key and value on its item_state row; a new value for the same key
-- retires the old one. The index makes "the facts of this key" one lookup. Contradictions that cannot be resolved
-- (same key, different value, same event time) are listed in item_contradictions, one row per item and other item.
-- Hand-written.
ALTER TABLE `item_state` ADD COLUMN `fact_key` text;
--> statement-breakpoint
ALTER TABLE `item_state` ADD COLUMN `fact_value` text;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS `item_state_fact_key_idx` ON `item_state` (`kind`, `fact_key`) WHERE `fact_key` IS NOT NULL;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS `item_contradictions` (
	`kind` text NOT NULL,
	`item_id` text NOT NULL,
	`other_id` text NOT NULL,
	`fact_key` text NOT NULL,
	`reason` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY (`kind`, `item_id`, `other_id`)
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS `item_contradictions_created_idx` ON `item_contradictions` (`created_at`);
