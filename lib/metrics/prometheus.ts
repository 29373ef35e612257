import { Counter, Gauge, Registry } from "prom-client";
import { canUseStore, hasScope, type AgentPrincipal } from "../auth/tokens";
import { governance } from "../backend/governance";
import { getConfig } from "../config";
import { AppError } from "../errors";
import { getPg } from "../db/pg";
import { getGovernanceStatus } from "../governance/status";
import { storeFileBytes } from "../stores/stores";
import { listStoreNames } from "../db/store-names";
import { storeConnectionCounts } from "../db/connection";
import { storesOnPostgres } from "../stores/on-postgres";
import { routeLatencySnapshot } from "../http/request-timer";
import { isDegraded, STORE_STATUS_PRECEDENCE } from "../embed/status";
import { getAllStoreStatuses } from "./health";
import { getLatestSnapshotsByStore } from "./snapshots";
import { latestActiveRuns } from "../eval/runs";

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost", "::ffff:127.0.0.1"]);

/** The host name a request was addressed to (Host header, port and IPv6 brackets removed). */
function requestHostName(request: Request): string {
  const host = request.headers.get("host") ?? new URL(request.url).host;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  return (bracketed ? bracketed[1] : host.replace(/:\d+$/, "")).toLowerCase();
}

/**
 * Who may scrape: a bearer token with the read scope. Tokenless scrapes are
 * off unless DUALMIND_METRICS_PUBLIC_LOOPBACK=true, and even then only on a
 * server bound to loopback, for a request addressed to a loopback name, with
 * no non-loopback forwarding hop. A route handler cannot see the peer
 * address, so each condition closes one way in: the Host check refuses a
 * browser page that rebinds its DNS name to 127.0.0.1 and a same-host
 * reverse proxy that keeps the public Host; X-Forwarded-For refuses a proxy
 * that reports the real client (a client can forge that header, so it can
 * only ever refuse, never grant).
 */
export async function authorizeMetricsScrape(request: Request): Promise<{ principal: AgentPrincipal | null }> {
  const header = request.headers.get("authorization");
  if (header) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const principal = match ? await governance().verifyApiToken({ token: match[1] }) : null;
    if (!principal) throw new AppError("unauthorized", "invalid or revoked token");
    if (!hasScope({ principal, needed: "read" })) throw new AppError("forbidden", "this token lacks the 'read' scope");
    return { principal };
  }
  const config = getConfig();
  const hops = (request.headers.get("x-forwarded-for") ?? "")
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean);
  if (config.metricsPublicLoopback && LOOPBACK.has(config.host) && LOOPBACK.has(requestHostName(request)) && hops.every((h) => LOOPBACK.has(h))) return { principal: null };
  throw new AppError(
    "unauthorized",
    config.metricsPublicLoopback
      ? "metrics need a bearer token with the read scope unless a loopback-bound server is scraped at a loopback address"
      : "metrics need a bearer token with the read scope (DUALMIND_METRICS_PUBLIC_LOOPBACK=true allows tokenless scrapes on loopback)",
  );
}

