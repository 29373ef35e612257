import { and, asc, count, desc, eq, getTableColumns, inArray, isNotNull, isNull, lt, ne, sql } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { embedQueue } from "../db/schema/embed";
import { reasoningTraces, type ReasoningTraceRow } from "../db/schema/recall";
import type { Embeddable } from "../embed/embeddables";
import { enqueueEmbeddings } from "../embed/queue";
import { forgetEmbeddings } from "../embed/vector-index";
import { AppError } from "../errors";
import { DESCRIPTOR_VERSION, normalizeTrace, renderTraceDescriptor, traceInputSchema, type TraceFields, type TraceInput } from "./descriptors";
import { getReflectionSettings, type ReflectionSettings } from "./settings";
import { sha256Hex } from "../common";
import { currentVectorInfo } from "./vector-info";

export const TRACE_KIND = "trace";

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

/**
 * A trace row with the vector made from its current descriptor, if any (which model, dimension and task made it).
 */
type TraceSelect = ReasoningTraceRow & { vectorInfo: string | null };
const TRACE_SELECT = {
  ...getTableColumns(reasoningTraces),
  vectorInfo: currentVectorInfo({ kind: "trace", table: "reasoning_traces", inputHashColumn: "descriptor_hash" }),
};

/** A trace row of either backend, lists decoded, with the vector of its current descriptor (or null). */
export type TraceRecord = Omit<ReasoningTraceRow, "keyFiles" | "errorTags"> & { keyFiles: string[]; errorTags: string[]; vector: VectorInfo | null };

/** The API's trace, on both backends. */
export function traceOf(r: TraceRecord): Trace {
  return {
    id: r.id,
    agentId: r.agentId,
    intent: { verb: r.intentVerb, target: r.intentTarget },
    shardType: r.shardType,
    keyFiles: r.keyFiles,
    outcome: r.outcome,
    keyIssue: r.keyIssue,
    errorTags: r.errorTags,
    summaryDescriptor: r.summaryDescriptor,
    descriptorVersion: r.descriptorVersion,
    descriptorHash: r.descriptorHash,
    embedding: r.vector ? "vector" : r.embedSkippedAt ? "skipped_backpressure" : "pending",
    vector: r.vector,
    seenCount: r.seenCount,
    createdAt: r.createdAt,
    lastSeenAt: r.lastSeenAt,
  };
}

function toTrace({ vectorInfo, ...r }: TraceSelect): Trace {
  return traceOf({ ...r, keyFiles: JSON.parse(r.keyFiles) as string[], errorTags: JSON.parse(r.errorTags) as string[], vector: vectorInfo ? (JSON.parse(vectorInfo) as VectorInfo) : null });
}

/** A new trace's row (lists as arrays: SQLite stores them as JSON text). */
export function newTraceRow({ agentId, fields, descriptor, hash, skip, now }: { agentId: string; fields: TraceFields; descriptor: string; hash: string; skip: boolean; now: number }) {
  return {
    agentId,
    intentVerb: fields.intentVerb,
    intentTarget: fields.intentTarget,
    shardType: fields.shardType,
    keyFiles: fields.keyFiles,
    outcome: fields.outcome,
    keyIssue: fields.keyIssue,
    errorTags: fields.errorTags,
    summaryDescriptor: descriptor,
    descriptorVersion: DESCRIPTOR_VERSION,
    descriptorHash: hash,
    embedSkippedAt: skip ? now : null,
    seenCount: 1,
    createdAt: now,
    lastSeenAt: now,
  };
}

/** A trace as it is stored, on both backends: validated, sanitized fields, the descriptor and its hash (the dedup key). */
export function prepareTrace(input: TraceInput): { fields: TraceFields; descriptor: string; hash: string } {
  const fields = normalizeTrace(traceInputSchema.parse(input));
  const descriptor = renderTraceDescriptor(fields);
  return { fields, descriptor, hash: sha256Hex(descriptor) };
}

/**
 * Backpressure, on both backends: a success trace is stored without a vector
 * above the watermark; traces skipped before are queued again, CATCH_UP_BATCH
 * per write, once the backlog is under half the watermark.
 */
