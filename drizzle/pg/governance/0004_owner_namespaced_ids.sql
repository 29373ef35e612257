-- Task and review ids are chosen by their owner and namespaced per owner: the id an agent chose is client_id,
-- unique per owner; task_id / session_id stay the internal key the child rows reference (for rows written before,
-- the id itself, so existing links keep working). Hand-written.
ALTER TABLE "tasks" ADD COLUMN "client_id" text;--> statement-breakpoint
UPDATE "tasks" SET "client_id" = "task_id";--> statement-breakpoint
ALTER TABLE "tasks" ALTER COLUMN "client_id" SET NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "tasks_owner_client_uq" ON "tasks" USING btree ("requested_by","client_id");--> statement-breakpoint
CREATE INDEX "tasks_client_idx" ON "tasks" USING btree ("client_id");--> statement-breakpoint
ALTER TABLE "dialectic_sessions" ADD COLUMN "client_id" text;--> statement-breakpoint
UPDATE "dialectic_sessions" SET "client_id" = "session_id";--> statement-breakpoint
ALTER TABLE "dialectic_sessions" ALTER COLUMN "client_id" SET NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "dialectic_sessions_owner_client_uq" ON "dialectic_sessions" USING btree ("paused_agent_id","client_id");--> statement-breakpoint
CREATE INDEX "dialectic_sessions_client_idx" ON "dialectic_sessions" USING btree ("client_id");
