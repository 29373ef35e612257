-- Task and review ids are chosen by their owner and namespaced per owner: the id an agent chose is client_id,
-- unique per owner; task_id / session_id stay the internal key the child rows reference (for rows written before,
-- the id itself, so existing links keep working). Hand-written.
ALTER TABLE `tasks` ADD `client_id` text DEFAULT '' NOT NULL;--> statement-breakpoint
UPDATE `tasks` SET `client_id` = `task_id`;--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_owner_client_uq` ON `tasks` (`requested_by`,`client_id`);--> statement-breakpoint
CREATE INDEX `tasks_client_idx` ON `tasks` (`client_id`);--> statement-breakpoint
ALTER TABLE `dialectic_sessions` ADD `client_id` text DEFAULT '' NOT NULL;--> statement-breakpoint
UPDATE `dialectic_sessions` SET `client_id` = `session_id`;--> statement-breakpoint
CREATE UNIQUE INDEX `dialectic_sessions_owner_client_uq` ON `dialectic_sessions` (`paused_agent_id`,`client_id`);--> statement-breakpoint
CREATE INDEX `dialectic_sessions_client_idx` ON `dialectic_sessions` (`client_id`);
