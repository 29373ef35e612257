import { sql } from "drizzle-orm";
import { getConfig } from "../../config";
import pgDriver from "pg";
import { getPg, type PgHandle } from "../../db/pg";
import { activeStoreNamesPg } from "../../db/store-lifecycle";
import { rowsOf, withStoreTx, type PgStoreHandle } from "../../db/pg-store";
import { measureRecallStats, saveStoreSnapshots, snapshotOf, type StoreSnapshot } from "../snapshots";
import type { MetricsRead } from "../series";
import type { KindCounts, LiveCounts } from "../../embed/counters";
import { assembleStoreStatus, configuredFingerprint, embeddingStatusOf, providerForStatus, reembedStateOf, type EmbeddingStatus, type StoreStatus } from "../../embed/status";
import { getEmbedBacklogPg, readStaleClaimsPg } from "../../index/embed-queue-pg";
import { listParkedEmbeddings } from "../../embed/queue";
import { listStoreNamesPg, openStorePg } from "../../stores/engines/pg";
import { EXACT_SCAN_LIMIT, pgvectorSupportPg } from "../../index/vectors-pg";
import { getReembedProgressPg, readActiveFingerprintPg } from "../../index/reembed-pg";
import { listWorkerStates, type WorkerState } from "../../embed/worker-state";

/**
 * What the Health and Observability pages and the metrics loop measure and
 * read on PostgreSQL: the history tables are written once over the ledger
 * port (lib/metrics/rollups.ts, snapshots.ts); the reads of a chart need
 * PostgreSQL's numbers as numbers, and a store's status is counted from its
 * schema rather than SQLite's live counters.
 */

/** int8 sums and numeric averages as JS numbers (node-pg gives strings for both by default), for these reads only. */
const NUMBERS = {
  getTypeParser: (oid: number, format?: "text" | "binary") => (oid === pgDriver.types.builtins.INT8 || oid === pgDriver.types.builtins.NUMERIC ? (v: string) => Number(v) : pgDriver.types.getTypeParser(oid, format)),
};

/** A metrics read (lib/metrics/series.ts, `?` placeholders) on PostgreSQL. */
export async function readPg<T>({ sql: text, params }: MetricsRead): Promise<T[]> {
  let n = 0;
  return (await (await pgHandleOrThrow()).pool.query({ text: text.replace(/\?/g, () => `$${++n}`), values: params, types: NUMBERS })).rows as T[];
}

/** The newest snapshot time among `stores` (the history's "as of"), or null before the first. */
export async function latestSnapshotTsPg({ stores }: { stores: string[] }): Promise<number | null> {
  if (stores.length === 0) return null;
  const [row] = await readPg<{ ts: number | null }>({ sql: `select max(ts) as ts from metric_snapshots where store in (${stores.map(() => "?").join(", ")})`, params: stores });
  return row?.ts ?? null;
}

/** Measure and save every PostgreSQL store (every replica's loop: the minute's row is replaced, never doubled); a store that fails to measure is reported, the others still saved. */
export async function snapshotAllStoresPg({ pg: handle, now = Date.now() }: { pg: PgHandle; now?: number }): Promise<{ saved: number; failed: { store: string; error: string }[] }> {
  const snapshots: StoreSnapshot[] = [];
  const failed: { store: string; error: string }[] = [];
  // Archived stores are not measured: nothing changes in them.
  for (const store of await activeStoreNamesPg({ pg: handle, names: await listStoreNamesPg({ pg: handle }) })) {
    try {
      const storeHandle = await openStorePg({ pg: handle, store });
      const status = await getStoreStatusPg({ handle: storeHandle, now });
      const recall = await measureRecallStats({ handle: storeHandle, now });
      snapshots.push(snapshotOf({ store, status, recall, now }));
    } catch (e) {
      failed.push({ store, error: (e as Error).message });
    }
  }
  await saveStoreSnapshots({ handle, snapshots });
  return { saved: snapshots.length, failed };
}

/**
 * The one store status (lib/embed/status.ts) for a PostgreSQL store: the same
 * verdict from the same numbers, counted from the store's schema (no live
 * counters here). The active model is the one store_meta names; for a store
 * that names none yet, the configured one when any vector is of it, else the
 * model most vectors are of (a model change = drifted).
 */
