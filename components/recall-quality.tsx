import { formatCount, formatNumber } from "@/lib/format";
import { LEXICAL_CEILING, SCORE_SAMPLE_LIMIT, type RecallScoreDistribution } from "@/lib/recall/quality";
import type { ReflectionSettings } from "@/lib/recall/settings";

const pct = (x: number | null) => (x === null ? "–" : `${formatNumber(100 * x, 1)}%`);

/**
 * What a recall score, a hit and a rating mean on this store, and how its
 * scores are spread. Server-rendered: the histogram is plain bars (a table
 * for screen readers), no chart library.
 */
export function RecallQuality({
  distribution: d,
  settings,
  hitRate,
  canRate,
}: {
  distribution: RecallScoreDistribution;
  settings: ReflectionSettings;
  hitRate: number | null;
  canRate: boolean;
}) {
  const max = Math.max(1, ...d.bins.map((b) => b.count));
  const halfLife = settings.recency_half_life_days;
  return (
    <section className="card space-y-4 text-sm" aria-labelledby="recall-quality-heading" data-testid="recall-quality">
      <h2 id="recall-quality-heading" className="text-lg font-medium">
        Recall quality: what the numbers mean
      </h2>
      <div className="grid gap-4 md:grid-cols-2">
        <dl className="space-y-2" data-testid="recall-score-explained">
          <div>
            <dt className="font-medium">Score = similarity × recency</dt>
            <dd className="text-slate-600">
              Every hit&apos;s score is its similarity to the query times a recency weight, between 0 and 1. Hits below the store&apos;s min score ({formatNumber(settings.min_score)}) are
              dropped; the best {settings.top_k} are kept.
            </dd>
          </div>
          <div>
            <dt className="font-medium">Similarity</dt>
            <dd className="text-slate-600">
              A vector match: the cosine similarity of the query&apos;s and the trace&apos;s (or learning&apos;s) embeddings. A lexical match (no vector yet, or lexical recall): the share of
              query terms the row contains × {formatNumber(LEXICAL_CEILING)}, so a lexical match can score at most {LEXICAL_CEILING.toFixed(3)}.
            </dd>
          </div>
          <div>
            <dt className="font-medium">Recency</dt>
            <dd className="text-slate-600">
              {halfLife > 0 ? `0.5^(age in days / ${formatNumber(halfLife)}): a row last seen ${formatNumber(halfLife)} days ago counts half.` : "Off for this store (half-life 0): every row weighs 1."}
            </dd>
          </div>
          <div>
            <dt className="font-medium">Hit and hit rate</dt>
            <dd className="text-slate-600">
              A recall is a hit when it returns at least one trace or learning above the min score. Hit rate = recalls with a hit ÷ all recalls ({pct(hitRate)} here). It says recall
              found something, not that it was right: that is precision.
            </dd>
          </div>
          <div>
            <dt className="font-medium">Precision and who may rate</dt>
            <dd className="text-slate-600" data-testid="recall-who-rates">
              Precision = hits rated relevant ÷ hits rated ({formatCount(d.relevant)} of {formatCount(d.rated)} in the sample). A rating changes this metric, so only editors and admins
              rate; viewers see the queue but cannot rate.{canRate ? "" : " You are signed in as a viewer."}
            </dd>
          </div>
        </dl>
        <figure className="space-y-2" data-testid="recall-score-histogram" data-hits={d.hits}>
          <figcaption className="font-medium">
            Score distribution · {formatCount(d.hits)} newest hits{d.hits >= SCORE_SAMPLE_LIMIT ? ` (the newest ${formatCount(SCORE_SAMPLE_LIMIT)})` : ""} ·{" "}
            {formatCount(d.byArtifact.trace)} traces, {formatCount(d.byArtifact.learning)} learnings
          </figcaption>
          {d.hits === 0 ? (
            <p className="text-slate-600">No recall hits yet.</p>
          ) : (
            <>
              <table className="w-full text-xs">
                <thead className="sr-only">
                  <tr>
                    <th>Score</th>
                    <th>Hits</th>
                  </tr>
                </thead>
                <tbody>
                  {[...d.bins].reverse().map((b) => (
                    <tr key={b.lo}>
                      <th scope="row" className="w-20 pr-2 text-right font-mono font-normal text-slate-600">
                        {b.lo.toFixed(2)}–{b.hi.toFixed(2)}
                      </th>
                      <td>
                        <div className="flex items-center gap-2">
                          <div className="h-3 rounded-sm bg-cyan-600" style={{ width: `${(100 * b.count) / max}%`, minWidth: b.count > 0 ? 2 : 0 }} aria-hidden />
                          <span className="text-slate-600">{formatCount(b.count)}</span>
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {d.atLexicalCeiling > 0 && (
                <p className="text-xs text-slate-600" data-testid="recall-lexical-ceiling">
                  {formatCount(d.atLexicalCeiling)} of {formatCount(d.hits)} hits ({pct(d.atLexicalCeiling / d.hits)}) score exactly {LEXICAL_CEILING.toFixed(3)}: lexical matches with
                  every query term, recent enough to weigh 1. Many such scores mean recall is answering lexically (no vectors, or lexical mode), not that every hit is equally good.
                </p>
              )}
            </>
          )}
        </figure>
      </div>
    </section>
  );
}
