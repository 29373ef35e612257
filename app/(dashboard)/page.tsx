import Link from "@/components/link";
import { stores as storesBackend } from "@/lib/stores/backend";
import { ledgerStorageFacts, storageFacts, vectorEngineLabel } from "@/lib/metrics/dashboard-views";
import { formatBytes, formatCount, formatNumber, formatQuantity } from "@/lib/format";
import { TimeAgo } from "@/components/time-ago";
import { requestTime } from "@/app/_server/pages";
import { governance } from "@/lib/backend/governance";
import { getOverviewNumbers } from "@/lib/metrics/health";
import { requireUser } from "@/app/_server/session";
import { STATUS_STYLE, StoreStatusCard } from "@/components/store-status-card";
import type { StoreInfo } from "@/lib/stores/backend";

function Stat({ label, value, href, testId }: { label: string; value: string; href: string; testId: string }) {
  return (
    <Link href={href} className="card block hover:border-slate-400" data-testid={testId}>
      <span className="label">{label}</span>
      <span className="mt-1 block text-2xl font-semibold">{value}</span>
    </Link>
  );
}

/** What a person counts in a store, by the tables that hold it; every other table count sits behind "details". */
const SUMMARY: [table: string, noun: string, plural: string][] = [
  ["documents", "document", "documents"],
  ["chunks", "chunk", "chunks"],
  ["memories", "memory", "memories"],
  ["embeddings", "vector", "vectors"],
  ["reasoning_traces", "trace", "traces"],
  ["thoughts", "thought", "thoughts"],
];

function StoreContents({ counts, memoryFiles }: { counts: Record<string, number>; memoryFiles: number | null }) {
  const shown = SUMMARY.filter(([t]) => (counts[t] ?? 0) > 0 || t === "documents" || t === "memories");
  const all = Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
  return (
    <div className="space-y-1">
      <div>{shown.map(([t, noun, plural]) => formatQuantity(counts[t] ?? 0, noun, plural)).join(" · ")}</div>
      {memoryFiles !== null && <div className="text-xs text-slate-500">{formatQuantity(memoryFiles, "memory file")} on disk</div>}
      <details className="text-xs text-slate-500">
        <summary className="cursor-pointer">all {formatQuantity(all.length, "table")}</summary>
        <dl className="mt-1 grid grid-cols-[auto_auto] justify-start gap-x-3">
          {all.map(([t, n]) => (
            <div key={t} className="contents">
              <dt className="font-mono">{t}</dt>
              <dd className="text-right">{formatCount(n)}</dd>
            </div>
          ))}
        </dl>
      </details>
    </div>
  );
}

function StoreStorage({ info }: { info: StoreInfo }) {
  const f = storageFacts(info);
  if (f.bytes === null) return <span className="text-slate-500">{f.where}</span>;
  return (
    <>
      {formatBytes(f.bytes)}
      {f.walBytes !== null && f.walBytes > 0 && <span className="text-slate-500"> + WAL {formatBytes(f.walBytes)}</span>}
    </>
  );
}

function StoreVectors({ info }: { info: StoreInfo }) {
  const v = vectorEngineLabel(info);
  return (
    <span className={v.warning ? "text-amber-700" : undefined} title={v.title ?? undefined}>
      {v.text}
    </span>
  );
}

