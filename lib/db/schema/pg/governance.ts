import { pgTable, text, integer, bigint, doublePrecision, boolean, index, uniqueIndex } from "drizzle-orm/pg-core";
import { sql, type InferSelectModel } from "drizzle-orm";

/**
 * The governance ledger on PostgreSQL: the same tables, columns and indexes as
 * ../governance.ts (SQLite), so domain code and `migrate-data` see one shape;
 * what each table and column means is said there, once.
 * Dialect differences, on purpose:
 * - epoch-ms columns are bigint (mode number): int4 ends in 1970 + 24 days;
 * - SQLite's 0/1 flags are boolean; real is double precision;
 * - autoincrement ids are identity columns, except audit_log.id, which
 *   appendAudit assigns as max + 1 under the chain's lock, so the chain has no
 *   gaps even when a transaction rolls back (a sequence would leave one);
 * - validations.recorded_seq stands in for SQLite's rowid (recording order);
 * - JSON stays text: the audit hash covers the exact string, and SQLite rows copy over byte for byte.
 */
const epochMs = (name: string) => bigint(name, { mode: "number" });

/** Key/value facts about this database (schema version, created_at). */
export const meta = pgTable("meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

export const users = pgTable(
  "users",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    username: text("username").notNull(),
    passwordHash: text("password_hash").notNull(),
    role: text("role", { enum: ["viewer", "editor", "admin"] }).notNull(),
    createdAt: epochMs("created_at").notNull(),
    updatedAt: epochMs("updated_at").notNull(),
    disabledAt: epochMs("disabled_at"),
    sessionVersion: integer("session_version").notNull().default(0),
  },
  (t) => [uniqueIndex("users_username_uq").on(t.username)],
);

export const loginThrottle = pgTable("login_throttle", {
  key: text("key").primaryKey(),
  failures: integer("failures").notNull(),
  firstFailureAt: epochMs("first_failure_at").notNull(),
  lastFailureAt: epochMs("last_failure_at").notNull(),
  lockedUntil: epochMs("locked_until"),
});

export const apiTokens = pgTable(
  "api_tokens",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    token_hash: text("token_hash").notNull(),
    display_prefix: text("display_prefix").notNull(),
    label: text("label").notNull(),
    agent_id: text("agent_id").notNull(),
    scopes: text("scopes").notNull(),
    stores: text("stores"),
    created_by: text("created_by").notNull(),
    created_at: epochMs("created_at").notNull(),
    last_used_at: epochMs("last_used_at"),
    revoked_at: epochMs("revoked_at"),
  },
  (t) => [uniqueIndex("api_tokens_hash_uq").on(t.token_hash), index("api_tokens_agent_idx").on(t.agent_id)],
);

export const auditLog = pgTable(
  "audit_log",
  {
    id: bigint("id", { mode: "number" }).primaryKey(),
    ts: epochMs("ts").notNull(),
    actor: text("actor").notNull(),
    action: text("action").notNull(),
    target: text("target"),
    reason: text("reason"),
    details: text("details"),
    prevHash: text("prev_hash").notNull(),
    hash: text("hash").notNull(),
  },
  (t) => [index("audit_log_ts_idx").on(t.ts), index("audit_log_actor_idx").on(t.actor), index("audit_log_target_idx").on(t.target, t.id)],
);

export const tasks = pgTable(
  "tasks",
  {
    taskId: text("task_id").primaryKey(),
    clientId: text("client_id").notNull(),
    createdAt: epochMs("created_at").notNull(),
    requestedBy: text("requested_by").notNull(),
    intent: text("intent").notNull(),
    specJson: text("spec_json").notNull(),
    requiredChecksJson: text("required_checks_json").notNull(),
    verdict: text("verdict", { enum: ["pending", "passed", "failed"] }).notNull(),
    updatedAt: epochMs("updated_at").notNull(),
    assigneesJson: text("assignees_json"),
  },
  (t) => [
    index("tasks_requested_by_idx").on(t.requestedBy, t.createdAt),
    index("tasks_created_at_idx").on(t.createdAt),
    index("tasks_verdict_idx").on(t.verdict, t.createdAt),
    uniqueIndex("tasks_owner_client_uq").on(t.requestedBy, t.clientId),
    index("tasks_client_idx").on(t.clientId),
  ],
);

