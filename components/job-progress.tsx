import { AutoRefresh } from "@/components/auto-refresh";
import type { ReembedProgress } from "@/lib/embed/reembed";
import { formatCount, formatNumber, formatTime } from "@/lib/format";

/** How often a page showing a running job re-renders itself. */
export const JOB_REFRESH_MS = 2_000;

function eta(seconds: number | null): string {
  if (seconds === null) return "—";
  return seconds < 90 ? `${Math.round(seconds)} s` : `${Math.round(seconds / 60)} min`;
}

/**
 * A store's re-embed: progress over its own items while it runs (the page
 * re-renders every JOB_REFRESH_MS until it stops running), then how it ended.
 * Items ingested meanwhile are not in its total.
 */
export function ReembedJobProgress({ job }: { job: ReembedProgress }) {
  const pct = job.total > 0 ? Math.round((100 * job.done) / job.total) : 100;
  return (
    <div className="space-y-1 rounded bg-slate-100 p-2" data-testid="reembed-progress" data-status={job.status}>
      <AutoRefresh active={job.status === "running"} everyMs={JOB_REFRESH_MS} />
      {job.status === "done" ? (
        <p>
          Re-embed to {job.target_fingerprint_id} done: {formatCount(job.total)} item(s) embedded · started {formatTime(job.started_at)} by {job.started_by} · finished{" "}
          {formatTime(job.finished_at)}
        </p>
      ) : (
        <>
          <p>
            Re-embed to {job.target_fingerprint_id}: {formatCount(job.done)} of {formatCount(job.total)} done
            {job.rate_per_sec ? ` · ${formatNumber(job.rate_per_sec, 1)}/s · ETA ${eta(job.eta_seconds)}` : ""} · started {formatTime(job.started_at)} by {job.started_by}
            {job.status === "waiting_switch" ? " · built: waits for an admin to switch" : job.hold_switch ? " · waits for an admin to switch" : ""}
          </p>
          <progress className="w-64" max={100} value={pct} aria-label="Re-embed progress" />
          {job.status === "running" && <p className="text-xs text-slate-500">This page refreshes itself while the job runs. Items ingested meanwhile are embedded too but are not counted here.</p>}
        </>
      )}
    </div>
  );
}
