import Database from "better-sqlite3";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { seededRandom } from "@/bench/corpus";
import { applyPragmas, getGovernance } from "@/lib/db/connection";
import { isServerFault, LATENCY_BUCKET_BOUNDS_MS, latencyBucketIndex, quantileFromBuckets, recordRequest, type MinuteRollup } from "@/lib/http/request-timer";
import { generateDemoRollups } from "@/lib/metrics/demo";
import { getOverviewNumbers, loadObservabilityDashboard } from "@/lib/metrics/health";
import { prepareLatencySeries, prepareRouteTable, windowForRange, type LatencyBucketRow } from "@/lib/metrics/preparers";
import { metricsBackend } from "@/lib/metrics/backend";
import { foldRollups, QUARTER_HOUR_MS } from "@/lib/metrics/rollups";
import { migrationsUpTo } from "./helpers";
import { governanceSql, itSqliteOnly, useTestBackend, type TestEnv } from "./backend";

// The 24h Observability view reads quarter-hour rollups (96 rows per route
// instead of 1440 minutes). These tests check that it shows exactly what the
// requests and their minute rows say, and that a governance.db written
// before quarter-hour rows existed gets them from its minutes on upgrade.
// Route rollups live in this process's governance.db on either backend (with
// DATABASE_URL too: see the replica test in health-rollups.test.ts), so the
// minute rows are read there; the Overview's store numbers come from the backend.

const NOW = Date.UTC(2026, 10, 22, 12, 7, 30);
const MIN = 60_000;
const HOUR = 3_600_000;
const ROUTES = ["GET /stores/{store}/search", "POST /stores/{store}/remember", "POST /tasks", "GET /health"];
const STATUSES = [200, 200, 200, 201, 404, 409, 503];

let env: TestEnv;
beforeEach(async () => {
  // No start-up: the migration test writes an old governance.db itself.
  env = await useTestBackend({}, { bootstrap: false });
  await metricsBackend().flushLatencyRollups(); // start from an empty in-memory table
});
afterEach(() => env.cleanup());

type Request = { ts: number; route: string; status: number; ms: number };

/** Requests at random minutes over the last 26 hours (so some fall before the 24h window), flushed in two batches. */
async function recordRandomRequests(n: number): Promise<Request[]> {
  const random = seededRandom(19);
  const requests: Request[] = [];
  for (let i = 0; i < n; i++) {
    const r = { ts: NOW - Math.floor(random() * 26 * HOUR), route: ROUTES[Math.floor(random() * ROUTES.length)], status: STATUSES[Math.floor(random() * STATUSES.length)], ms: Math.exp(random() * Math.log(4000)) };
    recordRequest({ route: r.route, status: r.status, ms: r.ms, now: r.ts });
    requests.push(r);
    if (i === Math.floor(n / 2)) await metricsBackend().flushLatencyRollups(); // a quarter hour written in two flushes adds up
  }
  await metricsBackend().flushLatencyRollups();
  return requests;
}

type MinuteRow = LatencyBucketRow & { route: string; byStatus: string };
/** The minute rows of the window, on this backend (governance.db, or the shared PostgreSQL table). */
async function minuteRowsIn({ from, to }: { from: number; to: number }): Promise<MinuteRow[]> {
  const cols = LATENCY_BUCKET_BOUNDS_MS.map((_, i) => `h${i}`).join(", ");
  const rows = await governanceSql<Record<string, number> & { route: string; byStatus: string }>(
    `select ts, route, count, error_count as "errorCount", client_error_count as "clientErrorCount", sum_ms as "sumMs", by_status as "byStatus", ${cols} from metric_rollups where resolution_s = 60 and ts >= ? and ts < ?`,
    [from, to],
  );
  // PostgreSQL answers bigint columns (ts) as strings.
  return rows.map((r) => ({ bucket: Number(r.ts), route: r.route, count: r.count, errorCount: r.errorCount, clientErrorCount: r.clientErrorCount, sumMs: r.sumMs, byStatus: r.byStatus, hist: LATENCY_BUCKET_BOUNDS_MS.map((_, i) => r[`h${i}`]) }));
}

