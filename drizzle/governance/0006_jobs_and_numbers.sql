-- Issue 17: the API error rate counts server faults (5xx) only; expected client answers (4xx) get their own column.
ALTER TABLE `metric_rollups` ADD `client_error_count` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- Rows written before this counted every status >= 400 in error_count: split them again from by_status.
UPDATE `metric_rollups` SET
  `client_error_count` = (SELECT coalesce(sum(`value`), 0) FROM json_each(`by_status`) WHERE cast(`key` AS integer) BETWEEN 400 AND 499),
  `error_count` = (SELECT coalesce(sum(`value`), 0) FROM json_each(`by_status`) WHERE cast(`key` AS integer) >= 500);
