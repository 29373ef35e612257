-- An agent's share of the ledger (DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT) also counts the audit rows its store
-- writes add (a memory update's row carries its diff), by the rule of 0010 (agent_ledger_row_bytes): one
-- store-limited agent cannot fill the ledger for everyone by rewriting one memory. A validation's and an override's
-- audit rows are counted with their own rows (0010).
CREATE OR REPLACE FUNCTION public.agent_audit_usage_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF substr(NEW.actor, 1, 6) = 'agent:' AND NEW.action NOT IN ('ledger.validation', 'ledger.override') THEN
		INSERT INTO public.agent_ledger_usage (agent_id, bytes) VALUES (substr(NEW.actor, 7), public.agent_ledger_row_bytes(to_jsonb(NEW), 'audit_log', ARRAY['id', 'ts', 'actor', 'target,id']))
			ON CONFLICT (agent_id) DO UPDATE SET bytes = public.agent_ledger_usage.bytes + excluded.bytes;
	END IF;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "audit_log";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT ON "audit_log" FOR EACH ROW EXECUTE FUNCTION public.agent_audit_usage_track();
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT substr("actor", 7), sum(public.agent_ledger_row_bytes(to_jsonb(x), 'audit_log', ARRAY['id', 'ts', 'actor', 'target,id'])) FROM "audit_log" x WHERE substr("actor", 1, 6) = 'agent:' AND "action" NOT IN ('ledger.validation', 'ledger.override') GROUP BY substr("actor", 7)
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
