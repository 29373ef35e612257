import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getGovernance, getStoreDb } from "@/lib/db/connection";
import { putDocuments } from "@/lib/index/ingest";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { createStore, openStore } from "@/lib/stores/stores";
import { recordRequest } from "@/lib/http/request-timer";
import { flushLatencyRollups, pruneMetrics } from "@/lib/metrics/rollups";
import { getLatestSnapshotsByStore, saveStoreSnapshots, snapshotAllStores } from "@/lib/metrics/snapshots";
import { getConfig } from "@/lib/config";
import { enqueueEmbeddings } from "@/lib/embed/queue";
import { generateDemoSnapshots } from "@/lib/metrics/demo";
import { loadHealthDashboard } from "@/lib/metrics/health";
import { listLatencyBucketsByWindow, listRouteTotalsByWindow } from "@/lib/metrics/series";
import { prepareLatencySeries, prepareRouteTable, windowForRange } from "@/lib/metrics/preparers";
import { recordTrace } from "@/lib/recall/traces";
import { recallReflections } from "@/lib/recall/recall";
import { listRecentRecallEvents, rateRecallHit } from "@/lib/recall/events";
import { measureRecallStats } from "@/lib/metrics/snapshots";
import { useTempDataDir } from "./helpers";

const NOW = Date.UTC(2026, 10, 22, 12, 0, 30);
const MIN = 60_000;
const DAY = 86_400_000;

let env: ReturnType<typeof useTempDataDir>;
beforeEach(() => {
  env = useTempDataDir();
  flushLatencyRollups(); // start from an empty in-memory table
});
afterEach(() => env.cleanup());

const rollups = () => getGovernance().sqlite.prepare("select resolution_s as res, route, count, error_count as errors, client_error_count as clientErrors, p95_ms as p95, by_status as byStatus from metric_rollups order by res, route").all() as { res: number; route: string; count: number; errors: number; clientErrors: number; p95: number; byStatus: string }[];

describe("latency rollups", () => {
  it("requests recorded in memory land as minute, quarter-hour and hour rows with counts, errors and percentiles", () => {
    for (let i = 0; i < 19; i++) recordRequest("GET /stores/{store}/search", 200, 4, NOW);
    recordRequest("GET /stores/{store}/search", 500, 300, NOW);
    expect(flushLatencyRollups()).toBe(1);
    const row = { route: "GET /stores/{store}/search", count: 20, errors: 1, clientErrors: 0, p95: 5, byStatus: JSON.stringify({ 200: 19, 500: 1 }) };
    expect(rollups()).toEqual([
      { res: 60, ...row },
      { res: 900, ...row },
      { res: 3600, ...row },
    ]);
  });

  it("flushing the same minute twice adds up instead of overwriting or double counting", () => {
    recordRequest("POST /stores/{store}/search", 200, 3, NOW);
    flushLatencyRollups();
    recordRequest("POST /stores/{store}/search", 200, 3, NOW + 1000);
    recordRequest("POST /stores/{store}/search", 404, 3, NOW + 2000);
    flushLatencyRollups();
    expect(flushLatencyRollups()).toBe(0);
    const rows = rollups();
    expect(rows.map((r) => [r.res, r.count, r.errors, r.clientErrors])).toEqual([
      [60, 3, 0, 1],
      [900, 3, 0, 1],
      [3600, 3, 0, 1],
    ]);
  });

  it("retention drops minute and quarter-hour rows after a week but the hour rows keep the totals", () => {
    recordRequest("GET /health", 200, 1, NOW - 8 * DAY);
    recordRequest("GET /health", 200, 1, NOW - 8 * DAY + MIN);
    recordRequest("GET /health", 200, 1, NOW);
    flushLatencyRollups();
    expect(pruneMetrics({ now: NOW })).toEqual({ minuteRows: 2, quarterHourRows: 1, yearOld: 0 });
    const total = listRouteTotalsByWindow({ window: windowForRange("30d", NOW) });
    expect(total).toMatchObject([{ route: "GET /health", count: 3 }]);
    expect(pruneMetrics({ now: NOW + 400 * DAY }).yearOld).toBe(2);
  });

  it("the error rate counts server faults only: expected 404s and 409s are shown apart, in the table and the chart", () => {
    recordRequest("POST /tasks", 201, 2, NOW);
    recordRequest("POST /tasks", 404, 2, NOW);
    recordRequest("POST /tasks", 409, 2, NOW);
    recordRequest("POST /tasks", 409, 2, NOW);
    recordRequest("POST /tasks", 503, 2, NOW);
    flushLatencyRollups();
    const window = windowForRange("1h", NOW);
    const [totals] = listRouteTotalsByWindow({ window });
    expect(totals).toMatchObject({ count: 5, errorCount: 1, clientErrorCount: 3, errorsByStatus: { "404": 1, "409": 2, "503": 1 } });
    const [row] = prepareRouteTable([totals]);
    expect(row).toMatchObject({ errorPct: 20, clientErrorPct: 60, serverErrorsByStatus: [["503", 1]], clientAnswersByStatus: [["409", 2], ["404", 1]] });
    const point = prepareLatencySeries(listLatencyBucketsByWindow({ window }), window).find((p) => p.count !== null);
    expect(point).toMatchObject({ count: 5, errorPct: 20, clientErrorPct: 60 });
  });

  it("a route answering only 409s has a 0% error rate", () => {
    recordRequest("POST /dialectic/sessions/{id}/messages", 409, 2, NOW);
    recordRequest("POST /dialectic/sessions/{id}/messages", 409, 2, NOW);
    flushLatencyRollups();
    const [row] = prepareRouteTable(listRouteTotalsByWindow({ window: windowForRange("1h", NOW) }));
    expect(row).toMatchObject({ errorPct: 0, clientErrorPct: 100, serverErrorsByStatus: [], clientAnswersByStatus: [["409", 2]] });
  });
});

