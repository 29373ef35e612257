import { and, asc, count as countAll, desc, eq, gte, inArray, isNotNull, isNull, lte, or, sql, type AnyColumn, type SQL, type Table } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import { getGovernance, type GovernanceHandle } from "../db/connection";
import { agentLock, count, insert, insertManyOrIgnore, insertOrIgnore, readLedger, row, rows, select, update, writeLedger, type LedgerHandle, type Op, type OnLedger } from "../db/port";
import type { OverrideRow, ProvenanceRow, SkillRunRow, TaskRow, ValidationRow } from "../db/schema/governance";
import { AppError } from "../errors";
import { auditStep } from "./audit";
import { assertAgentCount, assertFieldSize, assertLedgerRoom, assertShareKept, boundedLists, nextOffsetOf, withinListBudget } from "./limits";
import { getConfig } from "../config";
import { ledgerTables } from "./tables";
import { agentIdSchema, assertSameRetry, clientIdSchema, limitSchema, epochMsSchema, newId, offsetSchema, parseJsonColumnStrict, sha256HexSchema, snakeCased } from "../common";
import { childClientId, isKeyRef, OWNED_CHOICES_MAX, ownedKey, ownedRefSchema, pickOwned, splitKey, type OwnedChoice, type OwnedRow } from "./owned-ids";

export const CHECKS = ["critic", "runner"] as const;
export type Check = (typeof CHECKS)[number];
export const VERDICTS = ["pending", "passed", "failed"] as const;
export type Verdict = (typeof VERDICTS)[number];
/**
 * What a person reads for each verdict. The machine value `pending` (API,
 * URLs, the stored column) stays; people read "awaiting checks", which says
 * the work is not failed, only not yet fully checked.
 */
export const VERDICT_LABELS: Record<Verdict, string> = { pending: "awaiting checks", passed: "passed", failed: "failed" };
/** A verdict as a person reads it; any other status word (a run's, a session's) unchanged. */
export function verdictLabel(value: string): string {
  return (VERDICT_LABELS as Record<string, string>)[value] ?? value;
}

const artifactRefSchema = z
  .object({
    artifact_type: z.string().trim().min(1).max(64),
    artifact_id: z.string().trim().min(1).max(256),
    store: z.string().trim().min(1).max(63),
  })
  .strict();

export const createTaskSchema = z
  .object({
    task_id: clientIdSchema.optional(),
    intent: z.string().trim().min(1).max(2000),
    spec: z.json(),
    required_checks: z.array(z.enum(CHECKS)).min(1).max(2).optional(),
    /** Agents (token agent ids) who may run and validate the task besides the requester. */
    assignees: z.array(agentIdSchema).max(50).optional(),
  })
  .strict();

const runFinishFields = {
  output_hash: sha256HexSchema,
  exit_code: z.number().int().min(-1024).max(1024),
  finished_at: epochMsSchema.optional(),
  output_ref: z.string().trim().min(1).max(1000).optional(),
  artifacts: z.array(artifactRefSchema).max(1000).optional(),
};

export const finishRunSchema = z.object(runFinishFields).strict();

/** A run is recorded when it starts; the finish fields may come now or later. */
export const startRunSchema = z
  .object({
    run_id: clientIdSchema.optional(),
    skill: z.string().trim().min(1).max(200),
    input_hash: sha256HexSchema,
    runner_version: z.string().trim().min(1).max(100),
    started_at: epochMsSchema.optional(),
    ...finishRunSchema.partial().shape,
  })
  .strict()
  .refine((r) => (r.output_hash === undefined) === (r.exit_code === undefined), {
    message: "output_hash and exit_code come together (a finished run) or not at all",
    path: ["exit_code"],
  });

export const recordValidationSchema = z
  .object({
    validation_id: clientIdSchema.optional(),
    run_id: clientIdSchema.optional(),
    critic_passed: z.boolean().nullable(),
    runner_passed: z.boolean().nullable(),
    details: z.json().optional(),
  })
  .strict();

export const provenanceRecordSchema = z
  .object({
    ...artifactRefSchema.shape,
    model_name: z.string().trim().max(200).optional(),
    model_version: z.string().trim().max(100).optional(),
    fingerprint: z.string().trim().max(200).optional(),
    chunking_version: z.string().trim().max(100).optional(),
    input_hash: sha256HexSchema,
    task_id: ownedRefSchema.optional(),
    run_id: clientIdSchema.optional(),
  })
  .strict();
export const recordProvenanceSchema = z.object({ records: z.array(provenanceRecordSchema).min(1).max(1000) }).strict();

export const recordOverrideSchema = z
  .object({
    override_id: clientIdSchema.optional(),
    task_id: ownedRefSchema.optional(),
    note: z.string().trim().min(1).max(4000),
  })
  .strict();

export const listTasksQuerySchema = z
  .object({
    requested_by: z.string().trim().min(1).max(100).optional(),
    skill: z.string().trim().min(1).max(200).optional(),
    outcome: z.enum(VERDICTS).optional(),
    from: z.coerce.number().int().min(0).optional(),
    to: z.coerce.number().int().min(0).optional(),
    limit: limitSchema,
    offset: offsetSchema,
  })
  .strict();
export type ListTasksQuery = z.input<typeof listTasksQuerySchema>;

export type ArtifactRef = z.infer<typeof artifactRefSchema>;

/**
 * Who is asking, on the agent API and MCP. An agent works on its own tasks:
 * the ones it requested or is assigned to; an unrestricted admin on every
 * task. A store-limited caller sees provenance of its stores only.
 * Functions that take an optional caller treat "none" as an operator
 * (dashboard, CLI, backups), who sees everything.
 */
export type LedgerCaller = { agentId: string; isAdmin: boolean; stores: readonly string[] | null };

const verdictSchema = z.enum(VERDICTS);
/*
 * What the ledger returns, declared once: the domain types are these schemas' z.infer, and the API's and MCP's
 * response schemas (lib/api/responses/ledger.ts) are built from them.
 */
