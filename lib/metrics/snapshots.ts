import { letOthersRun } from "../common";
import { and, between, eq, sql } from "drizzle-orm";
import { getGovernance, type GovernanceHandle, type StoreHandle } from "../db/connection";
import { dialect, read, select, sqlRun, writeLedger, type AnyStoreHandle, type LedgerHandle, type On, type Op, type OnLedger } from "../db/port";
import { getStoreStatus, readStoreStatus, storeStatusOf, type StoreStatus, type StoreStatusReads } from "../embed/status";
import { forgetGoneStores, lookAtStore, storeLooks } from "../db/store-looks";
import { recallMetrics, type RecallMetricsBucket } from "../recall/events";
import { recallTables } from "../recall/tables";
import { listStoreNames } from "../db/store-names";
import { activeStoreNames } from "../db/store-lifecycle";
import { storesOnPostgres } from "../stores/on-postgres";
import { openStore } from "../stores/stores";
import { HOUR_MS, metricsSql, MINUTE_MS } from "./rollups";

/** One store's health at one moment; null = not measured (shown as a gap), never a zero. */
export type StoreSnapshot = {
  ts: number;
  store: string;
  backlog: number | null;
  oldestAgeS: number | null;
  parked: number | null;
  watermark: number | null;
  driftCount: number | null;
  driftPct: number | null;
  coveragePct: number | null;
  degraded: boolean | null;
  vectorsAvailable: boolean | null;
  modelId: string | null;
  embedded: number | null;
  recallCount: number | null;
  hitRate: number | null;
  avgHitAgeS: number | null;
  precision: number | null;
  recallP50Ms: number | null;
  recallP95Ms: number | null;
};

export type RecallStats = Pick<StoreSnapshot, "recallCount" | "hitRate" | "avgHitAgeS" | "precision" | "recallP50Ms" | "recallP95Ms">;

/**
 * Recall quality from the store's recall event log (lib/recall/events.ts):
 * count, hit rate (≥ 1 hit above min_score) and latency over the last full
 * minute; rated precision over the last hour, because ratings arrive later
 * than recalls. Hit age = recall time minus the hit trace's or learning's
 * creation, averaged over the minute's hits (old hits mean memory is not refreshed).
 */
export function measureRecallStats<H extends AnyStoreHandle>({ handle, now }: { handle: H; now: number }): On<H, RecallStats> {
  return read(handle, recallStatsOp(now), { snapshot: true });
}

function* recallStatsOp(now: number): Op<RecallStats> {
  const w = recallStatsWindows(now);
  const [age] = yield* select(recallTables, (db, t) =>
    db
      .select({ ageS: sql<number | string | null>`avg(${t.events.createdAt} - coalesce(${t.traces.createdAt}, ${t.learnings.createdAt})) / 1000.0` })
      .from(t.events)
      .innerJoin(t.hits, eq(t.hits.eventId, t.events.id))
      .leftJoin(t.traces, and(eq(t.hits.artifact, "trace"), eq(t.traces.id, t.hits.refId)))
      .leftJoin(t.learnings, and(eq(t.hits.artifact, "learning"), eq(t.learnings.id, t.hits.refId)))
      .where(between(t.events.createdAt, w.minute.since, w.minute.until)),
  );
  return recallStatsOf({ minute: yield* recallMetrics(w.minute), hour: yield* recallMetrics(w.hour), ageS: age?.ageS });
}

/** The windows of recall quality (both backends): the last full minute, and the last hour for rated precision. */
export function recallStatsWindows(now: number) {
  const minuteStart = now - (now % MINUTE_MS);
  return { minute: { bucketMs: MINUTE_MS, since: minuteStart - MINUTE_MS, until: minuteStart - 1 }, hour: { bucketMs: HOUR_MS, since: now - HOUR_MS, until: now } };
}

/** Recall quality from the windows' buckets and the minute's average hit age (both backends). */
export function recallStatsOf({ minute: [minute], hour, ageS }: { minute: RecallMetricsBucket[]; hour: RecallMetricsBucket[]; ageS: number | string | null | undefined }): RecallStats {
  const rated = hour.reduce((a, b) => a + b.rated, 0);
  const relevant = hour.reduce((a, b) => a + (b.precision ?? 0) * b.rated, 0);
  return {
    recallCount: minute?.recalls ?? 0,
    hitRate: minute ? minute.hit_rate : null,
    avgHitAgeS: ageS === null || ageS === undefined ? null : Number(ageS),
    precision: rated > 0 ? relevant / rated : null,
    recallP50Ms: minute ? minute.p50_ms : null,
    recallP95Ms: minute ? minute.p95_ms : null,
  };
}

