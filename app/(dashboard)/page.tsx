import { listStores } from "@/lib/stores/stores";
import { getGovernanceStatus } from "@/lib/governance/status";
import { formatBytes, formatTime } from "@/lib/format";

export default function OverviewPage() {
  const stores = listStores();
  const gov = getGovernanceStatus();
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Overview</h1>
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