export const taskSchema = z.strictObject({
  /** The id the requester chose; ids are namespaced per requester. */
  task_id: z.string(),
  /** The task's unambiguous address (`requester~task_id`; the id itself for tasks from before ids were namespaced): what an admin or assignee names where the id alone names several tasks. */
  key: z.string(),
  created_at: z.number(),
  requested_by: z.string(),
  intent: z.string(),
  /** The spec JSON as the requester sent it. */
  spec: z.unknown(),
  required_checks: z.array(z.enum(CHECKS)),
  verdict: verdictSchema,
  updated_at: z.number(),
  assignees: z.array(z.string()),
});
export type Task = z.infer<typeof taskSchema>;

/** Runs, validations and overrides carry the id their writer chose (unique per task, per actor), not their key. */
export const skillRunSchema = z.strictObject({
  run_id: z.string(),
  task_id: z.string(),
  skill: z.string(),
  input_hash: z.string(),
  output_hash: z.string().nullable(),
  exit_code: z.number().int().nullable(),
  runner_version: z.string(),
  started_at: z.number(),
  finished_at: z.number().nullable(),
  output_ref: z.string().nullable(),
  artifacts: z.array(z.strictObject({ artifact_type: z.string(), artifact_id: z.string(), store: z.string() })),
  agent_id: z.string().nullable(),
  status: z.enum(["running", "succeeded", "failed"]),
});
export type SkillRun = z.infer<typeof skillRunSchema>;

export const validationSchema = z.strictObject({
  validation_id: z.string(),
  task_id: z.string(),
  run_id: z.string().nullable(),
  critic_passed: z.boolean().nullable(),
  runner_passed: z.boolean().nullable(),
  details: z.unknown(),
  ts: z.number(),
  agent_id: z.string().nullable(),
});
export type Validation = z.infer<typeof validationSchema>;

export const overrideSchema = z.strictObject({ override_id: z.string(), ts: z.number(), actor: z.string(), token_label: z.string(), task_id: z.string().nullable(), note: z.string() });
export type Override = z.infer<typeof overrideSchema>;

/** A provenance fact as returned: the row, spelled snake_case. */
export const provenanceSchema = z.strictObject({
  id: z.number().int(),
  artifact_type: z.string(),
  artifact_id: z.string(),
  store: z.string(),
  model_name: z.string(),
  model_version: z.string(),
  fingerprint: z.string().nullable(),
  chunking_version: z.string().nullable(),
  input_hash: z.string(),
  task_id: z.string().nullable(),
  run_id: z.string().nullable(),
  recorded_by: z.string(),
  created_at: z.number(),
});
export type Provenance = z.infer<typeof provenanceSchema>;

const verdictExplanationSchema = z.strictObject({ verdict: verdictSchema, reasons: z.array(z.string()) });
export type VerdictExplanation = z.infer<typeof verdictExplanationSchema>;

const tally = z.number().int().min(0);
/** A page of tasks, each with how many runs it has; `next_offset` where the next page starts, null at the end. */
export const taskListSchema = z.strictObject({ tasks: z.array(taskSchema.extend({ run_count: tally })), total: tally, next_offset: tally.nullable() });
export type TaskList = z.infer<typeof taskListSchema>;

export const taskStatusSchema = z.strictObject({
  task: taskSchema,
  runs: z.array(skillRunSchema),
  validations: z.array(validationSchema),
  overrides: z.array(overrideSchema),
  artifacts: z.array(provenanceSchema),
  /** How many of each list the answer left out (oldest first) to stay within DUALMIND_LIST_MAX_BYTES. */
  omitted: z.strictObject({ runs: tally, validations: tally, overrides: tally, artifacts: tally }),
  verdict: verdictExplanationSchema,
});
export type TaskStatus = z.infer<typeof taskStatusSchema>;

/** A task as returned: under the id its requester chose, its key beside it (the row's column names stay inside). */
export function toTask(row: TaskRow): Task {
  const { taskId, clientId, specJson, requiredChecksJson, assigneesJson, ...facts } = row;
  return {
    task_id: clientId,
    key: taskId,
    ...snakeCased(facts),
    spec: parseJsonColumnStrict(specJson),
    required_checks: parseJsonColumnStrict<Check[]>(requiredChecksJson) ?? [...CHECKS],
    assignees: parseJsonColumnStrict<string[]>(assigneesJson) ?? [],
  };
}

export function toRun(row: SkillRunRow): SkillRun {
  const { runId: _key, clientId, artifactsJson, ...facts } = row;
  const status = row.finishedAt === null ? "running" : row.exitCode === 0 ? "succeeded" : "failed";
  return { run_id: clientId, ...snakeCased(facts), artifacts: parseJsonColumnStrict<ArtifactRef[]>(artifactsJson) ?? [], status };
}

/** A validation as returned, under the ids its writers chose (PostgreSQL's recorded_seq, its recording order, stays inside). */
export function toValidation(row: ValidationRow): Validation {
  return {
    validation_id: row.clientId,
    task_id: row.taskId,
    run_id: row.runId === null ? null : childClientId({ key: row.runId, parent: row.taskId }),
    critic_passed: row.criticPassed,
    runner_passed: row.runnerPassed,
    details: parseJsonColumnStrict(row.detailsJson),
    ts: row.ts,
    agent_id: row.agentId,
  };
}

export function toOverride(row: OverrideRow): Override {
  return { override_id: row.clientId, ts: row.ts, actor: row.actor, token_label: row.tokenLabel, task_id: row.taskId, note: row.note };
}

export function toProvenance(row: ProvenanceRow): Provenance {
  return snakeCased(row);
}

/*
 * The ledger's tasks, runs, validations, provenance and overrides: one
 * repository over governance.db and PostgreSQL (lib/db/port.ts). SQLite
 * serializes every writer (its immediate transaction); on PostgreSQL each
 * writer locks its task's row (FOR UPDATE) before reading runs and
 * validations, so two replicas writing to one task never compute the verdict
 * from a stale picture, while writers of different tasks run in parallel. A
 * retried create racing its first attempt meets the key, waits for it and is
 * answered as the retry it is, never as a 500.
 */
const { tasks, skillRuns, validations, provenance, overrides } = ledgerTables;

type Handle<H> = { handle?: H };


/** The requester, an assignee, or an unrestricted admin. */
export function canWorkOnTask({ task, caller }: { task: Pick<TaskRow, "requestedBy" | "assigneesJson">; caller: LedgerCaller }): boolean {
  return caller.isAdmin || task.requestedBy === caller.agentId || (parseJsonColumnStrict<string[]>(task.assigneesJson) ?? []).includes(caller.agentId);
}

