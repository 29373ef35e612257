-- Run, validation, override and message ids are chosen by their writer and unique per parent: a run or validation per
-- task, a message per session, an override per actor. client_id is the id as chosen; run_id / validation_id /
-- override_id / id stay the internal key other rows reference (`parent~id`; for rows written before, the id itself,
-- so links, provenance, audit targets and message signatures are unchanged). Hand-written.
ALTER TABLE `skill_runs` ADD `client_id` text DEFAULT '' NOT NULL;--> statement-breakpoint
UPDATE `skill_runs` SET `client_id` = `run_id`;--> statement-breakpoint
CREATE UNIQUE INDEX `skill_runs_task_client_uq` ON `skill_runs` (`task_id`,`client_id`);--> statement-breakpoint
ALTER TABLE `validations` ADD `client_id` text DEFAULT '' NOT NULL;--> statement-breakpoint
UPDATE `validations` SET `client_id` = `validation_id`;--> statement-breakpoint
CREATE UNIQUE INDEX `validations_task_client_uq` ON `validations` (`task_id`,`client_id`);--> statement-breakpoint
ALTER TABLE `overrides` ADD `client_id` text DEFAULT '' NOT NULL;--> statement-breakpoint
UPDATE `overrides` SET `client_id` = `override_id`;--> statement-breakpoint
CREATE UNIQUE INDEX `overrides_actor_client_uq` ON `overrides` (`actor`,`client_id`);--> statement-breakpoint
ALTER TABLE `dialectic_messages` ADD `client_id` text DEFAULT '' NOT NULL;--> statement-breakpoint
UPDATE `dialectic_messages` SET `client_id` = `id`;--> statement-breakpoint
CREATE UNIQUE INDEX `dialectic_messages_session_client_uq` ON `dialectic_messages` (`session_id`,`client_id`);