export default async function OverviewPage() {
  await requireUser();
  // stores(): the SQLite stores in DATA_DIR, or with DATABASE_URL the PostgreSQL ones agents write to.
  const stores = await storesBackend().listStores({ memoryFiles: true });
  const ledger = ledgerStorageFacts();
  const counts = await governance().countGovernanceRows({});
  const n = await getOverviewNumbers();
  const headline = n.summary.headline;
  const now = requestTime();
  // An estimate from the latency histogram (see quantileFromBuckets), said so.
  const p95 = n.apiP95Ms24h === null ? "no data" : Number.isFinite(n.apiP95Ms24h) ? `≈ ${formatNumber(n.apiP95Ms24h, 0)} ms` : "> 10 s";
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Overview</h1>
      <StoreStatusCard headline={headline} testId="overview-status" />
      <section aria-label="Key numbers" className="grid grid-cols-2 gap-3 sm:grid-cols-4">
        <Stat label="Memory health" value={headline ? STATUS_STYLE[headline.state].label : "no stores"} href="/health" testId="stat-health" />
        <Stat label="Embed backlog (all stores)" value={headline ? formatCount(headline.numbers.pending) : "no data"} href="/health" testId="stat-backlog" />
        <Stat label="Drifted rows (all stores)" value={!headline ? "no data" : headline.numbers.drifted === null ? "unknown" : formatCount(headline.numbers.drifted)} href="/health" testId="stat-drift" />
        <Stat label="Parked items (all stores)" value={headline ? formatCount(headline.numbers.parked) : "no data"} href="/health" testId="stat-parked" />
        <Stat label="API requests (24 h)" value={formatCount(n.apiRequests24h)} href="/observability" testId="stat-requests" />
        <Stat label="API p95 (24 h, estimate)" value={p95} href="/observability" testId="stat-p95" />
        <Stat label="API server faults (24 h)" value={n.apiErrorRate24h === null ? "no data" : `${formatNumber(100 * n.apiErrorRate24h, 1)}%`} href="/observability" testId="stat-errors" />
        <Stat label="Active reviews" value={formatCount((await governance().getDialecticActivity({})).active_sessions)} href="/sessions" testId="stat-sessions" />
      </section>
      <section aria-labelledby="stores-heading" className="card">
        <h2 id="stores-heading" className="mb-3 text-lg font-medium">
          Stores
        </h2>
        <div className="scroll-x">
          <table tabIndex={0} className="data stack" data-testid="stores-table">
            <thead>
              <tr>
                <th>Store</th>
                <th>Contents</th>
                <th>On disk</th>
                <th>Vectors</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {stores.map((s) => (
                <tr key={s.name} data-testid={`store-row-${s.name}`}>
                  <td data-label="Store" className="font-medium">
                    <Link href={`/stores/${encodeURIComponent(s.name)}`} className="underline">
                      {s.name}
                    </Link>
                    {s.archived && (
                      <span className="ml-2 rounded bg-amber-100 px-1.5 py-0.5 text-xs font-normal text-amber-900" data-testid={`store-archived-${s.name}`}>
                        archived · read-only
                      </span>
                    )}
                    {s.description && <div className="text-xs font-normal text-slate-500">{s.description}</div>}
                  </td>
                  <td data-label="Contents" className="min-w-48">
                    <StoreContents counts={s.counts} memoryFiles={s.files?.memory_files ?? null} />
                  </td>
                  <td data-label="On disk" className="whitespace-nowrap">
                    <StoreStorage info={s} />
                  </td>
                  <td data-label="Vectors">
                    <StoreVectors info={s} />
                  </td>
                  <td data-label="Created">
                    <TimeAgo ms={s.created_at} now={now} />
                    <div className="text-xs text-slate-500">schema {s.schema_version ?? "—"}</div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      <section aria-labelledby="gov-heading" className="card">
        <h2 id="gov-heading" className="mb-3 text-lg font-medium">
          Governance ledger
        </h2>
        <dl className="grid grid-cols-2 gap-3 text-sm sm:grid-cols-4" data-testid="governance-status">
          {ledger.map((f) => (
            <div key={f.label}>
              <dt className="label">{f.label}</dt>
              <dd>{typeof f.value === "string" ? f.value : `${formatBytes(f.value.bytes)} (WAL ${formatBytes(f.value.walBytes)})`}</dd>
            </div>
          ))}
          <div>
            <dt className="label">Users / active tokens</dt>
            <dd>
              {formatQuantity(counts.users, "user")} / {formatQuantity(counts.tokens, "token")}
            </dd>
          </div>
          <div>
            <dt className="label">Audit entries</dt>
            <dd>{formatCount(counts.auditEntries)}</dd>
          </div>
        </dl>
      </section>
    </div>
  );
}
