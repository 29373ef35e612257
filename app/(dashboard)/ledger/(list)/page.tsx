import { ActorLink } from "@/components/actor-link";
import { LedgerFilterError, LedgerPager } from "@/components/ledger-pager";
import { LedgerSection } from "@/components/ledger-section";
import Link from "@/components/link";
import { LedgerVerdictBadge } from "@/components/ledger-verdict-badge";
import { formatTime } from "@/lib/format";
import { listTasksQuerySchema, VERDICT_LABELS, VERDICTS } from "@/lib/governance/ledger";
import { governance } from "@/lib/backend/governance";
import { requireUser } from "@/app/_server/session";
import { filledParams } from "@/app/_server/pages";

type Props = { searchParams: Promise<Record<string, string | string[] | undefined>> };

function toEpoch(date: string | undefined, endOfDay: boolean): string | undefined {
  if (!date) return undefined;
  const ms = Date.parse(`${date}T${endOfDay ? "23:59:59.999" : "00:00:00.000"}Z`);
  return Number.isNaN(ms) ? "invalid" : String(ms);
}

export default async function LedgerPage({ searchParams }: Props) {
  await requireUser();
  const raw = filledParams(await searchParams);
  const page = Math.max(1, Number(raw.page ?? 1) || 1);
  const parsed = listTasksQuerySchema.safeParse({
    requested_by: raw.requested_by,
    skill: raw.skill,
    outcome: raw.outcome,
    from: toEpoch(raw.from, false),
    to: toEpoch(raw.to, true),
    limit: 50,
    offset: (page - 1) * 50,
  });
  const result = parsed.success ? await governance().listTasks({ input: parsed.data }) : null;
  const pageLink = (p: number) => `/ledger?${new URLSearchParams({ ...raw, page: String(p) }).toString()}`;
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Ledger</h1>

      <LedgerSection id="artifact-heading" title="Where did this come from?">
        <form action="/ledger/artifacts" className="grid gap-2 sm:grid-cols-4" aria-label="Artifact lookup">
          <input className="input" name="artifact_type" placeholder="artifact type (chunk_vector, summary…)" aria-label="Artifact type" required />
          <input className="input" name="artifact_id" placeholder="artifact id" aria-label="Artifact id" required />
          <input className="input" name="store" placeholder="store (optional)" aria-label="Artifact store" />
          <button className="btn justify-center">Look up</button>
        </form>
      </LedgerSection>

      <LedgerSection id="tasks-heading" title="Tasks">
        <form className="grid gap-2 sm:grid-cols-6" aria-label="Task filters">
          <input className="input" name="requested_by" defaultValue={raw.requested_by} placeholder="requested by" aria-label="Requested by" />
          <input className="input" name="skill" defaultValue={raw.skill} placeholder="skill" aria-label="Skill" />
          <select className="input" name="outcome" defaultValue={raw.outcome ?? ""} aria-label="Outcome">
            <option value="">any outcome</option>
            {VERDICTS.map((v) => (
              <option key={v} value={v}>
                {VERDICT_LABELS[v]}
              </option>
            ))}
          </select>
          <input className="input" type="date" name="from" defaultValue={raw.from} aria-label="Created from" />
          <input className="input" type="date" name="to" defaultValue={raw.to} aria-label="Created to" />
          <button className="btn justify-center">Filter</button>
        </form>
        {!result ? (
          <LedgerFilterError issues={parsed.error?.issues ?? []} />
        ) : result.tasks.length === 0 ? (
          <p className="text-sm text-slate-600">No tasks match.</p>
        ) : (
          <>
            <table tabIndex={0} className="data" data-testid="tasks-table">
              <thead>
                <tr>
                  <th>Task</th>
                  <th>Intent</th>
                  <th>Requested by</th>
                  <th>Runs</th>
                  <th>Verdict</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {result.tasks.map((t) => (
                  <tr key={t.key} data-testid={`task-row-${t.task_id}`}>
                    <td className="font-mono text-xs">
                      <Link className="underline" href={`/ledger/tasks/${encodeURIComponent(t.key)}`}>
                        {t.task_id}
                      </Link>
                    </td>
                    <td>{t.intent}</td>
                    <td>
                      <ActorLink agentId={t.requested_by} />
                    </td>
                    <td>{t.run_count}</td>
                    <td>
                      <LedgerVerdictBadge value={t.verdict} />
                    </td>
                    <td>{formatTime(t.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <LedgerPager label="Task pages" noun="task" total={result.total} page={page} pageSize={50} hrefFor={pageLink} />
          </>
        )}
      </LedgerSection>
    </div>
  );
}
