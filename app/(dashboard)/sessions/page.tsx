import { LedgerFilterError, LedgerPager } from "@/components/ledger-pager";
import { LedgerSection } from "@/components/ledger-section";
import Link from "next/link";
import { LedgerVerdictBadge } from "@/components/ledger-verdict-badge";
import { formatCount, formatNumber, formatTime } from "@/lib/format";
import { z } from "zod";
import { agentIdSchema } from "@/lib/common";
import { listDialecticSessionsByAgent, PHASES, ROLES, STATUSES } from "@/lib/governance/dialectic";
import { getDialecticMetrics } from "@/lib/metrics/dialectic";
import { timeCall } from "@/lib/http/request-timer";
import { requireUser } from "@/app/_server/session";
import { filledParams } from "@/app/_server/pages";

/** A histogram estimate (see quantileFromBuckets): "≈ 12.3", or "> 10,000" in the open top bucket. */
const estimateMs = (v: number | null) => (v === null ? "—" : Number.isFinite(v) ? `≈ ${formatNumber(v, 1)}` : "> 10,000");

type Props = { searchParams: Promise<Record<string, string | string[] | undefined>> };
const PAGE_SIZE = 50;

/** The dashboard's session filters (people see every session; agents only their own through the API). */
const sessionFilterSchema = z
  .object({
    agent: agentIdSchema.optional(),
    role: z.enum(ROLES).default("any"),
    status: z.enum(STATUSES).optional(),
    phase: z.enum(PHASES).optional(),
    topic: z.string().trim().min(1).max(200).optional(),
    page: z.coerce.number().int().min(1).max(10_000).default(1),
  })
  .strict();

export default async function SessionsPage({ searchParams }: Props) {
  await requireUser();
  const raw = filledParams(await searchParams);
  const parsed = sessionFilterSchema.safeParse(raw);
  const f = parsed.success ? parsed.data : null;
  const result = f
    ? timeCall("dialectic list", () => listDialecticSessionsByAgent({ agentId: f.agent, role: f.role, status: f.status, phase: f.phase, topic: f.topic, limit: PAGE_SIZE, offset: (f.page - 1) * PAGE_SIZE }))
    : null;
  const metrics = getDialecticMetrics();
  const failedLastDay = metrics.failedPerHour.reduce((n, h) => n + h.failed, 0);
  const pageLink = (p: number) => `/sessions?${new URLSearchParams({ ...raw, page: String(p) }).toString()}`;
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Sessions</h1>
      <dl className="grid gap-3 sm:grid-cols-3" data-testid="session-metrics">
        <div className="card">
          <dt className="label">Active</dt>
          <dd className="text-xl font-semibold">{metrics.activeSessions}</dd>
        </div>
        <div className="card">
          <dt className="label">Failed, last 24 h</dt>
          <dd className="text-xl font-semibold">{failedLastDay}</dd>
        </div>
        <div className="card">
          <dt className="label">Messages, last hour</dt>
          <dd className="text-xl font-semibold">{metrics.messagesLastHour}</dd>
        </div>
      </dl>

      {metrics.latency.length > 0 && (
        <details className="card text-sm" data-testid="session-latency">
          <summary className="cursor-pointer font-medium">Latency in this server process (ms; percentiles are estimates from a histogram)</summary>
          <table className="data mt-2">
            <thead>
              <tr>
                <th>Operation</th>
                <th>Count</th>
                <th>p50 (est.)</th>
                <th>p95 (est.)</th>
                <th>Mean</th>
              </tr>
            </thead>
            <tbody>
              {metrics.latency.map((r) => (
                <tr key={r.route}>
                  <td>{r.route}</td>
                  <td>{formatCount(r.count)}</td>
                  <td>{estimateMs(r.p50Ms)}</td>
                  <td>{estimateMs(r.p95Ms)}</td>
                  <td>{formatNumber(r.meanMs, 1)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}

      <LedgerSection id="sessions-heading" title="Dialectic reviews">
        <form className="grid gap-2 sm:grid-cols-6" aria-label="Session filters">
          <input className="input" name="agent" defaultValue={raw.agent} placeholder="agent id" aria-label="Agent" />
          <select className="input" name="role" defaultValue={raw.role ?? "any"} aria-label="Role">
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r === "any" ? "any role" : r}
              </option>
            ))}
          </select>
          <select className="input" name="status" defaultValue={raw.status ?? ""} aria-label="Status">
            <option value="">any status</option>
            {STATUSES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
          <select className="input" name="phase" defaultValue={raw.phase ?? ""} aria-label="Phase">
            <option value="">any phase</option>
            {PHASES.map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
          <input className="input" name="topic" defaultValue={raw.topic} placeholder="topic contains" aria-label="Topic" />
          <button className="btn justify-center">Filter</button>
        </form>
        {!result || !f ? (
          <LedgerFilterError issues={parsed.error?.issues ?? []} />
        ) : result.sessions.length === 0 ? (
          <p className="text-sm text-slate-600">No sessions match.</p>
        ) : (
          <>
            <table className="data" data-testid="sessions-table">
              <thead>
                <tr>
                  <th>Topic</th>
                  <th>Type</th>
                  <th>Paused agent</th>
                  <th>Reviewer</th>
                  <th>Phase</th>
                  <th>Status</th>
                  <th>Messages</th>
                  <th>Updated</th>
                </tr>
              </thead>
              <tbody>
                {result.sessions.map((s) => (
                  <tr key={s.sessionId} data-testid={`session-row-${s.sessionId}`}>
                    <td>
                      <Link className="underline" href={`/sessions/${encodeURIComponent(s.sessionId)}`}>
                        {s.topic}
                      </Link>
                    </td>
                    <td>{s.sessionType}</td>
                    <td>{s.pausedAgentId}</td>
                    <td>{s.reviewerAgentId ?? <span className="text-slate-400">open</span>}</td>
                    <td>{s.phase}</td>
                    <td>
                      <LedgerVerdictBadge value={s.status} />
                    </td>
                    <td>{s.messageCount}</td>
                    <td>{formatTime(s.updatedAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <LedgerPager label="Session pages" noun="session" total={result.total} page={f.page} pageSize={PAGE_SIZE} hrefFor={pageLink} />
          </>
        )}
      </LedgerSection>
    </div>
  );
}
