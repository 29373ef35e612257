import Link from "next/link";
import type { HealthState, HealthVerdict } from "@/lib/metrics/preparers";
import { formatTime } from "@/lib/format";

const STYLE: Record<HealthState, { label: string; className: string }> = {
  healthy: { label: "Healthy", className: "border-emerald-300 bg-emerald-50 text-emerald-900" },
  degraded: { label: "Degraded", className: "border-amber-300 bg-amber-50 text-amber-900" },
  drifted: { label: "Drifted", className: "border-violet-300 bg-violet-50 text-violet-900" },
  vectors_unavailable: { label: "Vectors unavailable", className: "border-red-300 bg-red-50 text-red-900" },
  no_data: { label: "No data yet", className: "border-slate-300 bg-slate-50 text-slate-700" },
};

export function HealthStatusHeader({ verdict, store, asOf }: { verdict: HealthVerdict; store: string | null; asOf: number | "live" | null }) {
  const s = STYLE[verdict.state];
  return (
    <section className={`rounded-lg border p-4 ${s.className}`} data-testid="health-status" data-state={verdict.state} aria-label="Health status">
      <p className="text-lg font-semibold">
        {s.label}
        {store ? <span className="ml-2 text-sm font-normal">({store})</span> : null}
      </p>
      <p className="text-sm">{verdict.reason}</p>
      <p className="mt-1 flex flex-wrap gap-3 text-sm">
        {verdict.action && (
          <Link className="font-medium underline" href={verdict.action.href}>
            {verdict.action.label}
          </Link>
        )}
        {asOf !== null && <span className="text-xs opacity-75">{asOf === "live" ? "live" : `as of ${formatTime(asOf)} (newest snapshot)`}</span>}
      </p>
    </section>
  );
}