type TaskTable = typeof tasks.sqlite | typeof tasks.pg;
const taskView = (r: TaskRow): OwnedRow => ({ key: r.taskId, clientId: r.clientId, owner: r.requestedBy });

/** The tasks a caller may work on, in SQL (none: an operator, who sees every task). */
function workableBy(t: TaskTable, caller: LedgerCaller | undefined): SQL | undefined {
  if (!caller || caller.isAdmin) return undefined;
  return or(eq(t.requestedBy, caller.agentId), assignedTo(t)(caller.agentId));
}

/** The tasks whose key or id is one of `refs`. */
function namedBy(t: TaskTable, refs: string[]): SQL {
  const ids = refs.filter((r) => !isKeyRef(r));
  // A key spelled out as owner~id also names a row from before ids were namespaced (its key is the bare id).
  const spelled = refs.map(splitKey).filter((k) => k !== null);
  return or(inArray(t.taskId, refs), ids.length ? inArray(t.clientId, ids) : undefined, ...spelled.map((k) => and(eq(t.requestedBy, k.owner), eq(t.clientId, k.clientId)))) as SQL;
}

/**
 * The one ownership rule of the ledger (both backends, every route and MCP
 * tool): a task id names the caller's own task, else one it may work on;
 * a task the caller may not work on answers exactly as a task that does not
 * exist (404), so an id reveals nothing of another agent's work. `lock` locks
 * it for a write on PostgreSQL.
 */
function* requireTaskVisibleTo(ref: string, caller: LedgerCaller | undefined, { lock }: { lock?: "update" } = {}): Op<TaskRow> {
  const own = caller ? yield* row(tasks, (t) => and(eq(t.requestedBy, caller.agentId), eq(t.clientId, ref)), { lock }) : undefined;
  const found = own ? [own] : yield* rows(tasks, { where: (t) => and(namedBy(t, [ref]), workableBy(t, caller)), orderBy: (t) => [sql`case when ${t.taskId} = ${ref} then 0 else 1 end`, asc(t.taskId)], limit: 2, lock });
  const task = pickOwned({ visible: found, ref, ownerId: caller?.agentId, view: taskView, kind: "task" });
  if (!task) throw new AppError("not_found", `no task ${ref}`);
  return task;
}

/** A row under a task as its caller knows it: the task and a run it links named by the ids their writers chose, not by their keys. */
function underTask<T extends { task_id: string | null; run_id?: string | null }>(r: T, task: Pick<TaskRow, "taskId" | "clientId">): T {
  if (r.task_id !== task.taskId) return r;
  const run = typeof r.run_id === "string" ? { run_id: childClientId({ key: r.run_id, parent: task.taskId }) } : {};
  return { ...r, task_id: task.clientId, ...run };
}

/** Facts of another agent's row never match a retry: a stored null agent (rows from before agents were recorded) matches anyone. */
export function sameAgentFact({ stored, incoming }: { stored: string | null; incoming: string }): string {
  return stored ?? incoming;
}

/**
 * The verdict is a proof, not a guess: passed only when no run is still open
 * and every check the task requires has passed. Validations combine: each
 * check is decided by the latest validation that ran it (a critic and a
 * runner often post separately), and a later result for a check supersedes an
 * earlier one (a fix, a rerun, a second look). A required check that no
 * validation has run yet leaves the task pending, awaiting that check — it is
 * not a failure.
 */
export function explainVerdict({ requiredChecks, runs, validations: vals }: { requiredChecks: Check[]; runs: Pick<SkillRun, "run_id" | "finished_at">[]; /** In recording order: the last one is the latest. */ validations: Pick<Validation, "validation_id" | "critic_passed" | "runner_passed">[] }): VerdictExplanation {
  const open = runs.filter((r) => r.finished_at === null);
  if (open.length > 0) return { verdict: "pending", reasons: open.map((r) => `run ${r.run_id} has not finished`) };
  if (vals.length === 0) return { verdict: "pending", reasons: ["no validation recorded yet"] };
  const failed: string[] = [];
  const awaiting: string[] = [];
  const passed: string[] = [];
  for (const check of requiredChecks) {
    const decider = vals.findLast((v) => (check === "critic" ? v.critic_passed : v.runner_passed) !== null);
    if (!decider) awaiting.push(`awaiting the ${check} check (no validation has run it yet)`);
    else if ((check === "critic" ? decider.critic_passed : decider.runner_passed) === true) passed.push(`${check} passed in validation ${decider.validation_id}`);
    else failed.push(`${check} check failed in validation ${decider.validation_id}`);
  }
  if (failed.length > 0) return { verdict: "failed", reasons: failed };
  if (awaiting.length > 0) return { verdict: "pending", reasons: [...awaiting, ...passed] };
  return { verdict: "passed", reasons: passed };
}

/** Validations in recording order (or its reverse): rowid (SQLite) or recorded_seq (PostgreSQL) breaks ties within one millisecond. */
function inRecordingOrder(direction: typeof asc = asc): (t: typeof validations.sqlite | typeof validations.pg) => SQL[] {
  return (t) => [direction(t.ts), "recordedSeq" in t ? direction(t.recordedSeq) : direction(sql`rowid`)];
}

function validationsInRecordingOrder(taskId: string): Op<ValidationRow[]> {
  return rows(validations, { where: (t) => eq(t.taskId, taskId), orderBy: inRecordingOrder() });
}

/**
 * Inside the writer's transaction (the task locked): keep tasks.verdict true so lists can filter by outcome.
 * explainVerdict decides from only what can change its answer: one open run, the newest validation, and the newest
 * validation that ran each required check. So a write loads a few rows however many runs and validations the task
 * has (looking for an open run still steps through the task's runs in skill_runs_task_idx: no index holds finished_at).
 */
