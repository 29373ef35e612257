import { verdictLabel } from "@/lib/governance/ledger";

const STYLE: Record<string, string> = {
  passed: "bg-emerald-100 text-emerald-800",
  failed: "bg-red-100 text-red-800",
  pending: "bg-slate-100 text-slate-700",
  running: "bg-sky-100 text-sky-800",
  succeeded: "bg-emerald-100 text-emerald-800",
  active: "bg-sky-100 text-sky-800",
  resolved: "bg-emerald-100 text-emerald-800",
};

/**
 * A coloured word for a verdict, run status or session status. Verdicts read
 * as people say them ("awaiting checks" for pending); `data-value` keeps the
 * machine value.
 */
export function LedgerVerdictBadge({ value, testId }: { value: string; testId?: string }) {
  return (
    <span data-testid={testId} data-value={value} className={`inline-block rounded px-2 py-0.5 text-xs font-medium ${STYLE[value] ?? "bg-slate-100 text-slate-700"}`}>
      {verdictLabel(value)}
    </span>
  );
}
