import Link from "@/components/link";
import { pickRememberedStore, filledParams, requestTime } from "@/app/_server/pages";
import { requireUser } from "@/app/_server/session";
import { LedgerSection } from "@/components/ledger-section";
import { RecallRatingButtons, RecallSettingsForm } from "@/components/recall-forms";
import { RecallQuality } from "@/components/recall-quality";
import { roleAtLeast } from "@/lib/auth/users";
import { formatCount, formatDecimal, formatPercent, formatQuantity } from "@/lib/format";
import { graphBackend } from "@/lib/graph/backend";
import { recallBackend } from "@/lib/recall/backend";
import { listTracesQuerySchema } from "@/lib/recall/traces";
import { LearningTable } from "../_parts/learning-table";
import { reflectionHref } from "../_parts/links";
import { distinctRatingItems } from "../_parts/rating-queue";
import { RecallList } from "../_parts/recall-list";
import { TraceTable } from "../_parts/trace-table";
import { rateRecallHitAction, updateReflectionSettingsAction } from "../actions";
import { PoisonFlagBadges } from "@/components/poison-flags";
import { poisonFlags } from "@/lib/poison";

type Props = { searchParams: Promise<Record<string, string | string[] | undefined>> };

const PAGE = 25;

// The page is a list of sections, each reading its own data: add a section as one more block below.
// It sits in the (list) group so its loading skeleton does not wrap the detail pages: a Suspense boundary
// above them would start streaming before they can answer 404 for an unknown id.
/** Rows the rating queue shows, from a larger sample (the same recall repeated returns the same hit: one row). */
const RATING_SHOWN = 8;
const RATING_SAMPLE = 40;

export default async function ReflectionPage({ searchParams }: Props) {
  const user = await requireUser();
  const raw = filledParams(await searchParams);
  // The stores of this process's backend (PostgreSQL with DATABASE_URL, never DATA_DIR's then), read through recallBackend().
  const { store, stores } = await pickRememberedStore(raw.store);
  const recall = recallBackend();
  const now = requestTime();
  const page = Math.max(1, Number(raw.page ?? 1) || 1);
  const filter = listTracesQuerySchema.safeParse({ outcome: raw.outcome, shard_type: raw.shard_type, limit: PAGE, offset: (page - 1) * PAGE });
  const [overview, recalls, sample, traces, learnings, workingMemory, distribution] = await Promise.all([
    recall.getReflectionOverview({ store }),
    recall.listRecentRecalls({ store, limit: 15 }),
    recall.listRatingQueue({ store, limit: RATING_SAMPLE }),
    recall.listTraces({ store, filter: filter.success ? filter.data : { limit: PAGE }, budget: false }),
    recall.listLearnings({ store, filter: { limit: 25 }, budget: false }),
    graphBackend().listWorkingMemory({ store, query: { limit: 1 } }),
    recall.getScoreDistribution({ store }),
  ]);
  const queue = distinctRatingItems(sample, RATING_SHOWN);
  const workingMemoryKeys = workingMemory.total;
  const canRate = roleAtLeast({ role: user.role, min: "editor" });
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

      <section className="grid grid-cols-2 gap-3 sm:grid-cols-3 lg:grid-cols-6" aria-label="Reflection summary" data-testid="reflection-summary">
        {[
          ["Traces", `${formatCount(overview.counts.traces)} (${formatCount(overview.counts.failures)} failed)`],
          ["Learnings", formatCount(overview.counts.learnings)],
          ["Recalls", formatCount(overview.totals.recalls)],
          ["Hit rate", formatPercent(overview.totals.hit_rate, 0)],
          ["Precision", overview.totals.rated ? `${formatPercent(overview.totals.precision, 0)} of ${formatCount(overview.totals.rated)} rated` : "not rated yet"],
          [
            "Working memory",
            <Link key="wm" href={reflectionHref.workingMemory(store)} className="underline">
              {formatQuantity(workingMemoryKeys, "key")}
            </Link>,
          ],
        ].map(([label, value]) => (
          <div key={String(label)} className="card">
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
      {overview.counts.awaiting_vector + overview.counts.skipped_backpressure > 0 && (
        <p className="text-sm text-slate-600">
          {formatQuantity(overview.counts.awaiting_vector, "item")} waiting for a vector and {formatQuantity(overview.counts.skipped_backpressure, "trace")} stored without one under
          backpressure; recall finds them lexically meanwhile.
        </p>
      )}

      <RecallQuality distribution={distribution} settings={overview.settings} hitRate={overview.totals.hit_rate} canRate={canRate} />

      <LedgerSection id="recalls-heading" title="Recent recalls" testId="recent-recalls">
        <RecallList store={store} recalls={recalls} now={now} />
      </LedgerSection>

      <LedgerSection id="rating-heading" title="Rate recall hits" testId="rating-queue">
        <p className="text-sm text-slate-600">
          A random sample of unrated hits from recent recalls. {canRate ? "Your ratings give the precision above." : "Editors and admins rate them; the ratings give the precision above."}
        </p>
        {queue.length === 0 ? (
          <p className="text-sm text-slate-600">Nothing to rate.</p>
        ) : (
          <ul className="space-y-3">
            {queue.map((q) => (
              <li key={q.id} className="space-y-1" data-testid={`rate-hit-${q.id}`}>
                <div className="text-sm">
                  Asked{" "}
                  <Link href={reflectionHref.recall(store, q.eventId)} className="font-medium underline">
                    “{q.query}”
                  </Link>
                  , got{" "}
                  <Link href={reflectionHref.hit(store, q)} className="underline">
                    {q.artifact} #{q.refId}
                  </Link>{" "}
                  (score {formatDecimal(q.score, 3)}):
                </div>
                <div className="font-mono text-xs text-slate-700">
                  {q.summary} <PoisonFlagBadges flags={poisonFlags({ fields: { summary: q.summary } })} />
                </div>
                {canRate && <RecallRatingButtons action={rateRecallHitAction} store={store} hitId={q.id} />}
              </li>
            ))}
          </ul>
        )}
      </LedgerSection>

      <LedgerSection id="traces-heading" title={`Traces (${formatCount(traces.total)})`} testId="trace-browser">
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
        {traces.traces.length === 0 ? <p className="text-sm text-slate-600">No traces match.</p> : <TraceTable store={store} traces={traces.traces} now={now} />}
        <nav className="flex gap-3 text-sm" aria-label="Trace pages">
          {page > 1 && <Link href={link({ page: String(page - 1) })}>Previous</Link>}
          {page * PAGE < traces.total && <Link href={link({ page: String(page + 1) })}>Next</Link>}
        </nav>
      </LedgerSection>

      <LedgerSection id="learnings-heading" title={`Learnings (${formatCount(learnings.total)})`} testId="learning-browser">
        {learnings.learnings.length === 0 ? <p className="text-sm text-slate-600">No learnings yet.</p> : <LearningTable store={store} learnings={learnings.learnings} now={now} />}
      </LedgerSection>

      {roleAtLeast({ role: user.role, min: "admin" }) && (
        <LedgerSection id="settings-heading" title="Settings" testId="reflection-settings">
          <RecallSettingsForm action={updateReflectionSettingsAction} store={store} settings={overview.settings} />
        </LedgerSection>
      )}
    </div>
  );
}