export const skillRuns = pgTable(
  "skill_runs",
  {
    runId: text("run_id").primaryKey(),
    clientId: text("client_id").notNull(),
    taskId: text("task_id")
      .notNull()
      .references(() => tasks.taskId),
    skill: text("skill").notNull(),
    inputHash: text("input_hash").notNull(),
    outputHash: text("output_hash"),
    exitCode: integer("exit_code"),
    runnerVersion: text("runner_version").notNull(),
    startedAt: epochMs("started_at").notNull(),
    finishedAt: epochMs("finished_at"),
    outputRef: text("output_ref"),
    artifactsJson: text("artifacts_json").notNull(),
    agentId: text("agent_id"),
  },
  (t) => [index("skill_runs_task_idx").on(t.taskId, t.startedAt), index("skill_runs_skill_idx").on(t.skill), uniqueIndex("skill_runs_task_client_uq").on(t.taskId, t.clientId)],
);

export const validations = pgTable(
  "validations",
  {
    validationId: text("validation_id").primaryKey(),
    clientId: text("client_id").notNull(),
    taskId: text("task_id")
      .notNull()
      .references(() => tasks.taskId),
    runId: text("run_id").references(() => skillRuns.runId),
    /** Recording order (SQLite's rowid): breaks ties between validations of one millisecond; the latest one decides the verdict. */
    recordedSeq: bigint("recorded_seq", { mode: "number" }).notNull().generatedByDefaultAsIdentity(),
    criticPassed: boolean("critic_passed"),
    runnerPassed: boolean("runner_passed"),
    detailsJson: text("details_json").notNull(),
    ts: epochMs("ts").notNull(),
    agentId: text("agent_id"),
  },
  (t) => [index("validations_task_idx").on(t.taskId, t.ts), uniqueIndex("validations_task_client_uq").on(t.taskId, t.clientId)],
);

export const provenance = pgTable(
  "provenance",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    artifactType: text("artifact_type").notNull(),
    artifactId: text("artifact_id").notNull(),
    store: text("store").notNull(),
    modelName: text("model_name").notNull().default(""),
    modelVersion: text("model_version").notNull().default(""),
    fingerprint: text("fingerprint"),
    chunkingVersion: text("chunking_version"),
    inputHash: text("input_hash").notNull(),
    taskId: text("task_id").references(() => tasks.taskId),
    runId: text("run_id").references(() => skillRuns.runId),
    recordedBy: text("recorded_by").notNull(),
    createdAt: epochMs("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("provenance_fact_uq").on(t.store, t.artifactType, t.artifactId, t.inputHash, t.modelName, t.modelVersion, t.recordedBy),
    index("provenance_artifact_idx").on(t.artifactType, t.artifactId),
    index("provenance_run_idx").on(t.runId),
    index("provenance_task_idx").on(t.taskId, t.id),
  ],
);

export const overrides = pgTable(
  "overrides",
  {
    overrideId: text("override_id").primaryKey(),
    clientId: text("client_id").notNull(),
    ts: epochMs("ts").notNull(),
    actor: text("actor").notNull(),
    tokenLabel: text("token_label").notNull(),
    taskId: text("task_id").references(() => tasks.taskId),
    note: text("note").notNull(),
  },
  (t) => [index("overrides_task_idx").on(t.taskId), index("overrides_ts_idx").on(t.ts), uniqueIndex("overrides_actor_client_uq").on(t.actor, t.clientId)],
);

