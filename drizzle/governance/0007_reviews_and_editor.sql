-- Placeholder reserved for: session annotations and editor role (issue 18). Replace with the real SQL (hand-written; keep the tag).
CREATE TABLE IF NOT EXISTS `_placeholder_0007_reviews_and_editor` (`x` integer);
--> statement-breakpoint
DROP TABLE `_placeholder_0007_reviews_and_editor`;
