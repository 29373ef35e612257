/**
 * Health page first paint (server side: every query and preparer the page
 * runs) over 1M rollup rows, in two shapes side by side:
 *  - "a year, 54 routes": 7 days of minute rows + a year of hour rows per
 *    route, what retention keeps;
 *  - "a week of minutes, 100 routes": 1M minute rows inside the 7d range
 *    (plus their hour rows), the worst case for the short ranges.
 * Plus a year of store snapshots for 3 stores. Recall events are not read by
 * the page: they are folded into the per-minute snapshot.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { percentile, printTable } from "./table";

const DAY = 86_400_000;
const PAGE_ROUTES = ["GET /stores/{store}/search", "POST /stores/{store}/search", "POST /stores/{store}/recall", "POST /stores/{store}/remember"];

export default async function run(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-health-"));
  process.env.DATA_DIR = dataDir;
  process.env.DUALMIND_LOG_LEVEL = "warn";
  const { resetConfigForTests } = await import("../lib/config");
  resetConfigForTests();
  const { closeAllDatabases, getGovernance } = await import("../lib/db/connection");
  const { createStore } = await import("../lib/stores/stores");
  const { generateDemoRollups, generateDemoSnapshots } = await import("../lib/metrics/demo");
  const { saveRollups } = await import("../lib/metrics/rollups");
  const { saveStoreSnapshots } = await import("../lib/metrics/snapshots");
  const { loadHealthDashboard } = await import("../lib/metrics/health");
  const { listRouteTotalsByWindow } = await import("../lib/metrics/series");
  const { RANGE_KEYS, windowForRange } = await import("../lib/metrics/preparers");

  const now = Date.UTC(2026, 10, 22, 12, 0, 0);
  const stores = ["alpha", "beta", "gamma"];
  const results: Record<string, string | number>[] = [];
  const seedRows: Record<string, string | number>[] = [];
  try {
    for (const shape of ["a year, 54 routes", "a week of minutes, 100 routes"] as const) {
      closeAllDatabases();
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.mkdirSync(dataDir, { recursive: true });
      for (const name of stores) createStore({ input: { name }, actor: "bench" });
      const started = performance.now();
      const routes = Array.from({ length: shape === "a year, 54 routes" ? 54 : 100 }, (_, i) => PAGE_ROUTES[i] ?? `GET /bench/route-${i}`);
      saveRollups({ rows: generateDemoRollups({ routes, from: now - 7 * DAY, to: now, stepMs: 60_000 }) });
      if (shape === "a year, 54 routes") saveRollups({ rows: generateDemoRollups({ routes, from: now - 365 * DAY, to: now - 7 * DAY, stepMs: 3_600_000 }), resolutionS: 3600 });
      saveStoreSnapshots({ snapshots: generateDemoSnapshots({ stores, from: now - 7 * DAY, to: now, stepMs: 60_000 }) });
      saveStoreSnapshots({ snapshots: generateDemoSnapshots({ stores, from: now - 365 * DAY, to: now - 7 * DAY, stepMs: 3_600_000 }), resolutionS: 3600 });
      getGovernance().sqlite.exec("analyze");
      const total = (sql: string) => (getGovernance().sqlite.prepare(sql).get() as { n: number }).n;
      seedRows.push({ shape, "rollup rows": total("select count(*) as n from metric_rollups"), "snapshot rows": total("select count(*) as n from metric_snapshots"), "seed s": (performance.now() - started) / 1000, "governance.db MB": fs.statSync(path.join(dataDir, "governance.db")).size / 1e6 });

      for (const range of RANGE_KEYS) {
        for (const store of ["all", "alpha"]) {
          const samples: number[] = [];
          for (let i = 0; i < 12; i++) {
            const t0 = performance.now();
            const d = loadHealthDashboard({ store, range, now });
            samples.push(performance.now() - t0);
            if (d.series.length === 0) throw new Error("no series");
          }
          samples.shift(); // first call prepares statements
          results.push({ shape, page: "Health", range, store, "p50 ms": percentile(samples, 50), "p95 ms": percentile(samples, 95) });
        }
        const samples: number[] = [];
        for (let i = 0; i < 6; i++) {
          const t0 = performance.now();
          listRouteTotalsByWindow({ window: windowForRange(range, now) });
          samples.push(performance.now() - t0);
        }
        samples.shift();
        results.push({ shape, page: "Observability route table", range, store: "-", "p50 ms": percentile(samples, 50), "p95 ms": percentile(samples, 95) });
      }
    }
  } finally {
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  printTable("Seeded metrics", seedRows);
  printTable("Health page server time (loadHealthDashboard: queries + preparers), 11 runs each", results);
}
