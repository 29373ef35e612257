import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import type { Embeddable } from "../embed/embeddables";
import { enqueueEmbeddings } from "../embed/queue";
import { forgetEmbeddings } from "../embed/vector-index";
import { AppError } from "../errors";
import { DESCRIPTOR_VERSION, normalizeTrace, renderTraceDescriptor, traceInputSchema, type TraceFields, type TraceInput } from "./descriptors";
import { getReflectionSettings, type ReflectionSettings } from "./settings";
import { sha256Hex } from "../common";

export const TRACE_KIND = "trace";

type TraceDbRow = {
  id: number;
  agent_id: string;
  intent_verb: string;
  intent_target: string;
  shard_type: string;
  key_files: string;
  outcome: "success" | "failure";
  key_issue: string;
  error_tags: string;
  summary_descriptor: string;
  descriptor_version: number;
  descriptor_hash: string;
  embed_skipped_at: number | null;
  seen_count: number;
  created_at: number;
  last_seen_at: number;
};

export type VectorInfo = { fingerprintId: string; dim: number; task: "document" | "query" };

export type Trace = {
  id: number;
  agentId: string;
  intent: { verb: string; target: string };
  shardType: string;
  keyFiles: string[];
  outcome: "success" | "failure";
  keyIssue: string;
  errorTags: string[];
  summaryDescriptor: string;
  descriptorVersion: number;
  descriptorHash: string;
  embedding: "skipped_backpressure" | "vector" | "pending";
  /** The vector of the current descriptor: the model fingerprint, dimension and task that made it. */
  vector: VectorInfo | null;
  seenCount: number;
  createdAt: number;
  lastSeenAt: number;
};

// The vector made from the current descriptor, if any: which model, dimension and task made it.
const TRACE_COLUMNS =
  "t.*, (select json_object('fingerprintId', e.fingerprint_id, 'dim', e.dim, 'task', e.task) from embeddings e where e.kind = 'trace' and e.ref_id = t.id and e.input_hash = t.descriptor_hash order by e.id desc limit 1) as vector_info";

function toTrace(r: TraceDbRow & { vector_info: string | null }): Trace {
  return {
    id: r.id,
    agentId: r.agent_id,
    intent: { verb: r.intent_verb, target: r.intent_target },
    shardType: r.shard_type,
    keyFiles: JSON.parse(r.key_files) as string[],
    outcome: r.outcome,
    keyIssue: r.key_issue,
    errorTags: JSON.parse(r.error_tags) as string[],
    summaryDescriptor: r.summary_descriptor,
    descriptorVersion: r.descriptor_version,
    descriptorHash: r.descriptor_hash,
    embedding: r.vector_info ? "vector" : r.embed_skipped_at ? "skipped_backpressure" : "pending",
    vector: r.vector_info ? (JSON.parse(r.vector_info) as VectorInfo) : null,
    seenCount: r.seen_count,
    createdAt: r.created_at,
    lastSeenAt: r.last_seen_at,
  };
}

function fieldsOf(r: TraceDbRow): TraceFields {
  return {
    intentVerb: r.intent_verb,
    intentTarget: r.intent_target,
    shardType: r.shard_type,
    keyFiles: JSON.parse(r.key_files) as string[],
    outcome: r.outcome,
    keyIssue: r.key_issue,
    errorTags: JSON.parse(r.error_tags) as string[],
  };
}

// Vectors are made from the stored descriptor, and its hash is the input hash.
export const traceEmbeddable: Embeddable = {
  kind: TRACE_KIND,
  artifactType: "reasoning_trace",
  load({ handle: { sqlite }, refIds }) {
    const rows = sqlite
      .prepare("select id, summary_descriptor as text, descriptor_hash as hash from reasoning_traces where id in (select value from json_each(?))")
      .all(JSON.stringify(refIds)) as { id: number; text: string; hash: string }[];
    return new Map(rows.map((r) => [r.id, { text: r.text, inputHash: r.hash }]));
  },
  *listAll({ handle: { sqlite } }) {
    for (const r of sqlite.prepare("select id, descriptor_hash as hash from reasoning_traces").iterate() as IterableIterator<{ id: number; hash: string }>) {
      yield { refId: r.id, inputHash: r.hash };
    }
  },
  chunkingVersion: ({ handle: { sqlite }, refId }) => (sqlite.prepare("select descriptor_version as v from reasoning_traces where id = ?").get(refId) as { v: number } | undefined)?.v ?? null,
  backfill: ({ handle }) => backfillTraceDescriptors(handle),
};

export type RecordTraceResult = { trace: Trace; deduped: boolean; embedding: "queued" | "skipped_backpressure" | "unchanged"; retained: { deleted: number } };

