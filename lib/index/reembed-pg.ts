import { sql, type SQL } from "drizzle-orm";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx, type SqlRunner } from "../db/pg-store";
import { comparisonOf, type ModelComparison } from "../embed/compare";
import { getEmbedder } from "../embed/model";
import type { Fingerprint } from "../embed/providers";
import { auditedGate, describeIntentOf, reembedJobOf, reembedProgressOf, type ReembedEstimate, type ReembedIntent, type ReembedJob, type ReembedProgress, type StartReembedResult, type SwitchGate } from "../embed/reembed";
import { AppError } from "../errors";
import { appendAuditPg } from "../governance/audit";
import { log } from "../log";
import { getPgEmbeddable, pgEmbeddableKinds } from "./embed-kinds-pg";
import { vectorNeighboursPg } from "./vectors-pg";

/**
 * Re-embed on PostgreSQL (the twin of lib/embed/reembed.ts; same answers), safe with N replicas: the active model and
 * the job are store_meta rows, the job's items queue rows up to `queue_id_until` (ids, not clocks: replicas' clocks
 * differ), embedded by every replica's workers. Start, finish and switch take a per-store advisory lock, so replicas
 * never start two jobs or switch twice; the switch is one transaction.
 */

const JOB_KEY = "reembed_job";
const ACTIVE_KEY = "active_fingerprint";

type PgReembedJob = ReembedJob & { /** Queue rows with an id up to this are the job's own. */ queue_id_until: number };

