/**
 * Deterministic demo metrics (CLI `metrics demo`, e2e, bench): smooth daily
 * waves with a deliberate outage so charts show a gap, and one model change
 * per store half-way through so the drift chart has a marker: to the store's
 * current model when given, so the live snapshots that follow do not draw a
 * second change.
 */
import { LATENCY_BUCKET_BOUNDS_MS, latencyBucketIndex, type MinuteRollup } from "../http/request-timer";
import type { StoreSnapshot } from "./snapshots";

export const DEMO_ROUTES = ["GET /stores/{store}/search", "POST /stores/{store}/search", "POST /stores/{store}/remember", "POST /stores/{store}/memories", "POST /dialectic/sessions"];

function wave(t: number, periodMs: number, phase = 0): number {
  return (Math.sin((2 * Math.PI * t) / periodMs + phase) + 1) / 2;
}

/** Inside the outage nothing was recorded: the last tenth of the first half of the span. */
function inOutage(t: number, from: number, to: number): boolean {
  const mid = from + (to - from) / 2;
  return t >= mid - (to - from) / 10 && t < mid;
}

export function generateDemoRollups({ routes = DEMO_ROUTES, from, to, stepMs }: { routes?: string[]; from: number; to: number; stepMs: number }): MinuteRollup[] {
  const out: MinuteRollup[] = [];
  for (let ts = from - (from % stepMs); ts < to; ts += stepMs) {
    if (inOutage(ts, from, to)) continue;
    routes.forEach((route, i) => {
      const count = 5 + Math.round(40 * wave(ts, 86_400_000, i));
      const typicalMs = 3 + 40 * wave(ts, 6 * 3_600_000, i) + 10 * i;
      const buckets = LATENCY_BUCKET_BOUNDS_MS.map(() => 0);
      buckets[latencyBucketIndex(typicalMs)] += count - Math.ceil(count / 10);
      buckets[latencyBucketIndex(typicalMs * 8)] += Math.ceil(count / 10);
      const errors = i === routes.length - 1 ? Math.round(count * 0.05) : 0;
      // The demo's failing route answers expected 409s (a turn out of phase) and the odd 503.
      const faults = Math.floor(errors / 4);
      const byStatus = errors ? { "200": count - errors, "409": errors - faults, ...(faults ? { "503": faults } : {}) } : { "200": count };
      out.push({ ts, route, count, errorCount: faults, clientErrorCount: errors - faults, sumMs: count * typicalMs * 1.5, buckets, byStatus });
    });
  }
  return out;
}

export function generateDemoSnapshots({ stores, from, to, stepMs, watermark = 1000, currentModels = {} }: { stores: string[]; from: number; to: number; stepMs: number; watermark?: number; /** A store's model now (its live snapshots' `modelId`): the demo's model after its change. */ currentModels?: Record<string, string | null> }): StoreSnapshot[] {
  const out: StoreSnapshot[] = [];
  const mid = from + (to - from) / 2;
  for (let ts = from - (from % stepMs); ts < to; ts += stepMs) {
    if (inOutage(ts, from, to)) continue;
    stores.forEach((store, i) => {
      const afterChange = ts >= mid;
      const sinceChange = afterChange ? (ts - mid) / (to - mid) : 0;
      const backlog = Math.round(watermark * (afterChange ? 1.3 * (1 - sinceChange) : 0.2 * wave(ts, 86_400_000, i)));
      const artifacts = 5000 + 1000 * i;
      const drifted = afterChange ? Math.round(artifacts * (1 - sinceChange)) : 0;
      out.push({
        ts,
        store,
        backlog,
        oldestAgeS: backlog > 0 ? 30 + Math.round(backlog / 5) : null,
        parked: afterChange ? 3 : 0,
        watermark,
        driftCount: drifted,
        driftPct: (100 * drifted) / artifacts,
        coveragePct: 100 - (100 * drifted) / artifacts,
        degraded: backlog > watermark,
        vectorsAvailable: true,
        modelId: afterChange ? (currentModels[store] ?? `demo-model-v2-${store}`) : `demo-model-v1-${store}`,
        embedded: artifacts - drifted,
        recallCount: 10 + Math.round(20 * wave(ts, 86_400_000, i)),
        hitRate: 0.55 + 0.35 * wave(ts, 12 * 3_600_000, i),
        avgHitAgeS: 3600 * (1 + 24 * wave(ts, 86_400_000, i)),
        precision: 0.6 + 0.3 * wave(ts, 18 * 3_600_000, i),
        recallP50Ms: 8 + 10 * wave(ts, 6 * 3_600_000, i),
        recallP95Ms: 40 + 60 * wave(ts, 6 * 3_600_000, i),
      });
    });
  }
  return out;
}
