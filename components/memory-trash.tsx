"use client";

import { useActionState, useState } from "react";
import type { ActionResult } from "@/lib/http/action-result";
import { FieldError, MemoryFormStatus, useFollow } from "./memory-form-status";

type Done = ActionResult<{ href: string }>;
type Action = (prev: Done | null, form: FormData) => Promise<Done>;

/** Restore a deleted memory: at its old path, or (opened on request) at another one. */
export function MemoryRestoreForm({ store, id, path, action, label = "Restore" }: { store: string; id: string; path: string; action: Action; label?: string }) {
  const [state, formAction, pending] = useActionState(action, null);
  const [elsewhere, setElsewhere] = useState(false);
  useFollow(state);
  const error = state && !state.ok ? (state.fields?.to ?? undefined) : undefined;
  const fieldId = `restore-to-${id}`;
  return (
    <form action={formAction} className="flex flex-wrap items-end gap-2" aria-label={`Restore ${path}`}>
      <input type="hidden" name="store" value={store} />
      <input type="hidden" name="id" value={id} />
      {elsewhere && (
        <div className="min-w-0 flex-1">
          <label className="label" htmlFor={fieldId}>
            Restore to (category/…/slug)
          </label>
          <input id={fieldId} className="input font-mono" name="to" defaultValue={path} required aria-invalid={error ? true : undefined} aria-describedby={error ? `${fieldId}-error` : undefined} />
          <FieldError id={`${fieldId}-error`} message={error} />
        </div>
      )}
      <button className="btn" disabled={pending}>
        {label}
      </button>
      {!elsewhere && (
        <button type="button" className="btn-secondary" onClick={() => setElsewhere(true)}>
          Restore elsewhere…
        </button>
      )}
      <div className="basis-full">
        <MemoryFormStatus state={error ? null : state} />
      </div>
    </form>
  );
}

/** Purge one deleted memory for good, with a second step that says so. */
export function MemoryPurgeForm({ store, id, path, action }: { store: string; id: string; path: string; action: Action }) {
  const [state, formAction, pending] = useActionState(action, null);
  const [asking, setAsking] = useState(false);
  useFollow(state);
  if (!asking) {
    return (
      <button type="button" className="btn-secondary border-red-300 text-red-700 hover:bg-red-50" onClick={() => setAsking(true)}>
        Purge now…
      </button>
    );
  }
  return (
    <form action={formAction} role="alertdialog" aria-label={`Purge ${path} for good?`} className="space-y-2 rounded-md border border-red-300 bg-red-50 p-3">
      <input type="hidden" name="store" value={store} />
      <input type="hidden" name="id" value={id} />
      <p className="text-sm text-red-900">
        Purge <span className="font-mono">{path}</span> from the trash of store {store}? Its text is gone for good and cannot be restored; the change history stays in the audit log.
      </p>
      <div className="flex flex-wrap gap-2">
        <button className="btn bg-red-700 hover:bg-red-600" disabled={pending}>
          Purge for good
        </button>
        <button type="button" className="btn-secondary" onClick={() => setAsking(false)}>
          Keep it in the trash
        </button>
      </div>
      <MemoryFormStatus state={state} />
    </form>
  );
}
