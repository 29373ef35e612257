import { describe, expect, it } from "vitest";
import { LATENCY_BUCKET_BOUNDS_MS, quantileFromBuckets } from "@/lib/http/request-timer";
import {
  bucketStarts,
  fillGaps,
  findModelChanges,
  parseRange,
  prepareHealthSeries,
  prepareLatencySeries,
  prepareRouteTable,
  windowForRange,
  type SnapshotBucketRow,
} from "@/lib/metrics/preparers";

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);
const MIN = 60_000;
const hist = (entries: Record<number, number>) => LATENCY_BUCKET_BOUNDS_MS.map((_, i) => entries[i] ?? 0);
const snap = (bucket: number, over: Partial<SnapshotBucketRow> = {}): SnapshotBucketRow => ({
  bucket,
  store: "alpha",
  backlog: 10,
  watermark: 1000,
  parked: 0,
  driftCount: 0,
  driftPct: 0,
  coveragePct: 100,
  hitRate: null,
  precision: null,
  recallP50Ms: null,
  recallP95Ms: null,
  embedded: 100,
  ...over,
});

describe("bucketing", () => {
  it("a 1h range has 60 minute buckets ending with the bucket that holds now", () => {
    const w = windowForRange("1h", T0 + 30_000);
    const b = bucketStarts(w);
    expect(b).toHaveLength(60);
    expect(b.at(-1)).toBe(T0);
    expect(b[1] - b[0]).toBe(MIN);
  });

  it("longer ranges use wider buckets so a chart never has thousands of points", () => {
    expect(bucketStarts(windowForRange("24h", T0))).toHaveLength(96);
    expect(bucketStarts(windowForRange("7d", T0))).toHaveLength(168);
    expect(bucketStarts(windowForRange("30d", T0))).toHaveLength(120);
  });

  it("an unknown range in the URL falls back to 24h", () => {
    expect(parseRange("2y")).toBe("24h");
    expect(parseRange(undefined)).toBe("24h");
    expect(parseRange("7d")).toBe("7d");
  });
});

describe("gaps vs zeros", () => {
  const w = { from: T0, to: T0 + 4 * MIN, stepMs: MIN };

  it("a missing bucket is null in every field while a measured zero stays zero", () => {
    const points = fillGaps([{ bucket: T0, n: 0 }, { bucket: T0 + 2 * MIN, n: 5 }], w, ["n"]);
    expect(points.map((p) => p.n)).toEqual([0, null, 5, null]);
  });

  it("health series: the outage minute is a gap, not a zero backlog", () => {
    const s = prepareHealthSeries([snap(T0, { backlog: 0 }), snap(T0 + 2 * MIN, { backlog: 7 })], w);
    expect(s.map((p) => p.backlog)).toEqual([0, null, 7, null]);
  });

  it("unmeasured recall hit rate stays a gap even where the store was measured", () => {
    const s = prepareHealthSeries([snap(T0)], w);
    expect(s[0].hitRate).toBeNull();
    expect(s[0].coveragePct).toBe(100);
  });

  it("throughput is the growth of embedded rows per hour, and a gap next to a missing bucket", () => {
    const s = prepareHealthSeries([snap(T0, { embedded: 100 }), snap(T0 + MIN, { embedded: 110 }), snap(T0 + 3 * MIN, { embedded: 200 })], w);
    expect(s.map((p) => p.throughputPerHour)).toEqual([null, 600, null, null]);
  });

  it("a re-embed that drops vectors shows zero throughput, never negative", () => {
    const s = prepareHealthSeries([snap(T0, { embedded: 100 }), snap(T0 + MIN, { embedded: 0 })], w);
    expect(s[1].throughputPerHour).toBe(0);
  });

  it("overall adds backlogs across stores and averages percentages", () => {
    const s = prepareHealthSeries([snap(T0, { store: "a", backlog: 5, coveragePct: 100 }), snap(T0, { store: "b", backlog: 7, coveragePct: 50 })], w);
    expect(s[0].backlog).toBe(12);
    expect(s[0].coveragePct).toBe(75);
  });
});

