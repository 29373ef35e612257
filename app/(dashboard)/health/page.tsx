import { requireUser } from "@/app/_server/session";
import { LATENCY_LINES } from "@/components/chart-series";
import { ChartTimeSeries } from "@/components/chart-time-series";
import { HealthPickers } from "@/components/health-pickers";
import { HealthEventsTable } from "@/components/health-events-table";
import { StoreEmbeddingsCard } from "@/components/store-embeddings-card";
import { StatusBadge, StoreStatusCard } from "@/components/store-status-card";
import { WorkerStateCard } from "@/components/worker-state-card";
import { getConfig } from "@/lib/config";
import { formatCount, formatPercent, formatTime } from "@/lib/format";
import { ALL_STORES, getStoreStatusDetail, loadHealthDashboard } from "@/lib/metrics/health";
import { chartAnnotations, throughputUnitOf } from "@/lib/metrics/preparers";
import { chartRangeQuery, isLongRange, parseChartRange } from "@/lib/metrics/time-range";
import { stores as storesBackend } from "@/lib/stores/backend";
import { UnindexableFiles } from "@/components/unindexable-files";
import { describeEmbeddingActionAction, embeddingAdminAction } from "../stores/[store]/embed-actions";
import { SelfRecallCard } from "@/components/self-recall-card";
import { getSelfRecall } from "@/lib/eval/self-recall";
import { evaluateStoreAction } from "../stores/[store]/self-recall-actions";

type Params = Record<string, string | string[] | undefined>;
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;

