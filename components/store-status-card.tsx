import Link from "next/link";
import type { StatusVerdict, StoreStatus, StoreStatusState } from "@/lib/embed/status";
import { formatTime } from "@/lib/format";

export const STATUS_STYLE: Record<StoreStatusState, { label: string; panel: string; badge: string }> = {
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
 * A store's one live status (getStoreStatus): verdict, reason, fixing action
 * and the live numbers behind it. `scope` names the store, or says which
 * store is the worst of several.
 */
export function StoreStatusCard({ status, scope, testId = "store-status" }: { status: StoreStatus | null; scope?: string; testId?: string }) {
  if (!status) {
    return (
      <section className="rounded-lg border border-slate-300 bg-slate-50 p-4 text-slate-700" data-testid={testId} data-state="no_stores" aria-label="Store status">
        No stores yet.
      </section>
    );
  }
  const s = STATUS_STYLE[status.state];
  return (
    <section className={`rounded-lg border p-4 ${s.panel}`} data-testid={testId} data-state={status.state} data-store={status.store} aria-label="Store status">
      <p className="text-lg font-semibold">
        <span data-testid={`${testId}-label`}>{s.label}</span>
        <span className="ml-2 text-sm font-normal">({scope ?? status.store})</span>
      </p>
      <p className="text-sm" data-testid={`${testId}-reason`}>
        {status.reason}
      </p>
      <p className="mt-1 flex flex-wrap gap-x-4 gap-y-1 text-xs">
        <span>
          backlog {n(status.backlog.pending)} / watermark {n(status.backlog.watermark)}
        </span>
        <span>{n(status.backlog.parked)} parked</span>
        <span>{n(status.drift.drifted)} drifted</span>
        <span>{status.drift.coveragePct.toFixed(1)}% embedded</span>
        <span className="opacity-75">live · {formatTime(status.asOf)}</span>
      </p>
      {status.action && (
        <p className="mt-1 text-sm">
          <Link className="font-medium underline" href={status.action.href}>
            {status.action.label}
          </Link>
        </p>
      )}
    </section>
  );
}
