-- Whole-document full-text index (issue 16, document ranking): one row per document (rowid = doc_id), columns
-- `path` (its path's words), `title` (its first heading) and `body` (its whole text), tokenized WITHOUT stemming
-- (`unicode61 remove_diacritics 2`). Search with group=document fuses this document-level bm25 with the stemmed
-- chunk evidence of chunks_fts (lib/index/search.ts DOCUMENT_SCORING). Contentless (the text already lives in
-- chunks, or in documents.content for API documents), with contentless_delete so a row can be replaced or deleted.
-- Ingest writes a document's row (lib/index/document-fts.ts); deleting a document deletes it (trigger below).
-- Existing documents are filled by a resumable rebuild (lib/index/fts-rebuild.ts) in batches by doc_id:
--   docs_fts_rebuild_target   the highest doc_id at migration time;
--   docs_fts_rebuilt_through  documents 1..through are indexed.
-- Both keys are deleted when the rebuild finishes; until then search ranks documents by their chunks alone.
-- Writing a row is idempotent (INSERT OR REPLACE), so ingest and the rebuild may both write one.
CREATE VIRTUAL TABLE IF NOT EXISTS `documents_fts` USING fts5(path, title, body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE TRIGGER IF NOT EXISTS `documents_fts_ad` AFTER DELETE ON `documents` BEGIN
  DELETE FROM documents_fts WHERE rowid = old.doc_id;
END;
--> statement-breakpoint
INSERT INTO meta(key, value) SELECT 'docs_fts_rebuild_target', (SELECT CAST(max(doc_id) AS TEXT) FROM documents) WHERE EXISTS (SELECT 1 FROM documents)
  ON CONFLICT(key) DO UPDATE SET value = excluded.value;
--> statement-breakpoint
INSERT INTO meta(key, value) SELECT 'docs_fts_rebuilt_through', '0' WHERE EXISTS (SELECT 1 FROM documents)
  ON CONFLICT(key) DO UPDATE SET value = excluded.value;
