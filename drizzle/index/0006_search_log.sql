CREATE TABLE `search_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ts` integer NOT NULL,
	`q` text NOT NULL,
	`mode` text NOT NULL,
	`fingerprint_id` text NOT NULL,
	`result_ids` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `search_log_ts_idx` ON `search_log` (`ts`);