export async function getStoreStatusPg({ handle, now = Date.now() }: { handle: PgStoreHandle; now?: number }): Promise<StoreStatus & { otherModelVectors: number }> {
  const watermark = getConfig().embed.backlogWatermark;
  const { fp: configured, error: fingerprintError } = await configuredFingerprint();
  const { backlog, active, counts, otherModelVectors, staleClaims } = await withStoreTx({ handle, readOnly: true, work: async (tx) => {
    const backlog = await getEmbedBacklogPg({ tx });
    const staleClaims = await readStaleClaimsPg({ tx });
    const byModel = await rowsOf<{ fingerprint_id: string; n: number }>({
      tx,
      query: sql`select fingerprint_id, sum(n)::int as n from (
        select fingerprint_id, count(*) as n from chunk_embeddings group by fingerprint_id
        union all select fingerprint_id, count(*) as n from embeddings group by fingerprint_id) m
        group by fingerprint_id order by n desc, fingerprint_id`,
    });
    const active =
      (await readActiveFingerprintPg(tx)) ?? (configured && byModel.some((m) => m.fingerprint_id === configured.id) ? configured.id : (byModel[0]?.fingerprint_id ?? null));
    const fp = active ?? "";
    // Per kind: rows, those with a vector of the active model made from their current text (fresh), of older text (stale).
    const perKind = await rowsOf<{ kind: string; artifacts: number; fresh: number; stale: number }>({
      tx,
      query: sql`select 'chunk' as kind, count(*)::int as artifacts,
          count(e.chunk_row_id) filter (where e.input_hash = c.chunk_sha256)::int as fresh,
          count(e.chunk_row_id) filter (where e.input_hash <> c.chunk_sha256)::int as stale
        from chunks c left join chunk_embeddings e on e.chunk_row_id = c.id and e.fingerprint_id = ${fp}
        union all
        select 'trace', count(*)::int, count(e.ref_id) filter (where e.input_hash = t.descriptor_hash)::int, count(e.ref_id) filter (where e.input_hash <> t.descriptor_hash)::int
        from reasoning_traces t left join embeddings e on e.kind = 'trace' and e.ref_id = t.id and e.fingerprint_id = ${fp}
        union all
        select 'learning', count(*)::int, count(e.ref_id) filter (where e.input_hash = l.handle_hash)::int, count(e.ref_id) filter (where e.input_hash <> l.handle_hash)::int
        from learnings l left join embeddings e on e.kind = 'learning' and e.ref_id = l.id and e.fingerprint_id = ${fp}
        union all
        select 'thought', count(*)::int, count(e.ref_id) filter (where e.input_hash = t.content_hash)::int, count(e.ref_id) filter (where e.input_hash <> t.content_hash)::int
        from thoughts t left join embeddings e on e.kind = 'thought' and e.ref_id = t.seq and e.fingerprint_id = ${fp}
        union all
        select 'node', count(*)::int, count(e.ref_id) filter (where e.input_hash = n.embed_hash)::int, count(e.ref_id) filter (where e.input_hash <> n.embed_hash)::int
        from kg_node n left join embeddings e on e.kind = 'node' and e.ref_id = n.seq and e.fingerprint_id = ${fp}`,
    });
    const queued = await rowsOf<{ kind: string; pending: number; parked: number }>({
      tx,
      query: sql`select kind, count(*) filter (where parked_at is null)::int as pending, count(*) filter (where parked_at is not null)::int as parked from embed_queue group by kind`,
    });
    const byKind: Record<string, KindCounts> = {};
    for (const k of perKind) {
      const q = queued.find((r) => r.kind === k.kind);
      byKind[k.kind] = { artifacts: k.artifacts, fresh: k.fresh, stale: k.stale, missing: k.artifacts - k.fresh - k.stale, pending: q?.pending ?? 0, parked: q?.parked ?? 0 };
    }
    const sum = (f: keyof KindCounts) => Object.values(byKind).reduce((a, k) => a + k[f], 0);
    const counts: LiveCounts = { artifacts: sum("artifacts"), fresh: sum("fresh"), stale: sum("stale"), missing: sum("missing"), pending: backlog.pending, parked: backlog.parked, byKind };
    const otherModelVectors = byModel.filter((m) => m.fingerprint_id !== active).reduce((a, m) => a + m.n, 0);
    return { backlog, active, counts, otherModelVectors, staleClaims };
  } });
  const provider = await providerForStatus({ fingerprintError, now });
  const reembed = reembedStateOf(await getReembedProgressPg({ handle }));
  // Vector search always has a way to answer on PostgreSQL (pgvector, else the bounded exact scan, else lexically with a reason).
  const status = assembleStoreStatus({
    store: handle.store,
    counts,
    oldestEnqueuedAt: backlog.oldest_enqueued_at,
    watermark,
    active,
    configured,
    provider,
    vectorIndex: { available: true, reason: null },
    // Only what every replica sees alike: claims of a worker that stopped beating (a disk hold is one process's).
    queue: { held: null, staleClaims },
    reembed,
    // Only the configured model's details are known here; another active model is named by its id in `drift`.
    activeModel: active !== null && configured !== null && active === configured.id ? configured : null,
    configuredPending: fingerprintError?.pending === true,
    now,
  });
  // The same object, not a copy: whether it is provisional (lib/embed/status.ts) goes by identity.
  return Object.assign(status, { otherModelVectors });
}

