import Link from "next/link";
import { listStores } from "@/lib/stores/stores";
import { getGovernanceStatus } from "@/lib/governance/status";
import { formatBytes, formatCount, formatNumber, formatTime } from "@/lib/format";
import { countActiveSessions } from "@/lib/governance/dialectic";
import { getOverviewNumbers } from "@/lib/metrics/health";
import { requireUser } from "@/app/_server/session";
import { StoreStatusCard } from "@/components/store-status-card";

function Stat({ label, value, href, testId }: { label: string; value: string; href: string; testId: string }) {
  return (
    <Link href={href} className="card block hover:border-slate-400" data-testid={testId}>
      <span className="label">{label}</span>
      <span className="mt-1 block text-2xl font-semibold">{value}</span>
    </Link>
  );
}

export default async function OverviewPage() {
  await requireUser();
  const stores = listStores();
  const gov = getGovernanceStatus();
  const n = await getOverviewNumbers();
  const num = (v: number | null) => (v === null ? "no data" : formatCount(v));
  // An estimate from the latency histogram (see quantileFromBuckets), said so.
  const p95 = n.apiP95Ms24h === null ? "no data" : Number.isFinite(n.apiP95Ms24h) ? `≈ ${formatNumber(n.apiP95Ms24h, 0)} ms` : "> 10 s";
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Overview</h1>
      <StoreStatusCard status={n.overall} scope={n.overall ? `worst of ${stores.length} stores: ${n.overall.store}` : undefined} testId="overview-status" />
      <section aria-label="Key numbers" className="grid grid-cols-2 gap-3 sm:grid-cols-4">
        <Stat label="Memory health" value={n.overall ? n.overall.state.replace("_", " ") : "no stores"} href="/health" testId="stat-health" />
        <Stat label="Embed backlog" value={num(n.backlog)} href="/health" testId="stat-backlog" />
        <Stat label="Drifted rows" value={num(n.driftRows)} href="/health" testId="stat-drift" />
        <Stat label="Parked items" value={num(n.parked)} href="/health" testId="stat-parked" />
        <Stat label="API requests (24 h)" value={formatCount(n.apiRequests24h)} href="/observability" testId="stat-requests" />
        <Stat label="API p95 (24 h, estimate)" value={p95} href="/observability" testId="stat-p95" />
        <Stat label="API server faults (24 h)" value={n.apiErrorRate24h === null ? "no data" : `${formatNumber(100 * n.apiErrorRate24h, 1)}%`} href="/observability" testId="stat-errors" />
        <Stat label="Active reviews" value={String(countActiveSessions())} href="/sessions" testId="stat-sessions" />
      </section>
      <section aria-labelledby="stores-heading" className="card">
        <h2 id="stores-heading" className="mb-3 text-lg font-medium">
          Stores
        </h2>
        <table className="data" data-testid="stores-table">
          <thead>
            <tr>
              <th>Store</th>
              <th>Rows</th>
              <th>Memory files</th>
              <th>index.db</th>
              <th>WAL</th>
              <th>Vectors</th>
              <th>Schema</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {stores.map((s) => (
              <tr key={s.name} data-testid={`store-row-${s.name}`}>
                <td className="font-medium">{s.name}</td>
                <td>
                  {Object.entries(s.counts)
                    .map(([t, n]) => `${t}: ${n}`)
                    .join(", ") || "empty"}
                </td>
                <td>{s.files.memoryFiles}</td>
                <td>{formatBytes(s.files.indexBytes)}</td>
                <td>{formatBytes(s.files.walBytes)}</td>
                <td>{s.vectors.available ? `sqlite-vec ${s.vectors.version}` : <span className="text-amber-700">unavailable: {s.vectors.reason}</span>}</td>
                <td>{s.schemaVersion}</td>
                <td>{formatTime(s.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section aria-labelledby="gov-heading" className="card">
        <h2 id="gov-heading" className="mb-3 text-lg font-medium">
          Governance ledger
        </h2>
        <dl className="grid grid-cols-2 gap-3 text-sm sm:grid-cols-4" data-testid="governance-status">
          <div>
            <dt className="label">governance.db</dt>
            <dd>{formatBytes(gov.bytes)} (WAL {formatBytes(gov.walBytes)})</dd>
          </div>
          <div>
            <dt className="label">Schema</dt>
            <dd>{gov.schemaVersion}</dd>
          </div>
          <div>
            <dt className="label">Users / active tokens</dt>
            <dd>
              {gov.users} / {gov.tokens}
            </dd>
          </div>
          <div>
            <dt className="label">Audit entries</dt>
            <dd>{gov.auditEntries}</dd>
          </div>
        </dl>
      </section>
    </div>
  );
}