function* refreshVerdict(task: TaskRow): Op<void> {
  const requiredChecks = toTask(task).required_checks;
  const openRun = yield* row(skillRuns, (t) => and(eq(t.taskId, task.taskId), isNull(t.finishedAt)));
  const deciders: string[] = [];
  for (const check of [undefined, ...requiredChecks]) {
    const [newest] = yield* rows(validations, {
      where: (t) => and(eq(t.taskId, task.taskId), check && isNotNull(check === "critic" ? t.criticPassed : t.runnerPassed)),
      orderBy: inRecordingOrder(desc),
      limit: 1,
    });
    if (newest) deciders.push(newest.validationId);
  }
  const vals = deciders.length === 0 ? [] : yield* rows(validations, { where: (t) => inArray(t.validationId, distinct(deciders)), orderBy: inRecordingOrder() });
  const { verdict } = explainVerdict({ requiredChecks, runs: openRun ? [toRun(openRun)] : [], validations: vals.map(toValidation) });
  yield* update(tasks, { verdict, updatedAt: Date.now() }, (t) => eq(t.taskId, task.taskId));
}

/**
 * Insert a row with a client-chosen id, or answer the retry of one: `retry`
 * compares a stored row with the request (409 when they differ). A concurrent
 * create of the same id (another replica) is waited for by the key, then answered as a retry.
 */
function* insertOrRetry<T extends typeof tasks | typeof overrides, R>(
  table: T,
  values: T["sqlite"]["$inferInsert"],
  key: (t: T["sqlite"] | T["pg"]) => SQL,
  target: (t: T["sqlite"] | T["pg"]) => (SQLiteColumn | PgColumn)[],
  retry: (stored: T["sqlite"]["$inferSelect"]) => R,
  created: (row: T["sqlite"]["$inferSelect"]) => R,
): Op<R> {
  const existing = yield* row(table, key);
  if (existing) return retry(existing);
  const inserted = yield* insertOrIgnore(table, values, target);
  if (inserted) return created(inserted);
  const raced = yield* row(table, key);
  if (!raced) throw new AppError("conflict", "a concurrent write took this id; retry");
  return retry(raced);
}

export function createTask<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, input, requestedBy }: Handle<H> & { input: z.input<typeof createTaskSchema>; requestedBy: string }): OnLedger<H, { task: Task; created: boolean }> {
  const parsed = createTaskSchema.parse(input);
  const taskId = parsed.task_id ?? newId();
  const key = ownedKey({ owner: requestedBy, clientId: taskId });
  const requiredChecks = parsed.required_checks ? [...new Set(parsed.required_checks)] : [...CHECKS];
  const assignees = [...new Set(parsed.assignees ?? [])].filter((a) => a !== requestedBy);
  const facts = { requestedBy, intent: parsed.intent, spec: parsed.spec, requiredChecks, assignees: [...assignees].sort() };
  assertFieldSize({ field: "spec", value: parsed.spec });
  const now = Date.now();
  const mine = (t: typeof tasks.sqlite | typeof tasks.pg) => and(eq(t.requestedBy, requestedBy), eq(t.clientId, taskId)) as SQL;
  return writeLedger(handle, function* () {
    if (!(yield* row(tasks, mine))) {
      yield* agentLock(requestedBy);
      yield* assertLedgerRoom({ agentId: requestedBy });
      const max = getConfig().limits.maxOpenTasksPerAgent;
      const open = yield* count(tasks, (t) => and(eq(t.requestedBy, requestedBy), eq(t.verdict, "pending")));
      assertAgentCount({ limit: "DUALMIND_MAX_OPEN_TASKS_PER_AGENT", what: "pending tasks", agentId: requestedBy, open, max });
    }
    const answer = yield* insertOrRetry<typeof tasks, { task: Task; created: boolean }>(
    tasks,
    {
      taskId: key,
      clientId: taskId,
      createdAt: now,
      updatedAt: now,
      requestedBy,
      intent: parsed.intent,
      specJson: JSON.stringify(parsed.spec),
      requiredChecksJson: JSON.stringify(requiredChecks),
      verdict: "pending",
      assigneesJson: assignees.length ? JSON.stringify(assignees) : null,
    },
    // Ids are namespaced per requester: another agent's task with this id is another task.
    mine,
    (t) => [t.requestedBy, t.clientId],
    (existing) => {
      const t = toTask(existing);
      assertSameRetry({ kind: "task", id: taskId, stored: { requestedBy: t.requested_by, intent: t.intent, spec: t.spec, requiredChecks: t.required_checks, assignees: [...t.assignees].sort() }, incoming: facts });
      return { task: t, created: false };
    },
    (created) => ({ task: toTask(created), created: true }),
    );
    if (answer.created) yield* assertShareKept({ agentId: requestedBy });
    return answer;
  });
}

/** Artifacts a finished run produced become provenance rows, so "where did this come from?" is one indexed lookup. */
function* insertRunArtifacts(run: SkillRunRow, artifacts: ArtifactRef[], recordedBy: string): Op<void> {
  const now = Date.now();
  yield* insertManyOrIgnore(
    provenance,
    artifacts.map((a) => ({ artifactType: a.artifact_type, artifactId: a.artifact_id, store: a.store, inputHash: run.inputHash, taskId: run.taskId, runId: run.runId, recordedBy, createdAt: now })),
    provenanceFactKey,
  );
}

/** The unique fact key of provenance, per recorder: a retried fact is skipped, and another agent's fact is neither taken over nor revealed. */
function provenanceFactKey(t: typeof provenance.sqlite | typeof provenance.pg): (SQLiteColumn | PgColumn)[] {
  return [t.store, t.artifactType, t.artifactId, t.inputHash, t.modelName, t.modelVersion, t.recordedBy];
}

export function runFacts(r: SkillRun) {
  return {
    agentId: r.agent_id,
    skill: r.skill,
    inputHash: r.input_hash,
    runnerVersion: r.runner_version,
    outputHash: r.output_hash,
    exitCode: r.exit_code,
    outputRef: r.output_ref,
    artifacts: r.artifacts,
  };
}

