-- A provenance fact is unique per recorder: each agent's runs record their own facts, and whether a fact is already
-- stored says nothing about another agent's. Hand-written.
DROP INDEX IF EXISTS `provenance_fact_uq`;--> statement-breakpoint
CREATE UNIQUE INDEX `provenance_fact_uq` ON `provenance` (`store`,`artifact_type`,`artifact_id`,`input_hash`,`model_name`,`model_version`,`recorded_by`);
