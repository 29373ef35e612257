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
CREATE OR REPLACE FUNCTION public.agent_ledger_usage_tasks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') AND OLD."requested_by" IS NOT NULL THEN
		UPDATE public.agent_ledger_usage SET bytes = bytes - (64 + coalesce(octet_length(OLD."task_id"), 0) + coalesce(octet_length(OLD."intent"), 0) + coalesce(octet_length(OLD."spec_json"), 0) + coalesce(octet_length(OLD."required_checks_json"), 0) + coalesce(octet_length(OLD."assignees_json"), 0)) WHERE agent_id = OLD."requested_by";
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') AND NEW."requested_by" IS NOT NULL THEN
		INSERT INTO public.agent_ledger_usage (agent_id, bytes) VALUES (NEW."requested_by", (64 + coalesce(octet_length(NEW."task_id"), 0) + coalesce(octet_length(NEW."intent"), 0) + coalesce(octet_length(NEW."spec_json"), 0) + coalesce(octet_length(NEW."required_checks_json"), 0) + coalesce(octet_length(NEW."assignees_json"), 0)))
			ON CONFLICT (agent_id) DO UPDATE SET bytes = public.agent_ledger_usage.bytes + excluded.bytes;
	END IF;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "tasks";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "tasks" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_tasks();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.agent_ledger_usage_skill_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') AND OLD."agent_id" IS NOT NULL THEN
		UPDATE public.agent_ledger_usage SET bytes = bytes - (64 + coalesce(octet_length(OLD."run_id"), 0) + coalesce(octet_length(OLD."skill"), 0) + coalesce(octet_length(OLD."artifacts_json"), 0) + coalesce(octet_length(OLD."output_ref"), 0)) WHERE agent_id = OLD."agent_id";
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') AND NEW."agent_id" IS NOT NULL THEN
		INSERT INTO public.agent_ledger_usage (agent_id, bytes) VALUES (NEW."agent_id", (64 + coalesce(octet_length(NEW."run_id"), 0) + coalesce(octet_length(NEW."skill"), 0) + coalesce(octet_length(NEW."artifacts_json"), 0) + coalesce(octet_length(NEW."output_ref"), 0)))
			ON CONFLICT (agent_id) DO UPDATE SET bytes = public.agent_ledger_usage.bytes + excluded.bytes;
	END IF;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "skill_runs";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "skill_runs" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_skill_runs();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.agent_ledger_usage_validations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') AND OLD."agent_id" IS NOT NULL THEN
		UPDATE public.agent_ledger_usage SET bytes = bytes - (64 + coalesce(octet_length(OLD."validation_id"), 0) + coalesce(octet_length(OLD."details_json"), 0)) WHERE agent_id = OLD."agent_id";
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') AND NEW."agent_id" IS NOT NULL THEN
		INSERT INTO public.agent_ledger_usage (agent_id, bytes) VALUES (NEW."agent_id", (64 + coalesce(octet_length(NEW."validation_id"), 0) + coalesce(octet_length(NEW."details_json"), 0)))
			ON CONFLICT (agent_id) DO UPDATE SET bytes = public.agent_ledger_usage.bytes + excluded.bytes;
	END IF;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "validations";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "validations" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_validations();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.agent_ledger_usage_provenance() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') AND OLD."recorded_by" IS NOT NULL THEN
		UPDATE public.agent_ledger_usage SET bytes = bytes - (64 + coalesce(octet_length(OLD."artifact_type"), 0) + coalesce(octet_length(OLD."artifact_id"), 0) + coalesce(octet_length(OLD."store"), 0) + coalesce(octet_length(OLD."model_name"), 0) + coalesce(octet_length(OLD."model_version"), 0) + coalesce(octet_length(OLD."fingerprint"), 0) + coalesce(octet_length(OLD."input_hash"), 0)) WHERE agent_id = OLD."recorded_by";
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') AND NEW."recorded_by" IS NOT NULL THEN
		INSERT INTO public.agent_ledger_usage (agent_id, bytes) VALUES (NEW."recorded_by", (64 + coalesce(octet_length(NEW."artifact_type"), 0) + coalesce(octet_length(NEW."artifact_id"), 0) + coalesce(octet_length(NEW."store"), 0) + coalesce(octet_length(NEW."model_name"), 0) + coalesce(octet_length(NEW."model_version"), 0) + coalesce(octet_length(NEW."fingerprint"), 0) + coalesce(octet_length(NEW."input_hash"), 0)))
			ON CONFLICT (agent_id) DO UPDATE SET bytes = public.agent_ledger_usage.bytes + excluded.bytes;
	END IF;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "provenance";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "provenance" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_provenance();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.agent_ledger_usage_overrides() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') AND OLD."actor" IS NOT NULL THEN
		UPDATE public.agent_ledger_usage SET bytes = bytes - (64 + coalesce(octet_length(OLD."override_id"), 0) + coalesce(octet_length(OLD."note"), 0)) WHERE agent_id = OLD."actor";
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') AND NEW."actor" IS NOT NULL THEN
		INSERT INTO public.agent_ledger_usage (agent_id, bytes) VALUES (NEW."actor", (64 + coalesce(octet_length(NEW."override_id"), 0) + coalesce(octet_length(NEW."note"), 0)))
			ON CONFLICT (agent_id) DO UPDATE SET bytes = public.agent_ledger_usage.bytes + excluded.bytes;
	END IF;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "overrides";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "overrides" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_overrides();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.agent_ledger_usage_dialectic_sessions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') AND OLD."paused_agent_id" IS NOT NULL THEN
		UPDATE public.agent_ledger_usage SET bytes = bytes - (64 + coalesce(octet_length(OLD."session_id"), 0) + coalesce(octet_length(OLD."topic"), 0) + coalesce(octet_length(OLD."session_type"), 0) + coalesce(octet_length(OLD."resolution_json"), 0) + coalesce(octet_length(OLD."failure_reason"), 0)) WHERE agent_id = OLD."paused_agent_id";
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') AND NEW."paused_agent_id" IS NOT NULL THEN
		INSERT INTO public.agent_ledger_usage (agent_id, bytes) VALUES (NEW."paused_agent_id", (64 + coalesce(octet_length(NEW."session_id"), 0) + coalesce(octet_length(NEW."topic"), 0) + coalesce(octet_length(NEW."session_type"), 0) + coalesce(octet_length(NEW."resolution_json"), 0) + coalesce(octet_length(NEW."failure_reason"), 0)))
			ON CONFLICT (agent_id) DO UPDATE SET bytes = public.agent_ledger_usage.bytes + excluded.bytes;
	END IF;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "dialectic_sessions";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "dialectic_sessions" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_dialectic_sessions();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION public.agent_ledger_usage_dialectic_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') AND OLD."agent_id" IS NOT NULL THEN
		UPDATE public.agent_ledger_usage SET bytes = bytes - (64 + coalesce(octet_length(OLD."id"), 0) + coalesce(octet_length(OLD."reasoning"), 0) + coalesce(octet_length(OLD."root_cause"), 0) + coalesce(octet_length(OLD."proposed_conditions_json"), 0) + coalesce(octet_length(OLD."observed_metrics_json"), 0) + coalesce(octet_length(OLD."concerns_json"), 0) + coalesce(octet_length(OLD."signature"), 0)) WHERE agent_id = OLD."agent_id";
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') AND NEW."agent_id" IS NOT NULL THEN
		INSERT INTO public.agent_ledger_usage (agent_id, bytes) VALUES (NEW."agent_id", (64 + coalesce(octet_length(NEW."id"), 0) + coalesce(octet_length(NEW."reasoning"), 0) + coalesce(octet_length(NEW."root_cause"), 0) + coalesce(octet_length(NEW."proposed_conditions_json"), 0) + coalesce(octet_length(NEW."observed_metrics_json"), 0) + coalesce(octet_length(NEW."concerns_json"), 0) + coalesce(octet_length(NEW."signature"), 0)))
			ON CONFLICT (agent_id) DO UPDATE SET bytes = public.agent_ledger_usage.bytes + excluded.bytes;
	END IF;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "agent_ledger_usage" ON "dialectic_messages";
--> statement-breakpoint
CREATE TRIGGER "agent_ledger_usage" AFTER INSERT OR UPDATE OR DELETE ON "dialectic_messages" FOR EACH ROW EXECUTE FUNCTION public.agent_ledger_usage_dialectic_messages();
