import { z } from "zod";
import { PROBE_KINDS } from "./probes";

/**
 * What self-recall returns (docs/self-recall.md), declared once: the types are these schemas' z.infer, and the
 * API's response schemas (lib/api/responses/self-recall.ts) are built from them.
 */
const count = z.number().int().min(0);
const EVAL_MODES = ["fts", "vector", "hybrid", "knn"] as const;
export type EvalMode = (typeof EVAL_MODES)[number];
const evalTarget = z.enum(["active", "shadow"]);
export type EvalTarget = z.infer<typeof evalTarget>;

export const scoreSchema = z.strictObject({ probes: count, hit1: z.number(), hit10: z.number(), mrr10: z.number(), noise: z.number(), fallbacks: count });
export type Score = z.infer<typeof scoreSchema>;

const kind = z.enum(PROBE_KINDS);
const mode = z.enum(EVAL_MODES);
const resultsSchema = z.strictObject({
  by_kind: z.partialRecord(kind, z.partialRecord(mode, scoreSchema)),
  /** Every kind's probes pooled, in HEADLINE_MODE (active) or GATE_MODE (shadow). */
  overall: scoreSchema.nullable(),
  /** Every kind's probes pooled in GATE_MODE: what a model switch is judged on (null without vectors here). */
  gate: scoreSchema.nullable(),
  /** Probes left out because their target changed or went since the set was drawn. */
  excluded: count,
  /** What the run cost: time spent asking (its own work), time paused to keep to its CPU share, and that share (1: unpaced). */
  cost: z.strictObject({ busy_ms: count, paused_ms: count, cpu_share: z.number() }).optional(),
});
export type EvalResults = z.infer<typeof resultsSchema>;

const settingsSchema = z.strictObject({
  seed: count,
  per_kind: count,
  generator_version: count,
  modes: z.partialRecord(kind, z.array(mode)),
  search: z.strictObject({ default_mode: z.string(), group: z.string(), chunking_version: count, fusion_weights: z.record(z.string(), z.unknown()), tokenizer: z.string() }),
  model: z.strictObject({ provider: z.string(), model: z.string(), dimension: count }),
});
export type EvalSettings = z.infer<typeof settingsSchema>;

export const selfRecallRunSchema = z.strictObject({
  id: count,
  store: z.string(),
  job_id: z.string().nullable(),
  probe_set_id: count,
  target: evalTarget,
  fingerprint_id: z.string(),
  model: z.string(),
  ts: z.number(),
  actor: z.string(),
  trigger: z.string(),
  probes: count,
  hit1: z.number().nullable(),
  hit10: z.number().nullable(),
  mrr10: z.number().nullable(),
  noise: z.number().nullable(),
  settings: settingsSchema,
  results: resultsSchema,
  duration_ms: count,
});
export type SelfRecallRun = z.infer<typeof selfRecallRunSchema>;

const progressSchema = z.strictObject({ phase: z.enum(["probes", "asking"]), done: count, total: count });
export type EvalProgress = z.infer<typeof progressSchema>;

export const evaluationJobSchema = z.strictObject({
  id: z.string(),
  kind: z.literal("evaluate"),
  store: z.string(),
  actor: z.string(),
  status: z.enum(["running", "succeeded", "failed"]),
  /** Why it ran: on demand, after reindex, scheduled or switch gate (and an admin's reason, when one was given). */
  reason: z.string().nullable(),
  progress: progressSchema.nullable(),
  /** The run it recorded (GET /evaluate lists it). */
  result: z.strictObject({ run_id: count, target: evalTarget, hit10: z.number().nullable(), mrr10: z.number().nullable() }).nullable(),
  error: z.string().nullable(),
  started_at: z.number(),
  finished_at: z.number().nullable(),
});
export type EvaluationJob = z.infer<typeof evaluationJobSchema>;

export const EVALUATE_EVERY = ["off", "after-reindex", "daily", "weekly"] as const;
export type EvaluateEvery = (typeof EVALUATE_EVERY)[number];
const scheduleSchema = z.strictObject({
  every: z.enum(EVALUATE_EVERY),
  /** The share of one core a scheduled or after-reindex run takes while it runs. */
  cpu_share: z.number(),
  /** When the next run nobody asks for is due (in the past: at the scheduler's next look), or null when none is. */
  next_due_at: z.number().nullable(),
  next_trigger: z.enum(["after reindex", "scheduled"]).nullable(),
  /** Set while an after-reindex run waits for the reindex's vectors. */
  waiting_for: z.string().nullable(),
});
export type EvaluationSchedule = z.infer<typeof scheduleSchema>;

const trendPointSchema = z.strictObject({ run_id: count, ts: z.number(), target: evalTarget, model: z.string(), hit10: z.number().nullable(), mrr10: z.number().nullable(), noise: z.number().nullable(), change: z.array(z.string()) });
export type TrendPoint = z.infer<typeof trendPointSchema>;

export const selfRecallReportSchema = z.strictObject({
  store: z.string(),
  /** The newest run of the store as it answers now, or null before the first evaluation. */
  latest: selfRecallRunSchema.nullable(),
  /** Oldest first: each run's figure and what changed since the one before. */
  trend: z.array(trendPointSchema),
  job: evaluationJobSchema.nullable(),
  /** When the next run nobody asks for is due, and why (DUALMIND_EVALUATE_EVERY). */
  schedule: scheduleSchema,
});
export type SelfRecallReport = z.infer<typeof selfRecallReportSchema>;
