"use client";

import { useActionState, useState } from "react";
import type { ActionResult } from "@/lib/http/action-result";

type Action = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;

function Result({ state }: { state: ActionResult | null }) {
  if (!state) return null;
  if (state.ok) return <p role="status" className="text-sm text-emerald-700">{state.message}</p>;
  return (
    <p role="alert" className="text-sm text-red-600">
      {state.fields ? Object.values(state.fields).join("; ") : state.error}
    </p>
  );
}

/** A note beside the transcript; the text stays when the save fails, and clears when it succeeds. */
export function SessionNoteForm({ sessionId, maxChars, action }: { sessionId: string; maxChars: number; action: Action }) {
  const [body, setBody] = useState("");
  const [state, formAction, pending] = useActionState(async (prev: ActionResult | null, form: FormData) => {
    const result = await action(prev, form);
    if (result.ok) setBody("");
    return result;
  }, null);
  return (
    <form action={formAction} className="space-y-2" aria-label="Add a note">
      <input type="hidden" name="session_id" value={sessionId} />
      <label className="label" htmlFor="session-note">
        Note
      </label>
      <textarea id="session-note" name="body" className="input min-h-24" maxLength={maxChars} required value={body} onChange={(e) => setBody(e.target.value)} placeholder="Visible to everyone who can see this review; agents never read it as a message." />
      <div className="flex items-center justify-between gap-2">
        <span className="text-xs text-slate-500">
          {body.length} / {maxChars}
        </span>
        <button className="btn" disabled={pending || body.trim() === ""}>
          Add note
        </button>
      </div>
      <Result state={state} />
    </form>
  );
}

/** Abandon, with a confirmation step that says what will happen; nothing is sent before it. */
export function SessionAbandonForm({ sessionId, action }: { sessionId: string; action: Action }) {
  const [state, formAction, pending] = useActionState(action, null);
  const [asking, setAsking] = useState(false);
  if (state?.ok) return <Result state={state} />;
  if (!asking) {
    return (
      <button type="button" className="btn-secondary border-red-300 text-red-700 hover:bg-red-50" onClick={() => setAsking(true)}>
        Abandon session…
      </button>
    );
  }
  return (
    <form action={formAction} role="alertdialog" aria-label="Abandon this session?" className="space-y-2 rounded-md border border-red-300 bg-red-50 p-3">
      <input type="hidden" name="session_id" value={sessionId} />
      <p className="text-sm text-red-900">The session fails now: neither agent can post again, and the audit log records that you ended it. This cannot be undone.</p>
      <label className="label" htmlFor="abandon-reason">
        Reason (optional)
      </label>
      <input id="abandon-reason" name="reason" className="input" maxLength={2000} />
      <div className="flex flex-wrap gap-2">
        <button className="btn bg-red-700 hover:bg-red-600" disabled={pending}>
          Abandon session
        </button>
        <button type="button" className="btn-secondary" onClick={() => setAsking(false)}>
          Keep it open
        </button>
      </div>
      <Result state={state} />
    </form>
  );
}
