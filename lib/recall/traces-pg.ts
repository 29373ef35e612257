import { and, asc, count, desc, eq, getTableColumns, isNotNull, lt, ne, sql } from "drizzle-orm";
import type { z } from "zod";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx, type SqlRunner } from "../db/pg-store";
import { reasoningTraces } from "../db/schema/pg/store";
import { AppError } from "../errors";
import { tableEmbeddablePg, type PgEmbeddable } from "../index/embed-kinds-pg";
import { enqueueEmbeddingsPg } from "../index/embed-queue-pg";
import { forgetKindEmbeddingsPg } from "../index/vectors-pg";
import { DESCRIPTOR_VERSION, type TraceInput } from "./descriptors";
import { getReflectionSettingsPg } from "./settings-pg";
import type { ReflectionSettings } from "./settings";
import {
  backlogMatters,
  CATCH_UP_BATCH,
  listTracesQuerySchema,
  newTraceRow,
  prepareTrace,
  rerenderTraceDescriptor,
  retentionSurplusSql,
  traceBackpressure,
  traceOf,
  TRACE_KIND,
  type RecordTraceResult,
  type Trace,
  type VectorInfo,
} from "./traces";

/**
 * Reasoning traces on PostgreSQL (the SQLite twin is ./traces.ts, whose
 * descriptor, sanitizing, backpressure and retention rules this shares).
 * Two replicas recording the same descriptor at once end with one row seen
 * twice (insert … on conflict do nothing, then the counter), and a trace is
 * queued for its vector in its insert's transaction.
 */

/** The vector of a row's current text, if any (newest first): the SQLite twin is ./vector-info.ts. */
export function currentVectorInfoPg({ kind, table, inputHashColumn }: { kind: "trace" | "learning"; table: "reasoning_traces" | "learnings"; inputHashColumn: "descriptor_hash" | "handle_hash" }) {
  // Identifiers come from the literal types above, never from a request.
  const outer = sql.raw(`"${table}"."id"`);
  const hash = sql.raw(`"${table}"."${inputHashColumn}"`);
  return sql<VectorInfo | null>`(select json_build_object('fingerprintId', e.fingerprint_id, 'dim', e.dimension, 'task', e.task) from embeddings e
    where e.kind = ${kind} and e.ref_id = ${outer} and e.input_hash = ${hash} order by e.embedded_at desc limit 1)`;
}

const TRACE_SELECT = { ...getTableColumns(reasoningTraces), vector: currentVectorInfoPg({ kind: TRACE_KIND, table: "reasoning_traces", inputHashColumn: "descriptor_hash" }) };

/** Vectors are made from the stored descriptor; its hash is the input hash. */
export const traceEmbeddablePg: PgEmbeddable = {
  ...tableEmbeddablePg({
    kind: TRACE_KIND,
    artifactType: "reasoning_trace",
    table: "reasoning_traces",
    textColumn: "summary_descriptor",
    hashColumn: "descriptor_hash",
    versionColumn: "descriptor_version",
  }),
  backfill: ({ tx }) => backfillTraceDescriptorsPg(tx),
};

async function traceByIdIn(tx: PgStoreTx, id: number): Promise<Trace> {
  const [row] = await tx.select(TRACE_SELECT).from(reasoningTraces).where(eq(reasoningTraces.id, id));
  if (!row) throw new AppError("not_found", `no trace ${id}`);
  return traceOf(row);
}

/** Pending embed work, counted only up to `limit`: the check runs on every write and the queue can be long. */
async function pendingEmbeddingsUpToPg(tx: SqlRunner, limit: number): Promise<number> {
  const [{ n }] = await rowsOf<{ n: number }>(tx, sql`select count(*)::int as n from (select 1 from embed_queue where parked_at is null limit ${limit}) q`);
  return n;
}