export function traceBackpressure({ outcome, backlog, watermark }: { outcome: "success" | "failure"; backlog: number; watermark: number }): { skip: boolean; catchUp: boolean } {
  return { skip: outcome === "success" && backlog > watermark, catchUp: backlog < watermark / 2 };
}

/** Whether the backlog must be counted for this write: for a success trace, or to catch up skipped ones. */
export const backlogMatters = ({ outcome, hasSkipped }: { outcome: "success" | "failure"; hasSkipped: boolean }) => outcome === "success" || hasSkipped;

function fieldsOf(r: ReasoningTraceRow): TraceFields {
  return tracedFields({ ...r, keyFiles: JSON.parse(r.keyFiles) as string[], errorTags: JSON.parse(r.errorTags) as string[] });
}

/** A stored trace's fields, lists decoded (either backend's row). */
function tracedFields(r: Pick<TraceRecord, "intentVerb" | "intentTarget" | "shardType" | "keyFiles" | "outcome" | "keyIssue" | "errorTags">): TraceFields {
  return { intentVerb: r.intentVerb, intentTarget: r.intentTarget, shardType: r.shardType, keyFiles: r.keyFiles, outcome: r.outcome, keyIssue: r.keyIssue, errorTags: r.errorTags };
}

/**
 * A trace of an older descriptor version, rendered by today's rules: its new
 * descriptor and hash (both backends' backfill: the rows to update are the
 * backend's, the text is this).
 */
export function rerenderTraceDescriptor(r: Parameters<typeof tracedFields>[0]): { descriptor: string; hash: string } {
  const descriptor = renderTraceDescriptor(tracedFields(r));
  return { descriptor, hash: sha256Hex(descriptor) };
}

// Vectors are made from the stored descriptor, and its hash is the input hash.
export const traceEmbeddable: Embeddable = {
  kind: TRACE_KIND,
  artifactType: "reasoning_trace",
  load({ handle, refIds }) {
    const rows = handle.db
      .select({ id: reasoningTraces.id, text: reasoningTraces.summaryDescriptor, inputHash: reasoningTraces.descriptorHash })
      .from(reasoningTraces)
      .where(inArray(reasoningTraces.id, refIds))
      .all();
    return new Map(rows.map(({ id, ...text }) => [id, text]));
  },
  listAll({ handle }) {
    return handle.db.select({ refId: reasoningTraces.id, inputHash: reasoningTraces.descriptorHash }).from(reasoningTraces).all();
  },
  chunkingVersion({ handle, refId }) {
    return handle.db.select({ v: reasoningTraces.descriptorVersion }).from(reasoningTraces).where(eq(reasoningTraces.id, refId)).get()?.v ?? null;
  },
  backfill: backfillTraceDescriptors,
};

export type RecordTraceResult = { trace: Trace; deduped: boolean; embedding: "queued" | "skipped_backpressure" | "unchanged"; retained: { deleted: number } };

/**
 * Store a trace (sanitized) or, when its descriptor was seen before, bump the
 * existing row's counter and last_seen instead of adding a vector. Backpressure:
 * above the store's backlog watermark a success trace is stored without a vector
 * (lexical recall still finds it); failures are always queued.
 */
