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
--> statement-breakpoint
-- Each agent's share of the ledger (DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT): one running total per agent of the
-- rows it wrote (64 bytes a row plus their text), kept by triggers, started here from the rows already there.
CREATE TABLE IF NOT EXISTS `agent_ledger_usage` (
	`agent_id` text PRIMARY KEY NOT NULL,
	`bytes` integer NOT NULL DEFAULT 0
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT `requested_by`, sum((64 + coalesce(octet_length(tasks.`task_id`), 0) + coalesce(octet_length(tasks.`intent`), 0) + coalesce(octet_length(tasks.`spec_json`), 0) + coalesce(octet_length(tasks.`required_checks_json`), 0) + coalesce(octet_length(tasks.`assignees_json`), 0))) FROM `tasks` WHERE `requested_by` IS NOT NULL GROUP BY `requested_by`
	ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
--> statement-breakpoint
INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT `agent_id`, sum((64 + coalesce(octet_length(skill_runs.`run_id`), 0) + coalesce(octet_length(skill_runs.`skill`), 0) + coalesce(octet_length(skill_runs.`artifacts_json`), 0) + coalesce(octet_length(skill_runs.`output_ref`), 0))) FROM `skill_runs` WHERE `agent_id` IS NOT NULL GROUP BY `agent_id`
	ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
--> statement-breakpoint
INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT `agent_id`, sum((64 + coalesce(octet_length(validations.`validation_id`), 0) + coalesce(octet_length(validations.`details_json`), 0))) FROM `validations` WHERE `agent_id` IS NOT NULL GROUP BY `agent_id`
	ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
--> statement-breakpoint
INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT `recorded_by`, sum((64 + coalesce(octet_length(provenance.`artifact_type`), 0) + coalesce(octet_length(provenance.`artifact_id`), 0) + coalesce(octet_length(provenance.`store`), 0) + coalesce(octet_length(provenance.`model_name`), 0) + coalesce(octet_length(provenance.`model_version`), 0) + coalesce(octet_length(provenance.`fingerprint`), 0) + coalesce(octet_length(provenance.`input_hash`), 0))) FROM `provenance` WHERE `recorded_by` IS NOT NULL GROUP BY `recorded_by`
	ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
--> statement-breakpoint
INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT `actor`, sum((64 + coalesce(octet_length(overrides.`override_id`), 0) + coalesce(octet_length(overrides.`note`), 0))) FROM `overrides` WHERE `actor` IS NOT NULL GROUP BY `actor`
	ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
--> statement-breakpoint
INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT `paused_agent_id`, sum((64 + coalesce(octet_length(dialectic_sessions.`session_id`), 0) + coalesce(octet_length(dialectic_sessions.`topic`), 0) + coalesce(octet_length(dialectic_sessions.`session_type`), 0) + coalesce(octet_length(dialectic_sessions.`resolution_json`), 0) + coalesce(octet_length(dialectic_sessions.`failure_reason`), 0))) FROM `dialectic_sessions` WHERE `paused_agent_id` IS NOT NULL GROUP BY `paused_agent_id`
	ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
--> statement-breakpoint
INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT `agent_id`, sum((64 + coalesce(octet_length(dialectic_messages.`id`), 0) + coalesce(octet_length(dialectic_messages.`reasoning`), 0) + coalesce(octet_length(dialectic_messages.`root_cause`), 0) + coalesce(octet_length(dialectic_messages.`proposed_conditions_json`), 0) + coalesce(octet_length(dialectic_messages.`observed_metrics_json`), 0) + coalesce(octet_length(dialectic_messages.`concerns_json`), 0) + coalesce(octet_length(dialectic_messages.`signature`), 0))) FROM `dialectic_messages` WHERE `agent_id` IS NOT NULL GROUP BY `agent_id`
	ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_tasks_ins` AFTER INSERT ON `tasks` WHEN new.`requested_by` IS NOT NULL BEGIN
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) VALUES (new.`requested_by`, (64 + coalesce(octet_length(new.`task_id`), 0) + coalesce(octet_length(new.`intent`), 0) + coalesce(octet_length(new.`spec_json`), 0) + coalesce(octet_length(new.`required_checks_json`), 0) + coalesce(octet_length(new.`assignees_json`), 0))) ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_tasks_del` AFTER DELETE ON `tasks` WHEN old.`requested_by` IS NOT NULL BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`task_id`), 0) + coalesce(octet_length(old.`intent`), 0) + coalesce(octet_length(old.`spec_json`), 0) + coalesce(octet_length(old.`required_checks_json`), 0) + coalesce(octet_length(old.`assignees_json`), 0)) WHERE `agent_id` = old.`requested_by`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_tasks_upd` AFTER UPDATE ON `tasks` BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`task_id`), 0) + coalesce(octet_length(old.`intent`), 0) + coalesce(octet_length(old.`spec_json`), 0) + coalesce(octet_length(old.`required_checks_json`), 0) + coalesce(octet_length(old.`assignees_json`), 0)) WHERE old.`requested_by` IS NOT NULL AND `agent_id` = old.`requested_by`;
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT new.`requested_by`, (64 + coalesce(octet_length(new.`task_id`), 0) + coalesce(octet_length(new.`intent`), 0) + coalesce(octet_length(new.`spec_json`), 0) + coalesce(octet_length(new.`required_checks_json`), 0) + coalesce(octet_length(new.`assignees_json`), 0)) WHERE new.`requested_by` IS NOT NULL ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_skill_runs_ins` AFTER INSERT ON `skill_runs` WHEN new.`agent_id` IS NOT NULL BEGIN
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) VALUES (new.`agent_id`, (64 + coalesce(octet_length(new.`run_id`), 0) + coalesce(octet_length(new.`skill`), 0) + coalesce(octet_length(new.`artifacts_json`), 0) + coalesce(octet_length(new.`output_ref`), 0))) ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_skill_runs_del` AFTER DELETE ON `skill_runs` WHEN old.`agent_id` IS NOT NULL BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`run_id`), 0) + coalesce(octet_length(old.`skill`), 0) + coalesce(octet_length(old.`artifacts_json`), 0) + coalesce(octet_length(old.`output_ref`), 0)) WHERE `agent_id` = old.`agent_id`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_skill_runs_upd` AFTER UPDATE ON `skill_runs` BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`run_id`), 0) + coalesce(octet_length(old.`skill`), 0) + coalesce(octet_length(old.`artifacts_json`), 0) + coalesce(octet_length(old.`output_ref`), 0)) WHERE old.`agent_id` IS NOT NULL AND `agent_id` = old.`agent_id`;
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT new.`agent_id`, (64 + coalesce(octet_length(new.`run_id`), 0) + coalesce(octet_length(new.`skill`), 0) + coalesce(octet_length(new.`artifacts_json`), 0) + coalesce(octet_length(new.`output_ref`), 0)) WHERE new.`agent_id` IS NOT NULL ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_validations_ins` AFTER INSERT ON `validations` WHEN new.`agent_id` IS NOT NULL BEGIN
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) VALUES (new.`agent_id`, (64 + coalesce(octet_length(new.`validation_id`), 0) + coalesce(octet_length(new.`details_json`), 0))) ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_validations_del` AFTER DELETE ON `validations` WHEN old.`agent_id` IS NOT NULL BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`validation_id`), 0) + coalesce(octet_length(old.`details_json`), 0)) WHERE `agent_id` = old.`agent_id`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_validations_upd` AFTER UPDATE ON `validations` BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`validation_id`), 0) + coalesce(octet_length(old.`details_json`), 0)) WHERE old.`agent_id` IS NOT NULL AND `agent_id` = old.`agent_id`;
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT new.`agent_id`, (64 + coalesce(octet_length(new.`validation_id`), 0) + coalesce(octet_length(new.`details_json`), 0)) WHERE new.`agent_id` IS NOT NULL ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_provenance_ins` AFTER INSERT ON `provenance` WHEN new.`recorded_by` IS NOT NULL BEGIN
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) VALUES (new.`recorded_by`, (64 + coalesce(octet_length(new.`artifact_type`), 0) + coalesce(octet_length(new.`artifact_id`), 0) + coalesce(octet_length(new.`store`), 0) + coalesce(octet_length(new.`model_name`), 0) + coalesce(octet_length(new.`model_version`), 0) + coalesce(octet_length(new.`fingerprint`), 0) + coalesce(octet_length(new.`input_hash`), 0))) ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_provenance_del` AFTER DELETE ON `provenance` WHEN old.`recorded_by` IS NOT NULL BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`artifact_type`), 0) + coalesce(octet_length(old.`artifact_id`), 0) + coalesce(octet_length(old.`store`), 0) + coalesce(octet_length(old.`model_name`), 0) + coalesce(octet_length(old.`model_version`), 0) + coalesce(octet_length(old.`fingerprint`), 0) + coalesce(octet_length(old.`input_hash`), 0)) WHERE `agent_id` = old.`recorded_by`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_provenance_upd` AFTER UPDATE ON `provenance` BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`artifact_type`), 0) + coalesce(octet_length(old.`artifact_id`), 0) + coalesce(octet_length(old.`store`), 0) + coalesce(octet_length(old.`model_name`), 0) + coalesce(octet_length(old.`model_version`), 0) + coalesce(octet_length(old.`fingerprint`), 0) + coalesce(octet_length(old.`input_hash`), 0)) WHERE old.`recorded_by` IS NOT NULL AND `agent_id` = old.`recorded_by`;
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT new.`recorded_by`, (64 + coalesce(octet_length(new.`artifact_type`), 0) + coalesce(octet_length(new.`artifact_id`), 0) + coalesce(octet_length(new.`store`), 0) + coalesce(octet_length(new.`model_name`), 0) + coalesce(octet_length(new.`model_version`), 0) + coalesce(octet_length(new.`fingerprint`), 0) + coalesce(octet_length(new.`input_hash`), 0)) WHERE new.`recorded_by` IS NOT NULL ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_overrides_ins` AFTER INSERT ON `overrides` WHEN new.`actor` IS NOT NULL BEGIN
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) VALUES (new.`actor`, (64 + coalesce(octet_length(new.`override_id`), 0) + coalesce(octet_length(new.`note`), 0))) ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_overrides_del` AFTER DELETE ON `overrides` WHEN old.`actor` IS NOT NULL BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`override_id`), 0) + coalesce(octet_length(old.`note`), 0)) WHERE `agent_id` = old.`actor`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_overrides_upd` AFTER UPDATE ON `overrides` BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`override_id`), 0) + coalesce(octet_length(old.`note`), 0)) WHERE old.`actor` IS NOT NULL AND `agent_id` = old.`actor`;
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT new.`actor`, (64 + coalesce(octet_length(new.`override_id`), 0) + coalesce(octet_length(new.`note`), 0)) WHERE new.`actor` IS NOT NULL ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_dialectic_sessions_ins` AFTER INSERT ON `dialectic_sessions` WHEN new.`paused_agent_id` IS NOT NULL BEGIN
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) VALUES (new.`paused_agent_id`, (64 + coalesce(octet_length(new.`session_id`), 0) + coalesce(octet_length(new.`topic`), 0) + coalesce(octet_length(new.`session_type`), 0) + coalesce(octet_length(new.`resolution_json`), 0) + coalesce(octet_length(new.`failure_reason`), 0))) ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_dialectic_sessions_del` AFTER DELETE ON `dialectic_sessions` WHEN old.`paused_agent_id` IS NOT NULL BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`session_id`), 0) + coalesce(octet_length(old.`topic`), 0) + coalesce(octet_length(old.`session_type`), 0) + coalesce(octet_length(old.`resolution_json`), 0) + coalesce(octet_length(old.`failure_reason`), 0)) WHERE `agent_id` = old.`paused_agent_id`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_dialectic_sessions_upd` AFTER UPDATE ON `dialectic_sessions` BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`session_id`), 0) + coalesce(octet_length(old.`topic`), 0) + coalesce(octet_length(old.`session_type`), 0) + coalesce(octet_length(old.`resolution_json`), 0) + coalesce(octet_length(old.`failure_reason`), 0)) WHERE old.`paused_agent_id` IS NOT NULL AND `agent_id` = old.`paused_agent_id`;
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT new.`paused_agent_id`, (64 + coalesce(octet_length(new.`session_id`), 0) + coalesce(octet_length(new.`topic`), 0) + coalesce(octet_length(new.`session_type`), 0) + coalesce(octet_length(new.`resolution_json`), 0) + coalesce(octet_length(new.`failure_reason`), 0)) WHERE new.`paused_agent_id` IS NOT NULL ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_dialectic_messages_ins` AFTER INSERT ON `dialectic_messages` WHEN new.`agent_id` IS NOT NULL BEGIN
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) VALUES (new.`agent_id`, (64 + coalesce(octet_length(new.`id`), 0) + coalesce(octet_length(new.`reasoning`), 0) + coalesce(octet_length(new.`root_cause`), 0) + coalesce(octet_length(new.`proposed_conditions_json`), 0) + coalesce(octet_length(new.`observed_metrics_json`), 0) + coalesce(octet_length(new.`concerns_json`), 0) + coalesce(octet_length(new.`signature`), 0))) ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_dialectic_messages_del` AFTER DELETE ON `dialectic_messages` WHEN old.`agent_id` IS NOT NULL BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`id`), 0) + coalesce(octet_length(old.`reasoning`), 0) + coalesce(octet_length(old.`root_cause`), 0) + coalesce(octet_length(old.`proposed_conditions_json`), 0) + coalesce(octet_length(old.`observed_metrics_json`), 0) + coalesce(octet_length(old.`concerns_json`), 0) + coalesce(octet_length(old.`signature`), 0)) WHERE `agent_id` = old.`agent_id`;
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `agent_ledger_usage_dialectic_messages_upd` AFTER UPDATE ON `dialectic_messages` BEGIN
	UPDATE `agent_ledger_usage` SET `bytes` = `bytes` - (64 + coalesce(octet_length(old.`id`), 0) + coalesce(octet_length(old.`reasoning`), 0) + coalesce(octet_length(old.`root_cause`), 0) + coalesce(octet_length(old.`proposed_conditions_json`), 0) + coalesce(octet_length(old.`observed_metrics_json`), 0) + coalesce(octet_length(old.`concerns_json`), 0) + coalesce(octet_length(old.`signature`), 0)) WHERE old.`agent_id` IS NOT NULL AND `agent_id` = old.`agent_id`;
	INSERT INTO `agent_ledger_usage` (`agent_id`, `bytes`) SELECT new.`agent_id`, (64 + coalesce(octet_length(new.`id`), 0) + coalesce(octet_length(new.`reasoning`), 0) + coalesce(octet_length(new.`root_cause`), 0) + coalesce(octet_length(new.`proposed_conditions_json`), 0) + coalesce(octet_length(new.`observed_metrics_json`), 0) + coalesce(octet_length(new.`concerns_json`), 0) + coalesce(octet_length(new.`signature`), 0)) WHERE new.`agent_id` IS NOT NULL ON CONFLICT (`agent_id`) DO UPDATE SET `bytes` = `bytes` + excluded.`bytes`;
END;
