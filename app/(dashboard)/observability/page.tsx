import { requireUser } from "@/app/_server/session";
import { AuditTailTable } from "@/components/audit-tail-table";
import { ERROR_LINES, LATENCY_LINES, PERCENTILE_NOTE } from "@/components/chart-series";
import { ChartTimeSeries } from "@/components/chart-time-series";
import { HealthPickers } from "@/components/health-pickers";
import { formatBytes, formatCount, formatNumber, formatTime } from "@/lib/format";
import { governance } from "@/lib/backend/governance";
import { loadObservabilityDashboard } from "@/lib/metrics/health";
import { listDatabaseFiles } from "@/lib/metrics/dashboard-views";
import { isLongRange, parseChartRange } from "@/lib/metrics/time-range";

type Params = Record<string, string | string[] | undefined>;
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;
/** Percentiles are estimates: "≈". */
const estMs = (v: number | null) => (v === null ? "—" : `≈ ${formatNumber(v, v >= 100 ? 0 : 1)} ms`);
const pct = (v: number) => `${formatNumber(v, 1)}%`;
const codes = (entries: [string, number][]) => entries.map(([code, n]) => `${code}×${formatCount(n)}`).join(", ") || "—";

export default async function ObservabilityPage({ searchParams }: { searchParams: Promise<Params> }) {
  await requireUser();
  const sp = await searchParams;
  const range = parseChartRange({ range: one(sp.range), from: one(sp.from), to: one(sp.to) });
  const d = await loadObservabilityDashboard({ range: range.key === "custom" ? "24h" : range.key, window: range.window });
  const longRange = isLongRange(range);
  const dialectic = await governance().getDialecticActivity({});
  const files = await listDatabaseFiles();
  const auditEntries = (await governance().countGovernanceRows({})).auditEntries;
  const audit = await governance().listAuditTail({ limit: 15 });
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Observability</h1>
      <HealthPickers path="/observability" range={range} />
      <div className="grid gap-4 lg:grid-cols-2">
        <ChartTimeSeries
          title="API latency (all routes)"
          testId="chart-route-latency"
          points={d.allRoutes}
          longRange={longRange}
          unit="ms"
          series={LATENCY_LINES}
        />
        <ChartTimeSeries title="Error rate (server faults, % of requests)" testId="chart-error-rate" points={d.allRoutes} longRange={longRange} unit="%" series={ERROR_LINES} />
      </div>
      <p className="text-xs text-slate-600" data-testid="percentile-note">
        {PERCENTILE_NOTE} The error rate counts server faults (5xx); expected client answers (404 unknown id, 409 conflict, other 4xx) are shown apart.
      </p>
      <section className="card" aria-labelledby="routes-heading">
        <h2 id="routes-heading" className="mb-2 text-lg font-medium">
          Routes ({range.label})
        </h2>
        {d.routes.length === 0 ? (
          <p className="text-sm text-slate-600">No requests recorded in this range.</p>
        ) : (
          <table tabIndex={0} className="data stack" data-testid="route-table">
            <thead>
              <tr>
                <th>Route</th>
                <th>Requests</th>
                <th>Mean</th>
                <th>p50 (est.)</th>
                <th>p95 (est.)</th>
                <th>p99 (est.)</th>
                <th>Error rate (5xx)</th>
                <th>Server faults by code</th>
                <th>Client answers (4xx)</th>
              </tr>
            </thead>
            <tbody>
              {d.routes.map((r) => (
                <tr key={r.route}>
                  <td data-label="Route" className="font-mono text-xs">{r.route}</td>
                  <td data-label="Requests">{formatCount(r.count)}</td>
                  <td data-label="Mean">{formatNumber(r.meanMs, 1)} ms</td>
                  <td data-label="p50 (est.)">{estMs(r.p50Ms)}</td>
                  <td data-label="p95 (est.)">{estMs(r.p95Ms)}</td>
                  <td data-label="p99 (est.)">{estMs(r.p99Ms)}</td>
                  <td data-label="Error rate (5xx)">{pct(r.errorPct)}</td>
                  <td data-label="Server faults by code">{codes(r.serverErrorsByStatus)}</td>
                  <td data-label="Client answers (4xx)">
                    {pct(r.clientErrorPct)} {r.clientAnswersByStatus.length > 0 && <span className="text-xs text-slate-500">({codes(r.clientAnswersByStatus)})</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section className="card space-y-3" aria-labelledby="dialectic-heading">
        <h2 id="dialectic-heading" className="text-lg font-medium">
          Dialectic reviews
        </h2>
        <dl className="grid grid-cols-2 gap-3 text-sm sm:grid-cols-4" data-testid="dialectic-metrics">
          <div>
            <dt className="label">Active sessions</dt>
            <dd>{dialectic.active_sessions}</dd>
          </div>
          <div>
            <dt className="label">Failed (24 h)</dt>
            <dd>{dialectic.failed_per_hour.reduce((a, h) => a + h.failed, 0)}</dd>
          </div>
          <div>
            <dt className="label">Messages last hour</dt>
            <dd>
              {formatCount(dialectic.messages_last_hour)} ({formatNumber(dialectic.messages_per_minute_last_hour)}/min)
            </dd>
          </div>
          <div>
            <dt className="label">Failed per hour (24 h)</dt>
            <dd>{dialectic.failed_per_hour.length ? dialectic.failed_per_hour.map((h) => `${formatTime(h.hour_start).slice(11, 16)}: ${h.failed}`).join(", ") : "none"}</dd>
          </div>
        </dl>
        <ChartTimeSeries
          title="Session creation latency"
          testId="chart-dialectic-create"
          points={d.dialecticCreate}
          longRange={longRange}
          unit="ms"
          series={LATENCY_LINES.slice(0, 2)}
        />
      </section>
      <section className="card" aria-labelledby="files-heading">
        <h2 id="files-heading" className="mb-2 text-lg font-medium">
          Database files
        </h2>
        <table tabIndex={0} className="data stack" data-testid="db-files">
          <thead>
            <tr>
              <th>Database</th>
              <th>File</th>
              <th>WAL</th>
            </tr>
          </thead>
          <tbody>
            {files.map((f) => (
              <tr key={f.name}>
                <td data-label="Database">{f.name}</td>
                <td data-label="File">{f.bytes === null ? "—" : formatBytes(f.bytes)}</td>
                <td data-label="WAL">{f.walBytes === null ? "—" : formatBytes(f.walBytes)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section className="card" aria-labelledby="audit-heading">
        <h2 id="audit-heading" className="mb-2 text-lg font-medium">
          Audit log (latest {audit.length} of {auditEntries})
        </h2>
        <AuditTailTable rows={audit} testId="audit-tail" />
      </section>
    </div>
  );
}
