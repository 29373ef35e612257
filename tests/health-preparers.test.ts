import { describe, expect, it } from "vitest";
import { LATENCY_BUCKET_BOUNDS_MS, latencyBucketIndex, quantileFromBuckets } from "@/lib/http/request-timer";
import { LATENCY_LINES, PERCENTILE_NOTE } from "@/components/chart-series";
import {
  bucketStarts,
  chartAnnotations,
  MAX_CHART_ANNOTATIONS,
  isolatedPoints,
  findModelChanges,
  parseRange,
  prepareHealthSeries,
  throughputUnitOf,
  timeTicks,
  prepareLatencySeries,
  prepareRouteTable,
  windowForRange,
  type SnapshotBucketRow,
} from "@/lib/metrics/preparers";
import { chartRangeQuery, isLongRange, MAX_CHART_BUCKETS, MAX_TIME_PARAM_CHARS, parseChartRange, parseUtcTime } from "@/lib/metrics/time-range";

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
    const w = windowForRange({ range: "1h", now: T0 + 30_000 });
    const b = bucketStarts(w);
    expect(b).toHaveLength(60);
    expect(b.at(-1)).toBe(T0);
    expect(b[1] - b[0]).toBe(MIN);
  });

  it("longer ranges use wider buckets so a chart never has thousands of points", () => {
    expect(bucketStarts(windowForRange({ range: "24h", now: T0 }))).toHaveLength(96);
    expect(bucketStarts(windowForRange({ range: "7d", now: T0 }))).toHaveLength(168);
    expect(bucketStarts(windowForRange({ range: "30d", now: T0 }))).toHaveLength(120);
  });

  it("an unknown range in the URL falls back to 24h", () => {
    expect(parseRange("2y")).toBe("24h");
    expect(parseRange(undefined)).toBe("24h");
    expect(parseRange("7d")).toBe("7d");
  });
});

describe("gaps vs zeros", () => {
  const w = { from: T0, to: T0 + 4 * MIN, stepMs: MIN };

  it("health series: the outage minute is a gap, not a zero backlog", () => {
    const s = prepareHealthSeries({ rows: [snap(T0, { backlog: 0 }), snap(T0 + 2 * MIN, { backlog: 7 })], window: w });
    expect(s.map((p) => p.backlog)).toEqual([0, null, 7, null]);
  });

  it("unmeasured recall hit rate stays a gap even where the store was measured", () => {
    const s = prepareHealthSeries({ rows: [snap(T0)], window: w });
    expect(s[0].hitRate).toBeNull();
    expect(s[0].coveragePct).toBe(100);
  });

  it("throughput is the growth of embedded rows in the chart's unit (per minute at a minute step), and a gap next to a missing bucket", () => {
    const s = prepareHealthSeries({ rows: [snap(T0, { embedded: 100 }), snap(T0 + MIN, { embedded: 110 }), snap(T0 + 3 * MIN, { embedded: 200 })], window: w });
    expect(throughputUnitOf(w).per).toBe("minute");
    expect(s.map((p) => p.throughput)).toEqual([null, 10, null, null]);
    // A quarter-hour step (24 h) charts per hour: 10 rows in 15 minutes are 40 an hour.
    const q = { from: T0, to: T0 + 60 * MIN, stepMs: 15 * MIN };
    expect(throughputUnitOf(q).per).toBe("hour");
    expect(prepareHealthSeries({ rows: [snap(T0, { embedded: 100 }), snap(T0 + 15 * MIN, { embedded: 110 })], window: q })[1].throughput).toBe(40);
  });

  it("a re-embed that drops vectors shows zero throughput, never negative", () => {
    const s = prepareHealthSeries({ rows: [snap(T0, { embedded: 100 }), snap(T0 + MIN, { embedded: 0 })], window: w });
    expect(s[1].throughput).toBe(0);
  });

  it("overall adds backlogs across stores and averages percentages; a per-store watermark is never summed", () => {
    const rows = [snap(T0, { store: "a", backlog: 5, coveragePct: 100, watermark: 1000 }), snap(T0, { store: "b", backlog: 7, coveragePct: 50, watermark: 1000 })];
    const s = prepareHealthSeries({ rows, window: w, stores: 2 });
    expect(s[0].backlog).toBe(12);
    expect(s[0].coveragePct).toBe(75);
    expect(s[0].watermark).toBeNull();
    expect(prepareHealthSeries({ rows: [rows[0]], window: w })[0].watermark).toBe(1000);
  });
});