/**
 * Store a trace (sanitized) or, when its descriptor was seen before, bump the
 * existing row's counter and last_seen instead of adding a vector. Backpressure:
 * above the store's backlog watermark a success trace is stored without a vector
 * (lexical recall still finds it); failures are always queued.
 */
export function recordTrace({ handle, agentId, input }: { handle: StoreHandle; agentId: string; input: TraceInput }): RecordTraceResult {
  const fields = normalizeTrace(traceInputSchema.parse(input));
  const descriptor = renderTraceDescriptor(fields);
  const hash = sha256Hex(descriptor);
  const settings = getReflectionSettings(handle);
  const { sqlite } = handle;
  return sqlite
    .transaction((): RecordTraceResult => {
      const now = Date.now();
      const existing = sqlite.prepare("select id from reasoning_traces where descriptor_hash = ?").get(hash) as { id: number } | undefined;
      if (existing) {
        sqlite.prepare("update reasoning_traces set seen_count = seen_count + 1, last_seen_at = ? where id = ?").run(now, existing.id);
        return { trace: getTraceById({ handle, id: existing.id }), deduped: true, embedding: "unchanged", retained: { deleted: 0 } };
      }
      // The backlog is only counted when it matters: for a success trace, or to catch up skipped ones.
      const hasSkipped = !!sqlite.prepare("select 1 from reasoning_traces where embed_skipped_at is not null limit 1").get();
      const backlog = fields.outcome === "success" || hasSkipped ? pendingEmbeddingsUpTo(handle, settings.backlog_watermark + 1) : 0;
      const skip = fields.outcome === "success" && backlog > settings.backlog_watermark;
      const { id } = sqlite
        .prepare(
          `insert into reasoning_traces(agent_id, intent_verb, intent_target, shard_type, key_files, outcome, key_issue, error_tags,
             summary_descriptor, descriptor_version, descriptor_hash, embed_skipped_at, seen_count, created_at, last_seen_at)
           values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?) returning id`,
        )
        .get(
          agentId,
          fields.intentVerb,
          fields.intentTarget,
          fields.shardType,
          JSON.stringify(fields.keyFiles),
          fields.outcome,
          fields.keyIssue,
          JSON.stringify(fields.errorTags),
          descriptor,
          DESCRIPTOR_VERSION,
          hash,
          skip ? now : null,
          now,
          now,
        ) as { id: number };
      if (!skip) enqueueEmbeddings({ handle, items: [{ kind: TRACE_KIND, refId: id, inputHash: hash }, ...(hasSkipped ? catchUpSkipped(handle, backlog, settings.backlog_watermark) : [])] });
      const retained = applyTraceRetention({ handle, settings, now, keepId: id });
      return { trace: getTraceById({ handle, id }), deduped: false, embedding: skip ? "skipped_backpressure" : "queued", retained };
    })
    .immediate();
}

/** Pending embed work, counted only up to `limit`: the check runs on every write and the queue can be long. */
function pendingEmbeddingsUpTo(handle: StoreHandle, limit: number): number {
  return (handle.sqlite.prepare("select count(*) as n from (select 1 from embed_queue where parked_at is null limit ?)").get(limit) as { n: number }).n;
}

const CATCH_UP_BATCH = 50;

/**
 * Once the backlog is back under half the watermark, traces that backpressure
 * stored without a vector are queued again, a few per write, oldest first.
 */
function catchUpSkipped(handle: StoreHandle, backlog: number, watermark: number): { kind: string; refId: number; inputHash: string }[] {
  if (backlog >= watermark / 2) return [];
  const rows = handle.sqlite
    .prepare("select id, descriptor_hash as hash from reasoning_traces where embed_skipped_at is not null order by embed_skipped_at, id limit ?")
    .all(CATCH_UP_BATCH) as { id: number; hash: string }[];
  if (rows.length === 0) return [];
  handle.sqlite.prepare("update reasoning_traces set embed_skipped_at = null where id in (select value from json_each(?))").run(JSON.stringify(rows.map((r) => r.id)));
  return rows.map((r) => ({ kind: TRACE_KIND, refId: r.id, inputHash: r.hash }));
}

export function getTraceById({ handle, id }: { handle: StoreHandle; id: number }): Trace {
  const row = handle.sqlite.prepare(`select ${TRACE_COLUMNS} from reasoning_traces t where t.id = ?`).get(id) as (TraceDbRow & { vector_info: string | null }) | undefined;
  if (!row) throw new AppError("not_found", `no trace ${id}`);
  return toTrace(row);
}

