"use client";

import { useActionState } from "react";
import { FormStatus } from "@/components/form-field";
import type { ActionResult } from "@/lib/http/action-result";

export type ItemDecisionAction = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;
type Transition = { from: string; to: string; at: number; by: string; reason: string; supersedes?: string; superseded_by?: string };

/**
 * Governed memory on an item's page: its state, each transition (when, who, why) and, for editors, Invalidate or
 * Restore with a reason (the server action re-checks the role and records the ledger override and audit entry).
 */
export function ItemGovernance({ store, kind, id, status, history, canDecide, action }: { store: string; kind: string; id: string; status: string; history: Transition[]; canDecide: boolean; action: ItemDecisionAction }) {
  const [state, formAction, pending] = useActionState(action, null);
  const to = status === "retired" ? "active" : "retired";
  return (
    <section aria-label="Item state" data-testid="item-governance" className="space-y-2 rounded border border-slate-200 p-3 text-sm">
      <p>
        State: <strong data-testid="item-status">{status}</strong>
        {status !== "active" ? " — not answered by search, recall, remember or lists" : ""}
      </p>
      {history.length > 0 && (
        <ol className="list-decimal space-y-1 pl-5" data-testid="item-history">
          {history.map((t, i) => (
            <li key={i}>
              {new Date(t.at).toISOString()} · {t.from} → {t.to} · {t.by} · {t.reason}
              {t.superseded_by ? ` (superseded by ${t.superseded_by})` : ""}
            </li>
          ))}
        </ol>
      )}
      {canDecide && (status === "active" || status === "retired") && (
        <form action={formAction} className="flex flex-wrap items-center gap-2" aria-label={to === "retired" ? "Invalidate" : "Restore"}>
          <input type="hidden" name="store" value={store} />
          <input type="hidden" name="kind" value={kind} />
          <input type="hidden" name="id" value={id} />
          <input type="hidden" name="to" value={to} />
          <label className="flex items-center gap-1">
            Reason
            <input name="reason" required maxLength={2000} className="rounded border px-2 py-1" />
          </label>
          <button type="submit" disabled={pending} className="rounded border px-2 py-1">
            {to === "retired" ? "Invalidate" : "Restore"}
          </button>
          <FormStatus state={state} />
        </form>
      )}
    </section>
  );
}
