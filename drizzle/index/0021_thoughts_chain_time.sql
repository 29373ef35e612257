-- A thought's neighbours in its chain (remember's context evidence, lib/graph/engines/sqlite.ts thoughtNeighbours):
-- the nearest thought of the same chain before and after it in time is one seek on (chain_id, timestamp, seq), not a
-- read of every thought written in the time window around it. Hand-written.
CREATE INDEX IF NOT EXISTS `thoughts_chain_time_idx` ON `thoughts` (`chain_id`,`timestamp`,`seq`);
