"use client";

import { useActionState } from "react";
import { ConfirmAction } from "@/components/confirm-action";
import type { ActionResult } from "@/lib/http/action-result";

export type EmbeddingAction = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;
/** Counts what an intent would do, for its confirmation (a server action passed down by the page). */
export type DescribeEmbeddingAction = (store: string, intent: string) => Promise<ActionResult<{ text: string }>>;

/**
 * The embeddings card's admin buttons. Estimate and Retry parked act at once;
 * re-embeds and the switch ask first, saying what they will do in counts.
 */
export function EmbeddingAdminButtons({ store, action, describe, held, parked }: { store: string; action: EmbeddingAction; describe?: DescribeEmbeddingAction; held: boolean; parked: boolean }) {
  const [state, formAction, pending] = useActionState(action, null);
  const button = (intent: string, label: string) => (
    <button name="intent" value={intent} className="btn-secondary" disabled={pending}>
      {label}
    </button>
  );
  const confirmed = (intent: string, label: string, title: string, primary = false) => (
    <ConfirmAction
      label={label}
      title={title}
      confirmLabel={label}
      tone={intent === "switch" ? "danger" : "default"}
      triggerClassName={primary ? "btn" : "btn-secondary"}
      disabled={pending}
      submit={{ name: "intent", value: intent }}
      loadDetails={
        describe &&
        (async () => {
          const r = await describe(store, intent);
          if (!r.ok) throw new Error(r.error);
          return r.data!.text;
        })
      }
    >
      {!describe && "Use Estimate re-embed first to see how many items this embeds."}
    </ConfirmAction>
  );
  return (
    <form action={formAction} className="flex flex-wrap items-center gap-2" aria-label="Embedding admin">
      <input type="hidden" name="store" value={store} />
      {button("estimate", "Estimate re-embed")}
      {confirmed("start", "Re-embed", `Re-embed store ${store}?`, true)}
      {confirmed("start_stale", "Re-embed stale only", `Re-embed the stale items of ${store}?`)}
      {confirmed("start_hold", "Re-embed, switch later", `Re-embed ${store} and hold the switch?`)}
      {held && confirmed("switch", "Switch to new model", `Switch ${store} to the new model?`, true)}
      {parked && button("retry_parked", "Retry parked")}
      {state && (
        <span role={state.ok ? "status" : "alert"} className={state.ok ? "text-emerald-700" : "text-red-600"}>
          {state.ok ? state.message : state.error}
        </span>
      )}
    </form>
  );
}
