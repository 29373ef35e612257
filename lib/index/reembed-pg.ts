import { sql, type SQL } from "drizzle-orm";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx, type SqlRunner } from "../db/pg-store";
import { compareWith, type ModelComparison } from "../embed/compare";
import { describeReembedIntentOn, estimateReembedOn, finishReembedIfDoneOn, getReembedProgressOn, onPg, startReembedOn, switchHeldReembedOn, type ReembedEngine } from "../embed/reembed";
import { log } from "../log";
import { getPgEmbeddable, pgEmbeddableKinds } from "./embed-kinds-pg";
import { vectorNeighboursPg } from "./vectors-pg";

/**
 * Re-embed's PostgreSQL engine (the rules are lib/embed/reembed.ts's): the active model is a store_meta row, the
 * vectors are in chunk_embeddings and embeddings, and the job's own items are the queue rows up to `queue_id_until`
 * (ids, not clocks: replicas' clocks differ), embedded by every replica's workers.
 */

const ACTIVE_KEY = "active_fingerprint";

/** The fingerprint whose vectors serve this store, or null before its first vectors (a 0005 store: migration 0006 names it). */
export async function readActiveFingerprintPg(tx: SqlRunner): Promise<string | null> {
  const [row] = await rowsOf<{ value: string }>({ tx, query: sql`select value from store_meta where key = ${ACTIVE_KEY}` });
  return row?.value ?? null;
}

