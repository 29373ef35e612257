-- The agents assigned to each task, one row per (agent, task), so an agent's task list looks its tasks up by
-- index instead of reading every task's assignees JSON. Kept by a trigger from tasks.assignees_json, so every
-- writer (the ledger, migrate-data's copies, a restore) keeps it right. Hand-written.
CREATE TABLE IF NOT EXISTS "task_assignees" (
	"agent_id" text NOT NULL,
	"task_id" text NOT NULL,
	PRIMARY KEY ("agent_id", "task_id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "task_assignees_task_idx" ON "task_assignees" USING btree ("task_id");
--> statement-breakpoint
INSERT INTO "task_assignees" ("agent_id", "task_id")
	SELECT DISTINCT a.value, t.task_id FROM "tasks" t, jsonb_array_elements_text(t.assignees_json::jsonb) a(value)
	WHERE t.assignees_json IS NOT NULL AND jsonb_typeof(t.assignees_json::jsonb) = 'array'
	ON CONFLICT DO NOTHING;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.task_assignees_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		DELETE FROM public.task_assignees WHERE task_id = OLD.task_id;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.assignees_json IS NOT NULL AND jsonb_typeof(NEW.assignees_json::jsonb) = 'array' THEN
		INSERT INTO public.task_assignees (agent_id, task_id)
			SELECT a.value, NEW.task_id FROM jsonb_array_elements_text(NEW.assignees_json::jsonb) a(value)
			ON CONFLICT DO NOTHING;
	END IF;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "task_assignees_sync" ON "tasks";
--> statement-breakpoint
CREATE TRIGGER "task_assignees_sync" AFTER INSERT OR DELETE OR UPDATE OF "assignees_json" ON "tasks"
	FOR EACH ROW EXECUTE FUNCTION public.task_assignees_sync();
--> statement-breakpoint
-- Each agent's share of the ledger (DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT): one running total per agent of the
-- rows it wrote (64 bytes a row plus their text), kept by triggers, started here from the rows already there.
CREATE TABLE IF NOT EXISTS "agent_ledger_usage" (
	"agent_id" text PRIMARY KEY NOT NULL,
	"bytes" bigint NOT NULL DEFAULT 0
);
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "requested_by", sum((64 + coalesce(octet_length(tasks."task_id"), 0) + coalesce(octet_length(tasks."intent"), 0) + coalesce(octet_length(tasks."spec_json"), 0) + coalesce(octet_length(tasks."required_checks_json"), 0) + coalesce(octet_length(tasks."assignees_json"), 0))) FROM "tasks" WHERE "requested_by" IS NOT NULL GROUP BY "requested_by"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "agent_id", sum((64 + coalesce(octet_length(skill_runs."run_id"), 0) + coalesce(octet_length(skill_runs."skill"), 0) + coalesce(octet_length(skill_runs."artifacts_json"), 0) + coalesce(octet_length(skill_runs."output_ref"), 0))) FROM "skill_runs" WHERE "agent_id" IS NOT NULL GROUP BY "agent_id"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "agent_id", sum((64 + coalesce(octet_length(validations."validation_id"), 0) + coalesce(octet_length(validations."details_json"), 0))) FROM "validations" WHERE "agent_id" IS NOT NULL GROUP BY "agent_id"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "recorded_by", sum((64 + coalesce(octet_length(provenance."artifact_type"), 0) + coalesce(octet_length(provenance."artifact_id"), 0) + coalesce(octet_length(provenance."store"), 0) + coalesce(octet_length(provenance."model_name"), 0) + coalesce(octet_length(provenance."model_version"), 0) + coalesce(octet_length(provenance."fingerprint"), 0) + coalesce(octet_length(provenance."input_hash"), 0))) FROM "provenance" WHERE "recorded_by" IS NOT NULL GROUP BY "recorded_by"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "actor", sum((64 + coalesce(octet_length(overrides."override_id"), 0) + coalesce(octet_length(overrides."note"), 0))) FROM "overrides" WHERE "actor" IS NOT NULL GROUP BY "actor"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "paused_agent_id", sum((64 + coalesce(octet_length(dialectic_sessions."session_id"), 0) + coalesce(octet_length(dialectic_sessions."topic"), 0) + coalesce(octet_length(dialectic_sessions."session_type"), 0) + coalesce(octet_length(dialectic_sessions."resolution_json"), 0) + coalesce(octet_length(dialectic_sessions."failure_reason"), 0))) FROM "dialectic_sessions" WHERE "paused_agent_id" IS NOT NULL GROUP BY "paused_agent_id"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
INSERT INTO "agent_ledger_usage" ("agent_id", "bytes") SELECT "agent_id", sum((64 + coalesce(octet_length(dialectic_messages."id"), 0) + coalesce(octet_length(dialectic_messages."reasoning"), 0) + coalesce(octet_length(dialectic_messages."root_cause"), 0) + coalesce(octet_length(dialectic_messages."proposed_conditions_json"), 0) + coalesce(octet_length(dialectic_messages."observed_metrics_json"), 0) + coalesce(octet_length(dialectic_messages."concerns_json"), 0) + coalesce(octet_length(dialectic_messages."signature"), 0))) FROM "dialectic_messages" WHERE "agent_id" IS NOT NULL GROUP BY "agent_id"
	ON CONFLICT ("agent_id") DO UPDATE SET "bytes" = "agent_ledger_usage"."bytes" + excluded."bytes";
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.agent_ledger_usage_track() RETURNS trigger LANGUAGE plpgsql AS $$
-- TG_ARGV[0]: the column naming the agent; the rest: the text columns whose bytes count (64 more a row).
DECLARE
	r jsonb;
	agent text;
	size bigint;
	sign integer;
	i integer;
BEGIN
	FOR sign IN -1 .. 1 BY 2 LOOP
		CONTINUE WHEN (sign < 0 AND TG_OP = 'INSERT') OR (sign > 0 AND TG_OP = 'DELETE');
		r := CASE WHEN sign < 0 THEN to_jsonb(OLD) ELSE to_jsonb(NEW) END;
		agent := r ->> TG_ARGV[0];
		CONTINUE WHEN agent IS NULL;
		size := 64;
		FOR i IN 1 .. TG_NARGS - 1 LOOP
			size := size + coalesce(octet_length(r ->> TG_ARGV[i]), 0);
		END LOOP;
		INSERT INTO public.agent_ledger_usage (agent_id, bytes) VALUES (agent, sign * size)
			ON CONFLICT (agent_id) DO UPDATE SET bytes = public.agent_ledger_usage.bytes + excluded.bytes;
	END LOOP;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "tasks";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "tasks" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('requested_by', 'task_id', 'intent', 'spec_json', 'required_checks_json', 'assignees_json');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "skill_runs";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "skill_runs" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('agent_id', 'run_id', 'skill', 'artifacts_json', 'output_ref');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "validations";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "validations" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('agent_id', 'validation_id', 'details_json');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "provenance";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "provenance" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('recorded_by', 'artifact_type', 'artifact_id', 'store', 'model_name', 'model_version', 'fingerprint', 'input_hash');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "overrides";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "overrides" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('actor', 'override_id', 'note');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "dialectic_sessions";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "dialectic_sessions" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('paused_agent_id', 'session_id', 'topic', 'session_type', 'resolution_json', 'failure_reason');
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "dialectic_messages";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "dialectic_messages" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_track('agent_id', 'id', 'reasoning', 'root_cause', 'proposed_conditions_json', 'observed_metrics_json', 'concerns_json', 'signature');
