import { z } from "zod";
import { count, epochMs, exact, freeForm } from "./common";

/** Wire forms of self-recall (lib/eval/self-recall.ts): scores, runs, the trend and evaluation jobs. */
export const selfRecallScore = exact({
  probes: count,
  hit1: z.number(),
  hit10: z.number(),
  mrr10: z.number(),
  noise: z.number(),
  fallbacks: count,
});
const kinds = ["document", "memory", "trace", "learning", "thought"] as const;
const modes = ["fts", "vector", "hybrid", "knn"] as const;
const byMode = z.partialRecord(z.enum(modes), selfRecallScore);

export const selfRecallRun = exact({
  id: count,
  store: z.string(),
  job_id: z.string().nullable(),
  probe_set_id: count,
  target: z.enum(["active", "shadow"]),
  fingerprint_id: z.string(),
  model: z.string(),
  ts: epochMs,
  actor: z.string(),
  trigger: z.string(),
  probes: count,
  hit1: z.number().nullable(),
  hit10: z.number().nullable(),
  mrr10: z.number().nullable(),
  noise: z.number().nullable(),
  settings: exact({
    seed: count,
    per_kind: count,
    generator_version: count,
    modes: z.partialRecord(z.enum(kinds), z.array(z.enum(modes))),
    search: exact({ default_mode: z.string(), group: z.string(), chunking_version: count, fusion_weights: freeForm, tokenizer: z.string() }),
    model: exact({ provider: z.string(), model: z.string(), dimension: count }),
  }),
  results: exact({
    by_kind: z.partialRecord(z.enum(kinds), byMode),
    overall: selfRecallScore.nullable(),
    gate: selfRecallScore.nullable(),
    excluded: count,
    cost: exact({ busy_ms: count, paused_ms: count, cpu_share: z.number() }).optional(),
  }),
  duration_ms: count,
});

export const evaluationJob = exact({
  id: z.string(),
  kind: z.literal("evaluate"),
  store: z.string(),
  actor: z.string(),
  status: z.enum(["running", "succeeded", "failed"]),
  reason: z.string().nullable(),
  progress: exact({ phase: z.enum(["probes", "asking"]), done: count, total: count }).nullable(),
  result: exact({ run_id: count, target: z.enum(["active", "shadow"]), hit10: z.number().nullable(), mrr10: z.number().nullable() }).nullable(),
  error: z.string().nullable(),
  started_at: epochMs,
  finished_at: epochMs.nullable(),
});

export const evaluateStartResponse = exact({ job: evaluationJob });

export const selfRecallResponse = exact({
  store: z.string(),
  latest: selfRecallRun.nullable(),
  trend: z.array(
    exact({
      run_id: count,
      ts: epochMs,
      target: z.enum(["active", "shadow"]),
      model: z.string(),
      hit10: z.number().nullable(),
      mrr10: z.number().nullable(),
      noise: z.number().nullable(),
      change: z.array(z.string()),
    }),
  ),
  job: evaluationJob.nullable(),
  schedule: exact({
    every: z.enum(["off", "after-reindex", "daily", "weekly"]),
    cpu_share: z.number(),
    next_due_at: epochMs.nullable(),
    next_trigger: z.enum(["after reindex", "scheduled"]).nullable(),
    waiting_for: z.string().nullable(),
  }),
});

export const evaluationJobResponse = exact({ job: evaluationJob });
