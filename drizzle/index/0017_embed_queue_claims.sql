-- Hand-written: who holds claims on the queue (a worker releasing a dead worker's claims, health reporting them) reads only claimed rows.
CREATE INDEX IF NOT EXISTS `embed_queue_claimed_idx` ON `embed_queue` (`claimed_by`) WHERE `claimed_by` IS NOT NULL;