describe("percentiles from the histogram sketch", () => {
  it("quantiles are the upper bound of the bucket holding them", () => {
    // 90 requests ≤ 5 ms, 9 ≤ 100 ms, 1 ≤ 2000 ms
    const h = hist({ 2: 90, 6: 9, 10: 1 });
    expect(quantileFromBuckets(h, 0.5)).toBe(5);
    expect(quantileFromBuckets(h, 0.95)).toBe(100);
    expect(quantileFromBuckets(h, 0.99)).toBe(100);
    expect(quantileFromBuckets(h, 1)).toBe(2000);
    expect(quantileFromBuckets(hist({}), 0.5)).toBeNull();
  });

  it("routes of one bucket merge exactly before the percentile is taken", () => {
    const w = { from: T0, to: T0 + 2 * MIN, stepMs: MIN };
    const pts = prepareLatencySeries(
      [
        { bucket: T0, route: "GET /a", count: 50, errorCount: 0, sumMs: 100, hist: hist({ 1: 50 }) },
        { bucket: T0, route: "GET /b", count: 50, errorCount: 5, sumMs: 5000, hist: hist({ 6: 50 }) },
      ],
      w,
    );
    expect(pts[0]).toMatchObject({ count: 100, p50: 2, p95: 100, errorRate: 0.05 });
    expect(pts[1]).toMatchObject({ count: null, p50: null, p95: null, errorRate: null });
  });

  it("minute rows fold into wider chart buckets", () => {
    const w = { from: T0, to: T0 + 15 * MIN, stepMs: 15 * MIN };
    const pts = prepareLatencySeries(
      [
        { bucket: T0, route: "GET /a", count: 1, errorCount: 0, sumMs: 1, hist: hist({ 0: 1 }) },
        { bucket: T0 + 7 * MIN, route: "GET /a", count: 3, errorCount: 0, sumMs: 3, hist: hist({ 3: 3 }) },
      ],
      w,
    );
    expect(pts).toHaveLength(1);
    expect(pts[0]).toMatchObject({ count: 4, p50: 10 });
  });

  it("the open-ended top bucket is charted at the last finite bound", () => {
    const pts = prepareLatencySeries([{ bucket: T0, route: "GET /slow", count: 1, errorCount: 0, sumMs: 20_000, hist: hist({ 13: 1 }) }], { from: T0, to: T0 + MIN, stepMs: MIN });
    expect(pts[0].p99).toBe(10_000);
  });
});

describe("model change markers", () => {
  it("marks the snapshot where a store's model changed", () => {
    const changes = findModelChanges([
      { ts: 1, store: "a", modelId: "m1" },
      { ts: 2, store: "b", modelId: "m9" },
      { ts: 3, store: "a", modelId: "m1" },
      { ts: 4, store: "a", modelId: "m2" },
    ]);
    expect(changes).toEqual([{ t: 4, store: "a", from: "m1", to: "m2" }]);
  });
});

describe("route table", () => {
  it("slowest routes first, with mean, percentiles and error codes by frequency; idle routes left out", () => {
    const rows = prepareRouteTable([
      { route: "GET /fast", count: 10, errorCount: 0, sumMs: 20, hist: hist({ 1: 10 }), errorsByStatus: {} },
      { route: "POST /slow", count: 4, errorCount: 3, sumMs: 800, hist: hist({ 7: 4 }), errorsByStatus: { "409": 1, "500": 2 } },
      { route: "GET /idle", count: 0, errorCount: 0, sumMs: 0, hist: hist({}), errorsByStatus: {} },
    ]);
    expect(rows.map((r) => r.route)).toEqual(["POST /slow", "GET /fast"]);
    expect(rows[0]).toMatchObject({ meanMs: 200, p95Ms: 200, errorRate: 0.75, errorsByStatus: [["500", 2], ["409", 1]] });
  });
});