/** The route table as the minute rows give it (sums per route over the window). */
function routeTableFromMinutes(rows: MinuteRow[]) {
  const byRoute = new Map<string, { route: string; count: number; errorCount: number; clientErrorCount: number; sumMs: number; hist: number[]; errorsByStatus: Record<string, number> }>();
  for (const r of rows) {
    const t = byRoute.get(r.route) ?? { route: r.route, count: 0, errorCount: 0, clientErrorCount: 0, sumMs: 0, hist: LATENCY_BUCKET_BOUNDS_MS.map(() => 0), errorsByStatus: {} };
    t.count += r.count;
    t.errorCount += r.errorCount;
    t.clientErrorCount += r.clientErrorCount;
    t.sumMs += r.sumMs;
    r.hist.forEach((n, i) => (t.hist[i] += n));
    for (const [code, n] of Object.entries(JSON.parse(r.byStatus) as Record<string, number>)) if (Number(code) >= 400) t.errorsByStatus[code] = (t.errorsByStatus[code] ?? 0) + n;
    byRoute.set(r.route, t);
  }
  // The mean divides a sum of floats, added per quarter hour instead of per minute: equal up to rounding.
  return prepareRouteTable([...byRoute.values()]).map((r) => ({ ...r, meanMs: expect.closeTo(r.meanMs, 9) as unknown as number }));
}

describe("the 24h view from quarter-hour rollups", () => {
  it("charts and tables exactly the requests of the window: same counts, error rates and percentile estimates as the minute rows", async () => {
    const requests = await recordRandomRequests(3000);
    const window = windowForRange({ range: "24h", now: NOW });
    const d = await loadObservabilityDashboard({ range: "24h", now: NOW });

    // Against the requests themselves: every 15-minute point counts the requests in it, with their faults and their histogram.
    const inWindow = requests.filter((r) => r.ts >= window.from && r.ts < window.to);
    expect(inWindow.length).toBeGreaterThan(2000);
    expect(inWindow.length).toBeLessThan(requests.length); // some fell before the window and must not show
    expect(d.allRoutes).toHaveLength(96);
    for (const p of d.allRoutes) {
      const mine = inWindow.filter((r) => r.ts - (r.ts % QUARTER_HOUR_MS) === p.t);
      if (mine.length === 0) {
        expect(p.count).toBeNull();
        continue;
      }
      const hist = LATENCY_BUCKET_BOUNDS_MS.map(() => 0);
      for (const r of mine) hist[latencyBucketIndex(r.ms)]++;
      expect(p).toMatchObject({ count: mine.length, p95: quantileFromBuckets({ buckets: hist, q: 0.95 }), errorPct: (100 * mine.filter((r) => isServerFault(r.status)).length) / mine.length });
    }
    expect(d.routes.reduce((n, r) => n + r.count, 0)).toBe(inWindow.length);
    const searchRoute = d.routes.find((r) => r.route === ROUTES[0])!;
    const searches = inWindow.filter((r) => r.route === ROUTES[0]);
    expect(searchRoute.count).toBe(searches.length);
    expect(Object.fromEntries(searchRoute.clientAnswersByStatus)).toEqual({ "404": searches.filter((r) => r.status === 404).length, "409": searches.filter((r) => r.status === 409).length });

    // Against the minute rows: the chart and the table are identical to what summing the minutes gives.
    const minutes = await minuteRowsIn(window);
    expect(d.allRoutes).toEqual(prepareLatencySeries({ rows: minutes, window }));
    expect(d.routes).toEqual(routeTableFromMinutes(minutes));

    // The Overview's 24h numbers cover the same window.
    expect((await getOverviewNumbers({ now: NOW })).apiRequests24h).toBe(inWindow.length);
  });
});