describe("percentile estimates from the histogram", () => {
  it("each estimate lies inside the bucket that holds the quantile (never at an edge chosen for it)", () => {
    // 90 requests in (2, 5] ms, 9 in (50, 100] ms, 1 in (1000, 2000] ms
    const h = hist({ 2: 90, 6: 9, 10: 1 });
    const p50 = quantileFromBuckets({ buckets: h, q: 0.5 })!;
    const p95 = quantileFromBuckets({ buckets: h, q: 0.95 })!;
    expect(p50).toBeGreaterThan(2);
    expect(p50).toBeLessThan(5);
    expect(p95).toBeGreaterThan(50);
    expect(p95).toBeLessThan(100);
    expect(quantileFromBuckets({ buckets: h, q: 1 })).toBe(2000);
    expect(quantileFromBuckets({ buckets: hist({}), q: 0.5 })).toBeNull();
  });

  it("on real latency samples the estimate falls in the bucket of the exact quantile, and is closer than the bucket edge", () => {
    // A deterministic lognormal-ish spread: median ~20 ms, long tail.
    const samples = Array.from({ length: 2000 }, (_, i) => 20 * Math.exp(2.2 * (((i * 7919) % 2000) / 2000 - 0.5)));
    const sorted = [...samples].sort((a, b) => a - b);
    const h = LATENCY_BUCKET_BOUNDS_MS.map(() => 0);
    for (const ms of samples) h[latencyBucketIndex(ms)]++;
    for (const q of [0.5, 0.95, 0.99]) {
      const exact = sorted[Math.ceil(q * sorted.length) - 1];
      const estimate = quantileFromBuckets({ buckets: h, q })!;
      // The edges (lo, hi] of the bucket the exact value falls in bound the estimate.
      const i = latencyBucketIndex(exact);
      const [lo, hi] = [i === 0 ? 0 : LATENCY_BUCKET_BOUNDS_MS[i - 1], LATENCY_BUCKET_BOUNDS_MS[i]];
      expect(estimate).toBeGreaterThan(lo);
      expect(estimate).toBeLessThanOrEqual(hi);
      expect(Math.abs(estimate - exact)).toBeLessThan(Math.abs(hi - exact));
    }
  });

  it("charts and tables label percentiles as estimates", () => {
    for (const line of LATENCY_LINES) expect(line.label).toMatch(/estimate/);
    expect(PERCENTILE_NOTE).toMatch(/estimate/);
  });

  it("routes of one bucket merge exactly before the percentile is taken", () => {
    const w = { from: T0, to: T0 + 2 * MIN, stepMs: MIN };
    const pts = prepareLatencySeries(
      { rows: [
        { bucket: T0, route: "GET /a", count: 50, errorCount: 0, clientErrorCount: 0, sumMs: 100, hist: hist({ 1: 50 }) },
        { bucket: T0, route: "GET /b", count: 50, errorCount: 5, clientErrorCount: 10, sumMs: 5000, hist: hist({ 6: 50 }) },
      ],
      window: w }
    );
    // The merged p50 is the 50th of 100 samples: the top of bucket (1, 2]; p95 lies inside (50, 100].
    expect(pts[0]).toMatchObject({ count: 100, p50: 2, errorPct: 5, clientErrorPct: 10 });
    expect(pts[0].p95).toBeGreaterThan(50);
    expect(pts[0].p95).toBeLessThan(100);
    expect(pts[1]).toMatchObject({ count: null, p50: null, p95: null, errorPct: null, clientErrorPct: null });
  });

  it("minute rows fold into wider chart buckets", () => {
    const w = { from: T0, to: T0 + 15 * MIN, stepMs: 15 * MIN };
    const pts = prepareLatencySeries(
      { rows: [
        { bucket: T0, route: "GET /a", count: 1, errorCount: 0, clientErrorCount: 0, sumMs: 1, hist: hist({ 0: 1 }) },
        { bucket: T0 + 7 * MIN, route: "GET /a", count: 3, errorCount: 0, clientErrorCount: 0, sumMs: 3, hist: hist({ 3: 3 }) },
      ],
      window: w }
    );
    expect(pts).toHaveLength(1);
    // Both minutes count: the 2nd of 4 samples is the first of the three in (5, 10] ms.
    expect(pts[0].count).toBe(4);
    expect(pts[0].p50).toBeGreaterThan(5);
    expect(pts[0].p50).toBeLessThan(10);
  });

  it("the open-ended top bucket is charted at the last finite bound", () => {
    const pts = prepareLatencySeries({ rows: [{ bucket: T0, route: "GET /slow", count: 1, errorCount: 0, clientErrorCount: 0, sumMs: 20_000, hist: hist({ 13: 1 }) }], window: { from: T0, to: T0 + MIN, stepMs: MIN } });
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
      { route: "GET /fast", count: 10, errorCount: 0, clientErrorCount: 0, sumMs: 20, hist: hist({ 1: 10 }), errorsByStatus: {} },
      { route: "POST /slow", count: 4, errorCount: 2, clientErrorCount: 1, sumMs: 800, hist: hist({ 7: 4 }), errorsByStatus: { "409": 1, "500": 2 } },
      { route: "GET /idle", count: 0, errorCount: 0, clientErrorCount: 0, sumMs: 0, hist: hist({}), errorsByStatus: {} },
    ]);
    expect(rows.map((r) => r.route)).toEqual(["POST /slow", "GET /fast"]);
    expect(rows[0]).toMatchObject({ meanMs: 200, p95Ms: 200, errorPct: 50, clientErrorPct: 25, serverErrorsByStatus: [["500", 2]], clientAnswersByStatus: [["409", 1]] });
  });
});