/**
 * Measure one store now, for the history charts only: the live status
 * (lib/embed/status.ts getStoreStatus) plus recall quality. No surface reads
 * a snapshot as the current status; numbers shown from one carry its time.
 */
export async function measureStoreSnapshot({ handle, now = Date.now() }: { handle: StoreHandle; now?: number }): Promise<StoreSnapshot> {
  return snapshotOf({ store: handle.store, status: await getStoreStatus({ handle, now }), recall: measureRecallStats({ handle, now }), now });
}

/** A snapshot from a store's live status and recall quality (both backends measure these their own way). */
export function snapshotOf({ store, status: s, recall, now }: { store: string; status: StoreStatus; recall: RecallStats; now: number }): StoreSnapshot {
  return {
    ts: now - (now % MINUTE_MS),
    store,
    backlog: s.backlog.pending,
    oldestAgeS: s.backlog.oldest_age_seconds,
    parked: s.backlog.parked,
    watermark: s.backlog.watermark,
    driftCount: s.drift.drifted,
    driftPct: s.drift.driftPct,
    coveragePct: s.drift.coveragePct,
    degraded: s.backlog.pending > s.backlog.watermark,
    vectorsAvailable: s.vectorIndex.available,
    modelId: s.drift.activeFingerprintId,
    embedded: s.drift.fresh,
    ...recall,
  };
}

/** A snapshot row's columns: each field spelled snake_case. */
const SNAPSHOT_FIELDS = (["ts", "resolutionS", "store", "backlog", "oldestAgeS", "parked", "watermark", "driftCount", "driftPct", "coveragePct", "degraded", "vectorsAvailable", "modelId", "embedded", "recallCount", "hitRate", "avgHitAgeS", "precision", "recallP50Ms", "recallP95Ms"] as const).map((f) => [f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), f] as const);

/** The snapshot upsert both backends run (`?` placeholders): one row per store, resolution and bucket; a re-measure replaces it. */
export const SNAPSHOT_UPSERT = `insert into metric_snapshots (${SNAPSHOT_FIELDS.map(([c]) => c).join(", ")}) values (${SNAPSHOT_FIELDS.map(() => "?").join(", ")})
     on conflict (store, resolution_s, ts) do update set ${SNAPSHOT_FIELDS.slice(3)
       .map(([c]) => `${c} = excluded.${c}`)
       .join(", ")}`;

/**
 * The rows a snapshot is saved as: its minute row and, for minute snapshots,
 * the store's hour row too, so an hour is represented by its latest sample
 * (gauges are sampled, not summed). `bool` turns booleans into the backend's.
 */
export function snapshotRows({ snapshot, resolutionS, bool }: { snapshot: StoreSnapshot; resolutionS: 60 | 3600; bool: (b: boolean | null) => unknown }): unknown[][] {
  const row = (ts: number, res: number) => {
    const r: Record<string, unknown> = { ...snapshot, ts, resolutionS: res, degraded: bool(snapshot.degraded), vectorsAvailable: bool(snapshot.vectorsAvailable) };
    return SNAPSHOT_FIELDS.map(([, f]) => r[f]);
  };
  return resolutionS === 60 ? [row(snapshot.ts, 60), row(snapshot.ts - (snapshot.ts % HOUR_MS), 3600)] : [row(snapshot.ts, resolutionS)];
}

/** Write snapshots in one transaction (see snapshotRows): booleans as 1/0 on SQLite, as booleans on PostgreSQL. */
export function saveStoreSnapshots<H extends LedgerHandle = GovernanceHandle>({ handle, snapshots, resolutionS = 60 }: { handle?: H; snapshots: StoreSnapshot[]; resolutionS?: 60 | 3600 }): OnLedger<H, void> {
  if (snapshots.length === 0) return (handle?.kind === "pg" ? Promise.resolve() : undefined) as OnLedger<H, void>;
  return writeLedger(handle ?? (getGovernance() as H), function* () {
    const onSqlite = (yield* dialect()) === "sqlite";
    const bool = (b: boolean | null) => (b === null || !onSqlite ? b : b ? 1 : 0);
    for (const snapshot of snapshots) for (const values of snapshotRows({ snapshot, resolutionS, bool })) yield* sqlRun(metricsSql({ sql: SNAPSHOT_UPSERT, params: values }));
  });
}

