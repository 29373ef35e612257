import { letOthersRun } from "../common";
import { getConfig } from "../config";
import { checkVectorReadiness, getEmbeddingStatus, getStoreStatus, isProvisionalStatus, onStoreStatus, readStoreStatus, storeStatusOf, type EmbeddingStatus, type StoreStatus, type StoreStatusReads } from "../embed/status";
import { forgetGoneStores, lookAtStore, storeLooks } from "../db/store-looks";
import { summarizeStoreStatuses, type StoresSummary } from "./status-summary";
import { getPg } from "../db/pg";
import { getRecallMetrics } from "../recall/events";
import { listStoreNamesPg, openStorePg } from "../stores/engines/pg";
import { listWorkerStates, workerReportOf, type WorkerState } from "../embed/worker-state";
import { providerErrorKind } from "../embed/provider-state";
import { listRecentHealthEvents, observeFailedDialecticSessions, observeStoreStatusOnRecord, type HealthEvent } from "../governance/health-events";
import { listStoreNames } from "../db/store-names";
import { LATENCY_BUCKET_BOUNDS_MS, quantileFromBuckets } from "../http/request-timer";
import { log } from "../log";
import { canUseStore, hasScope, type AgentPrincipal } from "../auth/tokens";
import { openStore } from "../stores/stores";
import { storesOnPostgres } from "../stores/on-postgres";
import { getStorePageEmbeddingsPg, getStoreStatusPg, getStoreStatusPgByName, storeHealthPartsPg } from "./engines/pg";
import {
  findModelChanges,
  prepareHealthSeries,
  prepareLatencySeries,
  prepareRouteTable,
  windowForRange,
  type HealthPoint,
  type LatencyPoint,
  type ModelChange,
  type RangeKey,
  type RouteTableRow,
  type SnapshotBucketRow,
  type Window,
} from "./preparers";
import { listLatencyBucketsByWindow, listModelChangesByWindow, listRouteTotalsByWindow, listSnapshotBucketsByWindow } from "./series";
import { latestSnapshotTsPg } from "./engines/pg";
import { getLatestSnapshotsByStore } from "./snapshots";

/** Search routes whose latency the Health page charts (route rollups are per route, across stores; recall latency is per store, in snapshots). */
export const SEARCH_ROUTES = ["GET /stores/{store}/search", "POST /stores/{store}/search"];

export const ALL_STORES = "all";

export type HealthDashboard = {
  /** When the page data was read. */
  now: number;
  store: string;
  stores: string[];
  range: RangeKey;
  window: Window;
  /** Live, per store in scope. */
  perStore: StoreStatus[];
  /** The stores in scope as one verdict (the status card): the worst store named, numbers added over them. */
  summary: StoresSummary;
  workers: WorkerState[];
  events: HealthEvent[];
  /** History from minute snapshots; `snapshotsAsOf` is the newest one's time. */
  series: HealthPoint[];
  snapshotsAsOf: number | null;
  modelChanges: ModelChange[];
  searchLatency: LatencyPoint[];
  /** With DATABASE_URL: recall quality per store over the range, from each store's PostgreSQL recall log. */
  postgres: { recall: StoreRecallQuality[] } | null;
};

/** One store's recalls over a window, from its recall log. */
export type StoreRecallQuality = { store: string; recalls: number; hitRate: number | null; rated: number; precision: number | null };

/**
 * Recalls, hit rate and rated precision per store over a window, from the PostgreSQL recall logs: the totals,
 * and the window's buckets as snapshot rows holding only the recall columns (the rest are gaps).
 */
