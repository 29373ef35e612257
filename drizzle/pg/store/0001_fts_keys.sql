-- Hand-written (drizzle-kit would qualify foreign keys with "public"; it has no tsvector type).
-- Applied inside the store's schema (search_path = store schema, public), so every name here is the store's own.
ALTER TABLE "chunks" ADD CONSTRAINT "chunks_doc_id_fk" FOREIGN KEY ("doc_id") REFERENCES "documents"("doc_id") ON DELETE cascade;
--> statement-breakpoint
ALTER TABLE "chunk_embeddings" ADD CONSTRAINT "chunk_embeddings_chunk_fk" FOREIGN KEY ("chunk_row_id") REFERENCES "chunks"("id") ON DELETE cascade;
--> statement-breakpoint
-- Full-text: the english configuration stems (configure, configured, configuration → configur) and drops
-- english stopwords; the explicit regconfig makes the expression immutable, as a generated column needs.
-- Every run of non-alphanumerics becomes a space first, so words split as FTS5's unicode61 splits them
-- (and as the query's words are taken, lib/retrieval/match.ts): PostgreSQL's own parser would keep
-- `foo.bar`, `node_modules/x.js`, URLs and e-mail addresses as single tokens, and `bar` would not find them.
ALTER TABLE "chunks" ADD COLUMN "tsv" tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, regexp_replace("text", '[^[:alnum:]]+', ' ', 'g'))) STORED;
--> statement-breakpoint
CREATE INDEX "chunks_tsv_gin" ON "chunks" USING gin ("tsv");
