import { formatTime } from "@/lib/format";
import type { DialecticMessage, Phase } from "@/lib/governance/dialectic";

const STEPS = ["thesis", "antithesis", "synthesis"] as const;

/** thesis → antithesis → synthesis → outcome, with when each step was first reached. */
export function SessionPhaseTimeline({ phase, messages, createdAt, updatedAt }: { phase: Phase; messages: DialecticMessage[]; createdAt: number; updatedAt: number }) {
  const reachedAt = (step: (typeof STEPS)[number]) => messages.find((m) => m.message_type === step)?.timestamp ?? null;
  const done = phase === "resolved" || phase === "failed";
  return (
    <ol className="flex flex-wrap items-stretch gap-2 text-sm" aria-label="Phase timeline" data-testid="phase-timeline">
      <li className="rounded border border-slate-200 px-3 py-1.5">
        <p className="font-medium">requested</p>
        <p className="text-xs text-slate-500">{formatTime(createdAt)}</p>
      </li>
      {STEPS.map((step) => {
        const at = reachedAt(step);
        const current = phase === step;
        return (
          <li key={step} aria-current={current ? "step" : undefined} className={`rounded border px-3 py-1.5 ${current ? "border-slate-900 bg-slate-900 text-white" : at ? "border-slate-300" : "border-dashed border-slate-300 text-slate-600"}`}>
            <p className="font-medium">{step}</p>
            <p className="text-xs opacity-75">{at ? formatTime(at) : current ? "waiting" : "—"}</p>
          </li>
        );
      })}
      <li
        aria-current={done ? "step" : undefined}
        className={`rounded border px-3 py-1.5 ${phase === "resolved" ? "border-emerald-600 bg-emerald-600 text-white" : phase === "failed" ? "border-red-600 bg-red-600 text-white" : "border-dashed border-slate-300 text-slate-600"}`}
      >
        <p className="font-medium">{done ? phase : "outcome"}</p>
        <p className="text-xs opacity-75">{done ? formatTime(updatedAt) : "—"}</p>
      </li>
    </ol>
  );
}
