-- Self-recall: probe sets drawn from a store's own content, and the evaluation runs over them. Hand-written.
CREATE TABLE `self_recall_probe_sets` (
  `id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
  `store` text NOT NULL,
  `generator_version` integer NOT NULL,
  `seed` integer NOT NULL,
  `created_at` integer NOT NULL,
  `content_json` text NOT NULL,
  `probes_json` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `self_recall_probe_sets_store_idx` ON `self_recall_probe_sets` (`store`,`id`);
--> statement-breakpoint
CREATE TABLE `self_recall_runs` (
  `id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
  `store` text NOT NULL,
  `job_id` text,
  `probe_set_id` integer NOT NULL,
  `target` text NOT NULL,
  `fingerprint_id` text NOT NULL,
  `model` text NOT NULL,
  `ts` integer NOT NULL,
  `actor` text NOT NULL,
  `trigger` text NOT NULL,
  `probes` integer NOT NULL,
  `hit1` real,
  `hit10` real,
  `mrr10` real,
  `noise` real,
  `settings_json` text NOT NULL,
  `results_json` text NOT NULL,
  `duration_ms` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `self_recall_runs_store_idx` ON `self_recall_runs` (`store`,`ts`);
