-- Rows keyed by an item that is gone (lib/index/item-state.ts itemsDeletedOp): a delete now takes an item's state,
-- its proposal's provenance and its contradictions (both ways) with it, in the delete's own transaction. Earlier
-- versions deleted a learning, trace, thought, node, relation or frame (and a node's cascaded frames and relations)
-- without them: the contradictions list showed pairs with a side gone, the survivor stayed flagged and penalised by
-- remember, the review queue listed deleted proposals, and a later fact of the same subject and property was retired
-- against (or contradicted) an item no longer there. Dropped here once, so no read has to filter for them. Memories
-- are not touched: a deleted memory's rows wait under its trash key, which no memory row holds.
-- One anti-join against every item id per statement (PostgreSQL hashes it; a NOT IN list past work_mem would be read
-- again for each row). Hand-written.
DELETE FROM "item_contradictions" r WHERE r.kind IN ('learning', 'trace', 'thought', 'node', 'relation', 'frame') AND NOT EXISTS (
	SELECT 1 FROM (SELECT 'learning' AS kind, CAST(id AS text) AS id FROM "learnings"
	UNION ALL SELECT 'trace', CAST(id AS text) FROM "reasoning_traces"
	UNION ALL SELECT 'thought', id FROM "thoughts"
	UNION ALL SELECT 'node', id FROM "kg_node"
	UNION ALL SELECT 'relation', id FROM "kg_relation"
	UNION ALL SELECT 'frame', id FROM "kg_frame") live
	WHERE live.kind = r.kind AND live.id = r.item_id);
--> statement-breakpoint
DELETE FROM "item_contradictions" r WHERE r.kind IN ('learning', 'trace', 'thought', 'node', 'relation', 'frame') AND NOT EXISTS (
	SELECT 1 FROM (SELECT 'learning' AS kind, CAST(id AS text) AS id FROM "learnings"
	UNION ALL SELECT 'trace', CAST(id AS text) FROM "reasoning_traces"
	UNION ALL SELECT 'thought', id FROM "thoughts"
	UNION ALL SELECT 'node', id FROM "kg_node"
	UNION ALL SELECT 'relation', id FROM "kg_relation"
	UNION ALL SELECT 'frame', id FROM "kg_frame") live
	WHERE live.kind = r.kind AND live.id = r.other_id);
--> statement-breakpoint
DELETE FROM "proposals" r WHERE r.kind IN ('learning', 'trace', 'thought', 'node', 'relation', 'frame') AND NOT EXISTS (
	SELECT 1 FROM (SELECT 'learning' AS kind, CAST(id AS text) AS id FROM "learnings"
	UNION ALL SELECT 'trace', CAST(id AS text) FROM "reasoning_traces"
	UNION ALL SELECT 'thought', id FROM "thoughts"
	UNION ALL SELECT 'node', id FROM "kg_node"
	UNION ALL SELECT 'relation', id FROM "kg_relation"
	UNION ALL SELECT 'frame', id FROM "kg_frame") live
	WHERE live.kind = r.kind AND live.id = r.item_id);
--> statement-breakpoint
DELETE FROM "item_state" r WHERE r.kind IN ('learning', 'trace', 'thought', 'node', 'relation', 'frame') AND NOT EXISTS (
	SELECT 1 FROM (SELECT 'learning' AS kind, CAST(id AS text) AS id FROM "learnings"
	UNION ALL SELECT 'trace', CAST(id AS text) FROM "reasoning_traces"
	UNION ALL SELECT 'thought', id FROM "thoughts"
	UNION ALL SELECT 'node', id FROM "kg_node"
	UNION ALL SELECT 'relation', id FROM "kg_relation"
	UNION ALL SELECT 'frame', id FROM "kg_frame") live
	WHERE live.kind = r.kind AND live.id = r.item_id);