describe("single points", () => {
  it("a measured point between two gaps is marked to be drawn as a dot; points on a line are not", () => {
    const pts = [{ v: null }, { v: 3 }, { v: null }, { v: 4 }, { v: 5 }, { v: null }, { v: 0 }];
    expect([...isolatedPoints({ points: pts, key: "v" })]).toEqual([1, 6]);
    expect([...isolatedPoints({ points: [{ v: 7 }], key: "v" })]).toEqual([0]);
  });
});

describe("time-axis ticks", () => {
  const DAY = 86_400_000;
  const fmt = (ticks: number[], daily: boolean) => ticks.map((t) => (daily ? new Date(t).toISOString().slice(5, 10) : new Date(t).toISOString().slice(11, 16)));

  it("a 7-day chart names each tick's day once, at midnight UTC, and leaves the right edge free", () => {
    const to = Date.UTC(2026, 10, 28, 18, 0);
    const { ticks, daily } = timeTicks({ from: to - 7 * DAY, to, width: 540 });
    expect(daily).toBe(true);
    const labels = fmt(ticks, daily);
    expect(new Set(labels).size).toBe(labels.length);
    expect(ticks.every((t) => t % DAY === 0)).toBe(true);
    expect(ticks.at(-1)!).toBeLessThan(to - 0.04 * 7 * DAY);
  });

  it("a narrower chart gets fewer ticks; an hour is labelled in round minutes", () => {
    const to = Date.UTC(2026, 10, 28, 18, 0);
    const wide = timeTicks({ from: to - DAY, to, width: 900 }).ticks.length;
    const narrow = timeTicks({ from: to - DAY, to, width: 250 }).ticks.length;
    expect(narrow).toBeLessThan(wide);
    expect(narrow).toBeLessThanOrEqual(Math.floor(250 / 64));
    const hour = timeTicks({ from: to - 3_600_000, to, width: 540 });
    expect(hour.daily).toBe(false);
    expect(fmt(hour.ticks, false).every((l) => /:(00|05|10|15|20|25|30|35|40|45|50|55)$/.test(l))).toBe(true);
  });
});