/** The minute snapshot's last look at a SQLite store: its status reads, its recall quality then, and its newest recall. */
type SnapshotLook = { reads: StoreStatusReads; recall: RecallStats; newestRecallAt: number | null };
const snapshotLooks = storeLooks<SnapshotLook>("snapshot");

/** Recall quality of windows without a recall (what measureRecallStats answers for them). */
const NO_RECALLS: RecallStats = recallStatsOf({ minute: [], hour: [], ageS: null });

function newestRecallAt({ handle }: { handle: StoreHandle }): number | null {
  return handle.sqlite.prepare("select max(created_at) from recall_events").pluck().get() as number | null;
}

/** Measure and save every store; a store that fails to measure is reported, the others still saved. */
export async function snapshotAllStores({ now = Date.now() }: { now?: number } = {}): Promise<{ saved: number; failed: { store: string; error: string }[] }> {
  const snapshots: StoreSnapshot[] = [];
  const failed: { store: string; error: string }[] = [];
  // With DATABASE_URL the stores are in PostgreSQL, not measured here yet (never DATA_DIR's, which agents do not write).
  // Archived stores are not measured (nor opened): nothing changes in them.
  const names = storesOnPostgres() ? [] : listStoreNames();
  forgetGoneStores({ looks: snapshotLooks, stores: names });
  for (const store of activeStoreNames(names)) {
    try {
      // A look, not a use (lib/db/store-looks.ts): a closed store whose files are unchanged and that had no recall in
      // the windows is measured from its last reads, without opening it.
      const quiet = (v: SnapshotLook) => v.newestRecallAt === null || v.newestRecallAt < now - HOUR_MS - MINUTE_MS;
      const look = await lookAtStore({
        store,
        looks: snapshotLooks,
        open: (s) => openStore({ store: s, use: false }),
        look: (handle): SnapshotLook => ({ reads: readStoreStatus({ handle }), recall: measureRecallStats({ handle, now }), newestRecallAt: newestRecallAt({ handle }) }),
        reusable: quiet,
      });
      snapshots.push(snapshotOf({ store, status: await storeStatusOf({ reads: look.reads, now }), recall: quiet(look) ? NO_RECALLS : look.recall, now }));
    } catch (e) {
      failed.push({ store, error: (e as Error).message });
    }
    // Each store is read synchronously: other requests are served between stores.
    await letOthersRun();
  }
  saveStoreSnapshots({ snapshots });
  return { saved: snapshots.length, failed };
}

type SnapshotDbRow = Omit<StoreSnapshot, "degraded" | "vectorsAvailable"> & { degraded: number | null; vectorsAvailable: number | null };
const SNAPSHOT_COLUMNS = SNAPSHOT_FIELDS.filter(([c]) => c !== "resolution_s").map(([c, f]) => (c === f ? c : `${c} as ${f}`)).join(", ");

function fromDb(r: SnapshotDbRow): StoreSnapshot {
  return { ...r, degraded: r.degraded === null ? null : r.degraded === 1, vectorsAvailable: r.vectorsAvailable === null ? null : r.vectorsAvailable === 1 };
}

/** The newest snapshot of each store: the newest minute row, else the newest hour row (indexed probes). */
export function getLatestSnapshotsByStore({ stores }: { stores: string[] }): Map<string, StoreSnapshot> {
  const q = getGovernance().sqlite.prepare(`select ${SNAPSHOT_COLUMNS} from metric_snapshots where store = ? and resolution_s = ? order by ts desc limit 1`);
  const out = new Map<string, StoreSnapshot>();
  for (const store of stores) {
    const r = (q.get(store, 60) ?? q.get(store, 3600)) as SnapshotDbRow | undefined;
    if (r) out.set(store, fromDb(r));
  }
  return out;
}
