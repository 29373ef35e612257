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
