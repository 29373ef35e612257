import Link from "next/link";
import { requireUser } from "@/app/_server/session";
import { LedgerSection } from "@/components/ledger-section";
import { RecallRatingButtons, RecallSettingsForm } from "@/components/recall-forms";
import { RecallQuality } from "@/components/recall-quality";
import { roleAtLeast } from "@/lib/auth/users";
import { getRecallScoreDistribution } from "@/lib/recall/quality";
import { formatTime } from "@/lib/format";
import { listRatingQueue, listRecentRecallEvents } from "@/lib/recall/events";
import { listLearnings } from "@/lib/recall/learnings";
import { getReflectionOverview } from "@/lib/recall/overview";
import { listTraces, listTracesQuerySchema } from "@/lib/recall/traces";
import { openStore } from "@/lib/stores/stores";
import { rateRecallHitAction, updateReflectionSettingsAction } from "./actions";
import { filledParams, pickStore } from "@/app/_server/pages";

type Props = { searchParams: Promise<Record<string, string | string[] | undefined>> };

const PAGE = 25;
const pct = (x: number | null) => (x === null ? "–" : `${Math.round(x * 100)}%`);

export default async function ReflectionPage({ searchParams }: Props) {
  const user = await requireUser();
  const raw = filledParams(await searchParams);
  const { store, stores } = pickStore(raw.store);
  const handle = openStore({ store });
  const overview = getReflectionOverview({ handle });
  const recalls = listRecentRecallEvents({ handle, limit: 15 });
  const queue = listRatingQueue({ handle, limit: 8 });
  // Rating changes the precision metric: editors and admins only (the action re-checks).
  const canRate = roleAtLeast(user.role, "editor");
  const page = Math.max(1, Number(raw.page ?? 1) || 1);
  const filter = listTracesQuerySchema.safeParse({ outcome: raw.outcome, shard_type: raw.shard_type, limit: PAGE, offset: (page - 1) * PAGE });
  const traces = listTraces({ handle, filter: filter.success ? filter.data : { limit: PAGE } });
  const learnings = listLearnings({ handle, filter: { limit: 25 } });
  const link = (p: Record<string, string>) => `/reflection?${new URLSearchParams({ ...raw, store, ...p }).toString()}`;

  return (
    <div className="space-y-6">
      <div className="flex flex-wrap items-end justify-between gap-3">
        <h1 className="text-2xl font-semibold">Reflection</h1>
        <form className="flex gap-2" aria-label="Choose store">
          <select className="input" name="store" defaultValue={store} aria-label="Store">
            {stores.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
          <button className="btn">Show</button>
        </form>
      </div>

      <section className="grid gap-3 sm:grid-cols-5" aria-label="Reflection summary" data-testid="reflection-summary">
        {[
          ["Traces", `${overview.counts.traces} (${overview.counts.failures} failed)`],
          ["Learnings", String(overview.counts.learnings)],
          ["Recalls", String(overview.totals.recalls)],
          ["Hit rate", pct(overview.totals.hitRate)],
          ["Precision", overview.totals.rated ? `${pct(overview.totals.precision)} of ${overview.totals.rated} rated` : "not rated yet"],
        ].map(([label, value]) => (
          <div key={label} className="card">
            <div className="text-xs text-slate-500">{label}</div>
            <div className="text-lg font-medium">{value}</div>
          </div>
        ))}
      </section>
      {!overview.settings.enabled && (
        <p role="status" className="text-sm text-amber-700">
          Reflection recall is disabled for this store: agents get a 409 until an admin enables it.
        </p>
      )}
      {overview.counts.awaitingVector + overview.counts.skippedBackpressure > 0 && (
        <p className="text-sm text-slate-600">
          {overview.counts.awaitingVector} item(s) wait for a vector and {overview.counts.skippedBackpressure} trace(s) were stored without one under backpressure; recall finds them
          lexically meanwhile.
        </p>
      )}

      <RecallQuality distribution={getRecallScoreDistribution({ handle })} settings={overview.settings} hitRate={overview.totals.hitRate} canRate={canRate} />

      <LedgerSection id="recalls-heading" title="Recent recalls" testId="recent-recalls">
        {recalls.length === 0 ? (
          <p className="text-sm text-slate-600">No recalls yet.</p>
        ) : (
          <ul className="space-y-3">
            {recalls.map((r) => (
              <li key={r.id} className="border-b border-slate-100 pb-2" data-testid={`recall-${r.id}`}>
                <div className="flex flex-wrap items-center gap-2 text-sm">
                  <span className="font-mono text-xs">#{r.id}</span>
                  <span className="font-medium">{r.query}</span>
                  <span className="text-slate-500">
                    by {r.agentId} · {formatTime(r.createdAt)} · {r.latencyMs.toFixed(1)} ms · {r.mode}
                    {r.fallbackReason ? ` (fallback: ${r.fallbackReason})` : ""}
                  </span>
                  {r.warning && <span className="rounded bg-red-100 px-2 py-0.5 text-xs text-red-800">past failure warning</span>}
                </div>
                {r.hits.length === 0 ? (
                  <p className="text-xs text-slate-500">no hits above the gate</p>
                ) : (
                  <ol className="ml-5 list-decimal text-xs text-slate-700">
                    {r.hits.map((h) => (
                      <li key={h.id}>
                        {h.artifact} {h.refId} · score {h.score.toFixed(3)} · {h.summary}
                        {h.relevant !== null && <span className="ml-1 text-slate-500">(rated {h.relevant ? "relevant" : "not relevant"})</span>}
                      </li>
                    ))}
                  </ol>
                )}
              </li>
            ))}
          </ul>
        )}
      </LedgerSection>

      <LedgerSection id="rating-heading" title="Rate recall hits" testId="rating-queue">
        <p className="text-sm text-slate-600">A random sample of unrated hits from recent recalls. Your ratings give the precision above.</p>
        {queue.length === 0 ? (
          <p className="text-sm text-slate-600">Nothing to rate.</p>
        ) : (
          <ul className="space-y-3">
            {queue.map((q) => (
              <li key={q.id} className="space-y-1" data-testid={`rate-hit-${q.id}`}>
                <div className="text-sm">
                  Asked <span className="font-medium">“{q.query}”</span>, got {q.artifact} {q.refId} (score {q.score.toFixed(3)}):
                </div>
                <div className="font-mono text-xs text-slate-700">{q.summary}</div>
                {canRate && <RecallRatingButtons action={rateRecallHitAction} store={store} hitId={q.id} />}
              </li>
            ))}
          </ul>
        )}
      </LedgerSection>

      <LedgerSection id="traces-heading" title={`Traces (${traces.total})`} testId="trace-browser">
        <form className="flex flex-wrap gap-2" aria-label="Trace filters">
          <input type="hidden" name="store" value={store} />
          <select className="input" name="outcome" defaultValue={raw.outcome ?? ""} aria-label="Outcome">
            <option value="">any outcome</option>
            <option value="failure">failure</option>
            <option value="success">success</option>
          </select>
          <input className="input" name="shard_type" defaultValue={raw.shard_type} placeholder="shard type" aria-label="Shard type" />
          <button className="btn">Filter</button>
        </form>
        {traces.traces.length === 0 ? (
          <p className="text-sm text-slate-600">No traces match.</p>
        ) : (
          <table className="data">
            <thead>
              <tr>
                <th>Id</th>
                <th>Descriptor</th>
                <th>Outcome</th>
                <th>Agent</th>
                <th>Seen</th>
                <th>Vector</th>
                <th>Last seen</th>
              </tr>
            </thead>
            <tbody>
              {traces.traces.map((t) => (
                <tr key={t.id} data-testid={`trace-row-${t.id}`}>
                  <td className="font-mono text-xs">{t.id}</td>
                  <td className="text-xs">{t.summaryDescriptor}</td>
                  <td>{t.outcome}</td>
                  <td>{t.agentId}</td>
                  <td>{t.seenCount}</td>
                  <td>{t.embedding}</td>
                  <td>{formatTime(t.lastSeenAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <nav className="flex gap-3 text-sm" aria-label="Trace pages">
          {page > 1 && <Link href={link({ page: String(page - 1) })}>Previous</Link>}
          {page * PAGE < traces.total && <Link href={link({ page: String(page + 1) })}>Next</Link>}
        </nav>
      </LedgerSection>

      <LedgerSection id="learnings-heading" title={`Learnings (${learnings.total})`} testId="learning-browser">
        {learnings.learnings.length === 0 ? (
          <p className="text-sm text-slate-600">No learnings yet.</p>
        ) : (
          <table className="data">
            <thead>
              <tr>
                <th>Id</th>
                <th>Predicate</th>
                <th>Description</th>
                <th>Confidence</th>
                <th>Seen</th>
                <th>Last seen</th>
              </tr>
            </thead>
            <tbody>
              {learnings.learnings.map((l) => (
                <tr key={l.id} data-testid={`learning-row-${l.id}`}>
                  <td className="font-mono text-xs">{l.id}</td>
                  <td>{l.predicate}</td>
                  <td className="text-xs">{l.description}</td>
                  <td>{l.confidence.toFixed(2)}</td>
                  <td>{l.seenCount}</td>
                  <td>{formatTime(l.lastSeenAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </LedgerSection>

      {user.role === "admin" && (
        <LedgerSection id="settings-heading" title="Settings" testId="reflection-settings">
          <RecallSettingsForm action={updateReflectionSettingsAction} store={store} settings={overview.settings} />
        </LedgerSection>
      )}
    </div>
  );
}
