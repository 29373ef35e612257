CREATE TABLE `metric_rollups` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ts` integer NOT NULL,
	`resolution_s` integer NOT NULL,
	`route` text NOT NULL,
	`count` integer NOT NULL,
	`error_count` integer NOT NULL,
	`sum_ms` real NOT NULL,
	`p50_ms` real,
	`p95_ms` real,
	`p99_ms` real,
	`h0` integer DEFAULT 0 NOT NULL,
	`h1` integer DEFAULT 0 NOT NULL,
	`h2` integer DEFAULT 0 NOT NULL,
	`h3` integer DEFAULT 0 NOT NULL,
	`h4` integer DEFAULT 0 NOT NULL,
	`h5` integer DEFAULT 0 NOT NULL,
	`h6` integer DEFAULT 0 NOT NULL,
	`h7` integer DEFAULT 0 NOT NULL,
	`h8` integer DEFAULT 0 NOT NULL,
	`h9` integer DEFAULT 0 NOT NULL,
	`h10` integer DEFAULT 0 NOT NULL,
	`h11` integer DEFAULT 0 NOT NULL,
	`h12` integer DEFAULT 0 NOT NULL,
	`h13` integer DEFAULT 0 NOT NULL,
	`by_status` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `metric_rollups_bucket_uq` ON `metric_rollups` (`resolution_s`,`route`,`ts`);--> statement-breakpoint
CREATE INDEX `metric_rollups_resolution_ts_idx` ON `metric_rollups` (`resolution_s`,`ts`);--> statement-breakpoint
CREATE TABLE `metric_snapshots` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ts` integer NOT NULL,
	`resolution_s` integer NOT NULL,
	`store` text NOT NULL,
	`backlog` integer,
	`oldest_age_s` integer,
	`parked` integer,
	`watermark` integer,
	`drift_count` integer,
	`drift_pct` real,
	`coverage_pct` real,
	`degraded` integer,
	`vectors_available` integer,
	`model_id` text,
	`embedded` integer,
	`recall_count` integer,
	`hit_rate` real,
	`avg_hit_age_s` real,
	`precision` real,
	`recall_p50_ms` real,
	`recall_p95_ms` real
);
--> statement-breakpoint
CREATE UNIQUE INDEX `metric_snapshots_bucket_uq` ON `metric_snapshots` (`store`,`resolution_s`,`ts`);--> statement-breakpoint
CREATE INDEX `metric_snapshots_ts_idx` ON `metric_snapshots` (`ts`);