export function recordTrace({ handle, agentId, input }: { handle: StoreHandle; agentId: string; input: TraceInput }): RecordTraceResult {
  const { fields, descriptor, hash } = prepareTrace(input);
  const settings = getReflectionSettings({ handle });
  const { db } = handle;
  return handle.sqlite
    .transaction((): RecordTraceResult => {
      const now = Date.now();
      const existing = db.select({ id: reasoningTraces.id }).from(reasoningTraces).where(eq(reasoningTraces.descriptorHash, hash)).get();
      if (existing) {
        db.update(reasoningTraces)
          .set({ seenCount: sql`${reasoningTraces.seenCount} + 1`, lastSeenAt: now })
          .where(eq(reasoningTraces.id, existing.id))
          .run();
        return { trace: getTraceById({ handle, id: existing.id }), deduped: true, embedding: "unchanged", retained: { deleted: 0 } };
      }
      // The backlog is only counted when it matters: for a success trace, or to catch up skipped ones.
      const hasSkipped = db.select({ id: reasoningTraces.id }).from(reasoningTraces).where(isNotNull(reasoningTraces.embedSkippedAt)).limit(1).get() !== undefined;
      const backlog = backlogMatters({ outcome: fields.outcome, hasSkipped }) ? pendingEmbeddingsUpTo({ handle, limit: settings.backlog_watermark + 1 }) : 0;
      const { skip } = traceBackpressure({ outcome: fields.outcome, backlog, watermark: settings.backlog_watermark });
      const { id } = db
        .insert(reasoningTraces)
        .values((({ keyFiles, errorTags, ...row }) => ({ ...row, keyFiles: JSON.stringify(keyFiles), errorTags: JSON.stringify(errorTags) }))(newTraceRow({ agentId, fields, descriptor, hash, skip, now })))
        .returning({ id: reasoningTraces.id })
        .get();
      if (!skip) enqueueEmbeddings({ handle, items: [{ kind: TRACE_KIND, refId: id, inputHash: hash }, ...(hasSkipped ? catchUpSkipped({ handle, backlog, watermark: settings.backlog_watermark }) : [])] });
      const retained = applyTraceRetention({ handle, settings, now, keepId: id });
      return { trace: getTraceById({ handle, id }), deduped: false, embedding: skip ? "skipped_backpressure" : "queued", retained };
    })
    .immediate();
}

/** Pending embed work, counted only up to `limit`: the check runs on every write and the queue can be long. */
function pendingEmbeddingsUpTo({ handle, limit }: { handle: StoreHandle; limit: number }): number {
  const pending = handle.db.select({ id: embedQueue.id }).from(embedQueue).where(isNull(embedQueue.parkedAt)).limit(limit).as("pending");
  return handle.db.select({ n: count() }).from(pending).get()!.n;
}

export const CATCH_UP_BATCH = 50;

/**
 * Once the backlog is back under half the watermark, traces that backpressure
 * stored without a vector are queued again, a few per write, oldest first.
 */
function catchUpSkipped({ handle, backlog, watermark }: { handle: StoreHandle; backlog: number; watermark: number }): { kind: string; refId: number; inputHash: string }[] {
  if (!traceBackpressure({ outcome: "failure", backlog, watermark }).catchUp) return [];
  const rows = handle.db
    .select({ id: reasoningTraces.id, hash: reasoningTraces.descriptorHash })
    .from(reasoningTraces)
    .where(isNotNull(reasoningTraces.embedSkippedAt))
    .orderBy(asc(reasoningTraces.embedSkippedAt), asc(reasoningTraces.id))
    .limit(CATCH_UP_BATCH)
    .all();
  if (rows.length === 0) return [];
  handle.db
    .update(reasoningTraces)
    .set({ embedSkippedAt: null })
    .where(
      inArray(
        reasoningTraces.id,
        rows.map((r) => r.id),
      ),
    )
    .run();
  return rows.map((r) => ({ kind: TRACE_KIND, refId: r.id, inputHash: r.hash }));
}

export function getTraceById({ handle, id }: { handle: StoreHandle; id: number }): Trace {
  const row = handle.db.select(TRACE_SELECT).from(reasoningTraces).where(eq(reasoningTraces.id, id)).get();
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
  const where = and(
    f.outcome === undefined ? undefined : eq(reasoningTraces.outcome, f.outcome),
    f.shard_type === undefined ? undefined : eq(reasoningTraces.shardType, sql`lower(${f.shard_type})`),
    f.agent_id === undefined ? undefined : eq(reasoningTraces.agentId, f.agent_id),
  );
  const rows = handle.db.select(TRACE_SELECT).from(reasoningTraces).where(where).orderBy(desc(reasoningTraces.lastSeenAt), desc(reasoningTraces.id)).limit(f.limit).offset(f.offset).all();
  const { total } = handle.db.select({ total: count() }).from(reasoningTraces).where(where).get()!;
  return { traces: rows.map(toTrace), total };
}

/** Delete traces and everything embedded for them, in the caller's transaction. */
function deleteTraces({ handle, ids }: { handle: StoreHandle; ids: number[] }): number {
  if (ids.length === 0) return 0;
  forgetEmbeddings({ handle, items: ids.map((refId) => ({ kind: TRACE_KIND, refId })) });
  // json_each, not a bound list: retention can delete more ids than SQLite takes as parameters.
  return handle.db
    .delete(reasoningTraces)
    .where(inArray(reasoningTraces.id, sql`(select value from json_each(${JSON.stringify(ids)}))`))
    .run().changes;
}