async function recallQualityPg({ stores, window }: { stores: string[]; window: Window }): Promise<{ perStore: StoreRecallQuality[]; rows: SnapshotBucketRow[] }> {
  const pg = getPg();
  const perStore: StoreRecallQuality[] = [];
  const rows: SnapshotBucketRow[] = [];
  if (!pg) return { perStore, rows };
  for (const store of stores) {
    const handle = await openStorePg({ pg: await pg, store });
    const buckets = await getRecallMetrics({ handle, bucketMs: window.stepMs, since: window.from, until: window.to });
    const recalls = buckets.reduce((a, b) => a + b.recalls, 0);
    const rated = buckets.reduce((a, b) => a + b.rated, 0);
    const hits = buckets.reduce((a, b) => a + b.hit_rate * b.recalls, 0);
    const relevant = buckets.reduce((a, b) => a + (b.precision ?? 0) * b.rated, 0);
    perStore.push({ store, recalls, hitRate: recalls ? hits / recalls : null, rated, precision: rated ? relevant / rated : null });
    for (const b of buckets) {
      rows.push({ bucket: b.start, store, backlog: null, watermark: null, parked: null, driftCount: null, driftPct: null, coveragePct: null, hitRate: b.hit_rate, precision: b.precision, recallP50Ms: b.p50_ms, recallP95Ms: b.p95_ms, embedded: null });
    }
  }
  return { perStore, rows };
}

/** The store picked (unknown stores fall back to "all"), the stores it covers, and the window (a custom one, else the range's): both backends. */
function healthSelection({ stores, store, range, now, window }: { stores: string[]; store: string; range: RangeKey; now: number; window?: Window }) {
  const selected = stores.includes(store) ? store : ALL_STORES;
  return { selected, scope: selected === ALL_STORES ? stores : [selected], window: window ?? windowForRange({ range, now }) };
}

/**
 * Snapshot buckets with the recall columns taken from the recall logs (window-exact, and there before the
 * first snapshot); a bucket with recalls but no snapshot is its own row.
 */
function withRecallFromLogs(snapshots: SnapshotBucketRow[], recall: SnapshotBucketRow[]): SnapshotBucketRow[] {
  const key = (r: SnapshotBucketRow) => `${r.store}\u0000${r.bucket}`;
  const out = new Map(snapshots.map((r) => [key(r), { ...r, hitRate: null, precision: null, recallP50Ms: null, recallP95Ms: null } as SnapshotBucketRow]));
  for (const r of recall) {
    const s = out.get(key(r));
    out.set(key(r), s ? { ...s, hitRate: r.hitRate, precision: r.precision, recallP50Ms: r.recallP50Ms, recallP95Ms: r.recallP95Ms } : r);
  }
  return [...out.values()].sort((a, b) => a.bucket - b.bucket);
}

/** Everything the Health page draws, for one store or all of them ("all"), over `window` (a custom range) or the range ending now. Unknown stores fall back to "all". */
export async function loadHealthDashboard({ store, range, now = Date.now(), window: custom }: { store: string; range: RangeKey; now?: number; window?: Window }): Promise<HealthDashboard> {
  // With DATABASE_URL the stores are PostgreSQL's, never DATA_DIR's local ones.
  const pg = getPg();
  const stores = pg ? await listStoreNamesPg({ pg: await pg }) : listStoreNames();
  const { selected, scope, window } = healthSelection({ stores, store, range, now, window: custom });
  const perStore = await getAllStoreStatuses({ include: (s) => scope.includes(s) });
  // On PostgreSQL recall quality comes from each store's recall log, window-exact.
  const recall = pg ? await recallQualityPg({ stores: scope, window }) : null;
  const snapshots = await listSnapshotBucketsByWindow({ window, stores: scope });
  return {
    now,
    store: selected,
    stores,
    range,
    window,
    perStore,
    summary: summarizeStoreStatuses(perStore),
    // Every replica's embed workers with DATABASE_URL (their heartbeat rows in PostgreSQL).
    workers: pg ? await listWorkerStates({ handle: await pg }) : listWorkerStates(),
    events: await listRecentHealthEvents({ store: selected === ALL_STORES ? undefined : selected, limit: 20 }),
    series: prepareHealthSeries({ rows: recall ? withRecallFromLogs(snapshots, recall.rows) : snapshots, window, stores: scope.length }),
    snapshotsAsOf: pg ? await latestSnapshotTsPg({ stores: scope }) : [...getLatestSnapshotsByStore({ stores: scope }).values()].reduce<number | null>((acc, s) => (acc === null || s.ts > acc ? s.ts : acc), null),
    modelChanges: findModelChanges(await listModelChangesByWindow({ window, stores: scope })),
    searchLatency: prepareLatencySeries({ rows: await listLatencyBucketsByWindow({ window, routes: SEARCH_ROUTES }), window }),
    postgres: recall ? { recall: recall.perStore } : null,
  };
}

