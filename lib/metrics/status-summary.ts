import { STORE_STATUS_PRECEDENCE, type StatusAction, type StoreStatus, type StoreStatusState } from "../embed/status";

/**
 * What a status card shows: the verdict, whom it is about, why, the fix, and
 * the live numbers behind it. Built by headlineOfStore (one store) or
 * summarizeStoreStatuses (several): the Overview, Health and the store page
 * draw this and nothing else, so their numbers are the API's and Prometheus'.
 */
export type StatusHeadline = {
  state: StoreStatusState;
  /** The store the verdict is about (the worst one of several), or null when every store is healthy. */
  store: string | null;
  /** Whom it covers: "docs", "all 3 stores", "docs, the worst of 3 stores (2 not healthy)". */
  scope: string;
  reason: string;
  action: StatusAction | null;
  numbers: StatusNumbers;
  asOf: number;
};

/**
 * Live numbers, one store's or added over several. A watermark is per store, so several stores' is not a
 * sum: `watermark` is then the one every store has (null if they differ). Drift and coverage are null
 * ("unknown") when any store's is unknown (the configured model has not answered).
 */
export type StatusNumbers = {
  stores: number;
  pending: number;
  parked: number;
  watermark: number | null;
  drifted: number | null;
  /** Rows that can hold a vector, and of those the share with a vector of the configured model for their current text. */
  artifacts: number;
  coveragePct: number | null;
};

export type StoresSummary = {
  perStore: StoreStatus[];
  /** The store the headline names (see summarizeStoreStatuses), null without stores. */
  worst: StoreStatus | null;
  /** Null without stores. */
  headline: StatusHeadline | null;
  /** The stores whose state is not healthy, worst first. */
  unhealthy: string[];
};

const rank = (s: StoreStatusState) => STORE_STATUS_PRECEDENCE.indexOf(s);
/** Rows a store's verdict is about: what waits, what failed, what cannot serve the configured model. */
const weight = (s: StoreStatus) => s.backlog.pending + s.backlog.parked + (s.drift.drifted ?? 0);
const plural = (n: number, one: string, many: string) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/** Numbers added over stores (the per-store figures of one store unchanged). */
export function statusNumbersOf(statuses: StoreStatus[]): StatusNumbers {
  const sum = (f: (s: StoreStatus) => number) => statuses.reduce((a, s) => a + f(s), 0);
  const unknown = statuses.some((s) => s.drift.drifted === null || s.drift.coveragePct === null);
  const artifacts = sum((s) => s.drift.artifacts);
  const covered = sum((s) => ((s.drift.coveragePct ?? 0) * s.drift.artifacts) / 100);
  const watermarks = new Set(statuses.map((s) => s.backlog.watermark));
  return {
    stores: statuses.length,
    pending: sum((s) => s.backlog.pending),
    parked: sum((s) => s.backlog.parked),
    watermark: watermarks.size === 1 ? [...watermarks][0] : null,
    drifted: unknown ? null : sum((s) => s.drift.drifted ?? 0),
    artifacts,
    coveragePct: unknown ? null : statuses.length === 1 ? statuses[0].drift.coveragePct : artifacts ? (100 * covered) / artifacts : 100,
  };
}

/** One store's card: its own verdict and numbers. */
export function headlineOfStore(s: StoreStatus): StatusHeadline {
  return { state: s.state, store: s.store, scope: s.store, reason: s.reason, action: s.action, numbers: statusNumbersOf([s]), asOf: s.asOf };
}

/**
 * Several stores as one verdict. The worst state wins (STORE_STATUS_PRECEDENCE); among stores in that
 * state, the one with the most rows waiting, parked or drifted (so a provider outage names the store
 * whose backlog grows, not the first store listed). When every store is healthy no single store is
 * named: the reason speaks of them all. The numbers are the stores' added (the Overview's tiles).
 */
export function summarizeStoreStatuses(perStore: StoreStatus[]): StoresSummary {
  if (perStore.length === 0) return { perStore, worst: null, headline: null, unhealthy: [] };
  const ordered = [...perStore].sort((a, b) => rank(a.state) - rank(b.state) || weight(b) - weight(a) || a.store.localeCompare(b.store));
  const worst = ordered[0];
  const unhealthy = ordered.filter((s) => s.state !== "healthy").map((s) => s.store);
  const numbers = statusNumbersOf(perStore);
  const asOf = Math.max(...perStore.map((s) => s.asOf));
  const all = perStore.length === 1 ? perStore[0].store : `all ${perStore.length} stores`;
  if (worst.state === "healthy") {
    const reason =
      numbers.pending > 0
        ? `${plural(numbers.pending, "item is", "items are")} queued for the worker, every store under its watermark; rows without a vector yet answer lexically`
        : numbers.artifacts > 0
          ? "every row of every store has a vector of its current text"
          : "no store holds anything to embed yet";
    return { perStore, worst, unhealthy, headline: { state: "healthy", store: null, scope: all, reason: perStore.length === 1 ? worst.reason : reason, action: null, numbers, asOf } };
  }
  const scope = perStore.length === 1 ? worst.store : unhealthy.length === 1 ? `${worst.store}, 1 of ${perStore.length} stores not healthy` : `${worst.store}, the worst of ${unhealthy.length} of ${perStore.length} stores not healthy`;
  return { perStore, worst, unhealthy, headline: { state: worst.state, store: worst.store, scope, reason: worst.reason, action: worst.action, numbers, asOf } };
}
