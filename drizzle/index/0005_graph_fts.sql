-- Full-text search over thought content and node names/labels (external content, kept in sync by triggers).
CREATE VIRTUAL TABLE `thoughts_fts` USING fts5(content, content='thoughts', content_rowid='seq', tokenize='porter unicode61');
--> statement-breakpoint
CREATE TRIGGER `thoughts_fts_ai` AFTER INSERT ON `thoughts` BEGIN
  INSERT INTO thoughts_fts(rowid, content) VALUES (new.seq, new.content);
END;
--> statement-breakpoint
CREATE TRIGGER `thoughts_fts_ad` AFTER DELETE ON `thoughts` BEGIN
  INSERT INTO thoughts_fts(thoughts_fts, rowid, content) VALUES ('delete', old.seq, old.content);
END;
--> statement-breakpoint
CREATE TRIGGER `thoughts_fts_au` AFTER UPDATE OF content ON `thoughts` BEGIN
  INSERT INTO thoughts_fts(thoughts_fts, rowid, content) VALUES ('delete', old.seq, old.content);
  INSERT INTO thoughts_fts(rowid, content) VALUES (new.seq, new.content);
END;
--> statement-breakpoint
CREATE VIRTUAL TABLE `kg_node_fts` USING fts5(name, display_name, tags, content='kg_node', content_rowid='seq', tokenize='porter unicode61');
--> statement-breakpoint
CREATE TRIGGER `kg_node_fts_ai` AFTER INSERT ON `kg_node` BEGIN
  INSERT INTO kg_node_fts(rowid, name, display_name, tags) VALUES (new.seq, new.name, new.display_name, new.tags);
END;
--> statement-breakpoint
CREATE TRIGGER `kg_node_fts_ad` AFTER DELETE ON `kg_node` BEGIN
  INSERT INTO kg_node_fts(kg_node_fts, rowid, name, display_name, tags) VALUES ('delete', old.seq, old.name, old.display_name, old.tags);
END;
--> statement-breakpoint
CREATE TRIGGER `kg_node_fts_au` AFTER UPDATE OF name, display_name, tags ON `kg_node` BEGIN
  INSERT INTO kg_node_fts(kg_node_fts, rowid, name, display_name, tags) VALUES ('delete', old.seq, old.name, old.display_name, old.tags);
  INSERT INTO kg_node_fts(rowid, name, display_name, tags) VALUES (new.seq, new.name, new.display_name, new.tags);
END;
