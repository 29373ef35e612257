-- Hand-written: a memory's frontmatter is metadata (its memories row), no longer chunk text. Memory documents
-- indexed before this are marked (no hash matches ''); the open that applies this migration re-indexes their
-- memories in the same transaction (lib/index/memories-pg.ts reindexMarkedMemoriesPg).
UPDATE "documents" SET "sha256" = '' WHERE "origin" = 'file' AND "path" LIKE 'memory/%';
