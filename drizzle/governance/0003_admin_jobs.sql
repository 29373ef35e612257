CREATE TABLE `admin_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`store` text NOT NULL,
	`actor` text NOT NULL,
	`reason` text,
	`status` text NOT NULL,
	`owner` text NOT NULL,
	`attempts` integer NOT NULL,
	`progress_json` text,
	`result_json` text,
	`error` text,
	`started_at` integer NOT NULL,
	`heartbeat_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE INDEX `admin_jobs_store_idx` ON `admin_jobs` (`store`,`started_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `admin_jobs_one_running_uq` ON `admin_jobs` (`kind`,`store`) WHERE status = 'running';