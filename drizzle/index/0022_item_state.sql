-- Governed memory's per-item state (lib/index/item-state.ts): one row per item of a store that has ever been
-- invalidated, restored or superseded, keyed by its kind and id. An item without a row is active, so existing stores
-- need no data migration. Event time (valid_from, valid_to) is what the item states; record time (recorded_at,
-- retired_at) is when dualmind learned and retired it. `history` holds the item's transitions (JSON, bounded). Hand-written.
CREATE TABLE IF NOT EXISTS `item_state` (
	`kind` text NOT NULL CHECK (`kind` in ('memory', 'learning', 'trace', 'thought', 'node', 'relation', 'frame')),
	`item_id` text NOT NULL,
	`status` text NOT NULL DEFAULT 'active' CHECK (`status` in ('active', 'retired', 'proposed', 'rejected')),
	`valid_from` integer,
	`valid_to` integer,
	`recorded_at` integer NOT NULL,
	`retired_at` integer,
	`supersedes` text,
	`superseded_by` text,
	`reason` text,
	`decided_by` text,
	`history` text NOT NULL DEFAULT '[]',
	`updated_at` integer NOT NULL,
	PRIMARY KEY (`kind`, `item_id`)
);
