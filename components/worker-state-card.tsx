import type { StoreStatus } from "@/lib/embed/status";
import type { WorkerState } from "@/lib/embed/worker-state";
import { formatTime } from "@/lib/format";

function ago(ms: number | null, now: number): string {
  if (ms === null) return "never";
  const s = Math.max(0, Math.round((now - ms) / 1000));
  return s < 90 ? `${s} s ago` : s < 5400 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`;
}

/**
 * The embed worker(s) and the embedding provider: where the worker runs,
 * its last successful batch, last error, items/s, and the model it embeds
 * with. Read from governance.db, so a worker in another process shows too.
 */
export function WorkerStateCard({ workers, provider, workerInServer, now }: { workers: WorkerState[]; provider: StoreStatus["provider"] | null; workerInServer: boolean; now: number }) {
  const running = workers.filter((w) => w.running);
  return (
    <section className="card space-y-3 text-sm" aria-labelledby="worker-heading" data-testid="worker-state">
      <h2 id="worker-heading" className="text-lg font-medium">
        Embed worker and provider
      </h2>
      {provider && (
        <p data-testid="provider-state" data-ok={provider.ok ? "true" : "false"}>
          <span className="label mr-2">Provider</span>
          {provider.configured ? `${provider.configured.provider}:${provider.configured.model} · ${provider.configured.dimension}-d` : "not identified yet"} ·{" "}
          {provider.ok ? (
            <span className="text-emerald-700">answering{provider.checkedAt ? ` (last call ${ago(provider.checkedAt, now)})` : ""}</span>
          ) : (
            <span className="text-red-700">
              down{provider.checkedAt ? ` (last call ${ago(provider.checkedAt, now)} failed)` : ""}: {provider.error}
            </span>
          )}
        </p>
      )}
      {running.length === 0 && (
        <p className="text-amber-800" data-testid="worker-none">
          No embed worker is running: {workerInServer ? "the server's worker has not reported yet" : "this server runs none (DUALMIND_EMBED_WORKER=false); start one with `npm run worker`"}. Queued items wait.
        </p>
      )}
      {workers.length > 0 && (
        <table tabIndex={0} className="data stack" data-testid="worker-table">
          <thead>
            <tr>
              <th>Worker</th>
              <th>Runs</th>
              <th>Last successful batch</th>
              <th>Items/s</th>
              <th>Last error</th>
              <th>Model</th>
            </tr>
          </thead>
          <tbody>
            {workers.map((w) => (
              <tr key={w.workerId} data-testid="worker-row" data-running={w.running ? "true" : "false"}>
                <td data-label="Worker">
                  {w.running ? "running" : "stopped"} · pid {w.pid}
                  <span className="block text-xs text-slate-500">heartbeat {ago(w.heartbeatAt, now)}</span>
                </td>
                <td data-label="Runs">{w.inThisProcess ? "in this server process" : w.mode === "in_server" ? "in another server process" : "as a separate process"}</td>
                <td data-label="Last successful batch">
                  {w.lastBatchAt ? `${w.lastBatchItems ?? 0} items of ${w.lastBatchStore} · ${ago(w.lastBatchAt, now)}` : "none yet"}
                  {w.lastBatchAt && <span className="block text-xs text-slate-500">{formatTime(w.lastBatchAt)}</span>}
                </td>
                <td data-label="Items/s">{w.itemsPerSecond === null ? "—" : w.itemsPerSecond.toFixed(1)}</td>
                <td data-label="Last error">
                  {w.lastError ? (
                    <>
                      <span className="text-red-700">{w.lastError}</span>
                      <span className="block text-xs text-slate-500">
                        {w.lastErrorStore} · {ago(w.lastErrorAt, now)}
                      </span>
                    </>
                  ) : (
                    "none"
                  )}
                </td>
                <td data-label="Model">{w.model ? `${w.model} · ${w.dimension}-d` : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
