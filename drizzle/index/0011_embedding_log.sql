-- Change log of the embeddings table (issue 19): the approximate-nearest-neighbour index
-- (lib/embed/ann-index.ts) is derived from the stored vectors and kept in memory and in a file
-- beside index.db. Every insert, vector update and delete of an embedding appends a row here in
-- the same transaction, whoever writes (server, separate worker, CLI), so an index that covers the
-- log up to seq S is caught up by replaying the rows after S: no full rebuild per write, and a file
-- left behind by a crash is brought up to date on the next open. Rows an index file covers are
-- pruned (meta.embedding_log_pruned_through records how far).
CREATE TABLE `embedding_log` (
  `seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
  `embedding_id` integer NOT NULL,
  `fingerprint_id` text NOT NULL,
  `kind` text NOT NULL
);
--> statement-breakpoint
CREATE TRIGGER embedding_log_ai AFTER INSERT ON embeddings BEGIN
  INSERT INTO embedding_log(embedding_id, fingerprint_id, kind) VALUES (new.id, new.fingerprint_id, new.kind);
END;
--> statement-breakpoint
CREATE TRIGGER embedding_log_au AFTER UPDATE OF vector, fingerprint_id, kind ON embeddings BEGIN
  INSERT INTO embedding_log(embedding_id, fingerprint_id, kind) VALUES (old.id, old.fingerprint_id, old.kind);
  INSERT INTO embedding_log(embedding_id, fingerprint_id, kind) SELECT new.id, new.fingerprint_id, new.kind WHERE new.fingerprint_id <> old.fingerprint_id OR new.kind <> old.kind;
END;
--> statement-breakpoint
CREATE TRIGGER embedding_log_ad AFTER DELETE ON embeddings BEGIN
  INSERT INTO embedding_log(embedding_id, fingerprint_id, kind) VALUES (old.id, old.fingerprint_id, old.kind);
END;
--> statement-breakpoint
-- Which database an index file belongs to: a store whose index.db is rebuilt gets a new id, so a file
-- from the old database (same ids, other rows) is never served.
INSERT OR IGNORE INTO `meta`(`key`, `value`) VALUES ('ann_db_id', lower(hex(randomblob(16))));
