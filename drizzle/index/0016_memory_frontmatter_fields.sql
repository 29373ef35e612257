-- A memory's frontmatter is metadata (its memories row), no longer chunk text. Memory documents indexed
-- before this are marked for a re-read: no hash matches '', and without ctime/inode their stat vouches for
-- nothing, so the next reindex re-chunks them. Dropping index_built_at makes the first open of the store
-- run that reindex by itself (lib/index/reindex.ts ensureIndexBuilt).
UPDATE `documents` SET `sha256` = '', `ctime` = NULL, `inode` = NULL WHERE `origin` = 'file' AND `path` LIKE 'memory/%';
--> statement-breakpoint
DELETE FROM `meta` WHERE `key` = 'index_built_at' AND EXISTS (SELECT 1 FROM `documents` WHERE `origin` = 'file' AND `path` LIKE 'memory/%');
