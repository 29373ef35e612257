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
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { percentile, printTable } from "./table";

const DAY = 86_400_000;
const PORT = Number(process.env.BENCH_HEALTH_PORT ?? 3707);
const BASE = `http://127.0.0.1:${PORT}`;
export const PASSWORD = "bench-admin-password";

/** `next start` on dataDir at PORT (shared with bench/status.bench.ts). */
export async function startServer(dataDir: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const server = spawn(process.execPath, [path.join("node_modules", "next", "dist", "bin", "next"), "start", "-H", "127.0.0.1", "-p", String(PORT)], {
    env: { ...process.env, DATA_DIR: dataDir, DUALMIND_ADMIN_PASSWORD: PASSWORD, DUALMIND_LOG_LEVEL: "warn", NEXTAUTH_URL: BASE, NEXT_TELEMETRY_DISABLED: "1", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    if (server.exitCode !== null) throw new Error(`next start exited ${server.exitCode}`);
    try {
      if ((await fetch(`${BASE}/api/v1/health`)).ok) return server;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  server.kill("SIGTERM");
  throw new Error("next start did not answer within 60 s");
}

/** Sign in as the first admin through next-auth's credentials callback (at `base`); returns the Cookie header of the session. */
export async function signIn(base = BASE): Promise<string> {
  const csrf = await fetch(`${base}/api/auth/csrf`);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const jar = csrf.headers.getSetCookie().map((c) => c.split(";")[0]);
  const res = await fetch(`${base}/api/auth/callback/credentials`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.join("; ") },
    body: new URLSearchParams({ csrfToken, username: "admin", password: PASSWORD, json: "true" }),
  });
  const session = res.headers.getSetCookie().map((c) => c.split(";")[0]).find((c) => c.includes("session-token"));
  if (!session) throw new Error(`sign-in failed: HTTP ${res.status}`);
  return [...jar, session].join("; ");
}

/** Full server-rendered HTML of a dashboard page (time to the last byte on loopback). */
export async function timePage(url: string, cookie: string, runs: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const t0 = performance.now();
    const res = await fetch(`${BASE}${url}`, { headers: { cookie }, redirect: "manual" });
    const html = await res.text();
    if (res.status !== 200 || (url.startsWith("/health") && !html.includes("chart-backlog"))) throw new Error(`${url}: HTTP ${res.status}`);
    samples.push(performance.now() - t0);
  }
  samples.shift(); // the first request compiles nothing but warms caches
  return samples;
}
const PAGE_ROUTES = ["GET /stores/{store}/search", "POST /stores/{store}/search", "POST /stores/{store}/recall", "POST /stores/{store}/remember"];

const RECALL_EVENTS = 1_000_000;

export default async function run(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-health-"));
  process.env.DATA_DIR = dataDir;
  process.env.DUALMIND_LOG_LEVEL = "warn";
  const { resetConfigForTests } = await import("../lib/config");
  resetConfigForTests();
  const { closeAllDatabases, getGovernance, getStoreDb } = await import("../lib/db/connection");
  const { createStore } = await import("../lib/stores/stores");
  const { generateDemoRollups, generateDemoSnapshots } = await import("../lib/metrics/demo");
  const { saveRollups } = await import("../lib/metrics/rollups");
  const { saveStoreSnapshots } = await import("../lib/metrics/snapshots");
  const { loadHealthDashboard, loadObservabilityDashboard } = await import("../lib/metrics/health");
  const { RANGE_KEYS } = await import("../lib/metrics/preparers");

  // The server renders "now", so the seeded data ends now too.
  const now = Date.now() - (Date.now() % 60_000);
  const httpRows: Record<string, string | number>[] = [];
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
      // 1M raw recall events in one store: the pages read snapshots, so this size must not matter.
      const alpha = getStoreDb({ store: "alpha" }).sqlite;
      const insEvent = alpha.prepare(
        "insert into recall_events(agent_id, query, mode, fallback_reason, latency_ms, cache_hit, hit_count, top_score, warning, created_at) values ('bench', ?, 'hybrid', null, ?, 0, ?, ?, 0, ?)",
      );
      alpha.transaction(() => {
        for (let i = 0; i < RECALL_EVENTS; i++) insEvent.run(`query ${i % 5000}`, 2 + (i % 17), i % 4, (i % 100) / 100, now - Math.floor((i / RECALL_EVENTS) * 7 * DAY));
      })();
      const total = (sql: string) => (getGovernance().sqlite.prepare(sql).get() as { n: number }).n;
      seedRows.push({ shape, "recall events": (alpha.prepare("select count(*) as n from recall_events").get() as { n: number }).n, "rollup rows": total("select count(*) as n from metric_rollups"), "snapshot rows": total("select count(*) as n from metric_snapshots"), "seed s": (performance.now() - started) / 1000, "governance.db MB": fs.statSync(path.join(dataDir, "governance.db")).size / 1e6 });

      for (const range of RANGE_KEYS) {
        for (const store of ["all", "alpha"]) {
          const samples: number[] = [];
          for (let i = 0; i < 12; i++) {
            const t0 = performance.now();
            const d = await loadHealthDashboard({ store, range, now });
            samples.push(performance.now() - t0);
            if (d.series.length === 0) throw new Error("no series");
          }
          samples.shift(); // first call prepares statements
          results.push({ shape, page: "Health", range, store, "p50 ms": percentile(samples, 50), "p95 ms": percentile(samples, 95) });
        }
        const samples: number[] = [];
        for (let i = 0; i < 6; i++) {
          const t0 = performance.now();
          await loadObservabilityDashboard({ range, now });
          samples.push(performance.now() - t0);
        }
        samples.shift();
        results.push({ shape, page: "Observability", range, store: "-", "p50 ms": percentile(samples, 50), "p95 ms": percentile(samples, 95) });
      }
      if (fs.existsSync(path.join(".next", "BUILD_ID"))) {
        closeAllDatabases();
        const server = await startServer(dataDir);
        try {
          const cookie = await signIn();
          for (const range of RANGE_KEYS) {
            for (const url of [`/health?range=${range}`, `/health?range=${range}&store=alpha`, `/observability?range=${range}`]) {
              const samples = await timePage(url, cookie, 5);
              httpRows.push({ shape, "GET (signed in)": url, "p50 ms": percentile(samples, 50), "p95 ms": percentile(samples, 95) });
            }
          }
        } finally {
          server.kill("SIGTERM");
          await new Promise((r) => server.once("exit", r));
        }
      }
    }
  } finally {
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  printTable("Seeded metrics", seedRows);
  if (httpRows.length === 0) process.stdout.write("(no production build: run `npx next build` for the HTTP table)\n");
  printTable("Server-rendered first paint over HTTP (next start on loopback, whole HTML), 5 runs each", httpRows);
  printTable("Page data server time (loadHealthDashboard / loadObservabilityDashboard: queries + preparers), p50/p95 of 11 (Health) or 5 (Observability) runs", results);
}
