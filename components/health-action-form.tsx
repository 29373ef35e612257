"use client";

import { useActionState } from "react";
import type { ActionResult } from "@/app/_server/action-result";

type Action = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;

/** One admin button posting the store to a server action, with its outcome announced. */
export function HealthActionForm({ action, store, label, extra }: { action: Action; store: string; label: string; extra?: Record<string, string> }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="flex items-center gap-2">
      <input type="hidden" name="store" value={store} />
      {Object.entries(extra ?? {}).map(([k, v]) => (
        <input key={k} type="hidden" name={k} value={v} />
      ))}
      <button className="btn-secondary" disabled={pending}>
        {label}
      </button>
      {state && (state.ok ? <span role="status" className="text-sm text-emerald-700">{state.message}</span> : <span role="alert" className="text-sm text-red-600">{state.error}</span>)}
    </form>
  );
}
