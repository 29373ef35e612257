-- Rows keyed by an item that is gone (lib/index/item-state.ts itemsDeletedOp): a delete now takes an item's state,
-- its proposal's provenance and its contradictions (both ways) with it, in the delete's own transaction. Earlier
-- versions deleted a learning, trace, thought, node, relation or frame (and a node's cascaded frames and relations)
-- without them: the contradictions list showed pairs with a side gone, the survivor stayed flagged and penalised by
-- remember, the review queue listed deleted proposals, and a later fact of the same subject and property was retired
-- against (or contradicted) an item no longer there. Dropped here once, so no read has to filter for them. Memories
-- are not touched: a deleted memory's rows wait under its trash key, which no memory row holds.
-- Hand-written.
DELETE FROM `item_contradictions` WHERE
	(kind = 'learning' AND (item_id NOT IN (SELECT CAST(id AS text) FROM learnings) OR other_id NOT IN (SELECT CAST(id AS text) FROM learnings)))
	OR (kind = 'trace' AND (item_id NOT IN (SELECT CAST(id AS text) FROM reasoning_traces) OR other_id NOT IN (SELECT CAST(id AS text) FROM reasoning_traces)))
	OR (kind = 'thought' AND (item_id NOT IN (SELECT CAST(id AS text) FROM thoughts) OR other_id NOT IN (SELECT CAST(id AS text) FROM thoughts)))
	OR (kind = 'node' AND (item_id NOT IN (SELECT CAST(id AS text) FROM kg_node) OR other_id NOT IN (SELECT CAST(id AS text) FROM kg_node)))
	OR (kind = 'relation' AND (item_id NOT IN (SELECT CAST(id AS text) FROM kg_relation) OR other_id NOT IN (SELECT CAST(id AS text) FROM kg_relation)))
	OR (kind = 'frame' AND (item_id NOT IN (SELECT CAST(id AS text) FROM kg_frame) OR other_id NOT IN (SELECT CAST(id AS text) FROM kg_frame)));
--> statement-breakpoint
DELETE FROM `proposals` WHERE
	(kind = 'learning' AND (item_id NOT IN (SELECT CAST(id AS text) FROM learnings)))
	OR (kind = 'trace' AND (item_id NOT IN (SELECT CAST(id AS text) FROM reasoning_traces)))
	OR (kind = 'thought' AND (item_id NOT IN (SELECT CAST(id AS text) FROM thoughts)))
	OR (kind = 'node' AND (item_id NOT IN (SELECT CAST(id AS text) FROM kg_node)))
	OR (kind = 'relation' AND (item_id NOT IN (SELECT CAST(id AS text) FROM kg_relation)))
	OR (kind = 'frame' AND (item_id NOT IN (SELECT CAST(id AS text) FROM kg_frame)));
--> statement-breakpoint
DELETE FROM `item_state` WHERE
	(kind = 'learning' AND (item_id NOT IN (SELECT CAST(id AS text) FROM learnings)))
	OR (kind = 'trace' AND (item_id NOT IN (SELECT CAST(id AS text) FROM reasoning_traces)))
	OR (kind = 'thought' AND (item_id NOT IN (SELECT CAST(id AS text) FROM thoughts)))
	OR (kind = 'node' AND (item_id NOT IN (SELECT CAST(id AS text) FROM kg_node)))
	OR (kind = 'relation' AND (item_id NOT IN (SELECT CAST(id AS text) FROM kg_relation)))
	OR (kind = 'frame' AND (item_id NOT IN (SELECT CAST(id AS text) FROM kg_frame)));