/** One store's live status with its embeddings card's detail and the embed workers (the store page, Health for one store), on this process's backend. */
export async function getStoreStatusDetail({ store }: { store: string }): Promise<{ status: StoreStatus; embeddings: EmbeddingStatus; workers: WorkerState[] }> {
  if (storesOnPostgres()) return getStorePageEmbeddingsPg({ store });
  const handle = openStore({ store });
  const status = await getStoreStatus({ handle });
  return { status, embeddings: await getEmbeddingStatus({ handle, status }), workers: listWorkerStates() };
}

/** Whether vector search can serve a store now (the reader's vector card): checkVectorReadiness on SQLite, the live status with DATABASE_URL. */
export async function vectorReadinessFor({ store }: { store: string }): Promise<{ usable: true } | { usable: false; message: string }> {
  if (!storesOnPostgres()) return checkVectorReadiness({ handle: openStore({ store }) });
  const s = await getStoreStatusPgByName({ store });
  if (!s.provider.ok) return { usable: false, message: `embedding provider unavailable: ${s.provider.error ? providerErrorKind(s.provider.error) : "no answer"}` };
  if (s.backlog.pending > s.backlog.watermark) return { usable: false, message: `embed backlog ${s.backlog.pending} is above the watermark ${s.backlog.watermark}` };
  if (s.drift.modelChanged) return { usable: false, message: `the configured model (${s.drift.configuredFingerprintId}) differs from the store's vectors (${s.drift.activeFingerprintId}); re-embed the store` };
  return { usable: true };
}

/**
 * `GET /stores/{store}/health`, MCP `store_health` and CLI `metrics status`: the live status with its detail, the
 * workers and provider state, and recall quality (SQLite: the newest snapshot, with its time; PostgreSQL: measured
 * now), as `principal` may see it: see redactHealthReport (an operator, the CLI, reads it whole).
 */
export async function storeHealthReportFor({ store, principal }: { store: string; principal: AgentPrincipal | "operator" }) {
  const { status, embeddings: s, workers, vectorIndex, recall } = storesOnPostgres() ? await storeHealthPartsPg({ store }) : await storeHealthPartsSqlite({ store });
  const report = {
    store: s.store,
    status: status.state,
    status_reason: status.reason,
    action: status.action,
    as_of: status.asOf,
    degraded: s.degraded,
    degraded_reason: s.degraded_reason,
    backlog: s.backlog,
    drift: s.drift,
    coverage_pct: s.drift?.coverage_pct ?? null,
    vector_index: vectorIndex,
    configured_model: s.configured,
    active_model: s.active,
    provider_error: s.provider_error,
    provider: { ok: status.provider.ok, error: status.provider.error, checked_at: status.provider.checkedAt },
    workers: workers.map(workerReportOf),
    reembed: s.reembed,
    parked: s.parked,
    recall: recall
      ? { as_of: recall.ts, recalls: recall.recallCount, hit_rate: recall.hitRate, avg_hit_age_s: recall.avgHitAgeS, precision: recall.precision, p50_ms: recall.recallP50Ms, p95_ms: recall.recallP95Ms }
      : null,
  };
  // The CLI on the server's own data dir is the operator: nothing is hidden from it.
  return principal === "operator" ? report : redactHealthReport({ report, principal });
}

async function storeHealthPartsSqlite({ store }: { store: string }) {
  const { status, embeddings, workers } = await getStoreStatusDetail({ store });
  return { status, embeddings, workers, vectorIndex: embeddings.vector_index, recall: getLatestSnapshotsByStore({ stores: [store] }).get(store) ?? null };
}

/** The provider's error text as its kind, for tokens below admin: the whole text is theirs to read. */
export function providerErrorCategory(text: string): string {
  return `${providerErrorKind(text)} (the full text is shown to admin tokens)`;
}

type WorkerReport = { last_batch_store: string | null; last_error: string | null; last_error_store: string | null };
type HealthReportText = { provider_error: string | null; provider: { error: string | null }; workers: WorkerReport[]; parked: { last_error: string | null }[] };

/**
 * What a token may read of a health report. The workers embed for every
 * store: a store the token may not use is not named (`last_batch_store`, and
 * the error of a batch of such a store with its store), and below admin scope
 * provider and worker error text becomes its category wherever it appears
 * (provider_error, provider.error, status_reason, worker errors, the error
 * each parked item was parked with).
 */
