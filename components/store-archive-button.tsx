"use client";

import { useActionState } from "react";
import { ConfirmAction } from "@/components/confirm-action";
import type { ActionResult } from "@/lib/http/action-result";

export type StoreArchiveAction = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;

/** Admin only: archive a store (read-only, left closed by background work) or make it writable again, after a confirmation. */
export function StoreArchiveButton({ store, archived, action }: { store: string; archived: boolean; action: StoreArchiveAction }) {
  const [state, formAction, pending] = useActionState(action, null);
  const intent = archived ? "unarchive" : "archive";
  return (
    <form action={formAction} className="flex flex-wrap items-center gap-2" aria-label={archived ? "Unarchive store" : "Archive store"}>
      <input type="hidden" name="store" value={store} />
      <ConfirmAction
        label={archived ? "Unarchive store" : "Archive store"}
        title={archived ? `Unarchive store ${store}?` : `Archive store ${store}?`}
        confirmLabel={archived ? "Unarchive" : "Archive"}
        disabled={pending}
        submit={{ name: "intent", value: intent }}
        testId={`${intent}-store`}
      >
        {archived
          ? "Agents and people can write to it again, and the embedding worker and memory watch pick it up again. Recorded in the audit log."
          : "It stays readable, but every write (agents, MCP, this dashboard) is refused with store_archived until it is unarchived; background work leaves it closed. Recorded in the audit log."}
      </ConfirmAction>
      {state && (
        <span role={state.ok ? "status" : "alert"} className={state.ok ? "text-emerald-700" : "text-red-600"}>
          {state.ok ? state.message : state.error}
        </span>
      )}
    </form>
  );
}