export default async function HealthPage({ searchParams }: { searchParams: Promise<Params> }) {
  const user = await requireUser();
  const sp = await searchParams;
  const range = parseChartRange({ range: one(sp.range), from: one(sp.from), to: one(sp.to) });
  const d = await loadHealthDashboard({ store: one(sp.store) ?? ALL_STORES, range: range.key === "custom" ? "24h" : range.key, window: range.window });
  const longRange = isLongRange(range);
  // Lines on the charts for what explains a change: a model switch, a reindex, a store's status alert.
  const covered = new Set(d.perStore.map((s) => s.store));
  const reindexes = (await storesBackend().listLatestJobs()).filter((j) => covered.has(j.store));
  const markers = chartAnnotations({
    window: d.window,
    allStores: d.store === ALL_STORES,
    modelChanges: d.modelChanges,
    reindexes: reindexes.map((j) => ({ startedAt: j.started_at, store: j.store, status: j.status })),
    alerts: d.events.filter((e) => e.store === null || covered.has(e.store)),
  });
  const one_ = d.store === ALL_STORES ? null : (d.perStore[0] ?? null);
  // Files in a store's memory/ that the last scan could not index, with the reason (none where memories are not files).
  const unindexable = await Promise.all(d.perStore.map(async (s) => ({ store: s.store, files: await storesBackend().listUnindexableFiles({ store: s.store }) })));
  // One store picked: its embeddings card (re-embed progress, parked items).
  const embeddings = one_ ? (await getStoreStatusDetail({ store: d.store })).embeddings : null;
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Health</h1>
      <HealthPickers path="/health" range={range} store={d.store} stores={d.stores} />
      {unindexable.map((u) => (
        <UnindexableFiles key={u.store} store={u.store} files={u.files} />
      ))}
      <StoreStatusCard headline={d.summary.headline} />
      {d.store === ALL_STORES && d.perStore.length > 1 && (
        <table tabIndex={0} className="data stack card" data-testid="health-stores">
          <thead>
            <tr>
              <th>Store</th>
              <th>Status</th>
              <th>Backlog / watermark</th>
              <th>Why</th>
            </tr>
          </thead>
          <tbody>
            {d.perStore.map((s) => (
              <tr key={s.store}>
                <td data-label="Store">
                  <a className="text-blue-700 underline" href={`/health?${chartRangeQuery(range)}&store=${encodeURIComponent(s.store)}`}>
                    {s.store}
                  </a>
                </td>
                <td data-label="Status">
                  <StatusBadge verdict={s} testId={`health-store-status-${s.store}`} />
                </td>
                <td data-label="Backlog / watermark" data-testid={`health-store-backlog-${s.store}`}>
                  {s.backlog.pending.toLocaleString("en-US")} / {s.backlog.watermark.toLocaleString("en-US")}
                </td>
                <td data-label="Why">{s.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {d.postgres && (
        <section className="card space-y-2" aria-labelledby="recall-quality-heading" data-testid="health-recall-quality">
          <h2 id="recall-quality-heading" className="font-semibold">
            Recall quality ({range.label})
          </h2>
          <table tabIndex={0} className="data">
            <thead>
              <tr>
                <th>Store</th>
                <th>Recalls</th>
                <th>Hit rate</th>
                <th>Rated precision</th>
              </tr>
            </thead>
            <tbody>
              {d.postgres.recall.map((r) => (
                <tr key={r.store} data-testid={`health-recall-${r.store}`}>
                  <td>{r.store}</td>
                  <td>{formatCount(r.recalls)}</td>
                  <td>{r.hitRate === null ? "—" : formatPercent(r.hitRate, 0)}</td>
                  <td>{r.precision === null ? "not rated" : `${formatPercent(r.precision, 0)} of ${formatCount(r.rated)}`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      <WorkerStateCard workers={d.workers} provider={d.summary.worst?.provider ?? null} workerInServer={getConfig().embed.workerInServer} now={d.now} />
      <HealthEventsTable events={d.events} />
      <SelfRecallCard reports={await Promise.all(d.perStore.map((s) => getSelfRecall({ store: s.store })))} isAdmin={user.role === "admin"} evaluate={evaluateStoreAction} switchModel={embeddingAdminAction} />
      <HealthHistory d={d} markers={markers} longRange={longRange} />
      {embeddings && (
        // Re-embed progress is read from the store (it survives reloads); the card's progress refreshes the page while a job runs.
        <StoreEmbeddingsCard store={d.store} status={embeddings} verdict={one_!} isAdmin={user.role === "admin"} action={embeddingAdminAction} describe={describeEmbeddingActionAction} />
      )}
    </div>
  );
}

type Dashboard = Awaited<ReturnType<typeof loadHealthDashboard>>;

/** The charts: from minute snapshots (with PostgreSQL every replica's, recall from the recall logs). */
function HealthHistory({ d, markers, longRange }: { d: Dashboard; markers: { t: number; label: string }[]; longRange: boolean }) {
  return (
    <>
      <h2 className="text-lg font-medium">History</h2>
      <p className="text-xs text-slate-600" data-testid="snapshots-as-of">
        {`Charts are drawn from minute snapshots${d.snapshotsAsOf ? `, newest as of ${formatTime(d.snapshotsAsOf)}` : " (none recorded yet)"}${
          d.postgres ? " that every replica takes of the PostgreSQL stores, recall from the stores' recall logs, search latency from every replica's requests" : ""
        }; the status above is live.`}
      </p>
      <div className="grid gap-4 lg:grid-cols-2">
            <ChartTimeSeries
              title={d.store === ALL_STORES && d.perStore.length > 1 ? "Embed backlog (all stores; each store's watermark is its own)" : "Embed backlog vs watermark"}
              testId="chart-backlog"
              points={d.series}
              longRange={longRange}
              series={[
                { key: "backlog", label: "backlog", color: "#0f172a" },
                { key: "watermark", label: "watermark", color: "#dc2626", dashed: true },
                { key: "parked", label: "parked", color: "#d97706" },
              ]}
            />
            <ChartTimeSeries
              title="Drift (% of rows) with model changes"
              testId="chart-drift"
              points={d.series}
              longRange={longRange}
              unit="%"
              markers={markers}
              series={[
                { key: "driftPct", label: "drifted %", color: "#7c3aed" },
                { key: "coveragePct", label: "coverage %", color: "#059669" },
              ]}
            />
        <ChartTimeSeries
          title="Recall hit rate and rated precision"
          testId="chart-recall-quality"
          points={d.series}
          longRange={longRange}
          yMax={1}
          series={[
            { key: "hitRate", label: "hit rate", color: "#2563eb" },
            { key: "precision", label: "precision", color: "#db2777" },
          ]}
        />
        <ChartTimeSeries
          title="Recall latency (per store)"
          testId="chart-recall-latency"
          points={d.series}
          longRange={longRange}
          unit="ms"
          series={LATENCY_LINES.slice(0, 2).map((l) => ({ ...l, key: l.key === "p50" ? "recallP50Ms" : "recallP95Ms" }))}
        />
            <ChartTimeSeries
              title="Search latency (API, all stores)"
              testId="chart-search-latency"
              points={d.searchLatency}
              longRange={longRange}
              unit="ms"
              series={LATENCY_LINES}
            />
            <ChartTimeSeries
              title={`Embed worker throughput (rows/${throughputUnitOf(d.window).per})`}
              testId="chart-throughput"
              points={d.series}
              longRange={longRange}
              series={[{ key: "throughput", label: `embedded per ${throughputUnitOf(d.window).per}`, color: "#16a34a" }]}
            />
      </div>
    </>
  );
}
