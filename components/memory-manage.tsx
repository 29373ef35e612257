"use client";

import { useActionState, useState } from "react";
import type { ActionResult } from "@/lib/http/action-result";
import { FieldError, MemoryFormStatus, useFollow } from "./memory-form-status";

type Done = ActionResult<{ href: string }>;
type Action = (prev: Done | null, form: FormData) => Promise<Done>;

/** Move a memory to another category path: the new path is typed in full, prefilled with the current one. */
export function MemoryMoveForm({ store, path, action }: { store: string; path: string; action: Action }) {
  const [state, formAction, pending] = useActionState(action, null);
  const [to, setTo] = useState(path);
  useFollow(state);
  const error = state && !state.ok ? (state.fields?.move_to ?? state.fields?.path) : undefined;
  return (
    <form action={formAction} className="flex flex-wrap items-end gap-2" aria-label={`Move memory ${path}`}>
      <input type="hidden" name="store" value={store} />
      <input type="hidden" name="path" value={path} />
      <div className="min-w-0 flex-1">
        <label className="label" htmlFor="mm-to">
          New path (category/…/slug)
        </label>
        <input id="mm-to" className="input font-mono" name="to" value={to} onChange={(e) => setTo(e.target.value)} required aria-invalid={error ? true : undefined} aria-describedby={error ? "mm-to-error" : undefined} />
        <FieldError id="mm-to-error" message={error} />
      </div>
      <button className="btn-secondary" disabled={pending || to.trim() === path}>
        Move
      </button>
      <div className="basis-full">
        <MemoryFormStatus state={error ? null : state} />
      </div>
    </form>
  );
}

/** Delete with a second step that says what will happen; nothing is sent until it is confirmed. */
export function MemoryDeleteForm({ store, path, action }: { store: string; path: string; action: Action }) {
  const [state, formAction, pending] = useActionState(action, null);
  const [asking, setAsking] = useState(false);
  useFollow(state);
  if (!asking) {
    return (
      <button type="button" className="btn-secondary border-red-300 text-red-700 hover:bg-red-50" onClick={() => setAsking(true)}>
        Delete…
      </button>
    );
  }
  return (
    <form action={formAction} role="alertdialog" aria-label={`Delete memory ${path}?`} className="space-y-2 rounded-md border border-red-300 bg-red-50 p-3">
      <input type="hidden" name="store" value={store} />
      <input type="hidden" name="path" value={path} />
      <p className="text-sm text-red-900">
        Delete <span className="font-mono">{path}</span> from store {store}? It leaves the list and search and goes to the store&apos;s trash, where it can be restored until the trash is purged; the change history stays in the audit log.
      </p>
      <div className="flex flex-wrap gap-2">
        <button className="btn bg-red-700 hover:bg-red-600" disabled={pending}>
          Delete memory
        </button>
        <button type="button" className="btn-secondary" onClick={() => setAsking(false)}>
          Keep it
        </button>
      </div>
      <MemoryFormStatus state={state} />
    </form>
  );
}