/** One lock per store for the job's state changes (start, finish, switch), across replicas. */
async function lockReembed(tx: SqlRunner): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended('dualmind:reembed:' || current_schema(), 0))`);
}

async function readMetaPg(tx: SqlRunner, key: string): Promise<string | null> {
  const [row] = await rowsOf<{ value: string }>({ tx, query: sql`select value from store_meta where key = ${key}` });
  return row?.value ?? null;
}

async function writeMetaPg(tx: SqlRunner, key: string, value: string): Promise<void> {
  await tx.execute(sql`insert into store_meta (key, value) values (${key}, ${value}) on conflict (key) do update set value = excluded.value`);
}

/** The fingerprint whose vectors serve this store, or null before its first vectors (a 0005 store: migration 0006 names it). */
export async function readActiveFingerprintPg(tx: SqlRunner): Promise<string | null> {
  return readMetaPg(tx, ACTIVE_KEY);
}

/** A store's first vectors (or re-embed) make the configured model its active one; an active model is never replaced here. */
export async function adoptActiveFingerprintPg({ tx, fingerprintId }: { tx: SqlRunner; fingerprintId: string }): Promise<void> {
  await tx.execute(sql`insert into store_meta (key, value) values (${ACTIVE_KEY}, ${fingerprintId}) on conflict (key) do nothing`);
}

async function readJobPg(tx: SqlRunner): Promise<PgReembedJob | null> {
  const value = await readMetaPg(tx, JOB_KEY);
  if (value === null) return null;
  const stored = JSON.parse(value) as Parameters<typeof reembedJobOf>[0] & { queue_id_until?: number; queueIdUntil?: number };
  return { ...reembedJobOf(stored), queue_id_until: stored.queue_id_until ?? stored.queueIdUntil ?? 0 };
}

async function writeJobPg(tx: SqlRunner, job: PgReembedJob): Promise<void> {
  await writeMetaPg(tx, JOB_KEY, JSON.stringify(job));
}

/** The job's items still queued (parked ones too: they still need their vector). */
async function ownItemsRemainingPg(tx: SqlRunner, job: PgReembedJob): Promise<number> {
  const [{ n }] = await rowsOf<{ n: number }>({ tx, query: sql`select count(*)::int as n from embed_queue where id <= ${job.queue_id_until}` });
  return n;
}

/** Whether any of the job's items is still queued: one probe of the queue's primary key (a worker asks after every batch). */
async function ownItemsLeftPg(tx: SqlRunner, job: PgReembedJob): Promise<boolean> {
  const [{ left }] = await rowsOf<{ left: boolean }>({ tx, query: sql`select exists (select 1 from embed_queue where id <= ${job.queue_id_until}) as left` });
  return left;
}

/**
 * `(kind, ref_id, input_hash)` of every artifact without a vector of `target`
 * from its current text, over the registered kinds. A kind that cannot list
 * its artifacts (no missingVectors) is covered by its vectors instead: each
 * item with a vector of another model and none of `target` is included, so a
 * switch never deletes the only vector an item has.
 */
function needingVectorsSql(target: string): SQL {
  const listed = pgEmbeddableKinds().filter((kind) => getPgEmbeddable(kind)?.missingVectors);
  const parts = listed.map((kind) => sql`select ${kind}::text as kind, m.ref_id, m.input_hash from (${getPgEmbeddable(kind)!.missingVectors!(target)}) m`);
  const unlisted = listed.length ? sql` and e.kind not in ${listed}` : sql``;
  parts.push(sql`select u.kind, u.ref_id, u.input_hash from (select distinct on (e.kind, e.ref_id) e.kind, e.ref_id, e.input_hash from embeddings e
    where e.fingerprint_id <> ${target}${unlisted} and not exists (select 1 from embeddings t where t.kind = e.kind and t.ref_id = e.ref_id and t.fingerprint_id = ${target})
    order by e.kind, e.ref_id, e.embedded_at desc) u`);
  return sql.join(parts, sql` union all `);
}

async function countNeedingVectorsPg(tx: SqlRunner, target: string): Promise<number> {
  const [{ n }] = await rowsOf<{ n: number }>({ tx, query: sql`select count(*)::int as n from (${needingVectorsSql(target)}) x` });
  return n;
}

/** Queue every artifact that needs a vector of `target` (one statement); an item already queued is started over. Returns how many. */
async function enqueueNeedingVectorsPg(tx: SqlRunner, target: string, now: number): Promise<number> {
  const rows = await rowsOf<{ id: string }>({
    tx,
    query: sql`insert into embed_queue (kind, ref_id, input_hash, enqueued_at, next_attempt_at) select x.kind, x.ref_id, x.input_hash, ${now}, ${now} from (${needingVectorsSql(target)}) x
      on conflict (kind, ref_id) do update set input_hash = excluded.input_hash, attempts = 0, next_attempt_at = excluded.next_attempt_at,
        last_error = null, parked_at = null, claimed_by = null, claimed_until = null
      returning id`,
  });
  return rows.length;
}

async function progressOf(tx: SqlRunner, job: PgReembedJob): Promise<ReembedProgress> {
  return reembedProgressOf({ job, queued: job.status === "done" ? 0 : await ownItemsRemainingPg(tx, job) });
}

/** The store's re-embed, running or the last one finished; null if there never was one. */
export async function getReembedProgressPg({ handle }: { handle: PgStoreHandle }): Promise<ReembedProgress | null> {
  return withStoreTx({ handle, readOnly: true, snapshot: true, work: async (tx) => {
    const job = await readJobPg(tx);
    return job ? progressOf(tx, job) : null;
  } });
}

/** The active model, or the configured one for a store that has none yet (read-only: adopting it is the writer's). */
async function activeOrConfigured(tx: SqlRunner, configured: Fingerprint): Promise<string> {
  return (await readActiveFingerprintPg(tx)) ?? configured.id;
}

/** Every registered kind's backfill (the twin of the loop over Embeddable.backfill in startReembed), in the caller's transaction: how many rows changed. */
export async function backfillEmbeddablesPg(tx: PgStoreTx): Promise<number> {
  let backfilled = 0;
  for (const kind of pgEmbeddableKinds()) backfilled += (await getPgEmbeddable(kind)?.backfill?.({ tx })) ?? 0;
  return backfilled;
}

/** What a re-embed would do, before starting it (the twin of estimateReembed). */
export async function estimateReembedPg({ handle, configured, onlyStale, ratePerSec }: { handle: PgStoreHandle; configured: Fingerprint; onlyStale: boolean; ratePerSec?: number }): Promise<ReembedEstimate> {
  return withStoreTx({ handle, readOnly: true, snapshot: true, work: (tx) => estimateIn(tx, { configured, onlyStale, ratePerSec }) });
}

async function estimateIn(tx: SqlRunner, { configured, onlyStale, ratePerSec }: { configured: Fingerprint; onlyStale: boolean; ratePerSec?: number }): Promise<ReembedEstimate> {
  const modelChanged = (await activeOrConfigured(tx, configured)) !== configured.id;
  if (onlyStale && modelChanged) {
    throw new AppError("conflict", "the configured model differs from the store's active model: only a full re-embed can switch models");
  }
  const toEmbed = await countNeedingVectorsPg(tx, configured.id);
  return { to_embed: toEmbed, target_fingerprint_id: configured.id, model_changed: modelChanged, estimated_seconds: ratePerSec ? toEmbed / ratePerSec : null };
}

/** What a re-embed button would do, in counts, for its confirmation (the twin of describeReembedIntent, same wording). */
export async function describeReembedIntentPg({ handle, configured, intent }: { handle: PgStoreHandle; configured: Fingerprint; intent: ReembedIntent }): Promise<string> {
  return withStoreTx({ handle, readOnly: true, snapshot: true, work: async (tx) => {
    const job = await readJobPg(tx);
    return describeIntentOf<Promise<string>>({
      configured,
      intent,
      job,
      oldVectors: async () =>
        (
          await rowsOf<{ old: number }>({
            tx,
            query: sql`select ((select count(*) from chunk_embeddings where fingerprint_id <> ${job!.target_fingerprint_id}) + (select count(*) from embeddings where fingerprint_id <> ${job!.target_fingerprint_id}))::int as old`,
          })
        )[0].old,
      progress: () => progressOf(tx, job!),
      estimate: (onlyStale) => estimateIn(tx, { configured, onlyStale }),
    });
  } });
}

/**
 * Start (or resume) a re-embed towards the configured model (the twin of
 * startReembed): one transaction under the store's re-embed lock queues the
 * items, writes the job and its audit row. A job of the same target that is
 * not done is resumed, never started twice.
 */
export async function startReembedPg({ handle, configured, onlyStale, holdSwitch = false, actor }: { handle: PgStoreHandle; configured: Fingerprint; onlyStale: boolean; holdSwitch?: boolean; actor: string }): Promise<StartReembedResult> {
  const target = `store:${handle.store}`;
  const started = await withStoreTx({ handle, work: async (tx): Promise<StartReembedResult | null> => {
    await lockReembed(tx);
    await adoptActiveFingerprintPg({ tx, fingerprintId: configured.id });
    // Refuse first (e.g. stale-only across a model change), then backfill: texts rendered by an older version of
    // their kind's rules are re-rendered, so the items queued below get vectors of the current text (as on SQLite).
    const estimate = await estimateIn(tx, { configured, onlyStale });
    const backfilled = await backfillEmbeddablesPg(tx);
    if (backfilled > 0) await appendAuditPg({ db: tx, entry: { actor, action: "store.reembed.backfill", target, details: { backfilled } } });
    const { model_changed: modelChanged, to_embed: toEmbed } = backfilled > 0 ? await estimateIn(tx, { configured, onlyStale }) : estimate;
    const existing = await readJobPg(tx);
    const resume = existing !== null && existing.status !== "done" && existing.target_fingerprint_id === configured.id;
    if (!resume && toEmbed === 0 && !modelChanged) {
      return { started: false, reason: `every item already has a current vector from ${configured.provider}:${configured.model}` };
    }
    // A resume takes on what needs a vector now: what the job had already done, plus these items.
    const doneBefore = resume ? existing.total - Math.min(existing.total, await ownItemsRemainingPg(tx, existing)) : 0;
    const now = Date.now();
    const queued = await enqueueNeedingVectorsPg(tx, configured.id, now);
    // The queue just grew by a whole store: fresh statistics let the workers' claims walk the ready index (LIMIT batch)
    // instead of sorting every queued row per batch, which the planner picks on a small queue's stale statistics.
    if (queued > 1_000) await tx.execute(sql`analyze embed_queue`);
    const [{ maxId }] = await rowsOf<{ maxId: string | null }>({ tx, query: sql`select max(id) as "maxId" from embed_queue` });
    const queueIdUntil = Number(maxId ?? 0);
    const job: PgReembedJob = resume
      ? { ...existing, total: doneBefore + queued, queued_until: now, queue_id_until: queueIdUntil }
      : { target_fingerprint_id: configured.id, only_stale: onlyStale, hold_switch: holdSwitch, total: queued, started_at: now, started_by: actor, status: "running", queued_until: now, finished_at: null, queue_id_until: queueIdUntil };
    await writeJobPg(tx, job);
    await appendAuditPg({ db: tx, entry: { actor, action: resume ? "store.reembed.resume" : "store.reembed.start", target, details: { target: configured.id, onlyStale, toEmbed: queued } } });
    return null;
  } });
  if (started) return started;
  // A model switch with every new vector already there (or an empty store) finishes at once.
  await finishReembedIfDonePg({ handle, actor });
  return { started: true, job: (await getReembedProgressPg({ handle }))! };
}

/**
 * Finish a re-embed whose own items all have their new vector (the twin of finishReembedIfDone): a model change
 * switches once every artifact has a vector of the target, in one transaction; a held switch waits for `force`.
 * Called by every replica's worker after a batch, under the store's re-embed lock: exactly one finishes.
 */
export async function finishReembedIfDonePg({ handle, actor = "system:embed-worker", force = false, gate }: { handle: PgStoreHandle; actor?: string; force?: boolean; gate?: SwitchGate }): Promise<boolean> {
  const open = await withStoreTx({ handle, readOnly: true, work: async (tx) => {
    const job = await readJobPg(tx);
    return job !== null && job.status !== "done";
  } });
  if (!open) return false;
  const target = `store:${handle.store}`;
  return withStoreTx({ handle, work: async (tx) => {
    await lockReembed(tx);
    const job = await readJobPg(tx);
    if (!job || job.status === "done") return false;
    if (await ownItemsLeftPg(tx, job)) return false;
    const finished: PgReembedJob = { ...job, status: "done", finished_at: Date.now() };
    const active = await readActiveFingerprintPg(tx);
    if (active === job.target_fingerprint_id) {
      await writeJobPg(tx, finished);
      await appendAuditPg({ db: tx, entry: { actor, action: "store.reembed.done", target, details: { target: job.target_fingerprint_id, embedded: job.total } } });
      return true;
    }
    if (job.hold_switch && !force) {
      if (job.status !== "waiting_switch") await writeJobPg(tx, { ...job, status: "waiting_switch" });
      return false;
    }
    const [{ pending }] = await rowsOf<{ pending: number }>({ tx, query: sql`select count(*)::int as pending from embed_queue where parked_at is null` });
    if (pending > 0) return false;
    // Artifacts still without a vector of the target with nothing queued for them (a replica still configured with the
    // old model embedded them, say) are queued now; the switch waits for them.
    const missing = await countNeedingVectorsPg(tx, job.target_fingerprint_id);
    if (missing > 0) {
      const requeued = await enqueueNeedingVectorsPg(tx, job.target_fingerprint_id, Date.now());
      log("warn", "re-embed: artifacts without a vector of the new model queued again before the switch", { store: handle.store, requeued });
      return false;
    }
    const dropped = (
      await rowsOf<{ id: string }>({
        tx,
        query: sql`select distinct fingerprint_id as id from (select fingerprint_id from chunk_embeddings where fingerprint_id <> ${job.target_fingerprint_id}
          union all select fingerprint_id from embeddings where fingerprint_id <> ${job.target_fingerprint_id}) o order by 1`,
      })
    ).map((r) => r.id);
    // Deleting a large store's old vectors can outlast the statement limit; cancelled, the whole switch would roll back and be retried for ever.
    await tx.execute(sql`select set_config('statement_timeout', '0', true)`);
    await writeMetaPg(tx, ACTIVE_KEY, job.target_fingerprint_id);
    await tx.execute(sql`delete from chunk_embeddings where fingerprint_id <> ${job.target_fingerprint_id}`);
    await tx.execute(sql`delete from embeddings where fingerprint_id <> ${job.target_fingerprint_id}`);
    await writeJobPg(tx, finished);
    await appendAuditPg({ db: tx, entry: { actor, action: "store.reembed.switch", target, details: { active: job.target_fingerprint_id, dropped, ...(gate ? { gate: auditedGate(gate) } : {}) } } });
    return true;
  } });
}

/** An admin's switch of a held re-embed; 409 until every artifact has its new vector (the twin of switchHeldReembed). */
export async function switchHeldReembedPg({ handle, actor, gate }: { handle: PgStoreHandle; actor: string; gate?: SwitchGate }): Promise<void> {
  const job = await withStoreTx({ handle, readOnly: true, work: readJobPg });
  if (!job || job.status === "done") throw new AppError("conflict", "no re-embed in progress");
  if (!(await finishReembedIfDonePg({ handle, actor, force: true, gate }))) {
    throw new AppError("conflict", "the re-embed is not finished yet: every artifact needs its new vector before the switch");
  }
}

const LOG_KEEP = 1000;

/** Remember a vector query and what the active model answered (the last 1,000 are kept), for compareCandidateModelPg. */
export async function logVectorQueryPg({ tx, q, mode, fingerprintId, resultIds }: { tx: PgStoreTx; q: string; mode: string; fingerprintId: string; resultIds: number[] }): Promise<void> {
  const ids = `{${resultIds.map((id) => String(Math.trunc(id))).join(",")}}`;
  const [{ id }] = await rowsOf<{ id: string }>({ tx, query: sql`insert into search_log (ts, q, mode, fingerprint_id, result_ids) values (${Date.now()}, ${q.slice(0, 2000)}, ${mode}, ${fingerprintId}, ${ids}::bigint[]) returning id` });
  if (Number(id) % 100 === 0) await tx.execute(sql`delete from search_log where id <= ${Number(id) - LOG_KEEP}`);
}

/**
 * Before switching models (the twin of compareCandidateModel): replay the
 * last `n` logged vector queries against the candidate (the configured
 * model, whose vectors the re-embed is building) and measure overlap@k with
 * what the active model answered. Read-only.
 */
export async function compareCandidateModelPg({ handle, n = 50, k = 10 }: { handle: PgStoreHandle; n?: number; k?: number }): Promise<ModelComparison> {
  const { provider, fingerprint } = getEmbedder();
  const candidate = await fingerprint;
  const { active, have, logs } = await withStoreTx({ handle, readOnly: true, snapshot: true, work: async (tx) => {
    const active = await activeOrConfigured(tx, candidate);
    const [{ have }] = await rowsOf<{ have: boolean }>({ tx, query: sql`select exists (select 1 from chunk_embeddings where fingerprint_id = ${candidate.id}) as have` });
    const logs = await rowsOf<{ q: string; ids: (string | number)[] }>({ tx, query: sql`select q, result_ids as ids from search_log where fingerprint_id = ${active} order by id desc limit ${n}` });
    return { active, have, logs };
  } });
  if (active === candidate.id) {
    throw new AppError("conflict", "the configured model is already the active one: configure the candidate model and start a re-embed (hold_switch) first");
  }
  if (!have) throw new AppError("conflict", "the candidate model has no vectors yet: start a re-embed and let it run");
  const perQuery: ModelComparison["per_query"] = [];
  for (const entry of logs) {
    const activeIds = entry.ids.map(Number).slice(0, k);
    if (activeIds.length === 0) continue;
    const [query] = await provider.embed([entry.q], "query");
    const knn = await withStoreTx({ handle, readOnly: true, work: (tx) => vectorNeighboursPg({ tx, fingerprintId: candidate.id, query, k, where: [] }) });
    const candidateIds = knn.ok ? knn.hits.map((h) => h.id) : [];
    const overlap = candidateIds.filter((id) => activeIds.includes(id)).length / Math.min(k, activeIds.length);
    perQuery.push({ q: entry.q, overlap, active: activeIds, candidate: candidateIds });
  }
  return comparisonOf({ activeFingerprintId: active, candidateFingerprintId: candidate.id, k, perQuery, progress: await getReembedProgressPg({ handle }) });
}
