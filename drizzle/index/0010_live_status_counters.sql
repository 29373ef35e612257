-- Placeholder reserved for: live health counters (issue 17). Replace with the real SQL (hand-written; keep the tag).
CREATE TABLE IF NOT EXISTS `_placeholder_0010_live_status_counters` (`x` integer);
--> statement-breakpoint
DROP TABLE `_placeholder_0010_live_status_counters`;