/** The Prometheus text exposition: request counters and latency quantiles, per-store health gauges, dialectic and DB sizes. */
export async function renderPrometheusMetrics({ principal }: { principal: AgentPrincipal | null }): Promise<{ contentType: string; body: string }> {
  const registry = new Registry();
  const requests = new Counter({ name: "dualmind_http_requests_total", help: "API requests since the process started", labelNames: ["route", "code"], registers: [registry] });
  const latency = new Gauge({ name: "dualmind_http_request_duration_ms", help: "API latency quantiles since start (log-bucket upper bounds)", labelNames: ["route", "quantile"], registers: [registry] });
  for (const r of routeLatencySnapshot()) {
    for (const [code, n] of Object.entries(r.byStatus)) requests.inc({ route: r.route, code }, n);
    for (const [q, v] of [["0.5", r.p50Ms], ["0.95", r.p95Ms], ["0.99", r.p99Ms]] as const) if (v !== null && Number.isFinite(v)) latency.set({ route: r.route, quantile: q }, v);
  }

  // With DATABASE_URL the stores are PostgreSQL's (their live status; no files; the recall gauges are read from SQLite's snapshots only), never DATA_DIR's.
  const onPostgres = storesOnPostgres();
  const canUse = (s: string) => !principal || canUseStore({ principal, store: s });
  const stores = onPostgres ? [] : listStoreNames().filter(canUse);
  const gauge = (name: string, help: string, labelNames: string[] = ["store"]) => new Gauge({ name, help, labelNames, registers: [registry] });
  const g = {
    status: gauge("dualmind_store_status", "1 for the store's live status (getStoreStatus), 0 for the others", ["store", "status"]),
    backlog: gauge("dualmind_store_embed_backlog", "rows waiting to be embedded (live)"),
    oldest: gauge("dualmind_store_embed_oldest_age_seconds", "age of the oldest queued row (live)"),
    parked: gauge("dualmind_store_embed_parked", "rows parked after repeated failures (live)"),
    drift: gauge("dualmind_store_drift_rows", "rows whose vectors are from another model or older text (live; absent while the configured model is unknown)"),
    coverage: gauge("dualmind_store_coverage_ratio", "rows with a vector of the configured model / embeddable rows (live; absent while the configured model is unknown)"),
    degraded: gauge("dualmind_store_degraded", "1 when the backlog is above the watermark outside a planned re-embed (live)"),
    vectors: gauge("dualmind_store_vectors_available", "1 when sqlite-vec is loaded"),
    hitRate: gauge("dualmind_store_recall_hit_rate", "share of last minute's recalls with at least one hit above min_score (newest snapshot)"),
    precision: gauge("dualmind_store_recall_precision", "share of rated recall hits (last hour) people marked relevant (newest snapshot)"),
    hitAge: gauge("dualmind_store_recall_avg_hit_age_seconds", "mean age of the traces and learnings recall returned (newest snapshot)"),
    recallP95: gauge("dualmind_store_recall_p95_ms", "recall latency p95 over the last minute (newest snapshot)"),
    snapshotAge: gauge("dualmind_store_snapshot_age_seconds", "age of the newest health snapshot (the recall gauges are read from it)"),
    bytes: new Gauge({ name: "dualmind_db_bytes", help: "database file sizes", labelNames: ["db", "file"], registers: [registry] }),
  };
  const now = Date.now();
  const set = (m: Gauge, store: string, v: number | boolean | null) => v !== null && m.set({ store }, typeof v === "boolean" ? Number(v) : v);
  const statuses = await getAllStoreStatuses({ include: canUse });
  for (const s of statuses) {
    for (const state of STORE_STATUS_PRECEDENCE) g.status.set({ store: s.store, status: state }, s.state === state ? 1 : 0);
    set(g.backlog, s.store, s.backlog.pending);
    set(g.oldest, s.store, s.backlog.oldest_age_seconds);
    set(g.parked, s.store, s.backlog.parked);
    set(g.drift, s.store, s.drift.drifted);
    set(g.coverage, s.store, s.drift.coveragePct === null ? null : s.drift.coveragePct / 100);
    set(g.degraded, s.store, isDegraded(s));
    set(g.vectors, s.store, s.vectorIndex.available);
  }
  for (const [store, s] of getLatestSnapshotsByStore({ stores })) {
    set(g.hitRate, store, s.hitRate);
    set(g.precision, store, s.precision);
    set(g.hitAge, store, s.avgHitAgeS);
    set(g.recallP95, store, s.recallP95Ms);
    set(g.snapshotAge, store, Math.round((now - s.ts) / 1000));
  }
  // Self-recall (lib/eval): the newest evaluation of each store, from the ledger's database (both backends).
  const selfRecall = {
    hit10: gauge("dualmind_store_self_recall_hit10", "share of the store's own probes found in the top 10 (newest self-recall run, default mode)"),
    mrr10: gauge("dualmind_store_self_recall_mrr10", "MRR@10 of the store's own probes (newest self-recall run, default mode)"),
    noise: gauge("dualmind_store_self_recall_noise", "how far MRR@10 may move between runs with nothing changed (two standard errors)"),
    age: gauge("dualmind_store_self_recall_age_seconds", "age of the newest self-recall run"),
  };
  for (const run of (await latestActiveRuns()).filter((r) => canUse(r.store))) {
    set(selfRecall.hit10, run.store, run.hit10);
    set(selfRecall.mrr10, run.store, run.mrr10);
    set(selfRecall.noise, run.store, run.noise);
    set(selfRecall.age, run.store, Math.round((now - run.ts) / 1000));
  }
  if (!onPostgres) {
    const connections = storeConnectionCounts();
    gauge("dualmind_store_connections_open", "SQLite store connections this process has open (DUALMIND_MAX_OPEN_STORES plus what running work holds)", []).set(connections.open);
    new Counter({ name: "dualmind_store_connection_opens_total", help: "SQLite store connections opened since the process started", registers: [registry] }).inc(connections.opened);
  }
  for (const store of stores) {
    const files = storeFileBytes({ store });
    g.bytes.set({ db: store, file: "index.db" }, files.index_bytes);
    g.bytes.set({ db: store, file: "wal" }, files.wal_bytes);
  }
  if (!principal || principal.stores === null) {
    if (onPostgres) {
      // One database holds the ledger and every store: its size as PostgreSQL counts it (no local files serve it).
      const pg = await getPg();
      const [row] = (await pg!.pool.query<{ bytes: string }>("select pg_database_size(current_database()) as bytes")).rows;
      g.bytes.set({ db: "postgres", file: "database" }, Number(row.bytes));
    } else {
      const gov = getGovernanceStatus();
      g.bytes.set({ db: "governance", file: "governance.db" }, gov.bytes);
      g.bytes.set({ db: "governance", file: "wal" }, gov.walBytes);
    }
    // From the ledger this process serves (PostgreSQL's with DATABASE_URL).
    new Gauge({ name: "dualmind_dialectic_active_sessions", help: "dialectic sessions in progress", registers: [registry] }).set((await governance().getDialecticActivity({ now })).active_sessions);
  }
  return { contentType: registry.contentType, body: await registry.metrics() };
}
