-- Each agent's share of the ledger (DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT) counts what its rows take on disk, as an
-- upper bound: every column of the row (8 bytes each plus its text) and an eighth more (TOAST chunks' headers), that
-- once more up to a page (a page's free space), 128 bytes a row (tuple header, line pointer), and each index's entry for it
-- (48 bytes plus twice its columns: index pages are filled at random). A task counts its assignees' rows; a
-- validation and an override the audit row they add. Calibrated against pg_total_relation_size
-- (tests/limits-ledger-share-disk.test.ts; SECURITY.md). Every total is recounted from the rows there.
CREATE OR REPLACE FUNCTION public.agent_ledger_row_bytes(r jsonb, tbl text, idx text[]) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
-- idx: one element per index, its columns comma-separated.
DECLARE
	d bigint;
	size bigint;
	cols text;
	c text;
	n bigint;
	tid bigint := coalesce(octet_length(r ->> 'task_id'), 0);
BEGIN
	SELECT coalesce(sum(8 + coalesce(octet_length(e.value #>> '{}'), 0)), 0) INTO d FROM jsonb_each(r) e;
	size := 128 + d + d / 8 + least(d, 8192);
	FOREACH cols IN ARRAY idx LOOP
		size := size + 48;
		FOREACH c IN ARRAY string_to_array(cols, ',') LOOP
			size := size + 2 * coalesce(octet_length(r ->> c), 0);
		END LOOP;
	END LOOP;
	IF tbl = 'tasks' THEN
		n := CASE WHEN jsonb_typeof((r ->> 'assignees_json')::jsonb) = 'array' THEN jsonb_array_length((r ->> 'assignees_json')::jsonb) ELSE 0 END;
		size := size + coalesce(n, 0) * (224 + 6 * tid) + 6 * coalesce(octet_length(r ->> 'assignees_json'), 0);
	ELSIF tbl = 'validations' THEN
		size := size + 1024 + 4 * (coalesce(octet_length(r ->> 'client_id'), 0) + tid + coalesce(octet_length(r ->> 'run_id'), 0));
	ELSIF tbl = 'overrides' THEN
		size := size + 1024 + 4 * (coalesce(octet_length(r ->> 'client_id'), 0) + tid) + 2 * coalesce(octet_length(r ->> 'note'), 0);
	END IF;
	RETURN size;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.agent_ledger_usage_track() RETURNS trigger LANGUAGE plpgsql AS $$
-- TG_ARGV[0]: the column naming the agent; the rest: the table's indexes, each its columns comma-separated.
DECLARE
	r jsonb;
	agent text;
	sign integer;
BEGIN
	FOR sign IN -1 .. 1 BY 2 LOOP
		CONTINUE WHEN (sign < 0 AND TG_OP = 'INSERT') OR (sign > 0 AND TG_OP = 'DELETE');
		r := CASE WHEN sign < 0 THEN to_jsonb(OLD) ELSE to_jsonb(NEW) END;
		agent := r ->> TG_ARGV[0];
		CONTINUE WHEN agent IS NULL;
		INSERT INTO public.agent_ledger_usage (agent_id, bytes) VALUES (agent, sign * public.agent_ledger_row_bytes(r, TG_TABLE_NAME, TG_ARGV[1:TG_NARGS - 1]))
			ON CONFLICT (agent_id) DO UPDATE SET bytes = public.agent_ledger_usage.bytes + excluded.bytes;
	END LOOP;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DELETE FROM "agent_ledger_usage";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "requested_by", sum(public.agent_ledger_row_bytes(to_jsonb(x), 'tasks', ARRAY['task_id', 'client_id', 'requested_by,client_id', 'verdict,created_at', 'created_at', 'requested_by,created_at'])) FROM "tasks" x WHERE "requested_by" IS NOT NULL GROUP BY "requested_by"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "agent_id", sum(public.agent_ledger_row_bytes(to_jsonb(x), 'skill_runs', ARRAY['run_id', 'task_id,client_id', 'skill', 'task_id,started_at'])) FROM "skill_runs" x WHERE "agent_id" IS NOT NULL GROUP BY "agent_id"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "agent_id", sum(public.agent_ledger_row_bytes(to_jsonb(x), 'validations', ARRAY['validation_id', 'task_id,client_id', 'task_id,ts'])) FROM "validations" x WHERE "agent_id" IS NOT NULL GROUP BY "agent_id"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "recorded_by", sum(public.agent_ledger_row_bytes(to_jsonb(x), 'provenance', ARRAY['id', 'task_id,id', 'store,artifact_type,artifact_id,input_hash,model_name,model_version,recorded_by', 'run_id', 'artifact_type,artifact_id'])) FROM "provenance" x WHERE "recorded_by" IS NOT NULL GROUP BY "recorded_by"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "actor", sum(public.agent_ledger_row_bytes(to_jsonb(x), 'overrides', ARRAY['override_id', 'actor,client_id', 'ts', 'task_id'])) FROM "overrides" x WHERE "actor" IS NOT NULL GROUP BY "actor"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "paused_agent_id", sum(public.agent_ledger_row_bytes(to_jsonb(x), 'dialectic_sessions', ARRAY['session_id', 'client_id', 'paused_agent_id,client_id', 'created_at', 'status,updated_at', 'phase', 'reviewer_agent_id,created_at', 'paused_agent_id,created_at'])) FROM "dialectic_sessions" x WHERE "paused_agent_id" IS NOT NULL GROUP BY "paused_agent_id"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "agent_id", sum(public.agent_ledger_row_bytes(to_jsonb(x), 'dialectic_messages', ARRAY['id', 'session_id,client_id', 'timestamp', 'session_id,seq'])) FROM "dialectic_messages" x WHERE "agent_id" IS NOT NULL GROUP BY "agent_id"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "tasks";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "tasks" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('requested_by', 'task_id', 'client_id', 'requested_by,client_id', 'verdict,created_at', 'created_at', 'requested_by,created_at');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "skill_runs";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "skill_runs" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('agent_id', 'run_id', 'task_id,client_id', 'skill', 'task_id,started_at');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "validations";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "validations" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('agent_id', 'validation_id', 'task_id,client_id', 'task_id,ts');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "provenance";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "provenance" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('recorded_by', 'id', 'task_id,id', 'store,artifact_type,artifact_id,input_hash,model_name,model_version,recorded_by', 'run_id', 'artifact_type,artifact_id');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "overrides";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "overrides" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('actor', 'override_id', 'actor,client_id', 'ts', 'task_id');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "dialectic_sessions";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "dialectic_sessions" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('paused_agent_id', 'session_id', 'client_id', 'paused_agent_id,client_id', 'created_at', 'status,updated_at', 'phase', 'reviewer_agent_id,created_at', 'paused_agent_id,created_at');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "dialectic_messages";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "dialectic_messages" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('agent_id', 'id', 'session_id,client_id', 'timestamp', 'session_id,seq');
