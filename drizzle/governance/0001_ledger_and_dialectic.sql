CREATE TABLE `dialectic_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`seq` integer NOT NULL,
	`agent_id` text NOT NULL,
	`message_type` text NOT NULL,
	`timestamp` integer NOT NULL,
	`reasoning` text NOT NULL,
	`root_cause` text,
	`proposed_conditions_json` text,
	`observed_metrics_json` text,
	`concerns_json` text,
	`agrees` integer,
	`signature` text NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `dialectic_sessions`(`session_id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dialectic_messages_session_seq_uq` ON `dialectic_messages` (`session_id`,`seq`);--> statement-breakpoint
CREATE INDEX `dialectic_messages_ts_idx` ON `dialectic_messages` (`timestamp`);--> statement-breakpoint
CREATE TABLE `dialectic_sessions` (
	`session_id` text PRIMARY KEY NOT NULL,
	`paused_agent_id` text NOT NULL,
	`reviewer_agent_id` text,
	`phase` text NOT NULL,
	`status` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`topic` text NOT NULL,
	`session_type` text NOT NULL,
	`resolution_json` text,
	`failure_reason` text,
	`max_rounds` integer NOT NULL,
	`idle_timeout_ms` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `dialectic_sessions_agent_idx` ON `dialectic_sessions` (`paused_agent_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `dialectic_sessions_reviewer_idx` ON `dialectic_sessions` (`reviewer_agent_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `dialectic_sessions_phase_idx` ON `dialectic_sessions` (`phase`);--> statement-breakpoint
CREATE INDEX `dialectic_sessions_status_idx` ON `dialectic_sessions` (`status`,`updated_at`);--> statement-breakpoint
CREATE INDEX `dialectic_sessions_created_idx` ON `dialectic_sessions` (`created_at`);--> statement-breakpoint
CREATE TABLE `overrides` (
	`override_id` text PRIMARY KEY NOT NULL,
	`ts` integer NOT NULL,
	`actor` text NOT NULL,
	`token_label` text NOT NULL,
	`task_id` text,
	`note` text NOT NULL,
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`task_id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `overrides_task_idx` ON `overrides` (`task_id`);--> statement-breakpoint
CREATE INDEX `overrides_ts_idx` ON `overrides` (`ts`);--> statement-breakpoint
CREATE TABLE `provenance` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`artifact_type` text NOT NULL,
	`artifact_id` text NOT NULL,
	`store` text NOT NULL,
	`model_name` text DEFAULT '' NOT NULL,
	`model_version` text DEFAULT '' NOT NULL,
	`fingerprint` text,
	`chunking_version` text,
	`input_hash` text NOT NULL,
	`task_id` text,
	`run_id` text,
	`recorded_by` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`task_id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`run_id`) REFERENCES `skill_runs`(`run_id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `provenance_fact_uq` ON `provenance` (`store`,`artifact_type`,`artifact_id`,`input_hash`,`model_name`,`model_version`);--> statement-breakpoint
CREATE INDEX `provenance_artifact_idx` ON `provenance` (`artifact_type`,`artifact_id`);--> statement-breakpoint
CREATE INDEX `provenance_run_idx` ON `provenance` (`run_id`);--> statement-breakpoint
CREATE TABLE `skill_runs` (
	`run_id` text PRIMARY KEY NOT NULL,
	`task_id` text NOT NULL,
	`skill` text NOT NULL,
	`input_hash` text NOT NULL,
	`output_hash` text,
	`exit_code` integer,
	`runner_version` text NOT NULL,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	`output_ref` text,
	`artifacts_json` text NOT NULL,
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`task_id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `skill_runs_task_idx` ON `skill_runs` (`task_id`,`started_at`);--> statement-breakpoint
CREATE INDEX `skill_runs_skill_idx` ON `skill_runs` (`skill`);--> statement-breakpoint
CREATE TABLE `tasks` (
	`task_id` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL,
	`requested_by` text NOT NULL,
	`intent` text NOT NULL,
	`spec_json` text NOT NULL,
	`required_checks_json` text NOT NULL,
	`verdict` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `tasks_requested_by_idx` ON `tasks` (`requested_by`,`created_at`);--> statement-breakpoint
CREATE INDEX `tasks_created_at_idx` ON `tasks` (`created_at`);--> statement-breakpoint
CREATE INDEX `tasks_verdict_idx` ON `tasks` (`verdict`,`created_at`);--> statement-breakpoint
CREATE TABLE `validations` (
	`validation_id` text PRIMARY KEY NOT NULL,
	`task_id` text NOT NULL,
	`run_id` text,
	`critic_passed` integer,
	`runner_passed` integer,
	`details_json` text NOT NULL,
	`ts` integer NOT NULL,
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`task_id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`run_id`) REFERENCES `skill_runs`(`run_id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `validations_task_idx` ON `validations` (`task_id`,`ts`);