import type { ConfidenceBand } from "@/lib/retrieval/confidence";

const STYLE: Record<ConfidenceBand, string> = {
  high: "bg-emerald-100 text-emerald-800",
  medium: "bg-sky-100 text-sky-800",
  low: "bg-slate-100 text-slate-600",
};
const MEANING: Record<ConfidenceBand, string> = {
  high: "holds most of the query's words",
  medium: "holds a good part of the query's words",
  low: "holds a word or two of the query, or is only a vector neighbour: a guess",
};

/** A hit's confidence band (lib/retrieval/confidence.ts) in place of a raw fused score; the score stays in the tooltip. */
export function ConfidenceBadge({ band, score }: { band: ConfidenceBand | undefined; score: number }) {
  if (!band) return null;
  return (
    <span className={`rounded px-1 text-xs font-medium ${STYLE[band]}`} title={`${band} confidence: ${MEANING[band]} (score ${score.toPrecision(3)})`} data-testid="confidence-band" data-band={band}>
      {band}
    </span>
  );
}

/** The weak-answer note: the best evidence is weak, so the hits are guesses. */
export function WeakAnswerNote({ reason }: { reason: { code: string; message: string } | null }) {
  if (reason?.code !== "weak_match") return null;
  return (
    <p role="status" className="rounded bg-amber-50 p-2 text-sm text-amber-800" data-testid="weak-answer">
      Weak answer: {reason.message}
    </p>
  );
}