export function redactHealthReport<T extends HealthReportText>({ report, principal }: { report: T; principal: AgentPrincipal }): T {
  const admin = hasScope({ principal, needed: "admin" });
  const replacements = new Map<string, string>();
  const hide = (text: string | null): string | null => {
    if (text === null || admin) return text;
    const category = providerErrorCategory(text);
    replacements.set(text, category);
    return category;
  };
  const workers = report.workers.map((w) => {
    const errorVisible = w.last_error_store === null || canUseStore({ principal, store: w.last_error_store });
    return {
      ...w,
      last_batch_store: w.last_batch_store !== null && !canUseStore({ principal, store: w.last_batch_store }) ? null : w.last_batch_store,
      last_error: errorVisible ? hide(w.last_error) : null,
      last_error_store: errorVisible ? w.last_error_store : null,
    };
  });
  const parked = report.parked.map((p) => ({ ...p, last_error: hide(p.last_error) }));
  const redacted = { ...report, provider_error: hide(report.provider_error), provider: { ...report.provider, error: hide(report.provider.error) }, workers, parked };
  if (replacements.size === 0) return redacted;
  // Status and degraded reasons quote the provider's text: every string of the report is cleaned the same way.
  const clean = (v: unknown): unknown => {
    if (typeof v === "string") {
      let out = v;
      for (const [raw, category] of replacements) out = out.split(raw).join(category);
      return out;
    }
    if (Array.isArray(v)) return v.map(clean);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clean(x)]));
    return v;
  };
  return clean(redacted) as T;
}

/** Each store's status on record as this process last saw it (at most DUALMIND_MAX_STORES kept, the oldest let go). */
const lastObserved = new Map<string, string>();

async function observe(s: StoreStatus): Promise<void> {
  // Not known until the provider answers its first probe: recording it could be a false change and its way back.
  if (isProvisionalStatus(s)) return;
  try {
    // Set before the write, so reads meanwhile do not queue the same change again; then what the record holds
    // (a status read too late to count stays different, and the next read of it is observed again).
    remember(s.store, s.state);
    const { onRecord } = await observeStoreStatusOnRecord({ store: s.store, status: s.state, reason: s.reason, now: s.asOf });
    remember(s.store, onRecord);
  } catch (e) {
    // Kept as read: a ledger that refuses writes is tried again by the next pass, not by every read meanwhile.
    log("warn", "could not record a store status change", { store: s.store, error: (e as Error).message });
  }
}

function remember(store: string, state: string): void {
  lastObserved.delete(store);
  if (lastObserved.size >= getConfig().limits.maxStores) lastObserved.delete(lastObserved.keys().next().value!);
  lastObserved.set(store, state);
}

/**
 * From now on, a status this process works out for any request (a page, the REST or MCP health, metrics) that
 * differs from the one it last observed for the store is observed at once: a change that lasts less than a watch
 * pass is on record too. An unchanged one costs a map lookup; the pass still observes every store (another
 * replica's change). Returns the function that stops it.
 */
export function observeStatusesAsRead(): () => void {
  onStoreStatus((s) => {
    if (lastObserved.get(s.store) !== s.state) void observe(s);
  });
  return () => onStoreStatus(null);
}

/** One pass of the status watch: observe every store's live status (a change is an event) and failed dialectic sessions. */
export async function runStatusWatchPass(): Promise<void> {
  // With DATABASE_URL the stores are PostgreSQL's (never this process's local SQLite ones) and the status history is
  // shared by every replica: each watches the same stores, and observeStoreStatus records a change once.
  const statuses = await getAllStoreStatuses();
  for (const s of statuses) await observe(s);
  try {
    await observeFailedDialecticSessions();
  } catch (e) {
    log("warn", "could not record failed dialectic sessions", { error: (e as Error).message });
  }
}

/** How often the server compares each store's status with the last one seen (alerts lag a change by at most this). */
export const STATUS_WATCH_MS = 5_000;
const g = globalThis as unknown as { __dualmindStatusWatch?: NodeJS.Timeout };

