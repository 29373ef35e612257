import { and, asc, eq } from "drizzle-orm";
import type { z } from "zod";
import { assertSameRetry, newId } from "../common";
import type { PgGovernanceExecutor } from "../db/pg";
import { provenance, skillRuns, tasks, validations } from "../db/schema/pg/governance";
import { AppError } from "../errors";
import {
  CHECKS,
  canWorkOnTask,
  createTaskSchema,
  explainVerdict,
  finishRunSchema,
  runFacts,
  sameAgentFact,
  startRunSchema,
  toRun,
  toTask,
  type ArtifactRef,
  type LedgerCaller,
  type SkillRun,
  type Task,
  type VerdictExplanation,
} from "./ledger";

/**
 * Tasks and runs of the governance ledger on PostgreSQL: the SQLite twin is
 * ./ledger.ts, whose schemas, row mappers, retry rules and verdict this
 * reuses, so both backends answer alike. What differs is concurrency: SQLite
 * serializes every writer (BEGIN IMMEDIATE); here each writer locks its
 * task's row (SELECT … FOR UPDATE) before reading runs and validations, so
 * two replicas writing to one task never compute the verdict from a stale
 * picture, while writers of different tasks run in parallel. A retried
 * create racing its first attempt meets the primary key and is answered as a
 * retry, never as a 500.
 */

const PG_UNIQUE_VIOLATION = "23505";

function isUniqueViolation(e: unknown): boolean {
  // drizzle wraps the driver's error; the SQLSTATE is on it or on its cause.
  const code = (e as { code?: string })?.code ?? (e as { cause?: { code?: string } })?.cause?.code;
  return code === PG_UNIQUE_VIOLATION;
}

async function lockTask(tx: PgGovernanceExecutor, taskId: string) {
  const [row] = await tx.select().from(tasks).where(eq(tasks.taskId, taskId)).for("update");
  if (!row) throw new AppError("not_found", `no task ${taskId}`);
  return row;
}

async function lockTaskWritableBy(tx: PgGovernanceExecutor, taskId: string, caller: LedgerCaller, what: string) {
  const row = await lockTask(tx, taskId);
  if (!canWorkOnTask(row, caller)) throw new AppError("forbidden", `only the task's requester, its assignees or an admin may ${what} task ${taskId}`);
  return row;
}

/** With the task row locked: keep tasks.verdict true so lists can filter by outcome. */
async function refreshVerdict(tx: PgGovernanceExecutor, task: Task): Promise<void> {
  const runs = await tx.select({ runId: skillRuns.runId, finishedAt: skillRuns.finishedAt }).from(skillRuns).where(eq(skillRuns.taskId, task.taskId));
  const vals = await tx.select().from(validations).where(eq(validations.taskId, task.taskId)).orderBy(asc(validations.ts), asc(validations.recordedSeq));
  const { verdict } = explainVerdict({ requiredChecks: task.requiredChecks, runs, validations: vals });
  await tx.update(tasks).set({ verdict, updatedAt: Date.now() }).where(eq(tasks.taskId, task.taskId));
}

export async function createTaskPg({ db, input, requestedBy }: { db: PgGovernanceExecutor; input: z.input<typeof createTaskSchema>; requestedBy: string }): Promise<{ task: Task; created: boolean }> {
  const parsed = createTaskSchema.parse(input);
  const taskId = parsed.task_id ?? newId();
  const requiredChecks = parsed.required_checks ? [...new Set(parsed.required_checks)] : [...CHECKS];
  const assignees = [...new Set(parsed.assignees ?? [])].filter((a) => a !== requestedBy);
  const facts = { requestedBy, intent: parsed.intent, spec: parsed.spec, requiredChecks, assignees: [...assignees].sort() };
  const answerRetry = async () => {
    const [existing] = await db.select().from(tasks).where(eq(tasks.taskId, taskId));
    if (!existing) return null;
    const t = toTask(existing);
    assertSameRetry("task", taskId, { requestedBy: t.requestedBy, intent: t.intent, spec: t.spec, requiredChecks: t.requiredChecks, assignees: [...t.assignees].sort() }, facts);
    return { task: t, created: false };
  };
  const retried = await answerRetry();
  if (retried) return retried;
  const now = Date.now();
  try {
    const [row] = await db
      .insert(tasks)
      .values({
        taskId,
        createdAt: now,
        updatedAt: now,
        requestedBy,
        intent: parsed.intent,
        specJson: JSON.stringify(parsed.spec),
        requiredChecksJson: JSON.stringify(requiredChecks),
        verdict: "pending",
        assigneesJson: assignees.length ? JSON.stringify(assignees) : null,
      })
      .returning();
    return { task: toTask(row), created: true };
  } catch (e) {
    // The same id committed by a concurrent request in between: a retry after all.
    if (!isUniqueViolation(e)) throw e;
    const raced = await answerRetry();
    if (!raced) throw e;
    return raced;
  }
}

async function insertRunArtifacts(tx: PgGovernanceExecutor, run: typeof skillRuns.$inferSelect, artifacts: ArtifactRef[], recordedBy: string): Promise<void> {
  if (artifacts.length === 0) return;
  const now = Date.now();
  await tx
    .insert(provenance)
    .values(artifacts.map((a) => ({ artifactType: a.artifact_type, artifactId: a.artifact_id, store: a.store, inputHash: run.inputHash, taskId: run.taskId, runId: run.runId, recordedBy, createdAt: now })))
    .onConflictDoNothing();
}

