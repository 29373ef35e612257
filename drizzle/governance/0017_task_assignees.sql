-- The agents assigned to each task, one row per (agent, task), so an agent's task list looks its tasks up by
-- index instead of reading every task's assignees JSON. Kept by triggers from tasks.assignees_json, so every
-- writer (the ledger, migrate-data's copies, a restore) keeps it right. Hand-written.
CREATE TABLE IF NOT EXISTS `task_assignees` (
	`agent_id` text NOT NULL,
	`task_id` text NOT NULL,
	PRIMARY KEY (`agent_id`, `task_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS `task_assignees_task_idx` ON `task_assignees` (`task_id`);
--> statement-breakpoint
INSERT OR IGNORE INTO `task_assignees` (`agent_id`, `task_id`)
	SELECT DISTINCT j.value, t.task_id FROM `tasks` t, json_each(t.assignees_json) j WHERE t.assignees_json IS NOT NULL AND json_valid(t.assignees_json) AND j.type = 'text';
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `task_assignees_ai` AFTER INSERT ON `tasks` WHEN new.assignees_json IS NOT NULL AND json_valid(new.assignees_json) BEGIN
	INSERT OR IGNORE INTO `task_assignees` (`agent_id`, `task_id`) SELECT value, new.task_id FROM json_each(new.assignees_json) WHERE type = 'text';
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `task_assignees_au` AFTER UPDATE OF `assignees_json` ON `tasks` BEGIN
	DELETE FROM `task_assignees` WHERE `task_id` = old.task_id;
	INSERT OR IGNORE INTO `task_assignees` (`agent_id`, `task_id`) SELECT value, new.task_id FROM json_each(CASE WHEN json_valid(new.assignees_json) THEN new.assignees_json ELSE '[]' END) WHERE type = 'text';
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `task_assignees_ad` AFTER DELETE ON `tasks` BEGIN
	DELETE FROM `task_assignees` WHERE `task_id` = old.task_id;
END;
