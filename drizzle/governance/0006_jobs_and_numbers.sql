-- Placeholder reserved for: admin job and metric fixes (issue 17). Replace with the real SQL (hand-written; keep the tag).
CREATE TABLE IF NOT EXISTS `_placeholder_0006_jobs_and_numbers` (`x` integer);
--> statement-breakpoint
DROP TABLE `_placeholder_0006_jobs_and_numbers`;
