"use client";

import { useActionState } from "react";
import type { ActionResult } from "@/lib/http/action-result";

export type EmbeddingAction = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;

export function EmbeddingAdminButtons({ store, action, held, parked }: { store: string; action: EmbeddingAction; held: boolean; parked: boolean }) {
  const [state, formAction, pending] = useActionState(action, null);
  const button = (intent: string, label: string, primary = false) => (
    <button name="intent" value={intent} className={primary ? "btn" : "btn-secondary"} disabled={pending}>
      {label}
    </button>
  );
  return (
    <form action={formAction} className="flex flex-wrap items-center gap-2" aria-label="Embedding admin">
      <input type="hidden" name="store" value={store} />
      {button("estimate", "Estimate re-embed")}
      {button("start", "Re-embed", true)}
      {button("start_stale", "Re-embed stale only")}
      {button("start_hold", "Re-embed, switch later")}
      {held && button("switch", "Switch to new model", true)}
      {parked && button("retry_parked", "Retry parked")}
      {state && (
        <span role={state.ok ? "status" : "alert"} className={state.ok ? "text-emerald-700" : "text-red-600"}>
          {state.ok ? state.message : state.error}
        </span>
      )}
    </form>
  );
}
