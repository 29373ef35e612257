import { and, asc, count, desc, eq, inArray, or, sql } from "drizzle-orm";
import type { z } from "zod";
import { assertSameRetry, newId } from "../common";
import { appendAuditPg } from "./audit-pg";
import { answerUniqueRaceAsRetry, type PgGovernanceExecutor } from "../db/pg";
import { overrides, provenance, skillRuns, tasks, validations, type OverrideRow, type ValidationRow } from "../db/schema/pg/governance";
import { AppError } from "../errors";
import {
  CHECKS,
  artifactLookupSchema,
  canWorkOnTask,
  taskOwnedBy,
  createTaskSchema,
  distinct,
  inCallerStores,
  listTasksQuerySchema,
  provenanceBatchLinks,
  provenanceBatchRows,
  recordOverrideSchema,
  recordProvenanceSchema,
  recordValidationSchema,
  sameAgentFact,
  toValidation,
  validationFacts,
  assertSameValidationRetry,
  type ArtifactProofs,
  type ListTasksQuery,
  type TaskStatus,
  type Validation,
  explainVerdict,
  finishRunSchema,
  runFacts,
  startRunSchema,
  taskListWhere,
  toRun,
  toTask,
  type ArtifactRef,
  type LedgerCaller,
  type SkillRun,
  type Task,
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

/** The task row locked, if the caller may work on it; another agent's answers as an unknown one (taskOwnedBy). */
async function lockTaskWritableBy(tx: PgGovernanceExecutor, taskId: string, caller: LedgerCaller | undefined) {
  const [row] = await tx.select().from(tasks).where(eq(tasks.taskId, taskId)).for("update");
  return taskOwnedBy(row, taskId, caller);
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
    return answerUniqueRaceAsRetry(e, () => answerRetry());
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
    const task = toTask(await lockTaskWritableBy(tx, taskId, caller));
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
    const task = toTask(await lockTaskWritableBy(tx, taskId, caller));
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

/** Validations in recording order (recorded_seq stands in for SQLite's rowid), in SQLite's shape. */
async function validationsInRecordingOrder(db: PgGovernanceExecutor, taskId: string): Promise<ValidationRow[]> {
  return db.select().from(validations).where(eq(validations.taskId, taskId)).orderBy(asc(validations.ts), asc(validations.recordedSeq));
}

function toValidationPg({ recordedSeq: _seq, ...row }: ValidationRow): Validation {
  return toValidation(row);
}

async function requireTaskPg(db: PgGovernanceExecutor, taskId: string, caller?: LedgerCaller) {
  const [row] = await db.select().from(tasks).where(eq(tasks.taskId, taskId));
  return taskOwnedBy(row, taskId, caller);
}

/** A task with its runs, validations, overrides, artifacts and verdict. With a caller: only its own tasks (404 otherwise). */
export async function getTaskStatusByIdPg({ db, taskId, caller }: { db: PgGovernanceExecutor; taskId: string; caller?: LedgerCaller }): Promise<TaskStatus> {
  const row = await requireTaskPg(db, taskId, caller);
  const task = toTask(row);
  const visible = inCallerStores(caller);
  const allRuns = (await db.select().from(skillRuns).where(eq(skillRuns.taskId, taskId)).orderBy(asc(skillRuns.startedAt), asc(skillRuns.runId))).map(toRun);
  const vals = (await validationsInRecordingOrder(db, taskId)).map(toValidationPg);
  const ovs: OverrideRow[] = await db.select().from(overrides).where(eq(overrides.taskId, taskId)).orderBy(asc(overrides.ts));
  const artifacts = await db.select().from(provenance).where(eq(provenance.taskId, taskId)).orderBy(asc(provenance.id));
  return {
    task,
    runs: allRuns.map((r) => ({ ...r, artifacts: r.artifacts.filter(visible) })),
    validations: vals,
    overrides: ovs,
    artifacts: artifacts.filter(visible),
    verdict: explainVerdict({ requiredChecks: task.requiredChecks, runs: allRuns, validations: vals }),
  };
}

/** Record a validation; only the requester, an assignee or an admin may, and the caller is recorded as its agent. */
export async function recordValidationPg({
  db,
  taskId,
  input,
  caller,
}: {
  db: PgGovernanceExecutor;
  taskId: string;
  input: z.input<typeof recordValidationSchema>;
  caller: LedgerCaller;
}): Promise<{ validation: Validation; created: boolean }> {
  const parsed = recordValidationSchema.parse(input);
  const validationId = parsed.validation_id ?? newId();
  return db.transaction(async (tx) => {
    const task = toTask(await lockTaskWritableBy(tx, taskId, caller));
    if (parsed.run_id) {
      const [run] = await tx.select({ taskId: skillRuns.taskId }).from(skillRuns).where(eq(skillRuns.runId, parsed.run_id));
      if (!run || run.taskId !== taskId) throw new AppError("unprocessable", `run ${parsed.run_id} is not a run of task ${taskId}`);
    }
    const facts = validationFacts(parsed, taskId, caller.agentId);
    // Validations of this task are serialized by the task lock; an id reused on another task meets the primary key.
    const [existing] = await tx.select().from(validations).where(eq(validations.validationId, validationId));
    if (existing) {
      const v = toValidationPg(existing);
      assertSameValidationRetry(v, facts);
      return { validation: v, created: false };
    }
    const [row] = await tx
      .insert(validations)
      .values({ validationId, taskId, agentId: caller.agentId, runId: facts.runId, criticPassed: facts.criticPassed, runnerPassed: facts.runnerPassed, detailsJson: JSON.stringify(facts.details), ts: Date.now() })
      .returning();
    await refreshVerdict(tx, task);
    return { validation: toValidationPg(row), created: true };
  });
}

/** A batch is all-or-nothing; facts already recorded (a retry) are counted, not duplicated (the unique fact key). */
export async function recordProvenanceBatchPg({
  db,
  input,
  recordedBy,
  caller,
}: {
  db: PgGovernanceExecutor;
  input: z.input<typeof recordProvenanceSchema>;
  recordedBy: string;
  caller?: LedgerCaller;
}): Promise<{ inserted: number; existing: number }> {
  const { records } = recordProvenanceSchema.parse(input);
  return db.transaction(async (tx) => {
    const { taskIds, runIds } = provenanceBatchLinks(records);
    const runRows = runIds.length ? await tx.select({ id: skillRuns.runId, taskId: skillRuns.taskId }).from(skillRuns).where(inArray(skillRuns.runId, runIds)) : [];
    const knownRuns = new Map(runRows.map((r) => [r.id, r.taskId]));
    const linkedTaskIds = [...new Set([...taskIds, ...knownRuns.values()])];
    const taskRows = linkedTaskIds.length ? await tx.select().from(tasks).where(inArray(tasks.taskId, linkedTaskIds)) : [];
    const rows = provenanceBatchRows({ records, knownRuns, knownTasks: new Map(taskRows.map((t) => [t.taskId, t])), recordedBy, caller });
    // One statement: a fact repeated within the batch or already stored is skipped by the unique key.
    const inserted = await tx.insert(provenance).values(rows).onConflictDoNothing().returning({ id: provenance.id });
    return { inserted: inserted.length, existing: records.length - inserted.length };
  });
}

/** Overrides are never silent: the row and its audit entry commit together. With a caller, only a task it works on. */
export async function recordOverridePg({
  db,
  input,
  actor,
  tokenLabel,
  caller,
}: {
  db: PgGovernanceExecutor;
  input: z.input<typeof recordOverrideSchema>;
  actor: string;
  tokenLabel: string;
  caller?: LedgerCaller;
}): Promise<{ override: OverrideRow; created: boolean }> {
  const parsed = recordOverrideSchema.parse(input);
  const overrideId = parsed.override_id ?? newId();
  const facts = { actor, tokenLabel, taskId: parsed.task_id ?? null, note: parsed.note };
  const answerRetry = async (on: PgGovernanceExecutor) => {
    const [existing] = await on.select().from(overrides).where(eq(overrides.overrideId, overrideId));
    if (!existing) return null;
    assertSameRetry("override", overrideId, { actor: existing.actor, tokenLabel: existing.tokenLabel, taskId: existing.taskId, note: existing.note }, facts);
    return { override: existing, created: false };
  };
  try {
    return await db.transaction(async (tx) => {
      if (parsed.task_id) {
        await lockTaskWritableBy(tx, parsed.task_id, caller);
      }
      const retried = await answerRetry(tx);
      if (retried) return retried;
      const [row] = await tx.insert(overrides).values({ overrideId, ts: Date.now(), ...facts }).returning();
      await appendAuditPg({ db: tx, entry: { actor, action: "ledger.override", target: parsed.task_id ? `task:${parsed.task_id}` : `override:${overrideId}`, reason: parsed.note, details: { override_id: overrideId, token_label: tokenLabel } } });
      return { override: row, created: true };
    });
  } catch (e) {
    return answerUniqueRaceAsRetry(e, () => answerRetry(db));
  }
}

/** Tasks newest first, filtered; with a caller that is not an admin, only the tasks it requested or is assigned to. */
export async function listTasksByFilterPg({ db, input, caller }: { db: PgGovernanceExecutor; input: ListTasksQuery; caller?: LedgerCaller }): Promise<{ tasks: (Task & { runCount: number })[]; total: number }> {
  const q = listTasksQuerySchema.parse(input);
  const assignedTo = (agentId: string) => sql`exists (select 1 from jsonb_array_elements_text(${tasks.assigneesJson}::jsonb) a where a = ${agentId})`;
  const cond = taskListWhere({ tasks, skillRuns, assignedTo }, q, caller);
  const rows = await db.select().from(tasks).where(cond).orderBy(desc(tasks.createdAt), desc(tasks.taskId)).limit(q.limit).offset(q.offset);
  const [{ n: total }] = await db.select({ n: count() }).from(tasks).where(cond);
  const ids = rows.map((r) => r.taskId);
  const counts = ids.length ? await db.select({ taskId: skillRuns.taskId, n: count() }).from(skillRuns).where(inArray(skillRuns.taskId, ids)).groupBy(skillRuns.taskId) : [];
  const runCounts = new Map(counts.map((r) => [r.taskId, r.n]));
  return { tasks: rows.map((r) => ({ ...toTask(r), runCount: runCounts.get(r.taskId) ?? 0 })), total };
}

/** "Where did this vector / summary come from?" — see getProofsByArtifact (SQLite); the same answer. */
export async function getProofsByArtifactPg({ db, input, caller }: { db: PgGovernanceExecutor; input: z.input<typeof artifactLookupSchema>; caller?: LedgerCaller }): Promise<ArtifactProofs> {
  const q = artifactLookupSchema.parse(input);
  const cond = [eq(provenance.artifactType, q.artifact_type), eq(provenance.artifactId, q.artifact_id)];
  if (q.store) cond.push(eq(provenance.store, q.store));
  const facts = (await db.select().from(provenance).where(and(...cond)).orderBy(desc(provenance.createdAt), desc(provenance.id))).filter(inCallerStores(caller));
  const linkedRunIds = distinct(facts.map((f) => f.runId));
  const runsFound = linkedRunIds.length ? await db.select().from(skillRuns).where(inArray(skillRuns.runId, linkedRunIds)) : [];
  const linkedTasks = distinct([...facts.map((f) => f.taskId), ...runsFound.map((r) => r.taskId)]);
  const taskRowsFound = linkedTasks.length ? await db.select().from(tasks).where(inArray(tasks.taskId, linkedTasks)) : [];
  const visibleTasks = new Map(taskRowsFound.filter((t) => !caller || canWorkOnTask(t, caller)).map((t) => [t.taskId, t]));
  const runs = runsFound.filter((r) => visibleTasks.has(r.taskId)).map(toRun);
  const runIds = runs.map((r) => r.runId);
  const taskRows = distinct(facts.map((f) => f.taskId)).flatMap((id) => visibleTasks.get(id) ?? []);
  const taskIds = taskRows.map((t) => t.taskId);
  const vals =
    taskIds.length || runIds.length
      ? (
          await db
            .select()
            .from(validations)
            .where(or(taskIds.length ? inArray(validations.taskId, taskIds) : undefined, runIds.length ? inArray(validations.runId, runIds) : undefined))
            .orderBy(asc(validations.ts), asc(validations.recordedSeq))
        ).map(toValidationPg)
      : [];
  return { provenance: facts, runs, tasks: taskRows.map((t) => ({ task: toTask(t), verdict: t.verdict })), validations: vals };
}