type TraceIdRow = { id: number };

/**
 * The ids of the traces a cap of `cap` deletes (both backends run this SQL;
 * the placeholders are the dialect's). Ranking with window functions stays
 * in SQL: every row's keep rank in one pass; the trace just written first.
 */
export function retentionSurplusSql(strategy: ReflectionSettings["retention"]["strategy"], p: { keepId: string; cap: string }): string {
  const order = strategy === "stratified" ? "stratum_rank, last_seen_at desc, id desc" : "last_seen_at desc, id desc";
  return `select id from (
     select id, row_number() over (order by id = ${p.keepId} desc, ${order}) as keep_rank from (
       select id, last_seen_at, row_number() over (partition by shard_type, outcome order by last_seen_at desc, id desc) as stratum_rank from reasoning_traces) ranked) kept
   where keep_rank > ${p.cap}`;
}

/**
 * Retention: traces unseen for `ttl_days` go; above `max_traces` the surplus
 * goes, oldest first or stratified (every shard/outcome stratum keeps its
 * newest rows in turn, so a rare failure kind is not crowded out by a
 * frequent success). `keepId` (the trace just written) is never deleted.
 */
export function applyTraceRetention({ handle, settings, now = Date.now(), keepId = 0 }: { handle: StoreHandle; settings: ReflectionSettings; now?: number; keepId?: number }): { deleted: number } {
  const { ttl_days: ttlDays, max_traces: cap, strategy } = settings.retention;
  const { db } = handle;
  let deleted = 0;
  if (ttlDays !== null) {
    const cutoff = now - ttlDays * 86_400_000;
    const ids = db
      .select({ id: reasoningTraces.id })
      .from(reasoningTraces)
      .where(and(lt(reasoningTraces.lastSeenAt, cutoff), ne(reasoningTraces.id, keepId)))
      .all()
      .map((r) => r.id);
    deleted += deleteTraces({ handle, ids });
  }
  if (cap !== null) {
    const n = db.select({ n: count() }).from(reasoningTraces).get()!.n;
    if (n > cap) {
      const ids = (handle.sqlite.prepare(retentionSurplusSql(strategy, { keepId: "?", cap: "?" })).all(keepId, cap) as TraceIdRow[]).map((r) => r.id);
      deleted += deleteTraces({ handle, ids });
    }
  }
  return { deleted };
}

/** Run retention now (CLI, admin). */
export function runTraceRetention({ handle }: { handle: StoreHandle }): { deleted: number } {
  const settings = getReflectionSettings({ handle });
  return handle.sqlite.transaction(() => applyTraceRetention({ handle, settings })).immediate();
}

/**
 * Re-render descriptors that are of an older version (re-embed calls this
 * first, so their vectors are rebuilt from the current text). Two rows that
 * now render the same are merged into the older one.
 */
export function backfillTraceDescriptors({ handle }: { handle: StoreHandle }): number {
  const { db } = handle;
  const stale = db.select().from(reasoningTraces).where(ne(reasoningTraces.descriptorVersion, DESCRIPTOR_VERSION)).all();
  let changed = 0;
  for (const r of stale) {
    const { descriptor, hash } = rerenderTraceDescriptor(fieldsOf(r));
    const twin = db
      .select({ id: reasoningTraces.id })
      .from(reasoningTraces)
      .where(and(eq(reasoningTraces.descriptorHash, hash), ne(reasoningTraces.id, r.id)))
      .get();
    if (twin) {
      db.update(reasoningTraces)
        .set({ seenCount: sql`${reasoningTraces.seenCount} + ${r.seenCount}`, lastSeenAt: sql`max(${reasoningTraces.lastSeenAt}, ${r.lastSeenAt})` })
        .where(eq(reasoningTraces.id, twin.id))
        .run();
      deleteTraces({ handle, ids: [r.id] });
    } else {
      db.update(reasoningTraces).set({ summaryDescriptor: descriptor, descriptorHash: hash, descriptorVersion: DESCRIPTOR_VERSION }).where(eq(reasoningTraces.id, r.id)).run();
    }
    changed++;
  }
  return changed;
}