describe("chart annotations", () => {
  const window = { from: 1_000, to: 10_000 };
  it("draw model switches, reindex runs and status alerts inside the window, oldest first, naming the store on the all-stores charts", () => {
    const lines = chartAnnotations({
      window,
      allStores: true,
      modelChanges: [{ t: 2_000, store: "docs" }],
      reindexes: [
        { startedAt: 5_000, store: "docs", status: "succeeded" },
        { startedAt: 500, store: "old", status: "succeeded" },
      ],
      alerts: [
        { ts: 3_000, store: "docs", kind: "store_status", status: "degraded" },
        { ts: 4_000, store: null, kind: "dialectic_failed", status: "failed" },
      ],
    });
    expect(lines).toEqual([
      { t: 2_000, label: "docs: new model" },
      { t: 3_000, label: "docs: degraded" },
      { t: 5_000, label: "docs: reindex" },
    ]);
  });

  it("leave the store out for one store's charts, and keep only the newest when an alert flaps", () => {
    const alerts = Array.from({ length: 30 }, (_, i) => ({ ts: 2_000 + i * 100, store: "docs", kind: "store_status", status: i % 2 ? "healthy" : "degraded" }));
    const lines = chartAnnotations({ window, allStores: false, modelChanges: [], reindexes: [{ startedAt: 9_000, store: "docs", status: "failed" }], alerts });
    expect(lines).toHaveLength(MAX_CHART_ANNOTATIONS);
    expect(lines.at(-1)).toEqual({ t: 9_000, label: "reindex failed" });
    expect(lines[0].t).toBe(2_000 + 19 * 100);
  });
});

