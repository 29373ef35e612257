-- Word lists (issue 19, a broad query's first sight): every row of each common word of an FTS5 table with its count of
-- that word, and every row's length, derived from the rows' text (lib/retrieval/word-lists.ts). One blob per word per
-- 4096 rowids. Built in steps after the table reaches 20,000 rows; `fts_changes` logs each written rowid (only while
-- the table has lists: chunks_fts by the triggers below, documents_fts by ingest's writeDocumentFts and the delete
-- trigger) until a step folds it in, and queries score logged rows from their text meanwhile. Dropping all four tables' rows for a table rebuilds its lists from scratch.
CREATE TABLE IF NOT EXISTS `fts_word_lists_meta` (
  `tbl` text PRIMARY KEY NOT NULL,
  `status` text NOT NULL,
  `min_rows` integer NOT NULL,
  `built_through` integer NOT NULL,
  `applied_seq` integer NOT NULL,
  `rows_at_build` integer NOT NULL,
  `built_at` integer NOT NULL
);
--> statement-breakpoint
-- `rows`: the rows in the word's list (its row count once every logged change is folded in: the idf's count).
CREATE TABLE IF NOT EXISTS `fts_word_list_tokens` (`tbl` text NOT NULL, `token` text NOT NULL, `rows` integer NOT NULL DEFAULT 0, PRIMARY KEY (`tbl`, `token`)) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS `fts_word_lists` (`tbl` text NOT NULL, `token` text NOT NULL, `segment` integer NOT NULL, `entries` blob NOT NULL, PRIMARY KEY (`tbl`, `token`, `segment`)) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS `fts_row_lengths` (`tbl` text NOT NULL, `segment` integer NOT NULL, `lengths` blob NOT NULL, PRIMARY KEY (`tbl`, `segment`)) WITHOUT ROWID;
--> statement-breakpoint
-- Rows whose text did not give the length FTS5 indexed when folded in: no entries; queries score them from their text.
CREATE TABLE IF NOT EXISTS `fts_word_list_misfits` (`tbl` text NOT NULL, `rid` integer NOT NULL, PRIMARY KEY (`tbl`, `rid`)) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS `fts_changes` (`seq` integer PRIMARY KEY AUTOINCREMENT, `tbl` text NOT NULL, `rid` integer NOT NULL);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS `fts_changes_tbl_seq` ON `fts_changes` (`tbl`, `seq`);
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `chunks_word_lists_ai` AFTER INSERT ON `chunks`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'chunks_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('chunks_fts', new.id);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `chunks_word_lists_ad` AFTER DELETE ON `chunks`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'chunks_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('chunks_fts', old.id);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `documents_word_lists_ad` AFTER DELETE ON `documents`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'documents_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('documents_fts', old.doc_id);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `chunks_word_lists_au` AFTER UPDATE OF text ON `chunks`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'chunks_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('chunks_fts', old.id);
  INSERT INTO fts_changes(tbl, rid) VALUES ('chunks_fts', new.id);
END;
