"use client";

import { useEffect, useState, useTransition } from "react";
import type { ActionResult } from "@/lib/http/action-result";
import type { Job } from "@/lib/index/jobs";

type Start = (store: string) => Promise<ActionResult<Job>>;
type Poll = (id: string) => Promise<ActionResult<Job>>;
/** The Admin page's server actions, passed down (components never import app/). */
export type ReindexActions = { start: Start; poll: Poll };

const POLL_MS = 400;

function JobStatus({ job }: { job: Job }) {
  if (job.status === "running") {
    const p = job.progress;
    const pct = p && p.total > 0 ? Math.round((100 * p.done) / p.total) : 0;
    return (
      <div className="space-y-1">
        <progress className="w-48" max={100} value={pct} aria-label={`Reindex progress of ${job.store}`} />
        <span className="ml-2 text-xs text-slate-600">{p ? `${p.phase} ${p.done}/${p.total}` : "starting"}</span>
        {job.attempts > 1 ? <span className="ml-2 text-xs text-amber-700">resumed after a restart (attempt {job.attempts})</span> : null}
      </div>
    );
  }
  if (job.status === "failed") return <span className="text-red-600">failed: {job.error}</span>;
  const r = job.result!;
  const c = r.counts;
  return (
    <span className="text-emerald-700">
      done: scanned {c.scanned}, added {c.added}, changed {c.changed}, unchanged {c.unchanged}, removed {c.removed}, skipped {c.skipped} in {r.durationMs} ms
      {job.attempts > 1 ? ` (resumed after a restart, attempt ${job.attempts})` : ""}
    </span>
  );
}

function StoreRow({ store, initial, start, poll }: { store: string; initial: Job | undefined; start: Start; poll: Poll }) {
  const [job, setJob] = useState<Job | undefined>(initial);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();

  useEffect(() => {
    if (!job || job.status !== "running") return;
    const timer = setTimeout(async () => {
      const r = await poll(job.id);
      if (r.ok && r.data) setJob(r.data);
      else if (!r.ok) setError(r.error);
    }, POLL_MS);
    return () => clearTimeout(timer);
  }, [job, poll]);

  return (
    <tr data-testid={`reindex-row-${store}`}>
      <td className="font-medium">{store}</td>
      <td>
        <button
          className="btn-secondary"
          disabled={pending || job?.status === "running"}
          onClick={() =>
            startTransition(async () => {
              setError(null);
              const r = await start(store);
              if (r.ok) setJob(r.data);
              else setError(r.error);
            })
          }
        >
          Reindex {store}
        </button>
      </td>
      <td role="status" data-testid={`reindex-status-${store}`}>
        {error ? <span className="text-red-600">{error}</span> : job ? <JobStatus job={job} /> : <span className="text-slate-500">—</span>}
      </td>
    </tr>
  );
}

export function ReindexPanel({ stores, latest, start, poll }: { stores: string[]; latest: Job[]; start: Start; poll: Poll }) {
  return (
    <table className="data" data-testid="reindex-table">
      <thead>
        <tr>
          <th>Store</th>
          <th>Action</th>
          <th>Last run</th>
        </tr>
      </thead>
      <tbody>
        {stores.map((s) => (
          <StoreRow key={s} store={s} initial={latest.find((j) => j.store === s)} start={start} poll={poll} />
        ))}
      </tbody>
    </table>
  );
}
