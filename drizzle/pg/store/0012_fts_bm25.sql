-- Hand-written: the full-text statistics FTS5 keeps for bm25, kept here for PostgreSQL's bm25 top-k (lib/index/engines/pg-fulltext.ts).
-- A chunk's tokens are made in JS by FTS5's own tokenizer (porter unicode61 remove_diacritics 2) at write time:
-- fts_len is its length in tokens (null until tokenized: the backfill job fills existing stores), fts_postings its
-- count of each token (tf) with its length and an impact key for impact-ordered reads, fts_terms each token's row
-- count, fts_totals the rows and tokens of all tokenized chunks.
ALTER TABLE "chunks" ADD COLUMN IF NOT EXISTS "fts_len" integer;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "chunks_fts_pending_idx" ON "chunks" USING btree ("id") WHERE fts_len is null;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "fts_postings" (
  "chunk_id" bigint NOT NULL,
  "term" text NOT NULL,
  "tf" integer NOT NULL,
  "len" integer NOT NULL,
  "imp" real NOT NULL,
  PRIMARY KEY ("chunk_id", "term")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "fts_postings_impact_idx" ON "fts_postings" USING btree ("term", "imp" DESC, "chunk_id" DESC) INCLUDE ("tf", "len");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "fts_terms" (
  "term" text PRIMARY KEY,
  "rows" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "fts_totals" (
  "id" integer PRIMARY KEY CHECK ("id" = 1),
  "rows" bigint NOT NULL,
  "tokens" bigint NOT NULL
);
--> statement-breakpoint
INSERT INTO "fts_totals" ("id", "rows", "tokens") VALUES (1, 0, 0) ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- Every way a chunk goes (replaced by ingest, its document deleted, a cascade) takes its postings and counts along,
-- in the deleting statement's transaction. The function is pinned to this schema's tables.
CREATE OR REPLACE FUNCTION "fts_chunks_deleted"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  -- The totals row before any token row, as every writer of the statistics takes them (no lock-order deadlock).
  PERFORM 1 FROM fts_totals WHERE id = 1 FOR UPDATE;
  WITH gone AS (DELETE FROM fts_postings p USING old_chunks o WHERE p.chunk_id = o.id RETURNING p.term),
  counted AS (SELECT term, count(*)::int AS n FROM gone GROUP BY term)
  UPDATE fts_terms t SET rows = t.rows - c.n FROM counted c WHERE t.term = c.term;
  UPDATE fts_totals SET rows = fts_totals.rows - x.n, tokens = fts_totals.tokens - x.t
    FROM (SELECT count(*) AS n, coalesce(sum(fts_len), 0) AS t FROM old_chunks WHERE fts_len IS NOT NULL) x
    WHERE fts_totals.id = 1 AND x.n > 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "chunks_fts_deleted" ON "chunks";
--> statement-breakpoint
CREATE TRIGGER "chunks_fts_deleted" AFTER DELETE ON "chunks" REFERENCING OLD TABLE AS old_chunks FOR EACH STATEMENT EXECUTE FUNCTION "fts_chunks_deleted"();