export const listTracesQuerySchema = z
  .object({
    outcome: z.enum(["success", "failure"]).optional(),
    shard_type: z.string().trim().min(1).max(80).optional(),
    agent_id: z.string().trim().min(1).max(200).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();

export function listTraces({ handle, filter }: { handle: StoreHandle; filter: z.input<typeof listTracesQuerySchema> }): { traces: Trace[]; total: number } {
  const f = listTracesQuerySchema.parse(filter);
  const where = "(? is null or t.outcome = ?) and (? is null or t.shard_type = lower(?)) and (? is null or t.agent_id = ?)";
  const args = [f.outcome ?? null, f.outcome ?? null, f.shard_type ?? null, f.shard_type ?? null, f.agent_id ?? null, f.agent_id ?? null];
  const rows = handle.sqlite
    .prepare(`select ${TRACE_COLUMNS} from reasoning_traces t where ${where} order by t.last_seen_at desc, t.id desc limit ? offset ?`)
    .all(...args, f.limit, f.offset) as (TraceDbRow & { vector_info: string | null })[];
  const { n } = handle.sqlite.prepare(`select count(*) as n from reasoning_traces t where ${where}`).get(...args) as { n: number };
  return { traces: rows.map(toTrace), total: n };
}

/** Delete traces and everything embedded for them, in the caller's transaction. */
function deleteTraces(handle: StoreHandle, ids: number[]): number {
  if (ids.length === 0) return 0;
  forgetEmbeddings({ handle, items: ids.map((refId) => ({ kind: TRACE_KIND, refId })) });
  return handle.sqlite.prepare("delete from reasoning_traces where id in (select value from json_each(?))").run(JSON.stringify(ids)).changes;
}

/**
 * Retention: traces unseen for `ttl_days` go; above `max_traces` the surplus
 * goes, oldest first or stratified (every shard/outcome stratum keeps its
 * newest rows in turn, so a rare failure kind is not crowded out by a
 * frequent success). `keepId` (the trace just written) is never deleted.
 */
export function applyTraceRetention({ handle, settings, now = Date.now(), keepId = 0 }: { handle: StoreHandle; settings: ReflectionSettings; now?: number; keepId?: number }): { deleted: number } {
  const { ttl_days: ttlDays, max_traces: cap, strategy } = settings.retention;
  const { sqlite } = handle;
  let deleted = 0;
  if (ttlDays !== null) {
    const cutoff = now - ttlDays * 86_400_000;
    const ids = (sqlite.prepare("select id from reasoning_traces where last_seen_at < ? and id != ?").all(cutoff, keepId) as { id: number }[]).map((r) => r.id);
    deleted += deleteTraces(handle, ids);
  }
  if (cap !== null) {
    const { n } = sqlite.prepare("select count(*) as n from reasoning_traces").get() as { n: number };
    if (n > cap) {
      const order = strategy === "stratified" ? "stratum_rank, last_seen_at desc, id desc" : "last_seen_at desc, id desc";
      const ids = (
        sqlite
          .prepare(
            `select id from (
               select id, row_number() over (order by id = ? desc, ${order}) as keep_rank from (
                 select id, last_seen_at, row_number() over (partition by shard_type, outcome order by last_seen_at desc, id desc) as stratum_rank from reasoning_traces))
             where keep_rank > ?`,
          )
          .all(keepId, cap) as { id: number }[]
      ).map((r) => r.id);
      deleted += deleteTraces(handle, ids);
    }
  }
  return { deleted };
}

/** Run retention now (CLI, admin). */
export function runTraceRetention({ handle }: { handle: StoreHandle }): { deleted: number } {
  const settings = getReflectionSettings(handle);
  return handle.sqlite.transaction(() => applyTraceRetention({ handle, settings })).immediate();
}

/**
 * Re-render descriptors that are of an older version (re-embed calls this
 * first, so their vectors are rebuilt from the current text). Two rows that
 * now render the same are merged into the older one.
 */
export function backfillTraceDescriptors(handle: StoreHandle): number {
  const { sqlite } = handle;
  const stale = sqlite.prepare("select * from reasoning_traces where descriptor_version != ?").all(DESCRIPTOR_VERSION) as TraceDbRow[];
  let changed = 0;
  for (const r of stale) {
    const descriptor = renderTraceDescriptor(fieldsOf(r));
    const hash = sha256Hex(descriptor);
    const twin = sqlite.prepare("select id from reasoning_traces where descriptor_hash = ? and id != ?").get(hash, r.id) as { id: number } | undefined;
    if (twin) {
      sqlite.prepare("update reasoning_traces set seen_count = seen_count + ?, last_seen_at = max(last_seen_at, ?) where id = ?").run(r.seen_count, r.last_seen_at, twin.id);
      deleteTraces(handle, [r.id]);
    } else {
      sqlite.prepare("update reasoning_traces set summary_descriptor = ?, descriptor_hash = ?, descriptor_version = ? where id = ?").run(descriptor, hash, DESCRIPTOR_VERSION, r.id);
    }
    changed++;
  }
  return changed;
}
