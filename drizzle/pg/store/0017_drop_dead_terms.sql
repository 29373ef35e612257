-- A word no row holds any more (its count reached 0) is deleted with its last posting, in the same statement, instead
-- of staying as a row that counts toward DUALMIND_MAX_STORE_BYTES for ever: rewriting one document again and again
-- with new words once filled a store's quota with dead words. The delete and the decrement touch different rows of
-- the same snapshot (count <= n: gone; count > n: less), so one statement does both. Existing dead words go here.
CREATE OR REPLACE FUNCTION "fts_chunks_deleted"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  -- The totals row before any token row, as every writer of the statistics takes them (no lock-order deadlock).
  PERFORM 1 FROM fts_totals WHERE id = 1 FOR UPDATE;
  WITH gone AS (DELETE FROM fts_postings p USING old_chunks o WHERE p.chunk_id = o.id RETURNING p.term),
  counted AS (SELECT term, count(*)::int AS n FROM gone GROUP BY term),
  dead AS (DELETE FROM fts_terms t USING counted c WHERE t.term = c.term AND t.rows <= c.n RETURNING t.term)
  UPDATE fts_terms t SET rows = t.rows - c.n FROM counted c WHERE t.term = c.term AND t.rows > c.n;
  UPDATE fts_totals SET rows = fts_totals.rows - x.n, tokens = fts_totals.tokens - x.t
    FROM (SELECT count(*) AS n, coalesce(sum(fts_len), 0) AS t FROM old_chunks WHERE fts_len IS NOT NULL) x
    WHERE fts_totals.id = 1 AND x.n > 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "word_rows_deleted"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  -- The totals row before any token row, as every writer of the statistics takes them (no lock-order deadlock).
  PERFORM 1 FROM word_totals WHERE tbl = TG_ARGV[0] FOR UPDATE;
  EXECUTE format($q$
    WITH gone AS (DELETE FROM word_postings p USING old_rows o WHERE p.tbl = $1 AND p.rid = o.%1$I RETURNING p.term),
    counted AS (SELECT term, count(*)::int AS n FROM gone GROUP BY term),
    dead AS (DELETE FROM word_terms t USING counted c WHERE t.tbl = $1 AND t.term = c.term AND t.rows <= c.n RETURNING t.term)
    UPDATE word_terms t SET rows = t.rows - c.n FROM counted c WHERE t.tbl = $1 AND t.term = c.term AND t.rows > c.n$q$, TG_ARGV[1]) USING TG_ARGV[0];
  UPDATE word_totals SET rows = word_totals.rows - x.n, tokens = word_totals.tokens - x.t
    FROM (SELECT count(*) AS n, coalesce(sum(fts_len), 0) AS t FROM old_rows WHERE fts_len IS NOT NULL) x
    WHERE word_totals.tbl = TG_ARGV[0] AND x.n > 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
DELETE FROM "fts_terms" WHERE "rows" <= 0;
--> statement-breakpoint
DELETE FROM "word_terms" WHERE "rows" <= 0;
