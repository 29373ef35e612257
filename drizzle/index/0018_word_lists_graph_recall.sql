-- Word lists (lib/retrieval/word-lists.ts, migration 0014) for the FTS5 tables of remember and recall: their change
-- log. Each written row of thoughts, kg_node, reasoning_traces and learnings is logged while its FTS table has lists,
-- as chunks' rows are for chunks_fts. The lists themselves are built between requests once a table is large enough.
CREATE TRIGGER IF NOT EXISTS `thoughts_word_lists_ai` AFTER INSERT ON `thoughts`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'thoughts_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('thoughts_fts', new.seq);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `thoughts_word_lists_ad` AFTER DELETE ON `thoughts`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'thoughts_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('thoughts_fts', old.seq);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `thoughts_word_lists_au` AFTER UPDATE OF content ON `thoughts`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'thoughts_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('thoughts_fts', old.seq);
  INSERT INTO fts_changes(tbl, rid) VALUES ('thoughts_fts', new.seq);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `kg_node_word_lists_ai` AFTER INSERT ON `kg_node`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'kg_node_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('kg_node_fts', new.seq);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `kg_node_word_lists_ad` AFTER DELETE ON `kg_node`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'kg_node_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('kg_node_fts', old.seq);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `kg_node_word_lists_au` AFTER UPDATE OF name, display_name, tags ON `kg_node`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'kg_node_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('kg_node_fts', old.seq);
  INSERT INTO fts_changes(tbl, rid) VALUES ('kg_node_fts', new.seq);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `reasoning_traces_word_lists_ai` AFTER INSERT ON `reasoning_traces`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'reasoning_traces_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('reasoning_traces_fts', new.id);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `reasoning_traces_word_lists_ad` AFTER DELETE ON `reasoning_traces`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'reasoning_traces_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('reasoning_traces_fts', old.id);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `reasoning_traces_word_lists_au` AFTER UPDATE OF summary_descriptor ON `reasoning_traces`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'reasoning_traces_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('reasoning_traces_fts', old.id);
  INSERT INTO fts_changes(tbl, rid) VALUES ('reasoning_traces_fts', new.id);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `learnings_word_lists_ai` AFTER INSERT ON `learnings`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'learnings_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('learnings_fts', new.id);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `learnings_word_lists_ad` AFTER DELETE ON `learnings`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'learnings_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('learnings_fts', old.id);
END;
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `learnings_word_lists_au` AFTER UPDATE OF semantic_handle ON `learnings`
WHEN EXISTS (SELECT 1 FROM fts_word_lists_meta WHERE tbl = 'learnings_fts')
BEGIN
  INSERT INTO fts_changes(tbl, rid) VALUES ('learnings_fts', old.id);
  INSERT INTO fts_changes(tbl, rid) VALUES ('learnings_fts', new.id);
END;