/** Start (or record at once, finished) a run of a task; the caller is recorded as the run's agent. */
export async function recordRunStartPg({
  db,
  taskId,
  input,
  caller,
}: {
  db: PgGovernanceExecutor;
  taskId: string;
  input: z.input<typeof startRunSchema>;
  caller: LedgerCaller;
}): Promise<{ run: SkillRun; created: boolean }> {
  const parsed = startRunSchema.parse(input);
  const runId = parsed.run_id ?? newId();
  return db.transaction(async (tx) => {
    const task = toTask(await lockTaskWritableBy(tx, taskId, caller, "run"));
    const now = Date.now();
    const finished = parsed.exit_code !== undefined;
    const values = {
      runId,
      taskId,
      agentId: caller.agentId,
      skill: parsed.skill,
      inputHash: parsed.input_hash,
      runnerVersion: parsed.runner_version,
      startedAt: parsed.started_at ?? now,
      outputHash: parsed.output_hash ?? null,
      exitCode: parsed.exit_code ?? null,
      finishedAt: finished ? (parsed.finished_at ?? now) : null,
      outputRef: parsed.output_ref ?? null,
      artifactsJson: JSON.stringify(parsed.artifacts ?? []),
    };
    // Runs of this task are serialized by the task lock; a run id reused across tasks meets the primary key below.
    const [existing] = await tx.select().from(skillRuns).where(eq(skillRuns.runId, runId));
    if (existing) {
      if (existing.taskId !== taskId) throw new AppError("conflict", `run ${runId} belongs to another task`);
      const stored = toRun(existing);
      const incoming = toRun({ ...existing, ...values, startedAt: existing.startedAt, finishedAt: finished ? existing.finishedAt : null });
      const storedFacts = { ...runFacts(stored), agentId: sameAgentFact(stored.agentId, caller.agentId) };
      const comparable = finished ? storedFacts : { ...storedFacts, outputHash: null, exitCode: null, outputRef: null, artifacts: [] };
      assertSameRetry("run", runId, comparable, runFacts(incoming));
      return { run: stored, created: false };
    }
    const [row] = await tx.insert(skillRuns).values(values).returning();
    await insertRunArtifacts(tx, row, parsed.artifacts ?? [], caller.agentId);
    await refreshVerdict(tx, task);
    return { run: toRun(row), created: true };
  });
}

/** Finish a started run; the run keeps the agent that started it, the finisher is recorded on its artifacts' provenance. */
export async function recordRunFinishPg({
  db,
  taskId,
  runId,
  input,
  caller,
}: {
  db: PgGovernanceExecutor;
  taskId: string;
  runId: string;
  input: z.input<typeof finishRunSchema>;
  caller: LedgerCaller;
}): Promise<{ run: SkillRun; created: boolean }> {
  const parsed = finishRunSchema.parse(input);
  return db.transaction(async (tx) => {
    const task = toTask(await lockTaskWritableBy(tx, taskId, caller, "run"));
    const [existing] = await tx.select().from(skillRuns).where(and(eq(skillRuns.runId, runId), eq(skillRuns.taskId, taskId)));
    if (!existing) throw new AppError("not_found", `no run ${runId} in task ${taskId}`);
    const update = { outputHash: parsed.output_hash, exitCode: parsed.exit_code, outputRef: parsed.output_ref ?? null, artifactsJson: JSON.stringify(parsed.artifacts ?? []) };
    if (existing.finishedAt !== null) {
      const stored = toRun(existing);
      assertSameRetry("run", runId, runFacts(stored), runFacts(toRun({ ...existing, ...update })));
      return { run: stored, created: false };
    }
    const finishedAt = parsed.finished_at ?? Date.now();
    if (finishedAt < existing.startedAt) throw new AppError("unprocessable", "finished_at is before started_at");
    const [row] = await tx.update(skillRuns).set({ ...update, finishedAt }).where(eq(skillRuns.runId, runId)).returning();
    await insertRunArtifacts(tx, row, parsed.artifacts ?? [], caller.agentId);
    await refreshVerdict(tx, task);
    return { run: toRun(row), created: true };
  });
}

/** A task with its runs and verdict (validations, overrides and artifacts are not ported yet). */
export async function getTaskWithRunsPg({ db, taskId, caller }: { db: PgGovernanceExecutor; taskId: string; caller?: LedgerCaller }): Promise<{ task: Task; runs: SkillRun[]; verdict: VerdictExplanation }> {
  const [row] = await db.select().from(tasks).where(eq(tasks.taskId, taskId));
  if (!row || (caller && !canWorkOnTask(row, caller))) throw new AppError("not_found", `no task ${taskId}`);
  const task = toTask(row);
  const runs = (await db.select().from(skillRuns).where(eq(skillRuns.taskId, taskId)).orderBy(asc(skillRuns.startedAt), asc(skillRuns.runId))).map(toRun);
  const vals = await db.select().from(validations).where(eq(validations.taskId, taskId)).orderBy(asc(validations.ts), asc(validations.recordedSeq));
  return { task, runs, verdict: explainVerdict({ requiredChecks: task.requiredChecks, runs, validations: vals }) };
}