describe("store snapshots and the Health page data", () => {
  it("a snapshot measures the real store: backlog before the worker runs, coverage after", async () => {
    createStore({ input: { name: "notes" }, actor: "test" });
    putDocuments({ handle: getStoreDb("notes"), input: { path: "a.md", content: "# Alpha\n\nsome text about sqlite and vectors" }, actor: "test" });
    await snapshotAllStores({ now: NOW });
    let d = await loadHealthDashboard({ store: "notes", range: "1h", now: NOW });
    const before = getLatestSnapshotsByStore({ stores: ["notes"] }).get("notes")!;
    expect(before.backlog).toBeGreaterThan(0);
    expect(before.coveragePct).toBe(0);
    expect(before.hitRate).toBeNull();
    await drainEmbedQueues({ stores: ["notes"] });
    await snapshotAllStores({ now: NOW + MIN });
    d = await loadHealthDashboard({ store: "notes", range: "1h", now: NOW + MIN });
    expect(getLatestSnapshotsByStore({ stores: ["notes"] }).get("notes")).toMatchObject({ backlog: 0, coveragePct: 100, degraded: false, vectorsAvailable: true });
    expect(d.perStore[0].state).toBe("healthy");
    expect(d.snapshotsAsOf).toBe(NOW + MIN - ((NOW + MIN) % MIN));
    const points = d.series.filter((p) => p.backlog !== null);
    expect(points.map((p) => p.backlog)).toEqual([before.backlog, 0]);
    expect(points[1].throughputPerHour).toBeGreaterThan(0);
  });

  it("the status is live, never the newest snapshot: overall picks the worst store now; unknown stores fall back to all; missing minutes stay gaps", async () => {
    createStore({ input: { name: "ok" }, actor: "test" });
    createStore({ input: { name: "behind" }, actor: "test" });
    const demo = generateDemoSnapshots({ stores: ["ok", "behind"], from: NOW - 60 * MIN, to: NOW, stepMs: MIN });
    saveStoreSnapshots({ snapshots: demo });
    const lastBehind = demo.filter((s) => s.store === "behind").at(-1)!;
    saveStoreSnapshots({ snapshots: [{ ...lastBehind, ts: lastBehind.ts + MIN, backlog: 5000, degraded: true, parked: 2 }] });
    let d = await loadHealthDashboard({ store: "nope", range: "1h", now: NOW });
    expect(d.store).toBe("all");
    // The snapshot says "behind" was degraded a minute ago; right now both stores are healthy, and that is what shows.
    expect(d.overall).toMatchObject({ state: "healthy" });
    expect(d.perStore.length).toBeGreaterThanOrEqual(2);
    expect(d.perStore.every((s) => s.state === "healthy")).toBe(true);
    const watermark = getConfig().embed.backlogWatermark;
    enqueueEmbeddings({ handle: getStoreDb("behind"), items: Array.from({ length: watermark + 1 }, (_, i) => ({ kind: "chunk", refId: 1_000_000 + i, inputHash: "h" })) });
    d = await loadHealthDashboard({ store: "all", range: "1h", now: NOW });
    expect(d.overall).toMatchObject({ store: "behind", state: "degraded", backlog: { pending: watermark + 1 } });
    const gaps = d.series.filter((p) => p.backlog === null).length;
    expect(gaps).toBeGreaterThan(0); // the demo outage
    expect(d.series.some((p) => p.backlog === 0 || (p.backlog ?? 0) > 0)).toBe(true);
    expect(d.modelChanges.map((m) => m.store).sort()).toEqual(["behind", "ok"]);
  });

  it("a 24h chart takes the worst backlog of each quarter-hour per store, never the sum of its minutes", async () => {
    createStore({ input: { name: "steady" }, actor: "test" });
    const quarter = 15 * MIN;
    const start = NOW - (NOW % quarter) - 4 * quarter;
    const minutes = generateDemoSnapshots({ stores: ["steady"], from: start, to: start + quarter, stepMs: MIN }).map((s, i) => ({ ...s, backlog: 100 + i, watermark: 1000 }));
    saveStoreSnapshots({ snapshots: minutes });
    const d = await loadHealthDashboard({ store: "steady", range: "24h", now: NOW });
    const measured = d.series.filter((p) => p.backlog !== null);
    expect(measured).toEqual([expect.objectContaining({ t: start, backlog: 100 + minutes.length - 1, watermark: 1000 })]);
  });

  it("recalls of the last minute give the hit rate and latency; people's ratings give precision; a quiet minute is a gap", async () => {
    createStore({ input: { name: "ops" }, actor: "test" });
    const h = getStoreDb("ops");
    recordTrace({
      handle: h,
      agentId: "a1",
      input: { intent: { verb: "fix", target: "auth token refresh" }, shard_type: "backend", key_files: ["lib/auth/refresh.ts"], outcome: "failure", key_issue: "refresh token rotated twice", error_tags: ["auth"] },
    });
    await drainEmbedQueues({ stores: ["ops"] });
    await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a2", input: { intent: { verb: "repair", target: "auth token refreshing", key_files: ["lib/auth/refresh.ts"] } } });
    await recallReflections({ handle: openStore({ store: "ops" }), agentId: "a2", input: { query: "sourdough starter feeding schedule" } });
    const [hit] = listRecentRecallEvents({ handle: h }).flatMap((e) => e.hits);
    rateRecallHit({ handle: h, input: { hit_id: hit.id, relevant: true }, actor: "user:test" });

    const nextMinute = Date.now() + MIN;
    const stats = measureRecallStats({ handle: h, now: nextMinute });
    expect(stats).toMatchObject({ recallCount: 2, hitRate: 0.5, precision: 1 });
    expect(stats.avgHitAgeS).toBeGreaterThanOrEqual(0); // the trace was written just before the recall
    expect(stats.recallP95Ms).toBeGreaterThanOrEqual(stats.recallP50Ms!);
    const quiet = measureRecallStats({ handle: h, now: nextMinute + 5 * MIN });
    expect(quiet).toMatchObject({ recallCount: 0, hitRate: null, avgHitAgeS: null, recallP50Ms: null, precision: 1 });
  });
});