export const dialecticSessions = pgTable(
  "dialectic_sessions",
  {
    sessionId: text("session_id").primaryKey(),
    clientId: text("client_id").notNull(),
    pausedAgentId: text("paused_agent_id").notNull(),
    reviewerAgentId: text("reviewer_agent_id"),
    phase: text("phase", { enum: ["thesis", "antithesis", "synthesis", "resolved", "failed"] }).notNull(),
    status: text("status", { enum: ["active", "resolved", "failed"] }).notNull(),
    createdAt: epochMs("created_at").notNull(),
    updatedAt: epochMs("updated_at").notNull(),
    topic: text("topic").notNull(),
    sessionType: text("session_type").notNull(),
    resolutionJson: text("resolution_json"),
    failureReason: text("failure_reason"),
    maxRounds: integer("max_rounds").notNull(),
    idleTimeoutMs: bigint("idle_timeout_ms", { mode: "number" }).notNull(),
  },
  (t) => [
    index("dialectic_sessions_agent_idx").on(t.pausedAgentId, t.createdAt),
    index("dialectic_sessions_reviewer_idx").on(t.reviewerAgentId, t.createdAt),
    index("dialectic_sessions_phase_idx").on(t.phase),
    index("dialectic_sessions_status_idx").on(t.status, t.updatedAt),
    index("dialectic_sessions_created_idx").on(t.createdAt),
    uniqueIndex("dialectic_sessions_owner_client_uq").on(t.pausedAgentId, t.clientId),
    index("dialectic_sessions_client_idx").on(t.clientId),
  ],
);
export type DialecticSessionRow = InferSelectModel<typeof dialecticSessions>;

export const dialecticMessages = pgTable(
  "dialectic_messages",
  {
    id: text("id").primaryKey(),
    clientId: text("client_id").notNull(),
    sessionId: text("session_id")
      .notNull()
      .references(() => dialecticSessions.sessionId),
    seq: integer("seq").notNull(),
    agentId: text("agent_id").notNull(),
    messageType: text("message_type", { enum: ["thesis", "antithesis", "synthesis"] }).notNull(),
    timestamp: epochMs("timestamp").notNull(),
    reasoning: text("reasoning").notNull(),
    rootCause: text("root_cause"),
    proposedConditionsJson: text("proposed_conditions_json"),
    observedMetricsJson: text("observed_metrics_json"),
    concernsJson: text("concerns_json"),
    agrees: boolean("agrees"),
    signature: text("signature").notNull(),
  },
  (t) => [uniqueIndex("dialectic_messages_session_seq_uq").on(t.sessionId, t.seq), index("dialectic_messages_ts_idx").on(t.timestamp), uniqueIndex("dialectic_messages_session_client_uq").on(t.sessionId, t.clientId)],
);
export type DialecticMessageRow = InferSelectModel<typeof dialecticMessages>;

export const dialecticAnnotations = pgTable(
  "dialectic_annotations",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    sessionId: text("session_id")
      .notNull()
      .references(() => dialecticSessions.sessionId),
    author: text("author").notNull(),
    body: text("body").notNull(),
    createdAt: epochMs("created_at").notNull(),
  },
  (t) => [index("dialectic_annotations_session_idx").on(t.sessionId, t.createdAt)],
);

export const metricRollups = pgTable(
  "metric_rollups",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    ts: epochMs("ts").notNull(),
    resolutionS: integer("resolution_s").notNull(),
    route: text("route").notNull(),
    count: integer("count").notNull(),
    errorCount: integer("error_count").notNull(),
    clientErrorCount: integer("client_error_count").notNull().default(0),
    sumMs: doublePrecision("sum_ms").notNull(),
    p50Ms: doublePrecision("p50_ms"),
    p95Ms: doublePrecision("p95_ms"),
    p99Ms: doublePrecision("p99_ms"),
    h0: integer("h0").notNull().default(0),
    h1: integer("h1").notNull().default(0),
    h2: integer("h2").notNull().default(0),
    h3: integer("h3").notNull().default(0),
    h4: integer("h4").notNull().default(0),
    h5: integer("h5").notNull().default(0),
    h6: integer("h6").notNull().default(0),
    h7: integer("h7").notNull().default(0),
    h8: integer("h8").notNull().default(0),
    h9: integer("h9").notNull().default(0),
    h10: integer("h10").notNull().default(0),
    h11: integer("h11").notNull().default(0),
    h12: integer("h12").notNull().default(0),
    h13: integer("h13").notNull().default(0),
    byStatus: text("by_status").notNull(),
  },
  (t) => [uniqueIndex("metric_rollups_bucket_uq").on(t.resolutionS, t.route, t.ts), index("metric_rollups_resolution_ts_idx").on(t.resolutionS, t.ts)],
);

