-- Hand-written (drizzle-kit would qualify foreign keys with "public"; it has no tsvector type).
-- Applied inside the store's schema (search_path = store schema, public), so every name here is the store's own.
ALTER TABLE "chunks" ADD CONSTRAINT "chunks_doc_id_fk" FOREIGN KEY ("doc_id") REFERENCES "documents"("doc_id") ON DELETE cascade;
--> statement-breakpoint
ALTER TABLE "chunk_embeddings" ADD CONSTRAINT "chunk_embeddings_chunk_fk" FOREIGN KEY ("chunk_row_id") REFERENCES "chunks"("id") ON DELETE cascade;
--> statement-breakpoint
-- Full-text: the english configuration stems (configure, configured, configuration → configur) and drops
-- english stopwords; the explicit regconfig makes the expression immutable, as a generated column needs.
ALTER TABLE "chunks" ADD COLUMN "tsv" tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, "text")) STORED;
--> statement-breakpoint
CREATE INDEX "chunks_tsv_gin" ON "chunks" USING gin ("tsv");
