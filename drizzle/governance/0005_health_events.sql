-- Store status events and alerts, worker and provider state (issue 17). Hand-written.
-- store_status_current: the last status each store was seen in; a change writes one health_events row (and a webhook delivery).
CREATE TABLE `store_status_current` (
  `store` text PRIMARY KEY NOT NULL,
  `status` text NOT NULL,
  `reason` text NOT NULL,
  `since` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `health_events` (
  `id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
  `ts` integer NOT NULL,
  `kind` text NOT NULL,
  `store` text,
  `subject` text,
  `status` text NOT NULL,
  `previous_status` text,
  `reason` text NOT NULL,
  `details` text,
  `webhook_state` text DEFAULT 'none' NOT NULL,
  `webhook_attempts` integer DEFAULT 0 NOT NULL,
  `webhook_error` text
);
--> statement-breakpoint
CREATE INDEX `health_events_ts_idx` ON `health_events` (`ts`);
--> statement-breakpoint
CREATE INDEX `health_events_store_ts_idx` ON `health_events` (`store`,`ts`);
--> statement-breakpoint
-- A failed dialectic session is one event, however often the watcher sees it (subject = session id).
CREATE UNIQUE INDEX `health_events_subject_uq` ON `health_events` (`kind`,`subject`);
--> statement-breakpoint
-- One row per embed worker process (in the server or `npm run worker`), updated per batch and by a heartbeat.
CREATE TABLE `embed_workers` (
  `worker_id` text PRIMARY KEY NOT NULL,
  `pid` integer NOT NULL,
  `mode` text NOT NULL,
  `started_at` integer NOT NULL,
  `heartbeat_at` integer NOT NULL,
  `last_batch_at` integer,
  `last_batch_store` text,
  `last_batch_items` integer,
  `items_per_s` real,
  `last_error` text,
  `last_error_at` integer,
  `last_error_store` text,
  `provider` text,
  `model` text,
  `dimension` integer
);
--> statement-breakpoint
CREATE INDEX `embed_workers_heartbeat_idx` ON `embed_workers` (`heartbeat_at`);
--> statement-breakpoint
-- The embedding provider as last seen by any process (worker batch, query embedding, recovery probe), by config.
CREATE TABLE `provider_state` (
  `config_key` text PRIMARY KEY NOT NULL,
  `provider` text NOT NULL,
  `model` text NOT NULL,
  `ok` integer NOT NULL,
  `error` text,
  `checked_at` integer NOT NULL,
  `changed_at` integer NOT NULL
);
