/** Reflection: traces, learnings, recall, and the per-store reflection settings. */
import { retrievalExplain, retrievalFallback, retrievalReason } from "./documents";
import { z } from "zod";
import { createdOrExisting } from "../contract";
import { count, epochMs, exact, flags, freeForm } from "./common";

const intent = exact({ verb: z.string(), target: z.string() });
const outcome = z.enum(["success", "failure"]);
const vectorInfo = exact({ fingerprint_id: z.string(), dim: z.number().int(), task: z.enum(["document", "query"]) });

export const trace = exact({
  id: z.number().int(),
  agent_id: z.string(),
  intent,
  shard_type: z.string(),
  key_files: z.array(z.string()),
  outcome,
  key_issue: z.string(),
  error_tags: z.array(z.string()),
  summary_descriptor: z.string(),
  descriptor_version: z.number().int(),
  descriptor_hash: z.string(),
  embedding: z.enum(["skipped_backpressure", "vector", "pending"]),
  /** The vector of the current descriptor: the model fingerprint, dimension and task that made it. */
  vector: vectorInfo.nullable(),
  seen_count: count,
  created_at: epochMs,
  last_seen_at: epochMs,
  flags,
});
/** 201 for a new trace, 200 when it deduplicated into an existing one (`deduped`). */
export const traceRecordedResponse = createdOrExisting(exact({ trace, deduped: z.boolean(), embedding: z.enum(["queued", "skipped_backpressure", "unchanged"]), retained: exact({ deleted: count }) }));
export const traceResponse = exact({ trace });
/** `next_offset`: where the next page starts when rows remain (past `limit` or past DUALMIND_LIST_MAX_BYTES); null at the end. */
export const traceListResponse = exact({ traces: z.array(trace), total: count, next_offset: count.nullable() });

export const learning = exact({
  id: z.number().int(),
  agent_id: z.string(),
  predicate: z.string(),
  args: freeForm,
  description: z.string(),
  confidence: z.number(),
  semantic_handle: z.string(),
  handle_version: z.number().int(),
  handle_hash: z.string(),
  embedding: z.enum(["vector", "pending"]),
  vector: vectorInfo.nullable(),
  seen_count: count,
  created_at: epochMs,
  last_seen_at: epochMs,
  flags,
});
/** 201 for a new learning, 200 when it deduplicated into an existing one. */
export const learningRecordedResponse = createdOrExisting(exact({ learning, deduped: z.boolean(), embedding: z.enum(["queued", "unchanged"]) }));
export const learningResponse = exact({ learning });
export const learningListResponse = exact({ learnings: z.array(learning), total: count, next_offset: count.nullable() });

const hitBase = { id: z.number().int(), score: z.number(), similarity: z.number(), recency: z.number(), match: z.enum(["vector", "lexical"]), summary: z.string(), age_days: z.number(), flags };
export const recallResponse = exact({
  event_id: z.number().int(),
  mode: z.enum(["hybrid", "vector", "lexical"]),
  fallback: retrievalFallback.nullable(),
  reason: retrievalReason.nullable(),
  method: z.string(),
  cache_hit: z.boolean(),
  query: z.string(),
  traces: z.array(exact({ ...hitBase, outcome, intent, key_issue: z.string(), seen_count: count, last_seen_at: epochMs })),
  learnings: z.array(exact({ ...hitBase, predicate: z.string(), description: z.string(), confidence: z.number() })),
  guidance: exact({
    past_failure_warning: exact({ trace_id: z.number().int(), score: z.number(), intent, key_issue: z.string(), message: z.string(), flags }).nullable(),
    aligned_preferences: z.array(exact({ learning_id: z.number().int(), score: z.number(), predicate: z.string(), description: z.string(), confidence: z.number(), flags })),
  }),
  latency_ms: z.number(),
  /** explain=true: each stage's candidates and time. */
  explain: retrievalExplain.optional(),
});

export const reflectionSettings = exact({
  enabled: z.boolean(),
  top_k: z.number().int(),
  min_score: z.number(),
  recency_half_life_days: z.number(),
  /** Read-only: the one embed backlog watermark (DUALMIND_EMBED_BACKLOG_WATERMARK); above it success traces are stored without a vector. */
  backlog_watermark: z.number().int(),
  failure_warning_score: z.number(),
  preference_score: z.number(),
  retention: exact({ ttl_days: z.number().int().nullable(), max_traces: z.number().int().nullable(), strategy: z.enum(["newest", "stratified"]) }),
});
export const reflectionSettingsResponse = exact({ settings: reflectionSettings });
export const reflectionOverviewResponse = exact({
  store: z.string(),
  settings: reflectionSettings,
  counts: exact({ traces: count, failures: count, learnings: count, awaiting_vector: count, skipped_backpressure: count }),
  /** Last 24 hours, hourly; hours without recalls are absent (gaps). */
  metrics: z.array(
    exact({ start: epochMs, recalls: count, hit_rate: z.number(), rated: count, precision: z.number().nullable(), fallback_rate: z.number(), p50_ms: z.number(), p95_ms: z.number() }),
  ),
  totals: exact({ recalls: count, hit_rate: z.number().nullable(), rated: count, precision: z.number().nullable() }),
});
