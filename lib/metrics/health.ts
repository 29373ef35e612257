import type { StoreHandle } from "../db/connection";
import { getEmbeddingStatus, type EmbeddingStatus } from "../embed/status";
import { listStoreNames } from "../db/store-names";
import { LATENCY_BUCKET_BOUNDS_MS, quantileFromBuckets } from "../http/request-timer";
import { HOUR_MS } from "./rollups";
import {
  deriveHealthVerdict,
  findModelChanges,
  prepareHealthSeries,
  prepareLatencySeries,
  prepareRouteTable,
  windowForRange,
  worstVerdict,
  type HealthPoint,
  type HealthVerdict,
  type LatencyPoint,
  type ModelChange,
  type RangeKey,
  type RouteTableRow,
  type Window,
} from "./preparers";
import { listLatencyBucketsByWindow, listModelChangesByWindow, listRouteTotalsByWindow, listSnapshotBucketsByWindow } from "./series";
import { getLatestSnapshotsByStore, type StoreSnapshot } from "./snapshots";

/** Search routes whose latency the Health page charts (route rollups are per route, across stores; recall latency is per store, in snapshots). */
export const SEARCH_ROUTES = ["GET /stores/{store}/search", "POST /stores/{store}/search"];

export const ALL_STORES = "all";

export type StoreHealth = { store: string; latest: StoreSnapshot | null; verdict: HealthVerdict };
export type HealthDashboard = {
  store: string;
  stores: string[];
  range: RangeKey;
  window: Window;
  perStore: StoreHealth[];
  overall: { store: string | null; verdict: HealthVerdict };
  series: HealthPoint[];
  modelChanges: ModelChange[];
  searchLatency: LatencyPoint[];
};

/** Verdict per store from its newest snapshot (no live scan: the page stays fast on big stores). */
export function getStoreHealthVerdicts({ stores }: { stores: string[] }): StoreHealth[] {
  const latest = getLatestSnapshotsByStore({ stores });
  return stores.map((store) => {
    const s = latest.get(store) ?? null;
    return { store, latest: s, verdict: deriveHealthVerdict(s) };
  });
}

/** Everything the Health page draws, for one store or all of them ("all"). Unknown stores fall back to "all". */
export function loadHealthDashboard({ store, range, now = Date.now() }: { store: string; range: RangeKey; now?: number }): HealthDashboard {
  const stores = listStoreNames();
  const selected = stores.includes(store) ? store : ALL_STORES;
  const scope = selected === ALL_STORES ? stores : [selected];
  const window = windowForRange(range, now);
  const perStore = getStoreHealthVerdicts({ stores: scope });
  return {
    store: selected,
    stores,
    range,
    window,
    perStore,
    overall: worstVerdict(perStore),
    series: prepareHealthSeries(listSnapshotBucketsByWindow({ window, stores: scope }), window),
    modelChanges: findModelChanges(listModelChangesByWindow({ window, stores: scope })),
    searchLatency: prepareLatencySeries(listLatencyBucketsByWindow({ window, routes: SEARCH_ROUTES }), window),
  };
}

/** The verdict from a live embedding status (one store, right now) rather than its newest snapshot. */
export function deriveLiveVerdict(s: EmbeddingStatus): HealthVerdict {
  return deriveHealthVerdict({
    store: s.store,
    backlog: s.backlog.pending,
    watermark: s.backlog.watermark,
    parked: s.backlog.parked,
    degraded: s.degraded,
    driftCount: s.drift?.drifted ?? null,
    driftPct: s.drift?.driftPct ?? null,
    vectorsAvailable: s.vectorIndex.available,
  });
}

/**
 * `GET /stores/{store}/health` and the MCP `store_health` tool: the live embedding status (lib/embed/status.ts),
 * its verdict with the fixing action, and recall quality from the newest snapshot.
 */
export async function getStoreHealthReport({ handle }: { handle: StoreHandle }) {
  const s = await getEmbeddingStatus({ handle });
  const verdict = deriveLiveVerdict(s);
  const latest = getLatestSnapshotsByStore({ stores: [handle.store] }).get(handle.store) ?? null;
  return {
    store: s.store,
    status: verdict.state,
    status_reason: verdict.reason,
    action: verdict.action,
    degraded: s.degraded,
    degraded_reason: s.degradedReason,
    backlog: s.backlog,
    drift: s.drift,
    coverage_pct: s.drift?.coveragePct ?? null,
    vector_index: s.vectorIndex,
    configured_model: s.configured,
    active_model: s.active,
    provider_error: s.providerError,
    reembed: s.reembed,
    parked: s.parked,
    recall: latest
      ? { as_of: latest.ts, recalls: latest.recallCount, hit_rate: latest.hitRate, avg_hit_age_s: latest.avgHitAgeS, precision: latest.precision, p50_ms: latest.recallP50Ms, p95_ms: latest.recallP95Ms }
      : null,
  };
}

export type ObservabilityDashboard = {
  range: RangeKey;
  window: Window;
  routes: RouteTableRow[];
  allRoutes: LatencyPoint[];
  dialecticCreate: LatencyPoint[];
};

/** Route latency and error rates over the range, plus session-creation latency (the "dialectic create" timing). */
export function loadObservabilityDashboard({ range, now = Date.now() }: { range: RangeKey; now?: number }): ObservabilityDashboard {
  const window = windowForRange(range, now);
  return {
    range,
    window,
    // The table needs totals, not minutes: past an hour, hour rows answer it (a few thousand rows instead of 100k+).
    routes: prepareRouteTable(listRouteTotalsByWindow({ window: range === "1h" ? window : { ...window, stepMs: HOUR_MS } })),
    allRoutes: prepareLatencySeries(listLatencyBucketsByWindow({ window }), window),
    dialecticCreate: prepareLatencySeries(listLatencyBucketsByWindow({ window, routes: ["dialectic create"] }), window),
  };
}

export type OverviewNumbers = {
  overall: { store: string | null; verdict: HealthVerdict };
  backlog: number | null;
  driftRows: number | null;
  parked: number | null;
  apiRequests24h: number;
  apiP95Ms24h: number | null;
  apiErrorRate24h: number | null;
};

/** The few numbers the Overview shows, each read from the newest snapshots or a day of hour rollups. */
export function getOverviewNumbers({ now = Date.now() }: { now?: number } = {}): OverviewNumbers {
  const perStore = getStoreHealthVerdicts({ stores: listStoreNames() });
  const sum = (f: (s: StoreSnapshot) => number | null) => {
    const v = perStore.map((p) => (p.latest ? f(p.latest) : null)).filter((x): x is number => x !== null);
    return v.length ? v.reduce((a, b) => a + b, 0) : null;
  };
  const day = windowForRange("24h", now);
  const totals = listRouteTotalsByWindow({ window: { ...day, stepMs: HOUR_MS } });
  const count = totals.reduce((a, r) => a + r.count, 0);
  const hist = totals.reduce<number[]>((acc, r) => acc.map((n, i) => n + r.hist[i]), LATENCY_BUCKET_BOUNDS_MS.map(() => 0));
  return {
    overall: worstVerdict(perStore),
    backlog: sum((s) => s.backlog),
    driftRows: sum((s) => s.driftCount),
    parked: sum((s) => s.parked),
    apiRequests24h: count,
    apiP95Ms24h: quantileFromBuckets(hist, 0.95),
    apiErrorRate24h: count ? totals.reduce((a, r) => a + r.errorCount, 0) / count : null,
  };
}