/** Start (or record at once, finished) a run of a task; the caller is recorded as the run's agent. */
export function recordRunStart<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, taskId, input, caller }: Handle<H> & { taskId: string; input: z.input<typeof startRunSchema>; caller: LedgerCaller }): OnLedger<H, { run: SkillRun; created: boolean }> {
  const parsed = startRunSchema.parse(input);
  const runId = parsed.run_id ?? newId();
  return writeLedger(handle, function* () {
    const task = yield* requireTaskVisibleTo(taskId, caller, { lock: "update" });
    const now = Date.now();
    const finished = parsed.exit_code !== undefined;
    const values = {
      runId: ownedKey({ owner: task.taskId, clientId: runId }),
      clientId: runId,
      taskId: task.taskId,
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
    // Runs of this task are serialized by the task lock; run ids are unique per task, so another task's run with this id is another run.
    const existing = yield* row(skillRuns, (t) => and(eq(t.taskId, task.taskId), eq(t.clientId, runId)));
    if (existing) {
      const stored = underTask(toRun(existing), task);
      // A retried start after the run finished is still the same request.
      const incoming = toRun({ ...existing, ...values, startedAt: existing.startedAt, finishedAt: finished ? existing.finishedAt : null });
      const storedFacts = { ...runFacts(stored), agentId: sameAgentFact({ stored: stored.agent_id, incoming: caller.agentId }) };
      const comparable = finished ? storedFacts : { ...storedFacts, outputHash: null, exitCode: null, outputRef: null, artifacts: [] };
      assertSameRetry({ kind: "run", id: runId, stored: comparable, incoming: runFacts(incoming) });
      return { run: stored, created: false };
    }
    yield* assertLedgerRoom({ agentId: caller.agentId });
    const created = yield* insert(skillRuns, values);
    yield* insertRunArtifacts(created, parsed.artifacts ?? [], caller.agentId);
    yield* assertShareKept({ agentId: caller.agentId });
    yield* refreshVerdict(task);
    return { run: underTask(toRun(created), task), created: true };
  });
}

/** Finish a started run; the run keeps the agent that started it, the finisher is recorded on its artifacts' provenance. */
export function recordRunFinish<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, taskId, runId, input, caller }: Handle<H> & { taskId: string; runId: string; input: z.input<typeof finishRunSchema>; caller: LedgerCaller }): OnLedger<H, { run: SkillRun; created: boolean }> {
  const parsed = finishRunSchema.parse(input);
  return writeLedger(handle, function* () {
    const task = yield* requireTaskVisibleTo(taskId, caller, { lock: "update" });
    const existing = yield* row(skillRuns, (t) => and(eq(t.taskId, task.taskId), eq(t.clientId, runId)));
    if (!existing) throw new AppError("not_found", `no run ${runId} in task ${taskId}`);
    const fields = { outputHash: parsed.output_hash, exitCode: parsed.exit_code, outputRef: parsed.output_ref ?? null, artifactsJson: JSON.stringify(parsed.artifacts ?? []) };
    if (existing.finishedAt !== null) {
      const stored = underTask(toRun(existing), task);
      assertSameRetry({ kind: "run", id: runId, stored: runFacts(stored), incoming: runFacts(toRun({ ...existing, ...fields })) });
      return { run: stored, created: false };
    }
    const finishedAt = parsed.finished_at ?? Date.now();
    if (finishedAt < existing.startedAt) throw new AppError("unprocessable", "finished_at is before started_at");
    yield* assertLedgerRoom({ agentId: caller.agentId });
    const [finishedRun] = yield* update(skillRuns, { ...fields, finishedAt }, (t) => eq(t.runId, existing.runId));
    yield* insertRunArtifacts(finishedRun, parsed.artifacts ?? [], caller.agentId);
    yield* assertShareKept({ agentId: caller.agentId });
    yield* refreshVerdict(task);
    return { run: underTask(toRun(finishedRun), task), created: true };
  });
}

/** Record a validation; only the requester, an assignee or an admin may, and the caller is recorded as its agent. */
export function recordValidation<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, taskId, input, caller }: Handle<H> & { taskId: string; input: z.input<typeof recordValidationSchema>; caller: LedgerCaller }): OnLedger<H, { validation: Validation; created: boolean }> {
  const parsed = recordValidationSchema.parse(input);
  const validationId = parsed.validation_id ?? newId();
  assertFieldSize({ field: "details", value: parsed.details ?? null });
  return writeLedger(handle, function* () {
    const task = yield* requireTaskVisibleTo(taskId, caller, { lock: "update" });
    const runId = parsed.run_id;
    const run = runId === undefined ? undefined : yield* row(skillRuns, (t) => and(eq(t.taskId, task.taskId), eq(t.clientId, runId)));
    if (runId !== undefined && !run) throw new AppError("unprocessable", `run ${runId} is not a run of task ${taskId}`);
    // Compared as the caller knows them (the ids it chose), stored under their keys.
    const facts = { taskId: task.taskId, agentId: caller.agentId, runId: parsed.run_id ?? null, criticPassed: parsed.critic_passed, runnerPassed: parsed.runner_passed, details: parsed.details ?? null };
    // Validations of this task are serialized by the task lock; validation ids are unique per task.
    const existing = yield* row(validations, (t) => and(eq(t.taskId, task.taskId), eq(t.clientId, validationId)));
    if (existing) {
      const v = toValidation(existing);
      const stored = { taskId: v.task_id, agentId: sameAgentFact({ stored: v.agent_id, incoming: caller.agentId }), runId: v.run_id, criticPassed: v.critic_passed, runnerPassed: v.runner_passed, details: v.details };
      assertSameRetry({ kind: "validation", id: v.validation_id, stored, incoming: facts });
      return { validation: underTask(v, task), created: false };
    }
    yield* assertLedgerRoom({ agentId: caller.agentId });
    const created = yield* insert(validations, { validationId: ownedKey({ owner: task.taskId, clientId: validationId }), clientId: validationId, taskId: task.taskId, agentId: caller.agentId, runId: run?.runId ?? null, criticPassed: facts.criticPassed, runnerPassed: facts.runnerPassed, detailsJson: JSON.stringify(facts.details), ts: Date.now() });
    yield* assertShareKept({ agentId: caller.agentId });
    yield* refreshVerdict(task);
    // A review of someone's work is the reviewer's activity: "what did the critic do?" finds it (an idempotent retry adds no row).
    yield* auditStep({ actor: `agent:${caller.agentId}`, action: "ledger.validation", target: `task:${task.taskId}`, reason: null, details: { validation_id: validationId, run_id: runId ?? null, critic_passed: facts.criticPassed, runner_passed: facts.runnerPassed } });
    return { validation: underTask(toValidation(created), task), created: true };
  });
}

