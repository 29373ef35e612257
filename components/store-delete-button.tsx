"use client";

import Link from "@/components/link";
import { useActionState } from "react";
import { ConfirmAction } from "@/components/confirm-action";
import type { ActionResult } from "@/lib/http/action-result";

export type DeleteStoreAction = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;

/** Admin only: delete a store after a confirmation naming it and what goes with it. */
export function StoreDeleteButton({ store, action }: { store: string; action: DeleteStoreAction }) {
  const [state, formAction, pending] = useActionState(action, null);
  if (state?.ok) {
    return (
      <p role="status" className="text-emerald-700">
        {state.message}{" "}
        <Link className="text-blue-700 underline" href="/stores">
          Back to stores
        </Link>
      </p>
    );
  }
  return (
    <form action={formAction} className="flex flex-wrap items-center gap-2" aria-label="Delete store">
      <input type="hidden" name="store" value={store} />
      <ConfirmAction label="Delete store" title={`Delete store ${store}?`} confirmLabel="Delete" tone="danger" disabled={pending} submit={{ name: "intent", value: "delete" }} testId="delete-store">
        Its index, every memory file, trace, learning, thought and graph node go for good; agents get 404 for it. The deletion is recorded in the audit log.
      </ConfirmAction>
      {state && !state.ok && (
        <span role="alert" className="text-red-600">
          {state.error}
        </span>
      )}
    </form>
  );
}
