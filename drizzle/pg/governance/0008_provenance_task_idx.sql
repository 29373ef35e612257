-- A task's artifacts (its status answer) are read newest first by task; without this index every read scanned
-- every fact in the ledger. Hand-written.
CREATE INDEX IF NOT EXISTS "provenance_task_idx" ON "provenance" USING btree ("task_id","id");