type ProvenanceBatchRecord = z.output<typeof provenanceRecordSchema>;

/**
 * The rows a provenance batch inserts, checked against the tasks and runs it
 * names (both backends): an unknown task or run is 422, and so is another
 * agent's task or a run of one (the ownership rule of requireTaskVisibleTo).
 * A run id is unique per task: with a task_id it names that task's run,
 * without one the one run of that id among the tasks the caller works on.
 */
export function provenanceBatchRows({ records, runs, candidates, recordedBy, caller, now = Date.now() }: { records: ProvenanceBatchRecord[]; /** The runs the records' run ids may name. */ runs: Pick<SkillRunRow, "runId" | "clientId" | "taskId">[]; /** The tasks the records' task ids may name, and the tasks of their runs. */ candidates: Pick<TaskRow, "taskId" | "clientId" | "requestedBy" | "assigneesJson">[]; recordedBy: string; caller?: LedgerCaller; now?: number }) {
  const workable = candidates.filter((t) => !caller || canWorkOnTask({ task: t, caller }));
  const byKey = new Map(workable.map((t) => [t.taskId, t]));
  return records.map((r, i) => {
    const task = r.task_id === undefined ? undefined : pickOwned({ visible: workable, ref: r.task_id, ownerId: caller?.agentId, view: (t) => ({ key: t.taskId, clientId: t.clientId, owner: t.requestedBy }), kind: "task" });
    if (r.task_id && !task) throw new AppError("unprocessable", `records[${i}]: no task ${r.task_id}`);
    const named = r.run_id === undefined ? [] : runs.filter((x) => x.clientId === r.run_id && byKey.has(x.taskId) && (task === undefined || x.taskId === task.taskId));
    if (r.run_id && named.length === 0) throw new AppError("unprocessable", `records[${i}]: no run ${r.run_id}`);
    if (named.length > 1) throw new AppError("unprocessable", `records[${i}]: run ${r.run_id} names runs of several of your tasks; give its task_id`);
    const run = named[0];
    const taskId = task?.taskId ?? run?.taskId ?? null;
    return {
      artifactType: r.artifact_type,
      artifactId: r.artifact_id,
      store: r.store,
      modelName: r.model_name ?? "",
      modelVersion: r.model_version ?? "",
      fingerprint: r.fingerprint ?? null,
      chunkingVersion: r.chunking_version ?? null,
      inputHash: r.input_hash,
      taskId,
      runId: run?.runId ?? null,
      recordedBy,
      createdAt: now,
    };
  });
}

/**
 * A batch is all-or-nothing; facts already recorded (a retry) are counted,
 * not duplicated (the unique fact key). With a caller (the agent API), a
 * record may link only to tasks the caller works on; the stores it names are checked by the route.
 */
export function recordProvenanceBatch<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, input, recordedBy, caller }: Handle<H> & { input: z.input<typeof recordProvenanceSchema>; recordedBy: string; caller?: LedgerCaller }): OnLedger<H, { inserted: number; existing: number }> {
  const { records } = recordProvenanceSchema.parse(input);
  return writeLedger(handle, function* () {
    // An agent's batch counts against its own share; the server's own facts (the embed worker's, for every store at
    // once) only against the whole ledger, so no agent's writes can use up a share the whole instance depends on.
    yield* assertLedgerRoom(caller ? { agentId: recordedBy } : {});
    const [taskIds, runIds] = [distinct(records.map((r) => r.task_id ?? null)), distinct(records.map((r) => r.run_id ?? null))];
    const runRows = runIds.length ? yield* rows(skillRuns, { where: (t) => inArray(t.clientId, runIds) }) : [];
    const runTaskKeys = [...new Set(runRows.map((r) => r.taskId))];
    const named = taskIds.length ? yield* rows(tasks, { where: (t) => and(namedBy(t, taskIds), workableBy(t, caller)) }) : [];
    const ofRuns = runTaskKeys.length ? yield* rows(tasks, { where: (t) => inArray(t.taskId, runTaskKeys) }) : [];
    const values = provenanceBatchRows({ records, runs: runRows, candidates: [...named, ...ofRuns], recordedBy, caller });
    // One statement: a fact repeated within the batch or already stored is skipped by the unique key.
    const inserted = (yield* insertManyOrIgnore(provenance, values, provenanceFactKey)).length;
    if (caller && inserted > 0) yield* assertShareKept({ agentId: recordedBy });
    return { inserted, existing: records.length - inserted };
  });
}

/**
 * Overrides are never silent: the row and its audit entry commit together.
 * With a caller (the agent API), only a task the caller works on. Override
 * ids are unique per actor: another actor's override with this id is another override.
 */
export function recordOverride<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, input, actor, tokenLabel, caller }: Handle<H> & { input: z.input<typeof recordOverrideSchema>; actor: string; tokenLabel: string; caller?: LedgerCaller }): OnLedger<H, { override: Override; created: boolean }> {
  const parsed = recordOverrideSchema.parse(input);
  const overrideId = parsed.override_id ?? newId();
  const key = ownedKey({ owner: actor, clientId: overrideId });
  return writeLedger(handle, function* () {
    const task = parsed.task_id ? yield* requireTaskVisibleTo(parsed.task_id, caller, { lock: "update" }) : undefined;
    if (caller && !(yield* row(overrides, (t) => and(eq(t.actor, actor), eq(t.clientId, overrideId)) as SQL))) yield* assertLedgerRoom({ agentId: actor });
    const facts = { actor, tokenLabel, taskId: task?.taskId ?? null, note: parsed.note };
    const answer = yield* insertOrRetry<typeof overrides, { override: Override; created: boolean }>(
      overrides,
      { overrideId: key, clientId: overrideId, ts: Date.now(), ...facts },
      (t) => and(eq(t.actor, actor), eq(t.clientId, overrideId)) as SQL,
      (t) => [t.actor, t.clientId],
      (existing) => {
        assertSameRetry({ kind: "override", id: overrideId, stored: { actor: existing.actor, tokenLabel: existing.tokenLabel, taskId: existing.taskId, note: existing.note }, incoming: facts });
        return { override: toOverride(existing), created: false };
      },
      (created) => ({ override: toOverride(created), created: true }),
    );
    if (answer.created) {
      if (caller) yield* assertShareKept({ agentId: actor });
      yield* auditStep({ actor, action: "ledger.override", target: task ? `task:${task.taskId}` : `override:${key}`, reason: parsed.note, details: { override_id: overrideId, token_label: tokenLabel } });
    }
    return task ? { ...answer, override: underTask(answer.override, task) } : answer;
  });
}

