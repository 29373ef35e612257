-- Placeholder reserved for: stemmed chunk FTS (issue 16). Replace with the real SQL (hand-written; keep the tag).
CREATE TABLE IF NOT EXISTS `_placeholder_0009_fts_stemming` (`x` integer);
--> statement-breakpoint
DROP TABLE `_placeholder_0009_fts_stemming`;
