-- Lexical recall over trace descriptors and learning handles (the fallback when vectors cannot answer).
CREATE VIRTUAL TABLE `reasoning_traces_fts` USING fts5(summary_descriptor, content='reasoning_traces', content_rowid='id', tokenize='porter unicode61');
--> statement-breakpoint
CREATE TRIGGER `reasoning_traces_fts_ai` AFTER INSERT ON `reasoning_traces` BEGIN
  INSERT INTO reasoning_traces_fts(rowid, summary_descriptor) VALUES (new.id, new.summary_descriptor);
END;
--> statement-breakpoint
CREATE TRIGGER `reasoning_traces_fts_ad` AFTER DELETE ON `reasoning_traces` BEGIN
  INSERT INTO reasoning_traces_fts(reasoning_traces_fts, rowid, summary_descriptor) VALUES ('delete', old.id, old.summary_descriptor);
END;
--> statement-breakpoint
CREATE TRIGGER `reasoning_traces_fts_au` AFTER UPDATE OF summary_descriptor ON `reasoning_traces` BEGIN
  INSERT INTO reasoning_traces_fts(reasoning_traces_fts, rowid, summary_descriptor) VALUES ('delete', old.id, old.summary_descriptor);
  INSERT INTO reasoning_traces_fts(rowid, summary_descriptor) VALUES (new.id, new.summary_descriptor);
END;
--> statement-breakpoint
CREATE VIRTUAL TABLE `learnings_fts` USING fts5(semantic_handle, content='learnings', content_rowid='id', tokenize='porter unicode61');
--> statement-breakpoint
CREATE TRIGGER `learnings_fts_ai` AFTER INSERT ON `learnings` BEGIN
  INSERT INTO learnings_fts(rowid, semantic_handle) VALUES (new.id, new.semantic_handle);
END;
--> statement-breakpoint
CREATE TRIGGER `learnings_fts_ad` AFTER DELETE ON `learnings` BEGIN
  INSERT INTO learnings_fts(learnings_fts, rowid, semantic_handle) VALUES ('delete', old.id, old.semantic_handle);
END;
--> statement-breakpoint
CREATE TRIGGER `learnings_fts_au` AFTER UPDATE OF semantic_handle ON `learnings` BEGIN
  INSERT INTO learnings_fts(learnings_fts, rowid, semantic_handle) VALUES ('delete', old.id, old.semantic_handle);
  INSERT INTO learnings_fts(rowid, semantic_handle) VALUES (new.id, new.semantic_handle);
END;
