-- Hand-written: FTS5's bm25 statistics of the other full-text tables, kept as 0012 keeps them for chunks, one set of
-- tables for all (lib/index/engines/pg-fulltext.ts), each row named by its table and key (tbl, rid):
-- word_postings its count of each token (tf, all columns) with its length in tokens, word_terms each token's row
-- count, word_totals the rows and tokens of each table. 'documents' is the whole-document index of group=document
-- (SQLite's documents_fts: path, title and whole text, unstemmed); thoughts, kg_node, reasoning_traces and learnings
-- are remember's and recall's (SQLite's *_fts, porter). A row's fts_len is null until its tokens are stored (the
-- backfill job fills rows written before this migration); a ranking uses the statistics only when none is left.
ALTER TABLE "documents" ADD COLUMN IF NOT EXISTS "fts_len" integer;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "documents_fts_pending_idx" ON "documents" USING btree ("doc_id") WHERE fts_len is null;
--> statement-breakpoint
ALTER TABLE "thoughts" ADD COLUMN IF NOT EXISTS "fts_len" integer;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "thoughts_fts_pending_idx" ON "thoughts" USING btree ("seq") WHERE fts_len is null;
--> statement-breakpoint
ALTER TABLE "kg_node" ADD COLUMN IF NOT EXISTS "fts_len" integer;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "kg_node_fts_pending_idx" ON "kg_node" USING btree ("seq") WHERE fts_len is null;
--> statement-breakpoint
ALTER TABLE "reasoning_traces" ADD COLUMN IF NOT EXISTS "fts_len" integer;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "reasoning_traces_fts_pending_idx" ON "reasoning_traces" USING btree ("id") WHERE fts_len is null;
--> statement-breakpoint
ALTER TABLE "learnings" ADD COLUMN IF NOT EXISTS "fts_len" integer;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "learnings_fts_pending_idx" ON "learnings" USING btree ("id") WHERE fts_len is null;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "word_postings" (
  "tbl" text NOT NULL,
  "rid" bigint NOT NULL,
  "term" text NOT NULL,
  "tf" integer NOT NULL,
  "len" integer NOT NULL,
  PRIMARY KEY ("tbl", "rid", "term")
);
--> statement-breakpoint
-- Rows by token, for a ranking over a whole table (remember's and recall's); the whole-document index is only ever
-- asked about given documents (its primary key), so its postings are left out of this index.
CREATE INDEX IF NOT EXISTS "word_postings_term_idx" ON "word_postings" USING btree ("tbl", "term", "rid") INCLUDE ("tf", "len") WHERE tbl <> 'documents';
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "word_terms" (
  "tbl" text NOT NULL,
  "term" text NOT NULL,
  "rows" integer NOT NULL,
  PRIMARY KEY ("tbl", "term")
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "word_totals" (
  "tbl" text PRIMARY KEY,
  "rows" bigint NOT NULL,
  "tokens" bigint NOT NULL
);
--> statement-breakpoint
INSERT INTO "word_totals" ("tbl", "rows", "tokens") VALUES ('documents', 0, 0), ('thoughts', 0, 0), ('kg_node', 0, 0), ('reasoning_traces', 0, 0), ('learnings', 0, 0) ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- A row deleted takes its postings and counts along, in the deleting statement's transaction: TG_ARGV[0] names the
-- table's statistics, TG_ARGV[1] its key column. The function is pinned to this schema's tables.
CREATE OR REPLACE FUNCTION "word_rows_deleted"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  -- The totals row before any token row, as every writer of the statistics takes them (no lock-order deadlock).
  PERFORM 1 FROM word_totals WHERE tbl = TG_ARGV[0] FOR UPDATE;
  EXECUTE format($q$
    WITH gone AS (DELETE FROM word_postings p USING old_rows o WHERE p.tbl = $1 AND p.rid = o.%1$I RETURNING p.term),
    counted AS (SELECT term, count(*)::int AS n FROM gone GROUP BY term)
    UPDATE word_terms t SET rows = t.rows - c.n FROM counted c WHERE t.tbl = $1 AND t.term = c.term$q$, TG_ARGV[1]) USING TG_ARGV[0];
  UPDATE word_totals SET rows = word_totals.rows - x.n, tokens = word_totals.tokens - x.t
    FROM (SELECT count(*) AS n, coalesce(sum(fts_len), 0) AS t FROM old_rows WHERE fts_len IS NOT NULL) x
    WHERE word_totals.tbl = TG_ARGV[0] AND x.n > 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "documents_words_deleted" ON "documents";
--> statement-breakpoint
CREATE TRIGGER "documents_words_deleted" AFTER DELETE ON "documents" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "word_rows_deleted"('documents', 'doc_id');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "thoughts_words_deleted" ON "thoughts";
--> statement-breakpoint
CREATE TRIGGER "thoughts_words_deleted" AFTER DELETE ON "thoughts" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "word_rows_deleted"('thoughts', 'seq');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "kg_node_words_deleted" ON "kg_node";
--> statement-breakpoint
CREATE TRIGGER "kg_node_words_deleted" AFTER DELETE ON "kg_node" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "word_rows_deleted"('kg_node', 'seq');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "reasoning_traces_words_deleted" ON "reasoning_traces";
--> statement-breakpoint
CREATE TRIGGER "reasoning_traces_words_deleted" AFTER DELETE ON "reasoning_traces" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "word_rows_deleted"('reasoning_traces', 'id');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "learnings_words_deleted" ON "learnings";
--> statement-breakpoint
CREATE TRIGGER "learnings_words_deleted" AFTER DELETE ON "learnings" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "word_rows_deleted"('learnings', 'id');