async function pgHandleOrThrow() {
  const pg = getPg();
  if (!pg) throw new Error("getStoreStatusPg needs DATABASE_URL");
  return pg;
}

/** One PostgreSQL store's live status by name (the store page). */
export async function getStoreStatusPgByName({ store }: { store: string }): Promise<StoreStatus> {
  const pg = await pgHandleOrThrow();
  return getStoreStatusPg({ handle: await openStorePg({ pg, store }) });
}

/** The embeddings card's detail on PostgreSQL (the twin of getEmbeddingStatus): the live status with re-embed progress and parked items. */
export async function getEmbeddingStatusPg({ handle, status }: { handle: PgStoreHandle; status?: StoreStatus & { otherModelVectors: number } }): Promise<EmbeddingStatus> {
  const s = status ?? (await getStoreStatusPg({ handle }));
  const parked = s.backlog.parked > 0 ? await listParkedEmbeddings({ handle, limit: 20 }) : [];
  return embeddingStatusOf({ status: s, otherModelVectors: s.otherModelVectors, reembed: await getReembedProgressPg({ handle }), parked });
}

/** One PostgreSQL store's embeddings detail by name (CLI `embeddings status`). */
export async function getEmbeddingStatusPgByName({ store }: { store: string }): Promise<EmbeddingStatus> {
  return getEmbeddingStatusPg({ handle: await openStorePg({ pg: await pgHandleOrThrow(), store }) });
}

/** The store page on PostgreSQL: its status, the embeddings card's detail and the workers, by name. */
export async function getStorePageEmbeddingsPg({ store }: { store: string }): Promise<{ status: StoreStatus; embeddings: EmbeddingStatus; workers: WorkerState[] }> {
  const pg = await pgHandleOrThrow();
  const handle = await openStorePg({ pg, store });
  const status = await getStoreStatusPg({ handle });
  return { status, embeddings: await getEmbeddingStatusPg({ handle, status }), workers: await listWorkerStates({ handle: pg }) };
}

/**
 * What the health report (lib/metrics/health.ts storeHealthReportFor) reads on PostgreSQL beside the status: the
 * workers of every replica (heartbeat rows in public.embed_workers), which vector method answers, and recall
 * quality measured now (PostgreSQL keeps no snapshots, so `recall.as_of` is now).
 */
export async function storeHealthPartsPg({ store }: { store: string }) {
  const { status, embeddings, workers } = await getStorePageEmbeddingsPg({ store });
  const handle = await openStorePg({ pg: await pgHandleOrThrow(), store });
  const support = await withStoreTx({ handle, readOnly: true, work: (tx) => pgvectorSupportPg({ db: tx }) });
  const now = Date.now();
  const recall = await measureRecallStats({ handle, now });
  return {
    status,
    embeddings,
    workers,
    vectorIndex: { available: true, reason: support.pgvector ? `pgvector ${support.pgvector}` : `exact cosine scan of up to ${EXACT_SCAN_LIMIT} vectors (pgvector is not installed in this database)` },
    recall: { ts: now, ...recall },
  };
}
