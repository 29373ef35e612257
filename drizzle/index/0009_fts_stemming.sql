-- Stemmed full-text index over chunk text (issue 16): `porter unicode61 remove_diacritics 2`, as traces and learnings
-- already use, so "running" finds "runs". Only the FTS index changes (chunks are untouched). The new index starts
-- EMPTY and is filled by a resumable rebuild (lib/index/fts-rebuild.ts) in batches by rowid, its progress in meta:
--   fts_rebuild_target   the highest chunk id at migration time: rows 1..target are the rebuild's to index;
--   fts_rebuilt_through  rows 1..through are indexed (the rebuild moves it forward one committed batch at a time).
-- Both keys are deleted when the rebuild finishes. Until then the triggers leave rows in (through, target] alone
-- (indexing or 'delete'-ing a row twice would corrupt an external-content index): the rebuild reads their current
-- text when it gets there. Rows outside that gap (new chunks, always above target) are kept in sync as usual.
-- A store with no chunks has nothing to rebuild and gets no marker.
DROP TRIGGER IF EXISTS `chunks_fts_ai`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `chunks_fts_ad`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `chunks_fts_au`;
--> statement-breakpoint
DROP TABLE IF EXISTS `chunks_fts`;
--> statement-breakpoint
CREATE VIRTUAL TABLE `chunks_fts` USING fts5(text, content='chunks', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE TRIGGER `chunks_fts_ai` AFTER INSERT ON `chunks`
WHEN new.id <= coalesce((select cast(value as integer) from meta where key = 'fts_rebuilt_through'), 9223372036854775807)
  OR new.id > coalesce((select cast(value as integer) from meta where key = 'fts_rebuild_target'), 0)
BEGIN
  INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
--> statement-breakpoint
CREATE TRIGGER `chunks_fts_ad` AFTER DELETE ON `chunks`
WHEN old.id <= coalesce((select cast(value as integer) from meta where key = 'fts_rebuilt_through'), 9223372036854775807)
  OR old.id > coalesce((select cast(value as integer) from meta where key = 'fts_rebuild_target'), 0)
BEGIN
  INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
--> statement-breakpoint
CREATE TRIGGER `chunks_fts_au` AFTER UPDATE OF text ON `chunks`
WHEN old.id <= coalesce((select cast(value as integer) from meta where key = 'fts_rebuilt_through'), 9223372036854775807)
  OR old.id > coalesce((select cast(value as integer) from meta where key = 'fts_rebuild_target'), 0)
BEGIN
  INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
  INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
--> statement-breakpoint
INSERT INTO meta(key, value) SELECT 'fts_rebuild_target', (SELECT CAST(max(id) AS TEXT) FROM chunks) WHERE EXISTS (SELECT 1 FROM chunks)
  ON CONFLICT(key) DO UPDATE SET value = excluded.value;
--> statement-breakpoint
INSERT INTO meta(key, value) SELECT 'fts_rebuilt_through', '0' WHERE EXISTS (SELECT 1 FROM chunks)
  ON CONFLICT(key) DO UPDATE SET value = excluded.value;
--> statement-breakpoint
INSERT INTO meta(key, value) VALUES ('fts_tokenizer', 'porter unicode61 remove_diacritics 2')
  ON CONFLICT(key) DO UPDATE SET value = excluded.value;
