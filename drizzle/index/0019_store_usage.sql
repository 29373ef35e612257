-- One running total of what the store holds (DUALMIND_MAX_STORE_BYTES): its bytes and its documents, in one row.
-- The triggers that keep it, and the recount that starts it, are installed when the store is opened
-- (lib/db/store-usage.ts), so they are written once for both engines. Hand-written.
CREATE TABLE IF NOT EXISTS `store_usage` (
	`id` integer PRIMARY KEY NOT NULL CHECK (`id` = 1),
	`bytes` integer NOT NULL DEFAULT 0,
	`documents` integer NOT NULL DEFAULT 0
);
--> statement-breakpoint
INSERT OR IGNORE INTO `store_usage` (`id`, `bytes`, `documents`) VALUES (1, 0, 0);
