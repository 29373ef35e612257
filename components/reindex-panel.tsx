"use client";

import { useEffect, useState, useTransition } from "react";
import { ConfirmAction } from "@/components/confirm-action";
import { formatCount } from "@/lib/format";
import type { ActionResult } from "@/lib/http/action-result";
import type { Job, ReindexScope } from "@/lib/index/jobs";
import type { ReindexKindCounts } from "@/lib/index/reindex";

type Start = (store: string) => Promise<ActionResult<Job>>;
type Poll = (id: string) => Promise<ActionResult<Job>>;
type Describe = (store: string) => Promise<ActionResult<ReindexScope>>;
/** The Admin page's server actions, passed down (components never import app/). */
export type ReindexActions = { start: Start; poll: Poll; describe: Describe };

function kindLine(label: string, c: ReindexKindCounts): string {
  return `${label}: ${formatCount(c.scanned)} scanned, ${formatCount(c.added)} added, ${formatCount(c.changed)} changed, ${formatCount(c.unchanged)} unchanged, ${formatCount(c.removed)} removed`;
}

/** The confirmation's text: what the reindex goes over, in counts. */
async function describeReindex(describe: Describe, store: string): Promise<string> {
  const r = await describe(store);
  if (!r.ok) throw new Error(r.error);
  const s = r.data!;
  if (s.running) return `A reindex of ${store} is already running: confirming shows its progress instead of starting another.`;
  const kept = s.apiDocuments ? ` (plus ${formatCount(s.apiDocuments)} documents sent by the API, which are kept)` : "";
  if (s.truth === "memories table")
    return `Rebuilds ${store}'s documents and chunks from its ${formatCount(s.memories)} memories (the memories table, the truth on PostgreSQL)${kept}. Changed text is queued for embedding; the write is one transaction.`;
  return (
    `Rescans ${store}'s memory/ folder and source roots. Indexed now: ${formatCount(s.memories)} memories and ${formatCount(s.documents)} source documents` +
    kept +
    ". Unchanged files are skipped; changed text is queued for embedding; the write is one transaction."
  );
}

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
    <div className="text-emerald-700">
      <span>
        done in {formatCount(r.duration_ms)} ms{c.skipped ? `, ${formatCount(c.skipped)} skipped` : ""}
        {job.attempts > 1 ? ` (resumed after a restart, attempt ${job.attempts})` : ""}
      </span>
      {r.by_kind ? (
        <ul className="text-xs">
          <li data-testid={`reindex-result-memories-${job.store}`}>{kindLine("Memories", r.by_kind.memories)}</li>
          <li data-testid={`reindex-result-documents-${job.store}`}>{kindLine("Documents", r.by_kind.documents)}</li>
        </ul>
      ) : (
        <span className="block text-xs">
          scanned {formatCount(c.scanned)}, added {formatCount(c.added)}, changed {formatCount(c.changed)}, unchanged {formatCount(c.unchanged)}, removed {formatCount(c.removed)}
        </span>
      )}
    </div>
  );
}

function StoreRow({ store, initial, start, poll, describe }: { store: string; initial: Job | undefined; start: Start; poll: Poll; describe: Describe }) {
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
        <ConfirmAction
          label={`Reindex ${store}`}
          title={`Reindex store ${store}?`}
          confirmLabel="Reindex"
          loadDetails={() => describeReindex(describe, store)}
          disabled={pending || job?.status === "running"}
          onConfirm={() =>
            startTransition(async () => {
              setError(null);
              const r = await start(store);
              if (r.ok) setJob(r.data);
              else setError(r.error);
            })
          }
        />
      </td>
      <td role="status" data-testid={`reindex-status-${store}`}>
        {error ? <span className="text-red-600">{error}</span> : job ? <JobStatus job={job} /> : <span className="text-slate-500">—</span>}
      </td>
    </tr>
  );
}

export function ReindexPanel({ stores, latest, start, poll, describe }: { stores: string[]; latest: Job[]; start: Start; poll: Poll; describe: Describe }) {
  return (
    <table tabIndex={0} className="data" data-testid="reindex-table">
      <thead>
        <tr>
          <th>Store</th>
          <th>Action</th>
          <th>Last run</th>
        </tr>
      </thead>
      <tbody>
        {stores.map((s) => (
          <StoreRow key={s} store={s} initial={latest.find((j) => j.store === s)} start={start} poll={poll} describe={describe} />
        ))}
      </tbody>
    </table>
  );
}
