import Link from "@/components/link";
import type { StatusVerdict, StoreStatusState } from "@/lib/embed/status";
import type { StatusHeadline } from "@/lib/metrics/status-summary";
import { formatTime } from "@/lib/format";

export const STATUS_STYLE: Record<StoreStatusState, { label: string; panel: string; badge: string }> = {
  reembedding: { label: "Re-embedding", panel: "border-sky-300 bg-sky-50 text-sky-900", badge: "bg-sky-100 text-sky-800" },
  healthy: { label: "Healthy", panel: "border-emerald-300 bg-emerald-50 text-emerald-900", badge: "bg-emerald-100 text-emerald-800" },
  degraded: { label: "Degraded", panel: "border-amber-300 bg-amber-50 text-amber-900", badge: "bg-amber-100 text-amber-800" },
  stalled: { label: "Stalled", panel: "border-amber-300 bg-amber-50 text-amber-900", badge: "bg-amber-100 text-amber-800" },
  drifted: { label: "Drifted", panel: "border-violet-300 bg-violet-50 text-violet-900", badge: "bg-violet-100 text-violet-800" },
  provider_down: { label: "Provider down", panel: "border-red-300 bg-red-50 text-red-900", badge: "bg-red-100 text-red-800" },
  parked: { label: "Parked items", panel: "border-orange-300 bg-orange-50 text-orange-900", badge: "bg-orange-100 text-orange-800" },
  vectors_unavailable: { label: "Vectors unavailable", panel: "border-red-300 bg-red-50 text-red-900", badge: "bg-red-100 text-red-800" },
};

const n = (v: number) => v.toLocaleString("en-US");

/** A status as a small badge (tables). */
export function StatusBadge({ verdict, testId }: { verdict: StatusVerdict; testId?: string }) {
  const s = STATUS_STYLE[verdict.state];
  return (
    <span className={`rounded px-2 py-0.5 text-xs font-medium ${s.badge}`} data-testid={testId} data-state={verdict.state}>
      {s.label}
    </span>
  );
}

/**
 * The live status of one store or several (headlineOfStore, summarizeStoreStatuses): verdict, whom it is
 * about, reason, fixing action and the numbers behind it — the same numbers the API and Prometheus give.
 * Several stores' numbers are added; their watermark is each store's own, never a sum; drift and
 * coverage that are not known say "unknown".
 */
export function StoreStatusCard({ headline, testId = "store-status" }: { headline: StatusHeadline | null; testId?: string }) {
  if (!headline) {
    return (
      <section className="rounded-lg border border-slate-300 bg-slate-50 p-4 text-slate-700" data-testid={testId} data-state="no_stores" aria-label="Store status">
        No stores yet.
      </section>
    );
  }
  const s = STATUS_STYLE[headline.state];
  const m = headline.numbers;
  const several = m.stores > 1;
  return (
    <section className={`rounded-lg border p-4 ${s.panel}`} data-testid={testId} data-state={headline.state} data-store={headline.store ?? ""} aria-label="Store status">
      <p className="text-lg font-semibold">
        <span data-testid={`${testId}-label`}>{s.label}</span>
        <span className="ml-2 text-sm font-normal" data-testid={`${testId}-scope`}>
          ({headline.scope})
        </span>
      </p>
      <p className="text-sm" data-testid={`${testId}-reason`}>
        {headline.reason}
      </p>
      <p className="mt-1 flex flex-wrap gap-x-4 gap-y-1 text-xs" data-testid={`${testId}-numbers`}>
        <span data-testid={`${testId}-backlog`} data-value={m.pending}>
          backlog {n(m.pending)}
          {several ? ` across ${m.stores} stores` : ""}
          {m.watermark !== null && ` / watermark ${n(m.watermark)}${several ? " per store" : ""}`}
        </span>
        <span data-testid={`${testId}-parked`} data-value={m.parked}>
          {n(m.parked)} parked
        </span>
        <span data-testid={`${testId}-drifted`} data-value={m.drifted ?? "unknown"}>
          {m.drifted === null ? "drift unknown (the configured model has not answered)" : `${n(m.drifted)} drifted`}
        </span>
        <span data-testid={`${testId}-coverage`} data-value={m.coveragePct === null ? "unknown" : m.coveragePct.toFixed(1)}>
          {m.coveragePct === null ? "embedded: unknown" : `${m.coveragePct.toFixed(1)}% embedded`}
        </span>
        <span className="opacity-75">live · {formatTime(headline.asOf)}</span>
      </p>
      {headline.action && (
        <p className="mt-1 text-sm">
          <Link className="font-medium underline" href={headline.action.href}>
            {headline.action.label}
          </Link>
        </p>
      )}
    </section>
  );
}
