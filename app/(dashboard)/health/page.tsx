import { requireUser } from "@/app/_server/session";
import { LATENCY_LINES } from "@/components/chart-series";
import { ChartTimeSeries } from "@/components/chart-time-series";
import { HealthPickers } from "@/components/health-pickers";
import { HealthEventsTable } from "@/components/health-events-table";
import { StoreEmbeddingsCard } from "@/components/store-embeddings-card";
import { StatusBadge, StoreStatusCard } from "@/components/store-status-card";
import { WorkerStateCard } from "@/components/worker-state-card";
import { getConfig } from "@/lib/config";
import { getEmbeddingStatus } from "@/lib/embed/status";
import { formatCount, formatPercent, formatTime } from "@/lib/format";
import { ALL_STORES, loadHealthDashboard } from "@/lib/metrics/health";
import { getStorePageEmbeddingsPg } from "@/lib/metrics/store-status-pg";
import { parseRange } from "@/lib/metrics/preparers";
import { openStore } from "@/lib/stores/stores";
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
  const d = await loadHealthDashboard({ store: one(sp.store) ?? ALL_STORES, range: parseRange(one(sp.range)) });
  const longRange = d.range === "7d" || d.range === "30d";
  const markers = d.modelChanges.map((m) => ({ t: m.t, label: d.store === ALL_STORES ? `${m.store}: new model` : "new model" }));
  const one_ = d.store === ALL_STORES ? null : (d.perStore[0] ?? null);
  // One store picked: its embeddings card (re-embed progress, parked items), from the store's own backend.
  // Files in a store's memory/ that the last scan could not index, with the reason (SQLite stores; PostgreSQL has no files).
  const unindexable = d.postgres ? [] : await Promise.all(d.perStore.map(async (s) => ({ store: s.store, files: await storesBackend().listUnindexableFiles({ store: s.store }) })));
  const embeddings = !one_ ? null : d.postgres ? (await getStorePageEmbeddingsPg({ store: d.store })).embeddings : await getEmbeddingStatus({ handle: openStore({ store: d.store }), status: one_ });
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Health</h1>
      <HealthPickers path="/health" range={d.range} store={d.store} stores={d.stores} />
      {unindexable.map((u) => (
        <UnindexableFiles key={u.store} store={u.store} files={u.files} />
      ))}
      <StoreStatusCard status={d.overall} scope={d.store === ALL_STORES && d.overall ? `worst of ${d.perStore.length} stores: ${d.overall.store}` : undefined} />
      {d.store === ALL_STORES && d.perStore.length > 1 && (
        <table className="data card" data-testid="health-stores">
          <thead>
            <tr>
              <th>Store</th>
              <th>Status</th>
              <th>Why</th>
              <th>Backlog / watermark</th>
            </tr>
          </thead>
          <tbody>
            {d.perStore.map((s) => (
              <tr key={s.store}>
                <td>
                  <a className="text-blue-700 underline" href={`/health?range=${d.range}&store=${encodeURIComponent(s.store)}`}>
                    {s.store}
                  </a>
                </td>
                <td>
                  <StatusBadge verdict={s} testId={`health-store-status-${s.store}`} />
                </td>
                <td>{s.reason}</td>
                <td>
                  {s.backlog.pending.toLocaleString("en-US")} / {s.backlog.watermark.toLocaleString("en-US")}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {d.postgres && (
        <section className="card space-y-2" aria-labelledby="recall-quality-heading" data-testid="health-recall-quality">
          <h2 id="recall-quality-heading" className="font-semibold">
            Recall quality ({d.range})
          </h2>
          <table className="data">
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
      <WorkerStateCard workers={d.workers} provider={d.overall?.provider ?? null} workerInServer={getConfig().embed.workerInServer} now={d.now} />
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
              title="Embed backlog vs watermark"
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
              title="Embed worker throughput (rows/hour)"
              testId="chart-throughput"
              points={d.series}
              longRange={longRange}
              series={[{ key: "throughputPerHour", label: "embedded per hour", color: "#16a34a" }]}
            />
      </div>
    </>
  );
}
