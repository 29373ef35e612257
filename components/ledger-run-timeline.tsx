import { LedgerHash } from "@/components/ledger-hash";
import { LedgerVerdictBadge } from "@/components/ledger-verdict-badge";
import { formatTime } from "@/lib/format";
import type { SkillRun } from "@/lib/governance/ledger";

function duration(run: SkillRun): string {
  if (run.finished_at === null) return "still running";
  const ms = run.finished_at - run.started_at;
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Runs in start order, each with its hashes, exit code and what it produced. */
export function LedgerRunTimeline({ runs }: { runs: SkillRun[] }) {
  if (runs.length === 0) return <p className="text-sm text-slate-600">No runs recorded.</p>;
  return (
    <ol className="relative space-y-3 border-l border-slate-200 pl-4" data-testid="runs-timeline">
      {runs.map((r) => (
        <li key={r.run_id} className="space-y-1" data-testid={`run-${r.run_id}`}>
          <div className="flex flex-wrap items-center gap-2 text-sm">
            <span className="font-medium">{r.skill}</span>
            <LedgerVerdictBadge value={r.status} />
            <span className="font-mono text-xs text-slate-500">{r.run_id}</span>
            <span className="text-slate-500">
              {formatTime(r.started_at)} · {duration(r)} · runner {r.runner_version}
              {r.exit_code !== null && ` · exit ${r.exit_code}`}
            </span>
          </div>
          <div className="text-xs text-slate-600">
            input <LedgerHash value={r.input_hash} /> → output <LedgerHash value={r.output_hash} />
            {r.output_ref && <span className="ml-2">output at {r.output_ref}</span>}
          </div>
          {r.artifacts.length > 0 && (
            <div className="text-xs text-slate-600">produced {r.artifacts.map((a) => `${a.store}/${a.artifact_type}/${a.artifact_id}`).join(", ")}</div>
          )}
        </li>
      ))}
    </ol>
  );
}