describe("custom chart ranges from the URL", () => {
  const NOW = Date.UTC(2026, 10, 28, 12, 7, 30);
  const HOUR = 60 * MIN;

  it("no from/to is the preset (24h when unknown), with the picker prefilled from its window", () => {
    const r = parseChartRange({ range: "7d", now: NOW });
    expect(r.key).toBe("7d");
    expect(r.window).toEqual(windowForRange({ range: "7d", now: NOW }));
    expect(r.from).toBe("2026-11-21T12:07");
    expect(r.to).toBe("2026-11-28T12:07");
    expect(r.error).toBeNull();
    expect(parseChartRange({ range: "2y", now: NOW }).key).toBe("24h");
  });

  it("a from/to range gets the bucket its length needs, aligned to bucket edges, and its URL reproduces it", () => {
    const two = parseChartRange({ from: "2026-11-28T08:00", to: "2026-11-28T10:00", now: NOW });
    expect(two.key).toBe("custom");
    expect(two.window).toEqual({ from: Date.UTC(2026, 10, 28, 8), to: Date.UTC(2026, 10, 28, 10), stepMs: MIN });
    expect(bucketStarts(two.window)).toHaveLength(120);
    expect(two.label).toBe("2026-11-28 08:00 – 10:00 UTC");
    expect(chartRangeQuery(two)).toBe("from=2026-11-28T08%3A00&to=2026-11-28T10%3A00");
    const again = parseChartRange({ from: "2026-11-28T08:00", to: "2026-11-28T10:00", now: NOW });
    expect(again.window).toEqual(two.window);

    expect(parseChartRange({ from: "2026-11-27T00:00", to: "2026-11-28T00:00", now: NOW }).window.stepMs).toBe(5 * MIN);
    expect(parseChartRange({ from: "2026-11-25T00:00", to: "2026-11-28T00:00", now: NOW }).window.stepMs).toBe(15 * MIN);
    const month = parseChartRange({ from: "2026-10-01T00:00", to: "2026-11-01T00:00", now: NOW });
    expect(month.window.stepMs).toBe(6 * HOUR);
    expect(bucketStarts(month.window).length).toBeLessThanOrEqual(MAX_CHART_BUCKETS);
    const odd = parseChartRange({ from: "2026-11-28T08:03", to: "2026-11-28T11:59", now: NOW });
    expect(odd.window.from % odd.window.stepMs).toBe(0);
    expect(odd.window.to % odd.window.stepMs).toBe(0);
    expect(isLongRange(month)).toBe(true);
    expect(isLongRange(two)).toBe(false);
  });

  it("a short range older than the minute rows is shown by the hour, and says so", () => {
    const r = parseChartRange({ from: "2026-11-10T08:00", to: "2026-11-10T10:00", now: NOW });
    expect(r.error).toBeNull();
    expect(r.window.stepMs).toBe(HOUR);
    expect(r.notes.join(" ")).toMatch(/Minute detail is kept for 7 days/);
  });

  it("an end in the future is moved to now and said", () => {
    const r = parseChartRange({ from: "2026-11-28T11:00", to: "2026-11-29T11:00", now: NOW });
    expect(r.window.to).toBe(Date.UTC(2026, 10, 28, 12, 8));
    expect(r.notes.join(" ")).toMatch(/future/);
    expect(r.to).toBe("2026-11-29T11:00");
  });

  it("a range the rollups cannot answer, or that is not a range, says why and shows the preset", () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ from: "2026-11-28T10:00" }, /needs both from and to/],
      [{ from: "yesterday", to: "2026-11-28T10:00" }, /from is not a time/],
      [{ from: "2026-11-28T10:00", to: "2026-02-31T10:00" }, /to is not a time/],
      [{ from: "2026-11-28T10:00", to: "2026-11-28T09:00" }, /from must be before to/],
      [{ from: "2026-11-29T10:00", to: "2026-11-30T09:00" }, /before now/],
      [{ from: "2026-11-28T10:00", to: "2026-11-28T10:05" }, /at least 10 minutes/],
      [{ from: "2025-01-01T00:00", to: "2025-02-01T00:00" }, /kept for 365 days: from must be after 2025-11-28 12:07 UTC/],
      [{ from: "2026-11-28T10:00" + "0".repeat(40), to: "2026-11-28T11:00" }, /from is not a time/],
    ];
    for (const [q, message] of cases) {
      const r = parseChartRange({ range: "1h", ...q, now: NOW });
      expect(r.error, JSON.stringify(q)).toMatch(message);
      expect(r.error).toMatch(/the 1h range is shown/);
      expect(r.key).toBe("1h");
      expect(r.window).toEqual(windowForRange({ range: "1h", now: NOW }));
      expect(r.from.length).toBeLessThanOrEqual(MAX_TIME_PARAM_CHARS);
    }
  });

  it("reads seconds and a trailing Z, and nothing else", () => {
    expect(parseUtcTime("2026-11-28T10:00:30Z")).toBe(Date.UTC(2026, 10, 28, 10, 0, 30));
    expect(parseUtcTime("2026-11-28T10:00")).toBe(Date.UTC(2026, 10, 28, 10));
    expect(parseUtcTime("2026-11-28T10:00+02:00")).toBeNull();
    expect(parseUtcTime("1764324000000")).toBeNull();
    expect(parseUtcTime("2026-11-28")).toBeNull();
  });
});

describe("time ticks on a phone", () => {
  it("a 24h chart about 200 px wide still names three times of day", () => {
    const to = Date.UTC(2026, 10, 28, 12, 7);
    const { ticks } = timeTicks({ from: to - 86_400_000, to, width: 204 });
    expect(ticks.length).toBeGreaterThanOrEqual(2);
    expect(ticks.map((t) => new Date(t).toISOString().slice(11, 16))).toEqual(["16:00", "00:00", "08:00"]);
  });
});
