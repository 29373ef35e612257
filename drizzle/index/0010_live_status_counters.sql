-- Live status counters (issue 17): getStoreStatus reads a handful of counter rows instead of scanning
-- the queue and every artifact per request. Triggers keep them exact in the same transaction as each write:
--   queue_pending / queue_parked  per kind: embed_queue rows (parked_at null / not null)
--   artifacts                     per kind: live embeddable rows (chunks, traces, learnings, thoughts, graph nodes)
--   fresh / stale                 per kind: artifacts with a vector from the store's active model whose input hash
--                                 equals / differs from the artifact's current hash (missing = artifacts - fresh - stale)
-- A change of meta.active_fingerprint (first vectors, re-embed switch) recounts fresh/stale once.
-- tests/status-counters.test.ts checks the counters against a full recount over random operations.
-- The kind/table list mirrors lib/embeddable-kinds.ts (a new embeddable kind needs triggers here too).
CREATE TABLE `status_counters` (
  `name` text NOT NULL,
  `kind` text NOT NULL,
  `value` integer NOT NULL DEFAULT 0,
  PRIMARY KEY(`name`, `kind`)
);
--> statement-breakpoint
CREATE INDEX `embed_queue_pending_age_idx` ON `embed_queue` (`parked_at`,`enqueued_at`);
--> statement-breakpoint
CREATE VIEW `embeddable_hashes` AS
  SELECT 'chunk' AS kind, id AS ref_id, chunk_sha256 AS input_hash FROM chunks
  UNION ALL
  SELECT 'trace' AS kind, id AS ref_id, descriptor_hash AS input_hash FROM reasoning_traces
  UNION ALL
  SELECT 'learning' AS kind, id AS ref_id, handle_hash AS input_hash FROM learnings
  UNION ALL
  SELECT 'thought' AS kind, seq AS ref_id, content_hash AS input_hash FROM thoughts
  UNION ALL
  SELECT 'node' AS kind, seq AS ref_id, embed_hash AS input_hash FROM kg_node;
--> statement-breakpoint
CREATE TRIGGER status_embed_queue_ai AFTER INSERT ON embed_queue BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'queue_pending', new.kind, 1 WHERE new.parked_at IS NULL ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'queue_parked', new.kind, 1 WHERE new.parked_at IS NOT NULL ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_embed_queue_ad AFTER DELETE ON embed_queue BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'queue_pending', old.kind, -1 WHERE old.parked_at IS NULL ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'queue_parked', old.kind, -1 WHERE old.parked_at IS NOT NULL ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_embed_queue_au AFTER UPDATE OF parked_at, kind ON embed_queue BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'queue_pending', old.kind, -1 WHERE old.parked_at IS NULL ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'queue_parked', old.kind, -1 WHERE old.parked_at IS NOT NULL ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'queue_pending', new.kind, 1 WHERE new.parked_at IS NULL ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'queue_parked', new.kind, 1 WHERE new.parked_at IS NOT NULL ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_chunks_ai AFTER INSERT ON chunks BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', 'chunk', 1 WHERE true ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'chunk', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'chunk' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = new.chunk_sha256 ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'chunk', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'chunk' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> new.chunk_sha256 ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_chunks_ad AFTER DELETE ON chunks BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', 'chunk', -1 WHERE true ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'chunk', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'chunk' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = old.chunk_sha256 ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'chunk', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'chunk' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> old.chunk_sha256 ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_chunks_au AFTER UPDATE OF chunk_sha256, id ON chunks BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'chunk', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'chunk' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = old.chunk_sha256 ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'chunk', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'chunk' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> old.chunk_sha256 ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'chunk', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'chunk' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = new.chunk_sha256 ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'chunk', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'chunk' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> new.chunk_sha256 ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_reasoning_traces_ai AFTER INSERT ON reasoning_traces BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', 'trace', 1 WHERE true ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'trace', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'trace' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = new.descriptor_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'trace', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'trace' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> new.descriptor_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_reasoning_traces_ad AFTER DELETE ON reasoning_traces BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', 'trace', -1 WHERE true ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'trace', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'trace' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = old.descriptor_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'trace', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'trace' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> old.descriptor_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_reasoning_traces_au AFTER UPDATE OF descriptor_hash, id ON reasoning_traces BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'trace', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'trace' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = old.descriptor_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'trace', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'trace' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> old.descriptor_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'trace', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'trace' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = new.descriptor_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'trace', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'trace' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> new.descriptor_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_learnings_ai AFTER INSERT ON learnings BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', 'learning', 1 WHERE true ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'learning', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'learning' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = new.handle_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'learning', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'learning' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> new.handle_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_learnings_ad AFTER DELETE ON learnings BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', 'learning', -1 WHERE true ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'learning', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'learning' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = old.handle_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'learning', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'learning' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> old.handle_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_learnings_au AFTER UPDATE OF handle_hash, id ON learnings BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'learning', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'learning' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = old.handle_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'learning', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'learning' AND e.ref_id = old.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> old.handle_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'learning', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'learning' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = new.handle_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'learning', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'learning' AND e.ref_id = new.id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> new.handle_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_thoughts_ai AFTER INSERT ON thoughts BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', 'thought', 1 WHERE true ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'thought', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'thought' AND e.ref_id = new.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = new.content_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'thought', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'thought' AND e.ref_id = new.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> new.content_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_thoughts_ad AFTER DELETE ON thoughts BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', 'thought', -1 WHERE true ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'thought', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'thought' AND e.ref_id = old.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = old.content_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'thought', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'thought' AND e.ref_id = old.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> old.content_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_thoughts_au AFTER UPDATE OF content_hash, seq ON thoughts BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'thought', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'thought' AND e.ref_id = old.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = old.content_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'thought', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'thought' AND e.ref_id = old.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> old.content_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'thought', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'thought' AND e.ref_id = new.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = new.content_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'thought', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'thought' AND e.ref_id = new.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> new.content_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_kg_node_ai AFTER INSERT ON kg_node BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', 'node', 1 WHERE true ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'node', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'node' AND e.ref_id = new.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = new.embed_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'node', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'node' AND e.ref_id = new.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> new.embed_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_kg_node_ad AFTER DELETE ON kg_node BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', 'node', -1 WHERE true ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'node', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'node' AND e.ref_id = old.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = old.embed_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'node', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'node' AND e.ref_id = old.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> old.embed_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_kg_node_au AFTER UPDATE OF embed_hash, seq ON kg_node BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'node', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'node' AND e.ref_id = old.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = old.embed_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'node', -1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'node' AND e.ref_id = old.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> old.embed_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', 'node', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'node' AND e.ref_id = new.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) = new.embed_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', 'node', 1 WHERE (SELECT e.input_hash FROM embeddings e WHERE e.kind = 'node' AND e.ref_id = new.seq AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')) <> new.embed_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_embeddings_ai AFTER INSERT ON embeddings BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', new.kind, 1 WHERE new.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint') AND (SELECT a.input_hash FROM embeddable_hashes a WHERE a.kind = new.kind AND a.ref_id = new.ref_id) = new.input_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', new.kind, 1 WHERE new.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint') AND (SELECT a.input_hash FROM embeddable_hashes a WHERE a.kind = new.kind AND a.ref_id = new.ref_id) <> new.input_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_embeddings_ad AFTER DELETE ON embeddings BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', old.kind, -1 WHERE old.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint') AND (SELECT a.input_hash FROM embeddable_hashes a WHERE a.kind = old.kind AND a.ref_id = old.ref_id) = old.input_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', old.kind, -1 WHERE old.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint') AND (SELECT a.input_hash FROM embeddable_hashes a WHERE a.kind = old.kind AND a.ref_id = old.ref_id) <> old.input_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_embeddings_au AFTER UPDATE OF input_hash, fingerprint_id, kind, ref_id ON embeddings BEGIN
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', old.kind, -1 WHERE old.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint') AND (SELECT a.input_hash FROM embeddable_hashes a WHERE a.kind = old.kind AND a.ref_id = old.ref_id) = old.input_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', old.kind, -1 WHERE old.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint') AND (SELECT a.input_hash FROM embeddable_hashes a WHERE a.kind = old.kind AND a.ref_id = old.ref_id) <> old.input_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'fresh', new.kind, 1 WHERE new.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint') AND (SELECT a.input_hash FROM embeddable_hashes a WHERE a.kind = new.kind AND a.ref_id = new.ref_id) = new.input_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
  INSERT INTO status_counters(name, kind, value) SELECT 'stale', new.kind, 1 WHERE new.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint') AND (SELECT a.input_hash FROM embeddable_hashes a WHERE a.kind = new.kind AND a.ref_id = new.ref_id) <> new.input_hash ON CONFLICT(name, kind) DO UPDATE SET value = value + excluded.value;
