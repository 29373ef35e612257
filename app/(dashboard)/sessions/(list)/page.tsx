import { LedgerFilterError, LedgerPager } from "@/components/ledger-pager";
import { LedgerSection } from "@/components/ledger-section";
import Link from "@/components/link";
import { LedgerVerdictBadge } from "@/components/ledger-verdict-badge";
import { formatTime } from "@/lib/format";
import { z } from "zod";
import { agentIdSchema } from "@/lib/common";
import { PHASES, ROLES, sessionIdleClock, STATUSES, type SessionView } from "@/lib/governance/dialectic";
import { governance } from "@/lib/backend/governance";
import { timeCall } from "@/lib/http/request-timer";
import { requireUser } from "@/app/_server/session";
import { filledParams } from "@/app/_server/pages";

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

/** Who must act next, in a person's words: the agent ids, or why nobody can. */
function waitingOn(s: SessionView): React.ReactNode {
  if (s.status !== "active") return <span className="text-slate-600">nobody ({s.status})</span>;
  if (s.expected.agent_ids.length === 0) return <span className="text-amber-700">a reviewer to claim it</span>;
  return (
    <span title={s.expected.note}>
      {s.expected.agent_ids.join(" or ")} <span className="text-xs text-slate-500">({s.expected.message_type})</span>
    </span>
  );
}

export default async function SessionsPage({ searchParams }: Props) {
  await requireUser();
  const raw = filledParams(await searchParams);
  const parsed = sessionFilterSchema.safeParse(raw);
  const f = parsed.success ? parsed.data : null;
  const result = f
    ? await timeCall({ route: "dialectic list", fn: () => governance().listDialecticSessions({ agentId: f.agent, role: f.role, status: f.status, phase: f.phase, topic: f.topic, limit: PAGE_SIZE, offset: (f.page - 1) * PAGE_SIZE }) })
    : null;
  // Latency of these queries is on Observability (and GET /api/v1/dialectic/metrics), not here: this page is for people following reviews.
  const metrics = await governance().getDialecticActivity({});
  const failedLastDay = metrics.failed_per_hour.reduce((n, h) => n + h.failed, 0);
  const pageLink = (p: number) => `/sessions?${new URLSearchParams({ ...raw, page: String(p) }).toString()}`;
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Sessions</h1>
      <dl className="grid gap-3 sm:grid-cols-3" data-testid="session-metrics">
        <div className="card">
          <dt className="label">Active</dt>
          <dd className="text-xl font-semibold">{metrics.active_sessions}</dd>
        </div>
        <div className="card">
          <dt className="label">Failed, last 24 h</dt>
          <dd className="text-xl font-semibold">{failedLastDay}</dd>
        </div>
        <div className="card">
          <dt className="label">Messages, last hour</dt>
          <dd className="text-xl font-semibold">{metrics.messages_last_hour}</dd>
        </div>
      </dl>

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
            <div className="overflow-x-auto">
              <table tabIndex={0} className="data stack" data-testid="sessions-table">
                <thead>
                  <tr>
                    <th>Topic</th>
                    <th>Type</th>
                    <th>Paused agent</th>
                    <th>Reviewer</th>
                    <th>Phase</th>
                    <th>Waiting on</th>
                    <th>Idle since</th>
                    <th>Times out at</th>
                    <th>Status</th>
                    <th>Messages</th>
                  </tr>
                </thead>
                <tbody>
                  {result.sessions.map((s) => {
                    const clock = sessionIdleClock({ session: s });
                    return (
                      <tr key={s.key} data-testid={`session-row-${s.session_id}`}>
                        <td data-label="Topic">
                          <Link className="underline" href={`/sessions/${encodeURIComponent(s.key)}`}>
                            {s.topic}
                          </Link>
                        </td>
                        <td data-label="Type">{s.session_type}</td>
                        <td data-label="Paused agent">{s.paused_agent_id}</td>
                        <td data-label="Reviewer">{s.reviewer_agent_id ?? <span className="text-slate-600">open</span>}</td>
                        <td data-label="Phase">{s.phase}</td>
                        <td data-label="Waiting on" data-testid="session-waiting-on">{waitingOn(s)}</td>
                        <td data-label="Idle since">{clock ? formatTime(clock.idleSince) : <span className="text-slate-600">—</span>}</td>
                        <td data-label="Times out at">
                          {clock ? (
                            <>
                              {formatTime(clock.timesOutAt)}
                              {clock.overdue && <span className="ml-1 text-xs text-amber-700">overdue</span>}
                            </>
                          ) : (
                            <span className="text-slate-600">ended {formatTime(s.updated_at)}</span>
                          )}
                        </td>
                        <td data-label="Status">
                          <LedgerVerdictBadge value={s.status} />
                        </td>
                        <td data-label="Messages">{s.message_count}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
            <LedgerPager label="Session pages" noun="session" total={result.total} page={f.page} pageSize={PAGE_SIZE} hrefFor={pageLink} />
          </>
        )}
      </LedgerSection>
    </div>
  );
}
