import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getGovernance } from "@/lib/db/connection";
import { recordRequest } from "@/lib/http/request-timer";
import { flushLatencyRollups } from "@/lib/metrics/rollups";
import { getLatestSnapshotsByStore } from "@/lib/metrics/snapshots";
import { metricsBackend } from "@/lib/metrics/backend";
import { runMetricsPass } from "@/lib/metrics/loop";
import { generateDemoSnapshots } from "@/lib/metrics/demo";
import { getOverviewNumbers, loadHealthDashboard, loadObservabilityDashboard } from "@/lib/metrics/health";
import { listLatencyBucketsByWindow, listRouteTotalsByWindow } from "@/lib/metrics/series";
import { prepareLatencySeries, prepareRouteTable, windowForRange } from "@/lib/metrics/preparers";
import { parseChartRange } from "@/lib/metrics/time-range";
import { recallBackend } from "@/lib/recall/backend";
import { asAnotherReplica, drainEmbeddings, seedDocument, sqliteOnlyCheck, seedStore, seedTrace, useTestBackend, type TestEnv } from "./backend";

const NOW = Date.UTC(2026, 10, 22, 12, 0, 30);
const MIN = 60_000;
const DAY = 86_400_000;

let env: TestEnv;
beforeEach(async () => {
  env = await useTestBackend({ DUALMIND_EMBED_BACKLOG_WATERMARK: "2" });
  flushLatencyRollups(); // start from an empty in-memory table
});
afterEach(() => env.cleanup());

// Route latency rollups are written to this process's governance.db on either backend (there is no PostgreSQL
// table for them yet: see the replica test below), so these read them there.
const rollups = () => getGovernance().sqlite.prepare("select resolution_s as res, route, count, error_count as errors, client_error_count as clientErrors, p95_ms as p95, by_status as byStatus from metric_rollups order by res, route").all() as { res: number; route: string; count: number; errors: number; clientErrors: number; p95: number; byStatus: string }[];

