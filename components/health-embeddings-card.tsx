import type { EmbeddingStatus } from "@/lib/embed/status";
import type { ActionResult } from "@/app/_server/action-result";
import { formatTime } from "@/lib/format";
import { HealthActionForm } from "./health-action-form";
import { HealthAutoRefresh } from "./health-auto-refresh";

type Action = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;

/** Live embedding state of one store: re-embed progress (kept in the store, so it survives reloads) and parked items. */
export function HealthEmbeddingsCard({ status, isAdmin, retryParked, startReembed }: { status: EmbeddingStatus; isAdmin: boolean; retryParked: Action; startReembed: Action }) {
  const r = status.reembed;
  const pct = r && r.total > 0 ? Math.round((100 * r.done) / r.total) : 0;
  return (
    <section className="card space-y-4 text-sm" aria-labelledby="embeddings-heading" data-testid="health-embeddings">
      <HealthAutoRefresh active={r !== null && r.remaining > 0} />
      <h2 id="embeddings-heading" className="text-lg font-medium">
        Embeddings of {status.store} (live)
      </h2>
      <p>
        backlog {status.backlog.pending} / watermark {status.backlog.watermark} · oldest {status.backlog.oldestAgeSeconds ?? "—"} s · coverage {status.drift ? `${status.drift.coveragePct.toFixed(1)}%` : "—"} · model {status.active?.model ?? status.configured?.model ?? "—"}
        {status.providerError && <span className="text-red-600"> · provider error: {status.providerError}</span>}
      </p>
      <div id="reembed" className="space-y-2">
        <h3 className="font-medium">Re-embed</h3>
        {r ? (
          <div data-testid="reembed-progress">
            <progress max={100} value={pct} aria-label={`Re-embed progress of ${status.store}`} className="w-64" />
            <span className="ml-2">
              {r.done}/{r.total} · {r.ratePerSec ? `${r.ratePerSec.toFixed(1)}/s` : "starting"} · ETA {r.etaSeconds !== null ? `${Math.round(r.etaSeconds)} s` : "—"} · started {formatTime(r.startedAt)} by {r.startedBy}
            </span>
          </div>
        ) : (
          <p className="text-slate-600">{status.drift && status.drift.drifted > 0 ? `${status.drift.drifted} rows need new vectors.` : "No re-embed running."}</p>
        )}
        {isAdmin && <HealthActionForm action={startReembed} store={status.store} label={r ? "Resume re-embed" : "Re-embed store"} />}
      </div>
      <div id="parked" className="space-y-2">
        <h3 className="font-medium">Parked items ({status.backlog.parked})</h3>
        {status.parked.length === 0 ? (
          <p className="text-slate-600">Nothing parked.</p>
        ) : (
          <table className="data" data-testid="parked-table">
            <thead>
              <tr>
                <th>Kind</th>
                <th>Row</th>
                <th>Attempts</th>
                <th>Last error</th>
                <th>Parked</th>
              </tr>
            </thead>
            <tbody>
              {status.parked.map((p) => (
                <tr key={`${p.kind}-${p.refId}`}>
                  <td>{p.kind}</td>
                  <td>{p.refId}</td>
                  <td>{p.attempts}</td>
                  <td className="max-w-md truncate">{p.lastError}</td>
                  <td>{formatTime(p.parkedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {isAdmin && status.backlog.parked > 0 && <HealthActionForm action={retryParked} store={status.store} label="Retry parked items" />}
      </div>
    </section>
  );
}