/** Start the status watch in this process (idempotent across Next dev reloads). */
export function startStatusWatch(): void {
  if (g.__dualmindStatusWatch) return;
  observeStatusesAsRead();
  let running = false;
  const tick = () => {
    if (running) return;
    running = true;
    runStatusWatchPass()
      .catch((e) => log("error", "status watch failed", { error: (e as Error).message }))
      .finally(() => (running = false));
  };
  g.__dualmindStatusWatch = setInterval(tick, STATUS_WATCH_MS);
  g.__dualmindStatusWatch.unref();
}

export type ObservabilityDashboard = {
  range: RangeKey;
  window: Window;
  routes: RouteTableRow[];
  allRoutes: LatencyPoint[];
  dialecticCreate: LatencyPoint[];
};

/** Route latency and error rates over `window` (a custom range) or the range ending now, plus session-creation latency (the "dialectic create" timing): every replica's requests with DATABASE_URL. */
export async function loadObservabilityDashboard({ range, now = Date.now(), window: custom }: { range: RangeKey; now?: number; window?: Window }): Promise<ObservabilityDashboard> {
  const window = custom ?? windowForRange({ range, now });
  const latency = (routes?: string[]) => listLatencyBucketsByWindow({ window, routes });
  return {
    range,
    window,
    // Totals over exactly the charted window, from the coarsest rows that tile it (24h: quarter hours, 9.6k rows for 100 routes instead of 144k minutes).
    routes: prepareRouteTable(await listRouteTotalsByWindow({ window })),
    allRoutes: prepareLatencySeries({ rows: await latency(), window }),
    dialecticCreate: prepareLatencySeries({ rows: await latency(["dialectic create"]), window }),
  };
}

export type OverviewNumbers = {
  /** Every store as one verdict (summarizeStoreStatuses): the headline and the tiles read the same numbers. */
  summary: StoresSummary;
  apiRequests24h: number;
  apiP95Ms24h: number | null;
  apiErrorRate24h: number | null;
};

/** The status watch's, the metrics' and the dashboards' last reads of each SQLite store (one per store on disk). */
const statusLooks = storeLooks<StoreStatusReads>("status");

/**
 * The live status of every store `include` admits (getStoreStatus or getStoreStatusPg: counters, no scans), in
 * store order. A store whose status cannot be read is logged and left out: one broken store never fails the page.
 */
export async function getAllStoreStatuses({ include = () => true }: { include?: (store: string) => boolean } = {}): Promise<StoreStatus[]> {
  const pg = getPg();
  const out: StoreStatus[] = [];
  const names = pg ? await listStoreNamesPg({ pg: await pg }) : listStoreNames();
  if (!pg) forgetGoneStores({ looks: statusLooks, stores: names });
  for (const store of names.filter(include)) {
    try {
      // On SQLite reading every store's status is a look, not a use: a closed store unchanged on disk is not opened again.
      out.push(pg ? await getStoreStatusPg({ handle: await openStorePg({ pg: await pg, store }) }) : await storeStatusOf({ reads: await lookAtStore({ store, looks: statusLooks, look: (handle) => readStoreStatus({ handle }), open: (s) => openStore({ store: s, use: false }) }) }));
    } catch (e) {
      log("warn", "store status unavailable", { store, error: (e as Error).message });
    }
    // SQLite reads a store's status synchronously: other requests are served between stores, however many there are.
    await letOthersRun();
  }
  return out;
}

/** The Overview's numbers: store health live (getStoreStatus per store), API traffic over the same 24h window as Observability (quarter-hour rollups). */
export async function getOverviewNumbers({ now = Date.now() }: { now?: number } = {}): Promise<OverviewNumbers> {
  const perStore = await getAllStoreStatuses();
  const day = windowForRange({ range: "24h", now });
  const totals = await listRouteTotalsByWindow({ window: day });
  const count = totals.reduce((a, r) => a + r.count, 0);
  const hist = totals.reduce<number[]>((acc, r) => acc.map((n, i) => n + r.hist[i]), LATENCY_BUCKET_BOUNDS_MS.map(() => 0));
  return {
    summary: summarizeStoreStatuses(perStore),
    apiRequests24h: count,
    apiP95Ms24h: quantileFromBuckets({ buckets: hist, q: 0.95 }),
    apiErrorRate24h: count ? totals.reduce((a, r) => a + r.errorCount, 0) / count : null,
  };
}