describe("latency rollups", () => {
  it("requests recorded in memory land as minute, quarter-hour and hour rows with counts, errors and percentiles", () => {
    for (let i = 0; i < 19; i++) recordRequest({ route: "GET /stores/{store}/search", status: 200, ms: 4, now: NOW });
    recordRequest({ route: "GET /stores/{store}/search", status: 500, ms: 300, now: NOW });
    expect(flushLatencyRollups()).toBe(1);
    const row = { route: "GET /stores/{store}/search", count: 20, errors: 1, clientErrors: 0, p95: 5, byStatus: JSON.stringify({ 200: 19, 500: 1 }) };
    expect(rollups()).toEqual([
      { res: 60, ...row },
      { res: 900, ...row },
      { res: 3600, ...row },
    ]);
  });

  it("flushing the same minute twice adds up instead of overwriting or double counting", () => {
    recordRequest({ route: "POST /stores/{store}/search", status: 200, ms: 3, now: NOW });
    flushLatencyRollups();
    recordRequest({ route: "POST /stores/{store}/search", status: 200, ms: 3, now: NOW + 1000 });
    recordRequest({ route: "POST /stores/{store}/search", status: 404, ms: 3, now: NOW + 2000 });
    flushLatencyRollups();
    expect(flushLatencyRollups()).toBe(0);
    const rows = rollups();
    expect(rows.map((r) => [r.res, r.count, r.errors, r.clientErrors])).toEqual([
      [60, 3, 0, 1],
      [900, 3, 0, 1],
      [3600, 3, 0, 1],
    ]);
  });

  it("retention drops minute and quarter-hour rows after a week but the hour rows keep the totals", async () => {
    recordRequest({ route: "GET /health", status: 200, ms: 1, now: NOW - 8 * DAY });
    recordRequest({ route: "GET /health", status: 200, ms: 1, now: NOW - 8 * DAY + MIN });
    recordRequest({ route: "GET /health", status: 200, ms: 1, now: NOW });
    await metricsBackend().flushLatencyRollups();
    expect(await metricsBackend().pruneMetrics({ now: NOW })).toEqual({ minuteRows: 2, quarterHourRows: 1, yearOld: 0 });
    const total = await listRouteTotalsByWindow({ window: windowForRange({ range: "30d", now: NOW }) });
    expect(total).toMatchObject([{ route: "GET /health", count: 3 }]);
    expect((await metricsBackend().pruneMetrics({ now: NOW + 400 * DAY })).yearOld).toBe(2);
  });

  it("the error rate counts server faults only: expected 404s and 409s are shown apart, in the table and the chart", async () => {
    recordRequest({ route: "POST /tasks", status: 201, ms: 2, now: NOW });
    recordRequest({ route: "POST /tasks", status: 404, ms: 2, now: NOW });
    recordRequest({ route: "POST /tasks", status: 409, ms: 2, now: NOW });
    recordRequest({ route: "POST /tasks", status: 409, ms: 2, now: NOW });
    recordRequest({ route: "POST /tasks", status: 503, ms: 2, now: NOW });
    await metricsBackend().flushLatencyRollups();
    const window = windowForRange({ range: "1h", now: NOW });
    const [totals] = await listRouteTotalsByWindow({ window });
    expect(totals).toMatchObject({ count: 5, errorCount: 1, clientErrorCount: 3, errorsByStatus: { "404": 1, "409": 2, "503": 1 } });
    const [row] = prepareRouteTable([totals]);
    expect(row).toMatchObject({ errorPct: 20, clientErrorPct: 60, serverErrorsByStatus: [["503", 1]], clientAnswersByStatus: [["409", 2], ["404", 1]] });
    const point = prepareLatencySeries({ rows: await listLatencyBucketsByWindow({ window }), window }).find((p) => p.count !== null);
    expect(point).toMatchObject({ count: 5, errorPct: 20, clientErrorPct: 60 });
  });

  it(
    "requests served by two app servers of one install both count on Observability and the Overview",
    async () => {
      await metricsBackend().flushLatencyRollups();
      recordRequest({ route: "POST /tasks", status: 201, ms: 2, now: Date.now() });
      await metricsBackend().flushLatencyRollups();
      const back = asAnotherReplica();
      try {
        recordRequest({ route: "POST /tasks", status: 201, ms: 2, now: Date.now() });
        recordRequest({ route: "POST /tasks", status: 503, ms: 2, now: Date.now() });
        await metricsBackend().flushLatencyRollups();
        const [row] = (await loadObservabilityDashboard({ range: "1h" })).routes;
        expect(row).toMatchObject({ route: "POST /tasks", count: 3 });
        expect((await getOverviewNumbers()).apiRequests24h).toBe(3);
      } finally {
        back();
      }
    },
  );

  it("a route answering only 409s has a 0% error rate", async () => {
    recordRequest({ route: "POST /dialectic/sessions/{id}/messages", status: 409, ms: 2, now: NOW });
    recordRequest({ route: "POST /dialectic/sessions/{id}/messages", status: 409, ms: 2, now: NOW });
    await metricsBackend().flushLatencyRollups();
    const [row] = prepareRouteTable(await listRouteTotalsByWindow({ window: windowForRange({ range: "1h", now: NOW }) }));
    expect(row).toMatchObject({ errorPct: 0, clientErrorPct: 100, serverErrorsByStatus: [], clientAnswersByStatus: [["409", 2]] });
  });
});

