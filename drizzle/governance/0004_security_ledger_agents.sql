CREATE TABLE `login_throttle` (
	`key` text PRIMARY KEY NOT NULL,
	`failures` integer NOT NULL,
	`first_failure_at` integer NOT NULL,
	`last_failure_at` integer NOT NULL,
	`locked_until` integer
);
--> statement-breakpoint
ALTER TABLE `skill_runs` ADD `agent_id` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `assignees_json` text;--> statement-breakpoint
ALTER TABLE `users` ADD `session_version` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `validations` ADD `agent_id` text;