import { pageWithinBudget } from "../governance/limits";
import { and, asc, eq, inArray, isNotNull, lt, ne, sql, type Column, type SQL } from "drizzle-orm";
import { z } from "zod";
import { count, dialect, inCallerTx, insertOrIgnore, read, remove, row, rows, select, sqlRows, update, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import { reasoningTraces, type ReasoningTraceRow } from "../db/schema/recall";
import type { Embeddable } from "../embed/embeddables";
import { AppError } from "../errors";
import { tableEmbeddable, tableEmbeddablePg, type PgEmbeddable } from "../index/embed-kinds-pg";
import { forgetVectors } from "../index/engine-steps";
import { enqueueEmbeddingsOp } from "../embed/queue";
import { assertRoomForRow } from "../index/row-room";
import { DESCRIPTOR_VERSION, normalizeTrace, renderTraceDescriptor, traceInputSchema, type TraceInput } from "./descriptors";
import { reflectionSettingsInForce, type ReflectionSettings } from "./settings";
import { limitSchema, offsetSchema, sha256Hex, snakeCased, type SnakeCased } from "../common";
import { recallTables } from "./tables";
import { atLeast, decodedJson, encodedJson, withCurrentVector, type VectorInfo } from "./vector-info";
import { rowWordsWritten, TRACE_WORDS } from "../index/engines/pg-words";
import { itemsDeletedOp, listViewQuerySchema, visibleWhere } from "../index/item-state";
import { poisonFlags, type PoisonFlag } from "../poison";

/**
 * Reasoning traces, one repository over both engines (lib/db/port.ts). Two
 * writers recording the same descriptor at once end with one row seen twice
 * (insert or ignore on the unique descriptor hash, then the counter), and a
 * trace is queued for its vector in its insert's transaction.
 */
export const TRACE_KIND = "trace";

/** A trace row of either backend, lists decoded, with the vector of its current descriptor (or null). */
type TraceRecord = Omit<ReasoningTraceRow, "keyFiles" | "errorTags"> & { keyFiles: string[]; errorTags: string[]; vector: VectorInfo | null };

/** The API's trace: the row spelled snake_case, its intent as one object and the state of its vector. */
export type Trace = Omit<SnakeCased<TraceRecord>, "intent_verb" | "intent_target" | "embed_skipped_at"> & { intent: { verb: string; target: string }; embedding: "skipped_backpressure" | "vector" | "pending"; flags: PoisonFlag[] };

function traceOf({ id, agentId, intentVerb, intentTarget, embedSkippedAt, vector, ...r }: TraceRecord): Trace {
  const embedding = vector ? "vector" : embedSkippedAt ? "skipped_backpressure" : "pending";
  const intent = { verb: intentVerb, target: intentTarget };
  const flags = poisonFlags({ fields: { intent, key_issue: r.keyIssue, summary_descriptor: r.summaryDescriptor, key_files: r.keyFiles, error_tags: r.errorTags } });
  return { id, agent_id: agentId, intent, ...snakeCased(r), embedding, vector, flags };
}

// Vectors are made from the stored descriptor, and its hash is the input hash.
const TRACE_TABLE = { kind: TRACE_KIND, artifactType: "reasoning_trace", table: "reasoning_traces", textColumn: "summary_descriptor", hashColumn: "descriptor_hash", versionColumn: "descriptor_version" };
export const traceEmbeddable: Embeddable = { ...tableEmbeddable(TRACE_TABLE), backfill: ({ handle }) => inCallerTx(handle, traceDescriptorsBackfilled()) };
export const traceEmbeddablePg: PgEmbeddable = { ...tableEmbeddablePg(TRACE_TABLE), backfill: ({ tx }) => inCallerTx(tx, traceDescriptorsBackfilled()) };

export type RecordTraceResult = { trace: Trace; deduped: boolean; embedding: "queued" | "skipped_backpressure" | "unchanged"; retained: { deleted: number } };

const table = recallTables.traces;

/** Traces with the vector of their current descriptor, newest seen first, as the API shows them. */
function* selectTraces(query: { where?: (t: typeof reasoningTraces) => SQL | undefined; limit: number; offset?: number }): Op<Trace[]> {
  return (yield* withCurrentVector({ pair: table, ...query })).map((r) => traceOf({ ...r, keyFiles: decodedJson<string[]>(r.keyFiles), errorTags: decodedJson<string[]>(r.errorTags) }));
}

function* traceById(id: number): Op<Trace> {
  const [found] = yield* selectTraces({ where: (t) => eq(t.id, id), limit: 1 });
  if (!found) throw new AppError("not_found", `no trace ${id}`);
  return found;
}

/**
 * Store a trace (sanitized) or, when its descriptor was seen before, bump the
 * existing row's counter and last_seen instead of adding a vector. Backpressure:
 * above the store's backlog watermark a success trace is stored without a vector
 * (lexical recall still finds it); failures are always queued.
 */
export function recordTrace<H extends AnyStoreHandle>({ handle, agentId, input }: { handle: H; agentId: string; input: TraceInput }): On<H, RecordTraceResult> {
  const fields = normalizeTrace(traceInputSchema.parse(input));
  const descriptor = renderTraceDescriptor(fields);
  const hash = sha256Hex(descriptor);
  return write(handle, function* (): Op<RecordTraceResult> {
    const settings = yield* reflectionSettingsInForce();
    const now = Date.now();
    const seenAgain = function* (): Op<RecordTraceResult | null> {
      const [seen] = yield* update(table, { seenCount: sql`seen_count + 1`, lastSeenAt: now }, (t) => eq(t.descriptorHash, hash));
      return seen ? { trace: yield* traceById(seen.id), deduped: true, embedding: "unchanged", retained: { deleted: 0 } } : null;
    };
    const deduped = yield* seenAgain();
    if (deduped) return deduped;
    // Backpressure: the backlog is only counted when it matters (a success trace, or to catch up skipped ones). Above
    // the watermark a success trace is stored without a vector; skipped traces are queued again, CATCH_UP_BATCH per
    // write, once the backlog is under half the watermark.
    const hasSkipped = yield* anySkippedTrace();
    const watermark = settings.backlog_watermark;
    const backlog = fields.outcome === "success" || hasSkipped ? yield* pendingEmbeddingsUpTo(watermark + 1) : 0;
    const skip = fields.outcome === "success" && backlog > watermark;
    const engine = yield* dialect();
    const values = { agentId, ...fields, keyFiles: encodedJson(engine, fields.keyFiles), errorTags: encodedJson(engine, fields.errorTags) };
    yield* assertRoomForRow({ store: handle.store, table: "reasoning_traces", values: { ...values, summaryDescriptor: descriptor } });
    const inserted = yield* insertOrIgnore(
      table,
      { ...values, summaryDescriptor: descriptor, descriptorVersion: DESCRIPTOR_VERSION, descriptorHash: hash, embedSkippedAt: skip ? now : null, seenCount: 1, createdAt: now, lastSeenAt: now },
      (t) => [t.descriptorHash],
    );
    // Another replica inserted the same descriptor meanwhile (its commit ended our wait): count this sighting on its row.
    if (!inserted) return (yield* seenAgain())!;
    yield* rowWordsWritten({ table: TRACE_WORDS, ids: [inserted.id] });
    if (!skip) {
      const caughtUp = hasSkipped && backlog < watermark / 2 ? yield* skippedTracesRequeued() : [];
      yield* enqueueEmbeddingsOp({ items: [{ kind: TRACE_KIND, refId: inserted.id, inputHash: hash }, ...caughtUp] });
    }
    const retained = yield* traceRetentionApplied({ settings, now, keepId: inserted.id });
    return { trace: yield* traceById(inserted.id), deduped: false, embedding: skip ? "skipped_backpressure" : "queued", retained };
  });
}

/** Whether any trace waits for its vector after backpressure; only the id is read, so the embed_skipped_at index answers alone (SQLite would scan the table for whole rows). */
function* anySkippedTrace(): Op<boolean> {
  const found = yield* select({ t: table }, (db, { t }) => db.select({ id: t.id }).from(t).where(isNotNull(t.embedSkippedAt)).limit(1));
  return found.length > 0;
}

/** Pending embed work, counted only up to `limit`: the check runs on every write and the queue can be long. */
function* pendingEmbeddingsUpTo(limit: number): Op<number> {
  const [{ n }] = yield* sqlRows<{ n: number | string }>(sql`select count(*) as n from (select 1 from embed_queue where parked_at is null limit ${limit}) q`);
  return Number(n);
}

export const CATCH_UP_BATCH = 50;

/** Traces backpressure stored without a vector, queued again a few per write, oldest first (on PostgreSQL rows another writer is queueing are skipped). */
function* skippedTracesRequeued(): Op<{ kind: string; refId: number; inputHash: string }[]> {
  const skipLocked = (yield* dialect()) === "pg" ? sql` for update skip locked` : sql``;
  const found = yield* sqlRows<{ id: number | string; hash: string }>(
    sql`select id, descriptor_hash as hash from reasoning_traces where embed_skipped_at is not null order by embed_skipped_at, id limit ${CATCH_UP_BATCH}${skipLocked}`,
  );
  if (found.length === 0) return [];
  const ids = found.map((r) => Number(r.id));
  yield* update(table, { embedSkippedAt: null }, (t) => inArray(t.id, ids));
  return found.map((r, i) => ({ kind: TRACE_KIND, refId: ids[i], inputHash: r.hash }));
}

export function getTraceById<H extends AnyStoreHandle>({ handle, id }: { handle: H; id: number }): On<H, Trace> {
  return read(handle, traceById(id));
}

export const listTracesQuerySchema = z
  .object({
    outcome: z.enum(["success", "failure"]).optional(),
    shard_type: z.string().trim().min(1).max(80).optional(),
    agent_id: z.string().trim().min(1).max(200).optional(),
    ...listViewQuerySchema,
    limit: limitSchema,
    offset: offsetSchema,
  })
  .strict();

/** The answer stops at DUALMIND_LIST_MAX_BYTES with `next_offset`; the dashboard (`budget: false`) pages by number and renders its page on the server. */
export function listTraces<H extends AnyStoreHandle>({ handle, filter, budget = true }: { handle: H; filter: z.input<typeof listTracesQuerySchema>; budget?: boolean }): On<H, { traces: Trace[]; total: number; next_offset: number | null }> {
  const f = listTracesQuerySchema.parse(filter);
  const matching = (t: { outcome: Column; shardType: Column; agentId: Column; id: Column }) =>
    and(
      visibleWhere({ kind: "trace", id: t.id, includeRetired: f.include_retired }),
      f.outcome === undefined ? undefined : eq(t.outcome, f.outcome),
      f.shard_type === undefined ? undefined : eq(t.shardType, sql`lower(${f.shard_type})`),
      f.agent_id === undefined ? undefined : eq(t.agentId, f.agent_id),
    );
  return read(handle, function* () {
    const traces = yield* selectTraces({ where: matching, limit: f.limit, offset: f.offset });
    const page = { traces, total: yield* count(table, matching) };
    return pageWithinBudget({ page, key: "traces", offset: f.offset, budget });
  }, { snapshot: true });
}

/** What goes with deleted traces: their vectors, their state (lib/index/item-state.ts itemsDeletedOp). */
function* tracesGoneOp(ids: number[]): Op<void> {
  if (ids.length === 0) return;
  yield* forgetVectors({ kind: TRACE_KIND, refIds: ids });
  yield* itemsDeletedOp({ kind: "trace", ids: ids.map(String) });
}

/** Delete the traces `where` picks and everything embedded for them; how many went. */
function* tracesDeleted(where: (t: { id: Column; lastSeenAt: Column }) => SQL | undefined): Op<number> {
  const gone = yield* remove(table, where);
  yield* tracesGoneOp(gone.map((r) => Number(r.id)));
  return gone.length;
}

/**
 * The ids of the traces a cap of `cap` deletes. Ranking with window functions
 * stays in SQL: every row's keep rank in one pass; the trace just written first.
 */
function retentionSurplusSql(strategy: ReflectionSettings["retention"]["strategy"], { keepId, cap }: { keepId: number; cap: number }): string {
  const order = strategy === "stratified" ? "stratum_rank, last_seen_at desc, id desc" : "last_seen_at desc, id desc";
  // keepId and cap are checked integers, written as literals.
  return `select id from (
     select id, row_number() over (order by id = ${Math.trunc(keepId)} desc, ${order}) as keep_rank from (
       select id, last_seen_at, row_number() over (partition by shard_type, outcome order by last_seen_at desc, id desc) as stratum_rank from reasoning_traces) ranked) kept
   where keep_rank > ${Math.trunc(cap)}`;
}

/**
 * Retention: traces unseen for `ttl_days` go; above `max_traces` the surplus
 * goes, oldest first or stratified (every shard/outcome stratum keeps its
 * newest rows in turn, so a rare failure kind is not crowded out by a
 * frequent success). `keepId` (the trace just written) is never deleted.
 */
function* traceRetentionApplied({ settings, now = Date.now(), keepId = 0 }: { settings: ReflectionSettings; now?: number; keepId?: number }): Op<{ deleted: number }> {
  const { ttl_days: ttlDays, max_traces: cap, strategy } = settings.retention;
  let deleted = 0;
  if (ttlDays !== null) {
    const cutoff = now - ttlDays * 86_400_000;
    deleted += yield* tracesDeleted((t) => and(lt(t.lastSeenAt, cutoff), ne(t.id, keepId)));
  }
  if (cap !== null && (yield* count(table)) > cap) {
    const surplus = yield* sqlRows<{ id: number | string }>(sql`delete from reasoning_traces where id in (${sql.raw(retentionSurplusSql(strategy, { keepId, cap }))}) returning id`);
    yield* tracesGoneOp(surplus.map((r) => Number(r.id)));
    deleted += surplus.length;
  }
  return { deleted };
}

/** Run retention now (CLI, admin): the settings in force and the deletes in one transaction. */
export function runTraceRetention<H extends AnyStoreHandle>({ handle }: { handle: H }): On<H, { deleted: number }> {
  return write(handle, function* () {
    return yield* traceRetentionApplied({ settings: yield* reflectionSettingsInForce() });
  });
}

/**
 * Re-render descriptors of an older version, in the caller's transaction
 * (re-embed calls this first, so the vectors it queues are made from today's
 * text). A row that now renders like another merges into it (counts added,
 * the later last_seen kept) and goes with its vectors and queue row.
 */
function* traceDescriptorsBackfilled(): Op<number> {
  const stale = yield* rows(table, { where: (t) => ne(t.descriptorVersion, DESCRIPTOR_VERSION), orderBy: (t) => [asc(t.id)], lock: "update" });
  for (const r of stale) {
    const { intentVerb, intentTarget, shardType, outcome, keyIssue } = r;
    const descriptor = renderTraceDescriptor({ intentVerb, intentTarget, shardType, outcome, keyIssue, keyFiles: decodedJson<string[]>(r.keyFiles), errorTags: decodedJson<string[]>(r.errorTags) });
    const hash = sha256Hex(descriptor);
    const twin = yield* row(table, (t) => and(eq(t.descriptorHash, hash), ne(t.id, r.id)));
    if (twin) {
      yield* update(table, { seenCount: sql`seen_count + ${r.seenCount}`, lastSeenAt: atLeast("last_seen_at", r.lastSeenAt, "bigint") }, (t) => eq(t.id, twin.id));
      yield* tracesDeleted((t) => eq(t.id, r.id));
    } else {
      yield* update(table, { summaryDescriptor: descriptor, descriptorHash: hash, descriptorVersion: DESCRIPTOR_VERSION }, (t) => eq(t.id, r.id));
      yield* rowWordsWritten({ table: TRACE_WORDS, ids: [r.id] });
    }
  }
  return stale.length;
}
