import { listStoreNames } from "../stores/stores";
import {
  deriveHealthVerdict,
  findModelChanges,
  prepareHealthSeries,
  prepareLatencySeries,
  windowForRange,
  worstVerdict,
  type HealthPoint,
  type HealthVerdict,
  type LatencyPoint,
  type ModelChange,
  type RangeKey,
  type Window,
} from "./preparers";
import { listLatencyBucketsByWindow, listModelChangesByWindow, listSnapshotBucketsByWindow } from "./series";
import { getLatestSnapshotsByStore, type StoreSnapshot } from "./snapshots";

/** Routes whose latency the Health page charts (route rollups are per route, across stores). */
export const SEARCH_ROUTES = ["GET /stores/{store}/search", "POST /stores/{store}/search"];
export const RECALL_ROUTES = ["POST /stores/{store}/recall", "POST /stores/{store}/remember"];

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
  recallLatency: LatencyPoint[];
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
    recallLatency: prepareLatencySeries(listLatencyBucketsByWindow({ window, routes: RECALL_ROUTES }), window),
  };
}
