import Link from "@/components/link";
import { LedgerFilterError } from "@/components/ledger-pager";
import { LedgerSection } from "@/components/ledger-section";
import { ActorLink } from "@/components/actor-link";
import { formatTime } from "@/lib/format";
import { activityFilterSchema, listActivity, summarizeActivity, type ActivitySummary } from "@/lib/governance/activity";
import { requireUser } from "@/app/_server/session";
import { filledParams } from "@/app/_server/pages";

type Props = { searchParams: Promise<Record<string, string | string[] | undefined>> };

/** A date field (YYYY-MM-DD, UTC) as epoch ms at the start or the end of that day. */
function dayBound(date: string | undefined, endOfDay: boolean): string | undefined {
  if (!date) return undefined;
  const ms = Date.parse(`${date}T${endOfDay ? "23:59:59.999" : "00:00:00.000"}Z`);
  return Number.isNaN(ms) ? date : String(ms);
}

/** The headline figures of a summary: writes and reviews from the audit log, retrieval from the hourly counts. */
function summaryCounts(s: ActivitySummary): [label: string, value: number, failed: number][] {
  const kind = (k: string) => s.retrieval.find((t) => t.kind === k) ?? { count: 0, failures: 0 };
  return [
    ["Writes", s.writes, 0],
    ["Reviews", s.reviews, 0],
    ["Searches", kind("search").count, kind("search").failures],
    ["Recalls", kind("recall").count, kind("recall").failures],
    ["Remembers", kind("remember").count, kind("remember").failures],
    ["Failures", s.failures, 0],
  ];
}

function detailsText(details: unknown): string {
  if (details === null || details === undefined) return "";
  const text = typeof details === "string" ? details : JSON.stringify(details);
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}

/**
 * "What did agent X do last night?": the audit log filtered by agent, actor,
 * action, store and day, paged by cursor, with a per-actor summary. Every
 * signed-in role reads it; user, token and sign-in administration shows to
 * admins only, as on the Admin page.
 */
export default async function ActivityPage({ searchParams }: Props) {
  const user = await requireUser();
  const accounts = user.role === "admin";
  const raw = filledParams(await searchParams);
  const parsed = activityFilterSchema.safeParse({
    agent: raw.agent,
    actor: raw.actor,
    action: raw.action,
    store: raw.store,
    target: raw.target,
    since: dayBound(raw.from, false),
    until: dayBound(raw.to, true),
    before: raw.before,
    limit: 50,
  });
  const page = parsed.success ? await listActivity({ filter: parsed.data, accounts }) : null;
  const summary =
    parsed.success && (parsed.data.agent || parsed.data.actor)
      ? await summarizeActivity({ filter: { agent: parsed.data.agent, actor: parsed.data.actor, store: parsed.data.store, since: parsed.data.since, until: parsed.data.until }, accounts })
      : null;
  const withParams = (changes: Record<string, string | undefined>) => {
    const next = new URLSearchParams();
    for (const [k, v] of Object.entries({ ...raw, ...changes })) if (v) next.set(k, v);
    return `/activity?${next.toString()}`;
  };
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Activity</h1>
      <LedgerSection id="activity-filter-heading" title="Who did what">
        <form className="grid gap-2 sm:grid-cols-4 lg:grid-cols-7" aria-label="Activity filters">
          <input className="input" name="agent" defaultValue={raw.agent} placeholder="agent id" aria-label="Agent" />
          <input className="input" name="actor" defaultValue={raw.actor} placeholder="or actor (user:ann)" aria-label="Actor" />
          <input className="input" name="action" defaultValue={raw.action} placeholder="action or family (memory.)" aria-label="Action" />
          <input className="input" name="store" defaultValue={raw.store} placeholder="store" aria-label="Store" />
          <input className="input" type="date" name="from" defaultValue={raw.from} aria-label="From day (UTC)" />
          <input className="input" type="date" name="to" defaultValue={raw.to} aria-label="To day (UTC)" />
          <button className="btn justify-center">Show</button>
        </form>
      </LedgerSection>

      {summary && (
        <LedgerSection id="activity-summary-heading" title={`Summary: ${summary.actor}`}>
          <p className="text-sm text-slate-700" data-testid="activity-summary-total">
            {summary.total} audited action{summary.total === 1 ? "" : "s"}
            {summary.first_ts !== null && summary.last_ts !== null ? ` from ${formatTime(summary.first_ts)} to ${formatTime(summary.last_ts)}` : ""}
            {summary.complete ? "" : " (the newest part of the range only)"}
          </p>
          <dl className="grid grid-cols-3 gap-2 text-sm sm:grid-cols-6" data-testid="activity-summary-counts">
            {summaryCounts(summary).map(([label, value, failed]) => (
              <div key={label} className="rounded border border-slate-200 px-2 py-1" data-testid={`activity-count-${label.toLowerCase()}`}>
                <dt className="text-xs text-slate-700">{label}</dt>
                <dd className="font-semibold tabular-nums">
                  {value}
                  {failed ? <span className="ml-1 text-xs font-normal text-red-800">({failed} failed)</span> : null}
                </dd>
              </div>
            ))}
          </dl>
          {summary.by_action.length > 0 && (
            <table tabIndex={0} className="data" data-testid="activity-summary">
              <thead>
                <tr>
                  <th>Action</th>
                  <th>Count</th>
                </tr>
              </thead>
              <tbody>
                {summary.by_action.map((r) => (
                  <tr key={r.action}>
                    <td>
                      <Link className="underline" href={withParams({ action: r.action, before: undefined })}>
                        {r.action}
                      </Link>
                    </td>
                    <td>{r.count}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </LedgerSection>
      )}

      <LedgerSection id="activity-log-heading" title="Audit log">
        {!page ? (
          <LedgerFilterError issues={parsed.error?.issues ?? []} />
        ) : page.entries.length === 0 ? (
          <p className="text-sm text-slate-600">{page.next_cursor === null ? "No activity matches." : "Nothing in this part of the log; older entries may match."}</p>
        ) : (
          <div className="overflow-x-auto">
            <table tabIndex={0} className="data" data-testid="activity-table">
              <thead>
                <tr>
                  <th>When</th>
                  <th>Who</th>
                  <th>Action</th>
                  <th>What</th>
                  <th>Details</th>
                </tr>
              </thead>
              <tbody>
                {page.entries.map((e) => (
                  <tr key={e.id} data-testid={`activity-row-${e.id}`}>
                    <td className="whitespace-nowrap text-xs">{formatTime(e.ts)}</td>
                    <td className="font-mono text-xs">
                      <ActorLink actor={e.actor} />
                    </td>
                    <td className="font-mono text-xs">{e.action}</td>
                    <td className="font-mono text-xs break-all">
                      {e.link ? (
                        <Link className="underline" href={e.link}>
                          {e.target}
                        </Link>
                      ) : (
                        e.target
                      )}
                    </td>
                    <td className="text-xs break-all text-slate-700">
                      {e.reason ? <span className="mr-1 italic">{e.reason}</span> : null}
                      {detailsText(e.details)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <nav aria-label="Activity pages" className="flex items-center gap-3 text-sm">
          {raw.before && (
            <Link className="underline" href={withParams({ before: undefined })}>
              Newest
            </Link>
          )}
          {page?.next_cursor != null && (
            <Link className="underline" href={withParams({ before: String(page.next_cursor) })} data-testid="activity-older">
              Older
            </Link>
          )}
        </nav>
      </LedgerSection>
    </div>
  );
}