/** Traces that backpressure stored without a vector, queued again (oldest first) once the backlog allows. */
async function catchUpSkippedPg(tx: PgStoreTx): Promise<{ kind: string; refId: number; inputHash: string }[]> {
  const rows = await tx
    .select({ id: reasoningTraces.id, hash: reasoningTraces.descriptorHash })
    .from(reasoningTraces)
    .where(isNotNull(reasoningTraces.embedSkippedAt))
    .orderBy(asc(reasoningTraces.embedSkippedAt), asc(reasoningTraces.id))
    .limit(CATCH_UP_BATCH)
    .for("update", { skipLocked: true });
  if (rows.length === 0) return [];
  await tx.execute(sql`update reasoning_traces set embed_skipped_at = null where id in ${rows.map((r) => r.id)}`);
  return rows.map((r) => ({ kind: TRACE_KIND, refId: r.id, inputHash: r.hash }));
}

/** Store a trace (sanitized) or bump the one with the same descriptor; see recordTrace (./traces.ts). */
export async function recordTracePg({ handle, agentId, input }: { handle: PgStoreHandle; agentId: string; input: TraceInput }): Promise<RecordTraceResult> {
  const { fields, descriptor, hash } = prepareTrace(input);
  return withStoreTx({ handle }, async (tx) => {
    const settings = await getReflectionSettingsPg(tx);
    const now = Date.now();
    const bump = async (): Promise<RecordTraceResult | null> => {
      const [seen] = await tx
        .update(reasoningTraces)
        .set({ seenCount: sql`${reasoningTraces.seenCount} + 1`, lastSeenAt: now })
        .where(eq(reasoningTraces.descriptorHash, hash))
        .returning({ id: reasoningTraces.id });
      return seen ? { trace: await traceByIdIn(tx, seen.id), deduped: true, embedding: "unchanged", retained: { deleted: 0 } } : null;
    };
    const deduped = await bump();
    if (deduped) return deduped;
    const [skipped] = await tx.select({ id: reasoningTraces.id }).from(reasoningTraces).where(isNotNull(reasoningTraces.embedSkippedAt)).limit(1);
    const backlog = backlogMatters({ outcome: fields.outcome, hasSkipped: skipped !== undefined }) ? await pendingEmbeddingsUpToPg(tx, settings.backlog_watermark + 1) : 0;
    const { skip, catchUp } = traceBackpressure({ outcome: fields.outcome, backlog, watermark: settings.backlog_watermark });
    const [inserted] = await tx
      .insert(reasoningTraces)
      .values(newTraceRow({ agentId, fields, descriptor, hash, skip, now }))
      .onConflictDoNothing({ target: reasoningTraces.descriptorHash })
      .returning({ id: reasoningTraces.id });
    // Another replica inserted the same descriptor meanwhile (its commit ended our wait): count this sighting on its row.
    if (!inserted) return (await bump())!;
    if (!skip) await enqueueEmbeddingsPg({ tx, items: [{ kind: TRACE_KIND, refId: inserted.id, inputHash: hash }, ...(skipped && catchUp ? await catchUpSkippedPg(tx) : [])], now });
    const retained = await applyTraceRetentionPg({ tx, settings, now, keepId: inserted.id });
    return { trace: await traceByIdIn(tx, inserted.id), deduped: false, embedding: skip ? "skipped_backpressure" : "queued", retained };
  });
}

export async function getTraceByIdPg({ handle, id }: { handle: PgStoreHandle; id: number }): Promise<Trace> {
  return withStoreTx({ handle, readOnly: true }, (tx) => traceByIdIn(tx, id));
}

export async function listTracesPg({ handle, filter }: { handle: PgStoreHandle; filter: z.input<typeof listTracesQuerySchema> }): Promise<{ traces: Trace[]; total: number }> {
  const f = listTracesQuerySchema.parse(filter);
  const where = and(
    f.outcome === undefined ? undefined : eq(reasoningTraces.outcome, f.outcome),
    f.shard_type === undefined ? undefined : eq(reasoningTraces.shardType, sql`lower(${f.shard_type})`),
    f.agent_id === undefined ? undefined : eq(reasoningTraces.agentId, f.agent_id),
  );
  return withStoreTx({ handle, readOnly: true }, async (tx) => {
    const rows = await tx.select(TRACE_SELECT).from(reasoningTraces).where(where).orderBy(desc(reasoningTraces.lastSeenAt), desc(reasoningTraces.id)).limit(f.limit).offset(f.offset);
    const [{ total }] = await tx.select({ total: count() }).from(reasoningTraces).where(where);
    return { traces: rows.map(traceOf), total };
  });
}