describe("store snapshots and the Health page data", () => {
  it("a custom range from the URL gives both pages its window: its buckets, and only what happened inside it", async () => {
    await seedStore("notes");
    await seedDocument("notes", "a.md", "# Alpha\n\nsome text about sqlite and vectors");
    await metricsBackend().snapshotAllStores({ now: NOW - 3 * 60 * MIN });
    await metricsBackend().snapshotAllStores({ now: NOW });
    recordRequest({ route: "GET /stores/{store}/search", status: 200, ms: 4, now: NOW - 3 * 60 * MIN });
    recordRequest({ route: "GET /stores/{store}/search", status: 200, ms: 4, now: NOW });
    flushLatencyRollups();
    const range = parseChartRange({ from: "2026-11-22T08:00", to: "2026-11-22T10:00", now: NOW });
    const d = await loadHealthDashboard({ store: "notes", range: "24h", window: range.window, now: NOW });
    expect(d.series).toHaveLength(120);
    expect(d.series.filter((p) => p.backlog !== null).map((p) => p.t)).toEqual([NOW - 3 * 60 * MIN - 30_000]);
    const o = await loadObservabilityDashboard({ range: "24h", window: range.window, now: NOW });
    expect(o.allRoutes).toHaveLength(120);
    await sqliteOnlyCheck("route totals from this process's rollups (with DATABASE_URL Observability reads the shared ones: the replica test below)", () =>
      expect(o.routes.map((r) => [r.route, r.count])).toEqual([["GET /stores/{store}/search", 1]]),
    );
  });

  it("a snapshot measures the real store: backlog before the worker runs, coverage after", async () => {
    await seedStore("notes");
    await seedDocument("notes", "a.md", "# Alpha\n\nsome text about sqlite and vectors");
    await metricsBackend().snapshotAllStores({ now: NOW });
    let d = await loadHealthDashboard({ store: "notes", range: "1h", now: NOW });
    const first = d.series.filter((p) => p.backlog !== null);
    expect(first).toHaveLength(1);
    expect(first[0].backlog).toBeGreaterThan(0);
    expect(first[0].coveragePct).toBe(0);
    expect(first[0].hitRate).toBeNull();
    await drainEmbeddings(["notes"]);
    await metricsBackend().snapshotAllStores({ now: NOW + MIN });
    d = await loadHealthDashboard({ store: "notes", range: "1h", now: NOW + MIN });
    await sqliteOnlyCheck("the newest snapshot as the SQLite store health report reads it (PostgreSQL's reads the recall log live)", () =>
      expect(getLatestSnapshotsByStore({ stores: ["notes"] }).get("notes")).toMatchObject({ backlog: 0, coveragePct: 100, degraded: false, vectorsAvailable: true }),
    );
    expect(d.perStore[0].state).toBe("healthy");
    expect(d.snapshotsAsOf).toBe(NOW + MIN - ((NOW + MIN) % MIN));
    const points = d.series.filter((p) => p.backlog !== null);
    expect(points.map((p) => p.backlog)).toEqual([first[0].backlog, 0]);
    expect(points[1].throughput).toBeGreaterThan(0);
  });

  it("the status is live: overall picks the worst store now; unknown stores fall back to all", async () => {
    await seedStore("ok");
    await seedStore("behind");
    let d = await loadHealthDashboard({ store: "nope", range: "1h", now: NOW });
    expect(d.store).toBe("all");
    expect(d.stores).toEqual(expect.arrayContaining(["ok", "behind"]));
    expect(d.summary.headline).toMatchObject({ state: "healthy", store: null });
    expect(d.perStore.length).toBeGreaterThanOrEqual(2);
    expect(d.perStore.every((s) => s.state === "healthy")).toBe(true);
    // Three items queued against a watermark of two.
    for (const n of ["a", "b", "c"]) await seedDocument("behind", `${n}.md`, `# ${n}\n\nnote ${n}`);
    d = await loadHealthDashboard({ store: "all", range: "1h", now: NOW });
    expect(d.summary.worst).toMatchObject({ store: "behind", state: "degraded", backlog: { pending: 3 } });
    d = await loadHealthDashboard({ store: "ok", range: "1h", now: NOW });
    expect(d.perStore.map((s) => [s.store, s.state])).toEqual([["ok", "healthy"]]);
  });

  it("the history never overrides the live status; missing minutes stay gaps; model changes are marked", async () => {
    await seedStore("ok");
    await seedStore("behind");
    const demo = generateDemoSnapshots({ stores: ["ok", "behind"], from: NOW - 60 * MIN, to: NOW, stepMs: MIN });
    await metricsBackend().saveStoreSnapshots({ snapshots: demo });
    const lastBehind = demo.filter((s) => s.store === "behind").at(-1)!;
    await metricsBackend().saveStoreSnapshots({ snapshots: [{ ...lastBehind, ts: lastBehind.ts + MIN, backlog: 5000, degraded: true, parked: 2 }] });
    const d = await loadHealthDashboard({ store: "all", range: "1h", now: NOW });
    // The snapshot says "behind" was degraded a minute ago; right now both stores are healthy, and that is what shows.
    expect(d.summary.headline).toMatchObject({ state: "healthy" });
    const gaps = d.series.filter((p) => p.backlog === null).length;
    expect(gaps).toBeGreaterThan(0); // the demo outage
    expect(d.series.some((p) => p.backlog === 0 || (p.backlog ?? 0) > 0)).toBe(true);
    expect(d.modelChanges.map((m) => m.store).sort()).toEqual(["behind", "ok"]);
  });

  it("`metrics demo` changes model once, to the store's own: the live snapshots after it draw no second change", async () => {
    await seedStore("demo");
    // A store with vectors: its live snapshots carry its model.
    await seedDocument("demo", "a.md", "# A\n\nSomething worth embedding.");
    await drainEmbeddings(["demo"]);
    const { runCli } = await import("@/scripts/cli-kit");
    const { healthCommands } = await import("@/scripts/commands/health-commands");
    expect(await runCli(healthCommands, ["metrics", "demo", "demo", "--hours", "2", "--json"])).toBe(0);
    // What the server's once-a-minute pass records next: the store as it is, with its real model.
    await runMetricsPass({ now: Date.now() + MIN });
    const d = await loadHealthDashboard({ store: "demo", range: "24h", now: Date.now() + MIN });
    expect(d.modelChanges.filter((m) => m.store === "demo")).toHaveLength(1);
  });

  it("a 24h chart takes the worst backlog of each quarter-hour per store, never the sum of its minutes", async () => {
    await seedStore("steady");
    const quarter = 15 * MIN;
    const start = NOW - (NOW % quarter) - 4 * quarter;
    const minutes = generateDemoSnapshots({ stores: ["steady"], from: start, to: start + quarter, stepMs: MIN }).map((s, i) => ({ ...s, backlog: 100 + i, watermark: 1000 }));
    await metricsBackend().saveStoreSnapshots({ snapshots: minutes });
    const d = await loadHealthDashboard({ store: "steady", range: "24h", now: NOW });
    const measured = d.series.filter((p) => p.backlog !== null);
    expect(measured).toEqual([expect.objectContaining({ t: start, backlog: 100 + minutes.length - 1, watermark: 1000 })]);
  });

  it("recalls give the Health page its hit rate; people's ratings give precision; a store without recalls shows gaps", async () => {
    await seedStore("ops");
    await seedStore("quiet");
    await seedTrace(
      "ops",
      { intent: { verb: "fix", target: "auth token refresh" }, shard_type: "backend", key_files: ["lib/auth/refresh.ts"], outcome: "failure", key_issue: "refresh token rotated twice", error_tags: ["auth"] },
      "a1",
    );
    await drainEmbeddings(["ops"]);
    const recall = recallBackend();
    await recall.recall({ store: "ops", agentId: "a2", input: { intent: { verb: "repair", target: "auth token refreshing", key_files: ["lib/auth/refresh.ts"] } } });
    await recall.recall({ store: "ops", agentId: "a2", input: { query: "sourdough starter feeding schedule" } });
    const [hit] = (await recall.listRecentRecalls({ store: "ops", limit: 10 })).flatMap((e) => e.hits);
    await recall.rateRecallHit({ store: "ops", input: { hit_id: hit.id, relevant: true }, actor: "user:test" });

    // The minute after the recalls: SQLite's snapshot measures the minute gone; PostgreSQL reads its recall log.
    const nextMinute = Date.now() + MIN;
    await metricsBackend().snapshotAllStores({ now: nextMinute });
    const measured = (await loadHealthDashboard({ store: "ops", range: "1h", now: nextMinute })).series.filter((p) => p.hitRate !== null);
    expect(measured).toEqual([expect.objectContaining({ hitRate: 0.5, precision: 1 })]);
    expect(measured[0].recallP95Ms).toBeGreaterThanOrEqual(measured[0].recallP50Ms!);
    expect((await loadHealthDashboard({ store: "quiet", range: "1h", now: nextMinute })).series.every((p) => p.hitRate === null)).toBe(true);
  });
});