describe("governance migration 0008 (quarter-hour rollups)", () => {
  const LAST_OLD_MIGRATION = "0007_reviews_and_editor";
  let scratch: string;
  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-gov-old-"));
  });
  afterEach(() => fs.rmSync(scratch, { recursive: true, force: true }));

  /** A governance.db at the old schema holding minute (and hour) rows, written with the old release's SQL. */
  function createOldGovernance(minutes: MinuteRollup[]): void {
    const sqlite = new Database(path.join(env.dataDir, "governance.db"));
    applyPragmas(sqlite);
    migrate(drizzle(sqlite), { migrationsFolder: migrationsUpTo({ which: "governance", last: LAST_OLD_MIGRATION, scratch }) });
    const h = LATENCY_BUCKET_BOUNDS_MS.map((_, i) => `h${i}`);
    const insert = sqlite.prepare(
      `insert into metric_rollups (ts, resolution_s, route, count, error_count, client_error_count, sum_ms, by_status, ${h.join(", ")}) values (?, ?, ?, ?, ?, ?, ?, ?, ${h.map(() => "?").join(", ")})`,
    );
    sqlite.transaction(() => {
      for (const [rows, res] of [[minutes, 60], [foldRollups({ rows: minutes, bucketMs: HOUR }), 3600]] as const) {
        for (const r of rows) insert.run(r.ts, res, r.route, r.count, r.errorCount, r.clientErrorCount, r.sumMs, JSON.stringify(r.byStatus), ...r.buckets);
      }
    })();
    expect((sqlite.prepare("select count(*) as n from metric_rollups where resolution_s = 900").get() as { n: number }).n).toBe(0);
    sqlite.close();
  }

  itSqliteOnly("folds the minutes already recorded into quarter-hour rows on upgrade, so the 24h view is right at once", "an old governance.db upgraded by its SQLite migrations; PostgreSQL starts from drizzle/pg", async () => {
    const minutes = generateDemoRollups({ from: NOW - 30 * HOUR, to: NOW, stepMs: MIN });
    expect(minutes.some((m) => m.clientErrorCount > 0)).toBe(true);
    createOldGovernance(minutes);

    const quarters = getGovernance()
      .sqlite.prepare(`select ts, route, count, error_count as errorCount, client_error_count as clientErrorCount, sum_ms as sumMs, by_status as byStatus, ${LATENCY_BUCKET_BOUNDS_MS.map((_, i) => `h${i}`).join(", ")} from metric_rollups where resolution_s = 900 order by route, ts`)
      .all() as (Record<string, number> & { route: string; byStatus: string })[];
    const expected = foldRollups({ rows: minutes, bucketMs: QUARTER_HOUR_MS }).sort((a, b) => a.route.localeCompare(b.route) || a.ts - b.ts);
    expect(quarters.map((q) => ({ ts: q.ts, route: q.route, count: q.count, errorCount: q.errorCount, clientErrorCount: q.clientErrorCount, sumMs: q.sumMs, buckets: LATENCY_BUCKET_BOUNDS_MS.map((_, i) => q[`h${i}`]), byStatus: JSON.parse(q.byStatus) as Record<string, number> }))).toEqual(
      expected.map((e) => ({ ...e, sumMs: expect.closeTo(e.sumMs, 6) })),
    );

    const window = windowForRange({ range: "24h", now: NOW });
    const d = await loadObservabilityDashboard({ range: "24h", now: NOW });
    const inWindow = await minuteRowsIn(window);
    expect(d.allRoutes.filter((p) => p.count !== null).length).toBeGreaterThan(80);
    expect(d.allRoutes).toEqual(prepareLatencySeries({ rows: inWindow, window }));
    expect(d.routes).toEqual(routeTableFromMinutes(inWindow));
  });
});
