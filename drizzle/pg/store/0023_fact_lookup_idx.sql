-- The fact-key lookup (lib/index/fact-match.ts): for one word of a query, the keys of one kind and one status whose
-- subject starts with that word, as one bounded index range. Per status, so rows the reader's view cannot show
-- (proposals, rejected items) never take the place of those it can. The key is ordered byte by byte (collate "C"),
-- as the lookup compares it on both engines; an index in the database's collation cannot serve that range. Hand-written.
CREATE INDEX IF NOT EXISTS "item_state_fact_lookup_idx" ON "item_state" ("kind", "status", ("fact_key" COLLATE "C")) WHERE "fact_key" IS NOT NULL;
