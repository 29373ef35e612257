import { LedgerHash } from "@/components/ledger-hash";
import { LedgerVerdictBadge } from "@/components/ledger-verdict-badge";
import { formatTime } from "@/lib/format";
import type { SkillRun } from "@/lib/governance/ledger";

function duration(run: SkillRun): string {
  if (run.finishedAt === null) return "still running";
  const ms = run.finishedAt - run.startedAt;
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Runs in start order, each with its hashes, exit code and what it produced. */
export function LedgerRunTimeline({ runs }: { runs: SkillRun[] }) {
  if (runs.length === 0) return <p className="text-sm text-slate-600">No runs recorded.</p>;
  return (
    <ol className="relative space-y-3 border-l border-slate-200 pl-4" data-testid="runs-timeline">
      {runs.map((r) => (
        <li key={r.runId} className="space-y-1" data-testid={`run-${r.runId}`}>
          <div className="flex flex-wrap items-center gap-2 text-sm">
            <span className="font-medium">{r.skill}</span>
            <LedgerVerdictBadge value={r.status} />
            <span className="font-mono text-xs text-slate-500">{r.runId}</span>
            <span className="text-slate-500">
              {formatTime(r.startedAt)} · {duration(r)} · runner {r.runnerVersion}
              {r.exitCode !== null && ` · exit ${r.exitCode}`}
            </span>
          </div>
          <div className="text-xs text-slate-600">
            input <LedgerHash value={r.inputHash} /> → output <LedgerHash value={r.outputHash} />
            {r.outputRef && <span className="ml-2">output at {r.outputRef}</span>}
          </div>
          {r.artifacts.length > 0 && (
            <div className="text-xs text-slate-600">produced {r.artifacts.map((a) => `${a.store}/${a.artifact_type}/${a.artifact_id}`).join(", ")}</div>
          )}
        </li>
      ))}
    </ol>
  );
}