export function distinct(ids: (string | null)[]): string[] {
  return [...new Set(ids.filter((id): id is string => id !== null))];
}

/** Artifacts in stores a store-limited caller may not use are left out of what it reads. */
export function inCallerStores(caller: LedgerCaller | undefined): (a: { store: string }) => boolean {
  return (a) => !caller || caller.stores === null || caller.stores.includes(a.store);
}

/** Newest facts one proofs answer (or a task status's artifacts) reads, in SQL whatever the artifact or task holds; the rest are counted in `omitted`. */
export const PROOFS_MAX_FACTS = 1000;

/** A task with its runs, validations, overrides, artifacts and verdict. With a caller: only its own tasks (404 otherwise). */
export function getTaskStatusById<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, taskId, caller }: Handle<H> & { taskId: string; caller?: LedgerCaller }): OnLedger<H, TaskStatus> {
  return readLedger(handle, function* () {
    const stored = yield* requireTaskVisibleTo(taskId, caller);
    const task = toTask(stored);
    const key = stored.taskId;
    const mine = <T extends { task_id: string | null }>(r: T) => underTask(r, stored);
    const visible = inCallerStores(caller);
    const allRuns = (yield* rows(skillRuns, { where: (t) => eq(t.taskId, key), orderBy: (t) => [asc(t.startedAt), asc(t.runId)] })).map(toRun).map(mine);
    const vals = (yield* validationsInRecordingOrder(key)).map(toValidation).map(mine);
    // The newest artifacts only, read in SQL (a task may carry any number of facts); the rest are counted below.
    const artifactsOf = (t: typeof provenance.sqlite | typeof provenance.pg) => eq(t.taskId, key);
    const newestArtifacts = (yield* rows(provenance, { where: artifactsOf, orderBy: (t) => [desc(t.id)], limit: PROOFS_MAX_FACTS })).reverse();
    const unreadArtifacts = newestArtifacts.length < PROOFS_MAX_FACTS ? 0 : (yield* count(provenance, artifactsOf)) - newestArtifacts.length;
    // The verdict weighs every run and validation; the answer carries the newest of each list within the byte budget and counts the rest.
    const { shown, omitted } = boundedLists({
      keep: "last",
      lists: {
        runs: allRuns.map((r) => ({ ...r, artifacts: r.artifacts.filter(visible) })),
        validations: vals,
        overrides: (yield* rows(overrides, { where: (t) => eq(t.taskId, key), orderBy: (t) => [asc(t.ts)] })).map(toOverride).map(mine),
        artifacts: newestArtifacts.filter(visible).map(toProvenance).map(mine),
      },
    });
    return { task, ...shown, omitted: { ...omitted, artifacts: omitted.artifacts + unreadArtifacts }, verdict: explainVerdict({ requiredChecks: task.required_checks, runs: allRuns, validations: vals }) };
  });
}

/** The operator's choice where owners share a task id: every task with that id (or that key), newest first. */
export function listTasksByClientId<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, clientId }: Handle<H> & { clientId: string }): OnLedger<H, OwnedChoice[]> {
  return readLedger(handle, function* () {
    const found = yield* rows(tasks, { where: (t) => or(eq(t.clientId, clientId), eq(t.taskId, clientId)), orderBy: (t) => [desc(t.createdAt), asc(t.taskId)], limit: OWNED_CHOICES_MAX });
    return found.map((t) => ({ key: t.taskId, owner: t.requestedBy, title: t.intent, createdAt: t.createdAt }));
  });
}

/** Tasks newest first, filtered; with a caller that is not an admin, only the tasks it requested or is assigned to. */
type TaskListTables = {
  tasks: Record<"requestedBy" | "verdict" | "createdAt" | "taskId", AnyColumn>;
  skillRuns: Table & Record<"taskId" | "skill", AnyColumn>;
  /** The dialect's "agent is in the assignees JSON array" test. */
  assignedTo: (agentId: string) => SQL;
};

/** The task list's filter over either dialect's tables. */
export function taskListWhere({ tables: { tasks: t, skillRuns: r, assignedTo }, q, caller }: { tables: TaskListTables; q: z.output<typeof listTasksQuerySchema>; caller: LedgerCaller | undefined }): SQL | undefined {
  const where: SQL[] = [];
  if (caller && !caller.isAdmin) where.push(or(eq(t.requestedBy, caller.agentId), assignedTo(caller.agentId)) as SQL);
  if (q.requested_by) where.push(eq(t.requestedBy, q.requested_by));
  if (q.outcome) where.push(eq(t.verdict, q.outcome));
  if (q.from !== undefined) where.push(gte(t.createdAt, q.from));
  if (q.to !== undefined) where.push(lte(t.createdAt, q.to));
  if (q.skill) where.push(sql`exists (select 1 from ${r} where ${r.taskId} = ${t.taskId} and ${r.skill} = ${q.skill})`);
  return where.length ? and(...where) : undefined;
}

/**
 * "The agent is assigned to the task", looked up in task_assignees (kept from
 * the assignees JSON by triggers on both engines) by the agent's index, so a
 * list reads that agent's rows, not every task's JSON.
 */
export function assignedTo(t: typeof tasks.sqlite | typeof tasks.pg): (agentId: string) => SQL {
  return (agentId) => sql`${t.taskId} in (select task_id from task_assignees where agent_id = ${agentId})`;
}