async function deleteTracesPg(tx: SqlRunner, ids: number[]): Promise<number> {
  if (ids.length === 0) return 0;
  await forgetKindEmbeddingsPg({ tx, kind: TRACE_KIND, refIds: ids });
  return (await rowsOf(tx, sql`delete from reasoning_traces where id = any(${`{${ids.join(",")}}`}::bigint[]) returning id`)).length;
}

/**
 * Re-render descriptors of an older version, in the caller's transaction (the
 * twin of backfillTraceDescriptors, ./traces.ts, whose rendering this shares):
 * a re-embed calls it first, so the vectors it queues are made from today's
 * text. A row that now renders like another merges into it (counts added, the
 * later last_seen kept) and goes with its vectors and queue row.
 */
export async function backfillTraceDescriptorsPg(tx: PgStoreTx): Promise<number> {
  const stale = await tx.select().from(reasoningTraces).where(ne(reasoningTraces.descriptorVersion, DESCRIPTOR_VERSION)).orderBy(asc(reasoningTraces.id)).for("update");
  for (const r of stale) {
    const { descriptor, hash } = rerenderTraceDescriptor(r);
    const [twin] = await tx
      .select({ id: reasoningTraces.id })
      .from(reasoningTraces)
      .where(and(eq(reasoningTraces.descriptorHash, hash), ne(reasoningTraces.id, r.id)))
      .limit(1);
    if (twin) {
      await tx
        .update(reasoningTraces)
        .set({ seenCount: sql`${reasoningTraces.seenCount} + ${r.seenCount}`, lastSeenAt: sql`greatest(${reasoningTraces.lastSeenAt}, ${r.lastSeenAt})` })
        .where(eq(reasoningTraces.id, twin.id));
      await deleteTracesPg(tx, [r.id]);
    } else {
      await tx.update(reasoningTraces).set({ summaryDescriptor: descriptor, descriptorHash: hash, descriptorVersion: DESCRIPTOR_VERSION }).where(eq(reasoningTraces.id, r.id));
    }
  }
  return stale.length;
}

/** Retention (ttl, then the cap), in the caller's transaction: the rules of applyTraceRetention (./traces.ts). */
export async function applyTraceRetentionPg({ tx, settings, now = Date.now(), keepId = 0 }: { tx: PgStoreTx; settings: ReflectionSettings; now?: number; keepId?: number }): Promise<{ deleted: number }> {
  const { ttl_days: ttlDays, max_traces: cap, strategy } = settings.retention;
  let deleted = 0;
  if (ttlDays !== null) {
    const cutoff = now - ttlDays * 86_400_000;
    const old = await tx
      .select({ id: reasoningTraces.id })
      .from(reasoningTraces)
      .where(and(lt(reasoningTraces.lastSeenAt, cutoff), ne(reasoningTraces.id, keepId)));
    deleted += await deleteTracesPg(
      tx,
      old.map((r) => r.id),
    );
  }
  if (cap !== null) {
    const [{ n }] = await tx.select({ n: count() }).from(reasoningTraces);
    if (n > cap) {
      // keepId and cap are numbers (checked integers), written as literals in the shared statement.
      const surplus = await rowsOf<{ id: string }>(tx, sql.raw(retentionSurplusSql(strategy, { keepId: String(Math.trunc(keepId)), cap: String(Math.trunc(cap)) })));
      deleted += await deleteTracesPg(
        tx,
        surplus.map((r) => Number(r.id)),
      );
    }
  }
  return { deleted };
}

/** Run retention now (the CLI; see runTraceRetention, ./traces.ts): the settings in force and the deletes in one transaction. */
export async function runTraceRetentionPg({ handle }: { handle: PgStoreHandle }): Promise<{ deleted: number }> {
  return withStoreTx({ handle }, async (tx) => applyTraceRetentionPg({ tx, settings: await getReflectionSettingsPg(tx) }));
}
