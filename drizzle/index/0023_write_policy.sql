-- Governed memory's write policy and proposals (lib/index/write-policy.ts, lib/index/proposals.ts). `write_policy`
-- holds at most one row (id 1): the store's policy as JSON (mode per kind, trusted actors, whether bulk imports
-- bypass); a store without the row is open for every kind, as before. `proposals` keeps the provenance of each write
-- that landed as a proposal (who, with which token label, when, why, the poisoning flags); its state (proposed,
-- active, rejected) is the item's row in item_state, written in the same transaction. Hand-written.
CREATE TABLE IF NOT EXISTS `write_policy` (
	`id` integer PRIMARY KEY NOT NULL CHECK (`id` = 1),
	`policy` text NOT NULL,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS `proposals` (
	`kind` text NOT NULL CHECK (`kind` in ('memory', 'learning', 'thought', 'node', 'relation', 'frame')),
	`item_id` text NOT NULL,
	`proposed_by` text NOT NULL,
	`token_label` text,
	`proposed_at` integer NOT NULL,
	`why` text NOT NULL CHECK (`why` in ('untrusted', 'flagged')),
	`flags` text NOT NULL DEFAULT '[]',
	PRIMARY KEY (`kind`, `item_id`)
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS `proposals_at_idx` ON `proposals` (`proposed_at`);