export function listTasksByFilter<H extends LedgerHandle = GovernanceHandle>({ input, caller, handle = getGovernance() as H }: { input: ListTasksQuery; caller?: LedgerCaller; handle?: H }): OnLedger<H, TaskList> {
  const q = listTasksQuerySchema.parse(input);
  const where = (t: typeof tasks.sqlite | typeof tasks.pg) => taskListWhere({ tables: { tasks: t, skillRuns: t === tasks.pg ? skillRuns.pg : skillRuns.sqlite, assignedTo: assignedTo(t) }, q, caller });
  return readLedger(handle, function* () {
    const page = yield* rows(tasks, { where, orderBy: (t) => [desc(t.createdAt), desc(t.taskId)], limit: q.limit, offset: q.offset });
    const total = yield* count(tasks, where);
    const runCounts = yield* countRunsByTaskIds(page.map((r) => r.taskId));
    const listed: TaskList["tasks"] = page.map((r) => ({ ...toTask(r), run_count: runCounts.get(r.taskId) ?? 0 }));
    // Agents' answers stop at the byte budget; the dashboard (no caller) pages by number and renders its 50 rows on the server.
    if (!caller) return { tasks: listed, total, next_offset: nextOffsetOf({ offset: q.offset, shown: listed.length, total }) };
    const { shown, nextOffset } = withinListBudget({ items: listed, offset: q.offset, total });
    return { tasks: shown, total, next_offset: nextOffset };
  });
}

/**
 * Runs per task for one page of tasks, in one grouped query. (A correlated
 * subquery here once rendered both task_id columns unqualified and counted
 * every run in the ledger on every task.)
 */
function* countRunsByTaskIds(taskIds: readonly string[]): Op<Map<string, number>> {
  if (taskIds.length === 0) return new Map();
  const counted = yield* select({ skillRuns }, (db, t) =>
    db
      .select({ taskId: t.skillRuns.taskId, n: countAll() })
      .from(t.skillRuns)
      .where(inArray(t.skillRuns.taskId, [...taskIds]))
      .groupBy(t.skillRuns.taskId),
  );
  return new Map(counted.map((r) => [r.taskId, r.n]));
}

export const artifactLookupSchema = z
  .object({
    artifact_type: artifactRefSchema.shape.artifact_type,
    artifact_id: artifactRefSchema.shape.artifact_id,
    store: artifactRefSchema.shape.store.optional(),
  })
  .strict();

export const artifactProofsSchema = z.strictObject({
  provenance: z.array(provenanceSchema),
  runs: z.array(skillRunSchema),
  tasks: z.array(z.strictObject({ task: taskSchema, verdict: verdictSchema })),
  validations: z.array(validationSchema),
  /** How many of each list the answer left out to stay within DUALMIND_LIST_MAX_BYTES. */
  omitted: z.strictObject({ provenance: tally, runs: tally, tasks: tally, validations: tally }),
});
export type ArtifactProofs = z.infer<typeof artifactProofsSchema>;

/**
 * "Where did this vector / summary come from?": every recorded fact, the runs
 * that made it and how they were checked. With a caller: facts of its stores
 * only, and runs, tasks and validations of its own tasks only.
 */
export function getProofsByArtifact<H extends LedgerHandle = GovernanceHandle>({ input, caller, handle = getGovernance() as H }: { input: z.input<typeof artifactLookupSchema>; caller?: LedgerCaller; handle?: H }): OnLedger<H, ArtifactProofs> {
  const q = artifactLookupSchema.parse(input);
  return readLedger(handle, function* () {
    const callerStores = caller && caller.stores !== null ? caller.stores : null;
    const where = (t: typeof provenance.sqlite | typeof provenance.pg) =>
      and(eq(t.artifactType, q.artifact_type), eq(t.artifactId, q.artifact_id), q.store ? eq(t.store, q.store) : undefined, callerStores ? (callerStores.length ? inArray(t.store, [...callerStores]) : sql`false`) : undefined);
    // Newest first by id (the order facts were stored): the artifact index serves it without a sort.
    const facts = yield* rows(provenance, { where, orderBy: (t) => [desc(t.id)], limit: PROOFS_MAX_FACTS });
    const unread = facts.length < PROOFS_MAX_FACTS ? 0 : (yield* count(provenance, where)) - facts.length;
    const linkedRunIds = distinct(facts.map((f) => f.runId));
    const runsFound = linkedRunIds.length ? yield* rows(skillRuns, { where: (t) => inArray(t.runId, linkedRunIds) }) : [];
    const linkedTasks = distinct([...facts.map((f) => f.taskId), ...runsFound.map((r) => r.taskId)]);
    const taskRowsFound = linkedTasks.length ? yield* rows(tasks, { where: (t) => inArray(t.taskId, linkedTasks) }) : [];
    const visibleTasks = new Map(taskRowsFound.filter((t) => !caller || canWorkOnTask({ task: t, caller })).map((t) => [t.taskId, t]));
    // Rows under a task name it by the id its requester chose; a fact's link to a task the caller may not work on is left out.
    const known = <T extends { task_id: string | null }>(r: T): T => {
      const task = r.task_id === null ? undefined : visibleTasks.get(r.task_id);
      return task ? underTask(r, task) : r;
    };
    const linkShown = (f: Provenance): Provenance => (f.task_id === null || visibleTasks.has(f.task_id) ? known(f) : { ...f, task_id: null, run_id: null });
    const visibleRuns = runsFound.filter((r) => visibleTasks.has(r.taskId));
    const runs = visibleRuns.map(toRun);
    const runIds = visibleRuns.map((r) => r.runId);
    const taskRows = distinct(facts.map((f) => f.taskId)).flatMap((id) => visibleTasks.get(id) ?? []);
    const taskIds = taskRows.map((t) => t.taskId);
    const vals =
      taskIds.length || runIds.length
        ? (yield* rows(validations, { where: (t) => or(taskIds.length ? inArray(t.taskId, taskIds) : undefined, runIds.length ? inArray(t.runId, runIds) : undefined), orderBy: inRecordingOrder() })).map(toValidation)
        : [];
    // Newest facts first; each list within its share of the byte budget, with what it left out counted.
    const { shown, omitted } = boundedLists({ keep: "first", lists: { provenance: facts.map(toProvenance).map(linkShown), runs: runs.map((r) => ({ ...known(r), artifacts: r.artifacts.filter(inCallerStores(caller)) })), tasks: taskRows.map((t) => ({ task: toTask(t), verdict: t.verdict })), validations: vals.map(known) } });
    return { ...shown, omitted: { ...omitted, provenance: omitted.provenance + unread } };
  });
}
