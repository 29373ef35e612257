-- Placeholder reserved for: store status events and alerts (issue 17). Replace with the real SQL (hand-written; keep the tag).
CREATE TABLE IF NOT EXISTS `_placeholder_0005_health_events` (`x` integer);
--> statement-breakpoint
DROP TABLE `_placeholder_0005_health_events`;
