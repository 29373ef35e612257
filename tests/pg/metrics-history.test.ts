import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getGovernance } from "@/lib/db/connection";
import { drainMinuteRollups, recordRequest, type MinuteRollup } from "@/lib/http/request-timer";
import { getOverviewNumbers, loadHealthDashboard, loadObservabilityDashboard } from "@/lib/metrics/health";
import { runMetricsPass } from "@/lib/metrics/loop";
import { metricsBackend } from "@/lib/metrics/backend";
import { MINUTE_MS } from "@/lib/metrics/rollups";
import { drainEmbeddings, governanceSql, seedDocument, seedStore, useTestBackend, type TestEnv } from "../backend";

/**
 * The Health and Observability history with DATABASE_URL (lib/metrics/rollups.ts): every replica adds its
 * requests to the shared latency rows and snapshots the PostgreSQL stores, so the charts show the whole
 * install — not one server's local governance.db, which a replica behind a load balancer does not share.
 */
let env: TestEnv;
beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_EMBED_WORKER: "false" });
  await seedStore("hist");
});
afterAll(() => env.cleanup());

const HOUR = 60 * MINUTE_MS;

/** A replica's minute for one route: `count` requests of `ms` each, `errors` of them 5xx. */
function minute({ ts, route, count, errors = 0 }: { ts: number; route: string; count: number; errors?: number }): MinuteRollup {
  for (let i = 0; i < count; i++) recordRequest({ route, status: i < errors ? 500 : 200, ms: 12, now: ts + 1000 });
  const [r] = drainMinuteRollups();
  return r;
}

describe("request latency from every replica", () => {
  it("two replicas flushing the same minute at once add up: the Observability page counts both's requests", async () => {
    const now = Date.now();
    const ts = now - (now % MINUTE_MS) - 2 * MINUTE_MS;
    const a = minute({ ts, route: "GET /stores/{store}/search", count: 30, errors: 3 });
    const b = minute({ ts, route: "GET /stores/{store}/search", count: 50, errors: 2 });
    await Promise.all([metricsBackend().saveRollups({ rows: [a] }), metricsBackend().saveRollups({ rows: [b] })]);
    const rows = await governanceSql<{ resolution_s: number; count: number; error_count: number }>("select resolution_s, count, error_count from metric_rollups where route = ? order by resolution_s", ["GET /stores/{store}/search"]);
    // The minute row, and the quarter-hour and hour rows it is folded into: each holds both replicas' requests once.
    expect(rows.map((r) => [Number(r.resolution_s), Number(r.count), Number(r.error_count)])).toEqual([
      [60, 80, 5],
      [900, 80, 5],
      [3600, 80, 5],
    ]);
    const d = await loadObservabilityDashboard({ range: "1h", now });
    const search = d.routes.find((r) => r.route === "GET /stores/{store}/search");
    expect(search).toMatchObject({ count: 80 });
    expect(d.allRoutes.reduce((n, p) => n + (p.count ?? 0), 0)).toBe(80);
    // The Overview's 24h numbers read the same shared rows.
    expect((await getOverviewNumbers({ now })).apiRequests24h).toBe(80);
  });

  it("the metrics pass drains this replica's minutes into PostgreSQL, not into a local governance.db", async () => {
    const now = Date.now();
    recordRequest({ route: "GET /stores/{store}/documents", status: 200, ms: 5, now: now - MINUTE_MS });
    await runMetricsPass({ now });
    const [row] = await governanceSql<{ n: number }>("select sum(count) as n from metric_rollups where route = ? and resolution_s = 60", ["GET /stores/{store}/documents"]);
    expect(Number(row.n)).toBe(1);
    // The replica's local governance.db (it keeps what it alone sees, e.g. the provider's state) holds none of it.
    if (fs.existsSync(path.join(env.dataDir, "governance.db"))) expect(getGovernance().sqlite.prepare("select count(*) from metric_rollups").pluck().get()).toBe(0);
  });
});

describe("store history", () => {
  it("snapshots of the PostgreSQL stores chart the backlog going down, with the time of the newest", async () => {
    for (let i = 0; i < 6; i++) await seedDocument("hist", `notes/${i}.md`, `# note ${i}\n\nbackup rotation ${i}`);
    // Minutes after any the other tests measured: the newest snapshot is this test's.
    const t0 = Date.now() + 5 * MINUTE_MS;
    await runMetricsPass({ now: t0 });
    await drainEmbeddings(["hist"]);
    const t1 = t0 + 3 * MINUTE_MS;
    await runMetricsPass({ now: t1 });
    const d = await loadHealthDashboard({ store: "hist", range: "1h", now: t1 + 1000 });
    expect(d.snapshotsAsOf).toBe(t1 - (t1 % MINUTE_MS));
    const mine = d.series.filter((p) => p.t >= t0 - (t0 % MINUTE_MS));
    const backlog = mine.filter((p) => p.backlog !== null).map((p) => p.backlog);
    expect(backlog[0]).toBeGreaterThan(0);
    expect(backlog.at(-1)).toBe(0);
    const coverage = mine.filter((p) => p.coveragePct !== null).map((p) => p.coveragePct);
    expect(coverage.at(-1)).toBe(100);
  });

  it("two replicas snapshotting the same minute leave one row per store and minute", async () => {
    const now = Date.now() - 20 * MINUTE_MS;
    await Promise.all([runMetricsPass({ now }), runMetricsPass({ now })]);
    const rows = await governanceSql<{ n: number }>("select count(*) as n from metric_snapshots where store = ? and resolution_s = 60 and ts = ?", ["hist", now - (now % MINUTE_MS)]);
    expect(Number(rows[0].n)).toBe(1);
  });

  it("retention removes minute rows older than a week and keeps the hour rows", async () => {
    const old = Date.now() - 8 * 24 * HOUR;
    await runMetricsPass({ now: old });
    const before = await governanceSql<{ resolution_s: number }>("select resolution_s from metric_snapshots where store = ? and ts <= ?", ["hist", old]);
    expect(before.map((r) => Number(r.resolution_s)).sort((x, y) => x - y)).toEqual([60, 3600]);
    const removed = await metricsBackend().pruneMetrics({ now: Date.now() });
    expect(removed.minuteRows).toBeGreaterThanOrEqual(1);
    const after = await governanceSql<{ resolution_s: number }>("select resolution_s from metric_snapshots where store = ? and ts <= ?", ["hist", old]);
    expect(after.map((r) => Number(r.resolution_s))).toEqual([3600]);
  });
});
