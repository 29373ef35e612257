import { reembedSwitchReady, type EmbeddingStatus, type StatusVerdict } from "@/lib/embed/status";
import { STATUS_STYLE } from "./store-status-card";
import { ReembedJobProgress } from "./job-progress";
import { EmbeddingAdminButtons, type DescribeEmbeddingAction, type EmbeddingAction } from "./store-embeddings-buttons";

/**
 * Embeddings of one store: model, backlog, drift, coverage, re-embed progress, and (for admins) the buttons.
 * The verdict is the store's one live status (getStoreStatus), never recomputed here.
 */
export function StoreEmbeddingsCard({
  store,
  status,
  verdict,
  isAdmin,
  action,
  describe,
}: {
  store: string;
  status: EmbeddingStatus;
  verdict: StatusVerdict;
  isAdmin: boolean;
  action: EmbeddingAction;
  describe?: DescribeEmbeddingAction;
}) {
  const st = { ...STATUS_STYLE[verdict.state], reason: verdict.reason };
  const d = status.drift;
  const job = status.reembed;
  return (
    <section className="card space-y-3 text-sm" aria-labelledby="embeddings-heading" data-testid="store-embeddings">
      <div className="flex flex-wrap items-center gap-3">
        <h2 id="embeddings-heading" className="text-lg font-medium">
          Embeddings
        </h2>
        <span className={`rounded px-2 py-0.5 text-xs font-medium ${st.badge}`} data-testid="embeddings-status" data-state={verdict.state}>
          {st.label}
        </span>
        <span className="text-slate-600">{st.reason}</span>
      </div>
      <dl className="grid grid-cols-2 gap-3 sm:grid-cols-4">
        <div>
          <dt className="label">Configured model</dt>
          <dd>{status.configured ? `${status.configured.provider}:${status.configured.model} · ${status.configured.dimension}-d · ${status.configured.id}` : "—"}</dd>
        </div>
        <div>
          <dt className="label">Active model</dt>
          <dd>{status.active ? `${status.active.provider}:${status.active.model} · ${status.active.id}` : "none yet"}</dd>
        </div>
        <div>
          <dt className="label">Backlog</dt>
          <dd data-testid="embeddings-backlog">
            {status.backlog.pending} pending (watermark {status.backlog.watermark}){status.backlog.oldest_age_seconds !== null && `, oldest ${status.backlog.oldest_age_seconds} s`} · {status.backlog.parked} parked
          </dd>
        </div>
        <div>
          <dt className="label">Coverage / drift</dt>
          <dd data-testid="embeddings-coverage">
            {d ? `${d.coverage_pct.toFixed(1)}% embedded · ${d.drifted} drifted (${d.drift_pct.toFixed(1)}%) · ${d.stale} stale · ${d.missing} missing` : "unknown: the configured model has not answered yet"}
          </dd>
        </div>
      </dl>
      {job && <ReembedJobProgress job={job} />}
      {status.parked.length > 0 && (
        <details>
          <summary className="cursor-pointer">Parked items ({status.parked.length})</summary>
          <ul className="mt-1 space-y-1 font-mono text-xs">
            {status.parked.map((p) => (
              <li key={`${p.kind}:${p.ref_id}`}>
                {p.kind} {p.ref_id} · {p.attempts} attempts · {p.last_error}
              </li>
            ))}
          </ul>
        </details>
      )}
      {isAdmin && <EmbeddingAdminButtons store={store} action={action} describe={describe} held={reembedSwitchReady(job)} parked={status.parked.length > 0} />}
    </section>
  );
}