/** A store's first vectors (or re-embed) make the configured model its active one; an active model is never replaced here. */
export async function adoptActiveFingerprintPg({ tx, fingerprintId }: { tx: SqlRunner; fingerprintId: string }): Promise<void> {
  await tx.execute(sql`insert into store_meta (key, value) values (${ACTIVE_KEY}, ${fingerprintId}) on conflict (key) do nothing`);
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

/** Every registered kind's backfill, in the caller's transaction: how many rows changed. */
async function backfillEmbeddablesPg(tx: PgStoreTx): Promise<number> {
  let backfilled = 0;
  for (const kind of pgEmbeddableKinds()) backfilled += (await getPgEmbeddable(kind)?.backfill?.({ tx })) ?? 0;
  return backfilled;
}

const PG: ReembedEngine = {
  readActive: () => onPg(readActiveFingerprintPg),
  adopt: (configured) => onPg((tx) => adoptActiveFingerprintPg({ tx, fingerprintId: configured.id })),
  backfill: () => onPg(backfillEmbeddablesPg),
  countNeeding: (target) => onPg((tx) => countNeedingVectorsPg(tx, target)),
  enqueueNeeding: (target, now) =>
    onPg(async (tx) => {
      const queued = await enqueueNeedingVectorsPg(tx, target, now);
      // The queue just grew by a whole store: fresh statistics let the workers' claims walk the ready index (LIMIT batch)
      // instead of sorting every queued row per batch, which the planner picks on a small queue's stale statistics.
      if (queued > 1_000) await tx.execute(sql`analyze embed_queue`);
      return queued;
    }),
  window: () =>
    onPg(async (tx) => {
      const [{ maxId }] = await rowsOf<{ maxId: string | null }>({ tx, query: sql`select max(id) as "maxId" from embed_queue` });
      return { queue_id_until: Number(maxId ?? 0) };
    }),
  oldVectors: (target) =>
    onPg(async (tx) => (await rowsOf<{ old: number }>({ tx, query: sql`select ((select count(*) from chunk_embeddings where fingerprint_id <> ${target}) + (select count(*) from embeddings where fingerprint_id <> ${target}))::int as old` }))[0].old),
  // Artifacts without a vector of the target with nothing queued for them (a replica still configured with the old
  // model embedded them, say) are queued again; the switch waits for them.
  missingBeforeSwitch: (target, store) =>
    onPg(async (tx) => {
      const missing = await countNeedingVectorsPg(tx, target);
      if (missing > 0) log("warn", "re-embed: artifacts without a vector of the new model queued again before the switch", { store, requeued: await enqueueNeedingVectorsPg(tx, target, Date.now()) });
      return missing;
    }),
  switchTo: (target) =>
    onPg(async (tx) => {
      const dropped = (
        await rowsOf<{ id: string }>({
          tx,
          query: sql`select distinct fingerprint_id as id from (select fingerprint_id from chunk_embeddings where fingerprint_id <> ${target}
            union all select fingerprint_id from embeddings where fingerprint_id <> ${target}) o order by 1`,
        })
      ).map((r) => r.id);
      // Deleting a large store's old vectors can outlast the statement limit; cancelled, the whole switch would roll back and be retried for ever.
      await tx.execute(sql`select set_config('statement_timeout', '0', true)`);
      await tx.execute(sql`insert into store_meta (key, value) values (${ACTIVE_KEY}, ${target}) on conflict (key) do update set value = excluded.value`);
      await tx.execute(sql`delete from chunk_embeddings where fingerprint_id <> ${target}`);
      await tx.execute(sql`delete from embeddings where fingerprint_id <> ${target}`);
      return dropped;
    }),
};

type PgArgs<F extends (a: never) => unknown> = Omit<Parameters<F>[0], "engine" | "handle" | "finish" | "switched"> & { handle: PgStoreHandle };
export const getReembedProgressPg = ({ handle }: { handle: PgStoreHandle }) => getReembedProgressOn(handle);
export const estimateReembedPg = (a: PgArgs<typeof estimateReembedOn>) => estimateReembedOn({ engine: PG, ...a });
export const describeReembedIntentPg = (a: PgArgs<typeof describeReembedIntentOn>) => describeReembedIntentOn({ engine: PG, ...a });
export const finishReembedIfDonePg = (a: PgArgs<typeof finishReembedIfDoneOn>) => finishReembedIfDoneOn({ engine: PG, ...a });
export const startReembedPg = (a: PgArgs<typeof startReembedOn>) => startReembedOn({ engine: PG, ...a, finish: finishReembedIfDonePg });
export const switchHeldReembedPg = (a: PgArgs<typeof switchHeldReembedOn>) => switchHeldReembedOn({ engine: PG, ...a });

const LOG_KEEP = 1000;

/** Remember a vector query and what the active model answered (the last 1,000 are kept), for compareCandidateModelPg. */
export async function logVectorQueryPg({ tx, q, mode, fingerprintId, resultIds }: { tx: PgStoreTx; q: string; mode: string; fingerprintId: string; resultIds: number[] }): Promise<void> {
  const ids = `{${resultIds.map((id) => String(Math.trunc(id))).join(",")}}`;
  const [{ id }] = await rowsOf<{ id: string }>({ tx, query: sql`insert into search_log (ts, q, mode, fingerprint_id, result_ids) values (${Date.now()}, ${q.slice(0, 2000)}, ${mode}, ${fingerprintId}, ${ids}::bigint[]) returning id` });
  if (Number(id) % 100 === 0) await tx.execute(sql`delete from search_log where id <= ${Number(id) - LOG_KEEP}`);
}

/** Before switching models: compareCandidateModel's replay of the logged queries against the candidate (lib/embed/compare.ts). */
export async function compareCandidateModelPg({ handle, n = 50, k = 10 }: { handle: PgStoreHandle; n?: number; k?: number }): Promise<ModelComparison> {
  return compareWith({
    k,
    read: (candidate) =>
      withStoreTx({ handle, readOnly: true, snapshot: true, work: async (tx) => {
        const active = (await readActiveFingerprintPg(tx)) ?? candidate.id;
        const [{ have }] = await rowsOf<{ have: boolean }>({ tx, query: sql`select exists (select 1 from chunk_embeddings where fingerprint_id = ${candidate.id}) as have` });
        const logs = await rowsOf<{ q: string; ids: (string | number)[] }>({ tx, query: sql`select q, result_ids as ids from search_log where fingerprint_id = ${active} order by id desc limit ${n}` });
        return { active, have, logs: logs.map((l) => ({ q: l.q, ids: l.ids.map(Number) })) };
      } }),
    knn: async (candidate, query) => {
      const knn = await withStoreTx({ handle, readOnly: true, work: (tx) => vectorNeighboursPg({ tx, fingerprintId: candidate.id, query, k, where: [] }) });
      return knn.ok ? knn.hits.map((h) => h.id) : [];
    },
    progress: () => getReembedProgressPg({ handle }),
  });
}