export const metricSnapshots = pgTable(
  "metric_snapshots",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    ts: epochMs("ts").notNull(),
    resolutionS: integer("resolution_s").notNull(),
    store: text("store").notNull(),
    backlog: integer("backlog"),
    oldestAgeS: integer("oldest_age_s"),
    parked: integer("parked"),
    watermark: integer("watermark"),
    driftCount: integer("drift_count"),
    driftPct: doublePrecision("drift_pct"),
    coveragePct: doublePrecision("coverage_pct"),
    degraded: boolean("degraded"),
    vectorsAvailable: boolean("vectors_available"),
    modelId: text("model_id"),
    embedded: integer("embedded"),
    recallCount: integer("recall_count"),
    hitRate: doublePrecision("hit_rate"),
    avgHitAgeS: doublePrecision("avg_hit_age_s"),
    precision: doublePrecision("precision"),
    recallP50Ms: doublePrecision("recall_p50_ms"),
    recallP95Ms: doublePrecision("recall_p95_ms"),
  },
  (t) => [uniqueIndex("metric_snapshots_bucket_uq").on(t.store, t.resolutionS, t.ts), index("metric_snapshots_ts_idx").on(t.ts)],
);

export const adminJobs = pgTable(
  "admin_jobs",
  {
    id: text("id").primaryKey(),
    kind: text("kind", { enum: ["reindex", "evaluate"] }).notNull(),
    store: text("store").notNull(),
    actor: text("actor").notNull(),
    reason: text("reason"),
    status: text("status", { enum: ["running", "succeeded", "failed"] }).notNull(),
    owner: text("owner").notNull(),
    attempts: integer("attempts").notNull(),
    progressJson: text("progress_json"),
    resultJson: text("result_json"),
    error: text("error"),
    startedAt: epochMs("started_at").notNull(),
    heartbeatAt: epochMs("heartbeat_at").notNull(),
    finishedAt: epochMs("finished_at"),
  },
  (t) => [
    index("admin_jobs_store_idx").on(t.store, t.startedAt),
    uniqueIndex("admin_jobs_one_running_uq").on(t.kind, t.store).where(sql`status = 'running'`),
  ],
);
export type AdminJobRow = InferSelectModel<typeof adminJobs>;

export const storeStatusCurrent = pgTable("store_status_current", {
  store: text("store").primaryKey(),
  status: text("status").notNull(),
  reason: text("reason").notNull(),
  since: epochMs("since").notNull(),
});

export const healthEvents = pgTable(
  "health_events",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    ts: epochMs("ts").notNull(),
    kind: text("kind", { enum: ["store_status", "dialectic_failed", "self_recall"] }).notNull(),
    store: text("store"),
    subject: text("subject"),
    status: text("status").notNull(),
    previousStatus: text("previous_status"),
    reason: text("reason").notNull(),
    details: text("details"),
    webhookState: text("webhook_state", { enum: ["none", "pending", "delivered", "failed"] }).notNull().default("none"),
    webhookAttempts: integer("webhook_attempts").notNull().default(0),
    webhookError: text("webhook_error"),
  },
  (t) => [index("health_events_ts_idx").on(t.ts), index("health_events_store_ts_idx").on(t.store, t.ts), uniqueIndex("health_events_subject_uq").on(t.kind, t.subject)],
);

export const embedWorkers = pgTable(
  "embed_workers",
  {
    workerId: text("worker_id").primaryKey(),
    pid: integer("pid").notNull(),
    mode: text("mode", { enum: ["in_server", "separate"] }).notNull(),
    startedAt: epochMs("started_at").notNull(),
    heartbeatAt: epochMs("heartbeat_at").notNull(),
    lastBatchAt: epochMs("last_batch_at"),
    lastBatchStore: text("last_batch_store"),
    lastBatchItems: integer("last_batch_items"),
    itemsPerS: doublePrecision("items_per_s"),
    lastError: text("last_error"),
    lastErrorAt: epochMs("last_error_at"),
    lastErrorStore: text("last_error_store"),
    provider: text("provider"),
    model: text("model"),
    dimension: integer("dimension"),
  },
  (t) => [index("embed_workers_heartbeat_idx").on(t.heartbeatAt)],
);

export const providerState = pgTable("provider_state", {
  configKey: text("config_key").primaryKey(),
  provider: text("provider").notNull(),
  model: text("model").notNull(),
  ok: boolean("ok").notNull(),
  error: text("error"),
  checkedAt: epochMs("checked_at").notNull(),
  changedAt: epochMs("changed_at").notNull(),
});