END;
--> statement-breakpoint
CREATE TRIGGER status_meta_active_ai AFTER INSERT ON meta WHEN new.key = 'active_fingerprint' BEGIN
  DELETE FROM status_counters WHERE name IN ('fresh', 'stale');
  INSERT INTO status_counters(name, kind, value)
    SELECT CASE WHEN e.input_hash = a.input_hash THEN 'fresh' ELSE 'stale' END, a.kind, count(*)
    FROM embeddable_hashes a JOIN embeddings e ON e.kind = a.kind AND e.ref_id = a.ref_id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')
    GROUP BY 1, 2;
END;
--> statement-breakpoint
CREATE TRIGGER status_meta_active_au AFTER UPDATE ON meta WHEN new.key = 'active_fingerprint' BEGIN
  DELETE FROM status_counters WHERE name IN ('fresh', 'stale');
  INSERT INTO status_counters(name, kind, value)
    SELECT CASE WHEN e.input_hash = a.input_hash THEN 'fresh' ELSE 'stale' END, a.kind, count(*)
    FROM embeddable_hashes a JOIN embeddings e ON e.kind = a.kind AND e.ref_id = a.ref_id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')
    GROUP BY 1, 2;
END;
--> statement-breakpoint
INSERT INTO status_counters(name, kind, value)
  SELECT 'queue_pending', kind, count(*) FROM embed_queue WHERE parked_at IS NULL GROUP BY kind;
--> statement-breakpoint
INSERT INTO status_counters(name, kind, value)
  SELECT 'queue_parked', kind, count(*) FROM embed_queue WHERE parked_at IS NOT NULL GROUP BY kind;
--> statement-breakpoint
INSERT INTO status_counters(name, kind, value) SELECT 'artifacts', kind, count(*) FROM embeddable_hashes GROUP BY kind;
--> statement-breakpoint
DELETE FROM status_counters WHERE name IN ('fresh', 'stale');
--> statement-breakpoint
INSERT INTO status_counters(name, kind, value)
  SELECT CASE WHEN e.input_hash = a.input_hash THEN 'fresh' ELSE 'stale' END, a.kind, count(*)
  FROM embeddable_hashes a JOIN embeddings e ON e.kind = a.kind AND e.ref_id = a.ref_id AND e.fingerprint_id = (SELECT value FROM meta WHERE key = 'active_fingerprint')
  GROUP BY 1, 2;
