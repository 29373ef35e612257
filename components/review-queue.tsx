"use client";

import { useActionState } from "react";
import { FormStatus } from "@/components/form-field";
import { PoisonFlagBadges } from "@/components/poison-flags";
import type { ActionResult } from "@/lib/http/action-result";
import type { PoisonFlag } from "@/lib/poison";

export type ReviewAction = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;
export type QueuedProposal = { kind: string; id: string; proposed_by: string; token_label: string | null; proposed_at: number; why: string; flags: PoisonFlag[]; excerpt: string | null };

/**
 * One proposal of the review queue: what it is, who proposed it and when, why it waits, its poisoning flags and
 * an excerpt; for editors Approve, Approve with a corrected body (memories), and Reject with a reason. The server
 * action re-checks the role on every call.
 */
export function ProposalRow({ store, proposal: p, canDecide, action }: { store: string; proposal: QueuedProposal; canDecide: boolean; action: ReviewAction }) {
  const [state, formAction, pending] = useActionState(action, null);
  const hidden = (to: string) => (
    <>
      <input type="hidden" name="store" value={store} />
      <input type="hidden" name="kind" value={p.kind} />
      <input type="hidden" name="id" value={p.id} />
      <input type="hidden" name="to" value={to} />
    </>
  );
  return (
    <li className="space-y-2 rounded border border-slate-200 p-3 text-sm" data-testid="proposal" data-kind={p.kind} data-id={p.id}>
      <p>
        <strong>{p.kind}</strong> <span className="font-mono">{p.id}</span> · proposed by {p.proposed_by}
        {p.token_label ? ` (token ${p.token_label})` : ""} · {new Date(p.proposed_at).toISOString()} · {p.why === "flagged" ? "flagged by the poisoning guard" : "not a trusted writer"}
      </p>
      <PoisonFlagBadges flags={p.flags} />
      {p.excerpt && <blockquote className="border-l-2 border-slate-300 pl-2 text-slate-700">{p.excerpt}</blockquote>}
      {canDecide && (
        <div className="flex flex-wrap gap-4">
          <form action={formAction} className="flex flex-wrap items-end gap-2" aria-label={`Approve ${p.kind} ${p.id}`}>
            {hidden("active")}
            {p.kind === "memory" && (
              <label className="flex flex-col">
                Corrected body (optional)
                <textarea name="body" rows={2} className="rounded border px-2 py-1" />
              </label>
            )}
            <button type="submit" disabled={pending} className="rounded border px-2 py-1">
              Approve
            </button>
          </form>
          <form action={formAction} className="flex flex-wrap items-end gap-2" aria-label={`Reject ${p.kind} ${p.id}`}>
            {hidden("rejected")}
            <label className="flex flex-col">
              Reason
              <input name="reason" required maxLength={2000} className="rounded border px-2 py-1" />
            </label>
            <button type="submit" disabled={pending} className="rounded border px-2 py-1">
              Reject
            </button>
          </form>
        </div>
      )}
      <FormStatus state={state} />
    </li>
  );
}

/** The store's write policy form (admins): a mode per governed kind, trusted actors one a line. */
export function WritePolicyForm({ store, modes, trusted, action }: { store: string; modes: Record<string, string>; trusted: string[]; action: ReviewAction }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="space-y-2 text-sm" aria-label="Write policy" data-testid="write-policy-form">
      <input type="hidden" name="store" value={store} />
      <div className="flex flex-wrap gap-3">
        {Object.entries(modes).map(([kind, mode]) => (
          <label key={kind} className="flex items-center gap-1">
            {kind}
            <select name={`mode_${kind}`} defaultValue={mode} className="rounded border px-1 py-0.5">
              <option value="open">open</option>
              <option value="review">review</option>
            </select>
          </label>
        ))}
      </div>
      <label className="flex flex-col">
        Trusted actors (agent ids, token labels, user:name; one a line)
        <textarea name="trusted" rows={3} defaultValue={trusted.join("\n")} className="rounded border px-2 py-1 font-mono" />
      </label>
      <button type="submit" disabled={pending} className="rounded border px-2 py-1">
        Save policy
      </button>
      <FormStatus state={state} />
    </form>
  );
}
