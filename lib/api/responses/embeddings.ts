/** Embedding health, re-embed and model comparison of a store. */
import { z } from "zod";
import { STORE_STATUS_PRECEDENCE } from "../../embed/status";
import { count, epochMs, exact } from "./common";

/** A model's identity: the provider's settings and a hash of its vector for a fixed probe text. */
export const fingerprint = exact({
  provider: z.string(),
  model: z.string(),
  dimension: z.number().int(),
  metric: z.string(),
  document_prefix: z.string(),
  query_prefix: z.string(),
  probe_hash: z.string(),
  id: z.string(),
});

export const backlog = exact({ pending: count, oldest_enqueued_at: epochMs.nullable(), parked: count, oldest_age_seconds: z.number().nullable(), watermark: count });

const kindDrift = exact({ artifacts: count, fresh: count, stale: count, missing: count });
export const driftReport = exact({
  active_fingerprint_id: z.string(),
  configured_fingerprint_id: z.string(),
  model_changed: z.boolean(),
  artifacts: count,
  fresh: count,
  stale: count,
  missing: count,
  other_model_vectors: count,
  drifted: count,
  drift_pct: z.number(),
  coverage_pct: z.number(),
  /** Keys are artifact kinds (chunk, thought, ...). */
  by_kind: z.record(z.string(), kindDrift),
});

export const reembedProgress = exact({
  target_fingerprint_id: z.string(),
  only_stale: z.boolean(),
  hold_switch: z.boolean(),
  total: count,
  started_at: epochMs,
  started_by: z.string(),
  /** running, waiting_switch (a held switch waits for an admin) or done (kept until the next re-embed). */
  status: z.enum(["running", "waiting_switch", "done"]),
  queued_until: epochMs,
  finished_at: epochMs.nullable(),
  done: count,
  remaining: count,
  rate_per_sec: z.number().nullable(),
  eta_seconds: z.number().nullable(),
});
export const reembedEstimate = exact({ to_embed: count, target_fingerprint_id: z.string(), model_changed: z.boolean(), estimated_seconds: z.number().nullable() });

export const parkedEmbedding = exact({ kind: z.string(), ref_id: z.number().int(), attempts: count, last_error: z.string().nullable(), parked_at: epochMs });
const vectorIndex = exact({ available: z.boolean(), reason: z.string().nullable() });

/** An embed worker process as it last reported itself (governance.db), wherever it runs. */
export const workerState = exact({
  worker_id: z.string(),
  pid: z.number().int(),
  mode: z.enum(["in_server", "separate"]),
  in_this_process: z.boolean(),
  running: z.boolean(),
  started_at: epochMs,
  heartbeat_at: epochMs,
  last_batch_at: epochMs.nullable(),
  last_batch_store: z.string().nullable(),
  last_batch_items: count.nullable(),
  items_per_second: z.number().nullable(),
  last_error: z.string().nullable(),
  last_error_at: epochMs.nullable(),
  last_error_store: z.string().nullable(),
  model: z.string().nullable(),
  dimension: z.number().int().nullable(),
});

/**
 * `GET /stores/{store}/health` and MCP `store_health`: the store's one live status (lib/embed/status.ts getStoreStatus,
 * precedence documented there) with reason and fixing action, the numbers behind it, worker and provider state,
 * and recall quality from the newest snapshot (`recall.as_of`).
 */
export const storeHealthResponse = exact({
  store: z.string(),
  status: z.enum(STORE_STATUS_PRECEDENCE),
  status_reason: z.string(),
  action: exact({ label: z.string(), href: z.string() }).nullable(),
  /** When the status was computed (live). */
  as_of: epochMs,
  degraded: z.boolean(),
  degraded_reason: z.string().nullable(),
  backlog,
  drift: driftReport.nullable(),
  coverage_pct: z.number().nullable(),
  vector_index: vectorIndex,
  configured_model: fingerprint.nullable(),
  active_model: fingerprint.nullable(),
  provider_error: z.string().nullable(),
  provider: exact({ ok: z.boolean(), error: z.string().nullable(), checked_at: epochMs.nullable() }),
  workers: z.array(workerState),
  reembed: reembedProgress.nullable(),
  parked: z.array(parkedEmbedding),
  recall: exact({
    as_of: epochMs,
    recalls: count,
    hit_rate: z.number().nullable(),
    avg_hit_age_s: z.number().nullable(),
    precision: z.number().nullable(),
    p50_ms: z.number().nullable(),
    p95_ms: z.number().nullable(),
  }).nullable(),
});

/** The store page's embeddings card and `dualmind store status --json`: the embedding status the health report is built from. */
export const embeddingStatusResponse = exact({
  store: z.string(),
  configured: fingerprint.nullable(),
  provider_error: z.string().nullable(),
  active: fingerprint.nullable(),
  backlog,
  degraded: z.boolean(),
  degraded_reason: z.string().nullable(),
  drift: driftReport.nullable(),
  vector_index: vectorIndex,
  reembed: reembedProgress.nullable(),
  parked: z.array(parkedEmbedding),
});

export const reembedStatusResponse = exact({ job: reembedProgress.nullable() });
/** `dry_run` answers with the estimate; otherwise the started job, or `nothing_to_reembed` (no job starts) when every item has a current vector. */
export const reembedStartResponse = z.union([
  exact({ estimate: reembedEstimate }),
  exact({ job: reembedProgress }),
  exact({ job: z.null(), nothing_to_reembed: z.literal(true), message: z.string() }),
]);
export const reembedSwitchResponse = exact({
  switched: z.literal(true),
  /** The self-recall gate's verdict (lib/eval/self-recall.ts checkSwitchGate). */
  self_recall: exact({
    verdict: z.enum(["passed", "overridden", "unmeasured"]),
    reason: z.string(),
    before: z.number().nullable(),
    after: z.number().nullable(),
    noise: z.number().nullable(),
    override_id: z.string().nullable(),
  }),
});
export const retryParkedResponse = exact({ requeued: count });

export const modelComparisonResponse = exact({
  active_fingerprint_id: z.string(),
  candidate_fingerprint_id: z.string(),
  k: z.number().int(),
  queries: count,
  /** Mean |top-k(active) ∩ top-k(candidate)| / k over the replayed queries. */
  mean_overlap: z.number().nullable(),
  candidate_coverage_pct: z.number().nullable(),
  per_query: z.array(exact({ q: z.string(), overlap: z.number(), active: z.array(z.number().int()), candidate: z.array(z.number().int()) })),
});
