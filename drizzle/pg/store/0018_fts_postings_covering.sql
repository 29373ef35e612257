-- Hand-written: fts_postings' primary key (chunk_id, term) carries each posting's counts (tf, len), so a posting looked
-- up by its key (an all-words query's rarest word's rows joined to the other words' by key, a broad query's partly met
-- rows: lib/index/engines/pg-fulltext.ts) is read from the index alone, without a visit to the table's page.
ALTER TABLE "fts_postings" DROP CONSTRAINT IF EXISTS "fts_postings_pkey", ADD CONSTRAINT "fts_postings_pkey" PRIMARY KEY ("chunk_id", "term") INCLUDE ("tf", "len");
--> statement-breakpoint
-- An index-only read still visits every table page not yet marked all-visible, which only a vacuum marks. By default an
-- insert-only table is vacuumed once a fifth of it is new since the last vacuum, so after a bulk ingest up to a sixth of
-- the postings were visited twice; here the vacuum follows every 100,000 new postings (a few thousand chunks).
ALTER TABLE "fts_postings" SET (autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 100000);
