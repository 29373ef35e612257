"use client";

import { useActionState } from "react";
import { FormStatus } from "@/components/form-field";
import type { ActionResult } from "@/lib/http/action-result";

type Candidate = { kind: string; id: string; title: string; rule: string; why: string };
type RunData = { items: Candidate[]; remaining: number; dry_run: boolean };
export type ForgetRunAction = (prev: ActionResult<RunData> | null, form: FormData) => Promise<ActionResult<RunData>>;
export type FormAction = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;
type Policy = { kind: string; ttl_days: number | null; ttl_since: string; max_items: number | null; unused_days: number | null; honour_expires_at: boolean; protected_ids: string[] };

/** One kind's policy form (admins): empty fields turn a rule off. */
export function ForgetPolicyForm({ store, kind, policy, action }: { store: string; kind: string; policy: Policy | undefined; action: FormAction }) {
  const [state, formAction, pending] = useActionState(action, null);
  const id = (f: string) => `forget-${kind}-${f}`;
  return (
    <form action={formAction} className="space-y-2 rounded border border-slate-200 p-3 text-sm" aria-label={`${kind} policy`} data-testid={`forget-policy-${kind}`}>
      <h3 className="font-medium">{kind}</h3>
      <input type="hidden" name="store" value={store} />
      <input type="hidden" name="kind" value={kind} />
      <div className="flex flex-wrap gap-3">
        <label htmlFor={id("ttl")} className="flex items-center gap-1">
          TTL (days)
          <input id={id("ttl")} name="ttl_days" type="number" min={0} step="any" defaultValue={policy?.ttl_days ?? ""} className="w-24 rounded border px-2 py-1" />
        </label>
        <label htmlFor={id("since")} className="flex items-center gap-1">
          since
          <select id={id("since")} name="ttl_since" defaultValue={policy?.ttl_since ?? "written"} className="rounded border px-2 py-1">
            <option value="written">written</option>
            <option value="used">last used</option>
          </select>
        </label>
        <label htmlFor={id("cap")} className="flex items-center gap-1">
          Keep newest
          <input id={id("cap")} name="max_items" type="number" min={0} step={1} defaultValue={policy?.max_items ?? ""} className="w-24 rounded border px-2 py-1" />
        </label>
        {kind === "memory" ? (
          <label htmlFor={id("expires")} className="flex items-center gap-1">
            <input id={id("expires")} name="honour_expires_at" type="checkbox" defaultChecked={policy?.honour_expires_at ?? false} />
            Honour expires_at
          </label>
        ) : (
          <label htmlFor={id("unused")} className="flex items-center gap-1">
            Never used after (days)
            <input id={id("unused")} name="unused_days" type="number" min={0} step="any" defaultValue={policy?.unused_days ?? ""} className="w-24 rounded border px-2 py-1" />
          </label>
        )}
      </div>
      <label htmlFor={id("protected")} className="flex items-center gap-1">
        Protected ids
        <input id={id("protected")} name="protected_ids" defaultValue={policy?.protected_ids.join(", ") ?? ""} className="flex-1 rounded border px-2 py-1" />
      </label>
      <div className="flex gap-2">
        <button type="submit" disabled={pending} className="rounded border px-2 py-1">
          Save {kind} policy
        </button>
        {policy && (
          <button type="submit" name="remove" value="true" disabled={pending} className="rounded border px-2 py-1">
            Remove {kind} policy
          </button>
        )}
      </div>
      <FormStatus state={state} />
    </form>
  );
}

/** Preview (dry run) and Forget now (real run, after a confirmation), with the items listed. */
export function ForgetRunPanel({ store, action }: { store: string; action: ForgetRunAction }) {
  const [state, formAction, pending] = useActionState(action, null);
  const data = state?.ok ? state.data : undefined;
  return (
    <div className="space-y-2 text-sm">
      <div className="flex flex-wrap items-center gap-4">
        <form action={formAction}>
          <input type="hidden" name="store" value={store} />
          <input type="hidden" name="dry_run" value="true" />
          <button type="submit" disabled={pending} className="rounded border px-2 py-1">
            Preview
          </button>
        </form>
        <form action={formAction} className="flex items-center gap-2" aria-label="Forget now">
          <input type="hidden" name="store" value={store} />
          <input type="hidden" name="dry_run" value="false" />
          <label className="flex items-center gap-1">
            <input type="checkbox" name="confirm" required />
            Yes, retire what the policy matches
          </label>
          <button type="submit" disabled={pending} className="rounded border px-2 py-1">
            Forget now
          </button>
        </form>
      </div>
      <FormStatus state={state} />
      {data && data.items.length > 0 && (
        <table className="w-full text-left" data-testid={data.dry_run ? "forget-preview" : "forget-result"}>
          <caption className="sr-only">{data.dry_run ? "What a run would retire" : "What the run retired"}</caption>
          <thead>
            <tr>
              <th scope="col">Kind</th>
              <th scope="col">Item</th>
              <th scope="col">Rule</th>
              <th scope="col">Why</th>
            </tr>
          </thead>
          <tbody>
            {data.items.map((i) => (
              <tr key={`${i.kind}/${i.id}`}>
                <td>{i.kind}</td>
                <td className="font-mono">{i.title}</td>
                <td>{i.rule}</td>
                <td>{i.why}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** Restore one forgotten item (editors and admins), with a reason. */
export function ForgottenRestoreForm({ store, kind, id, action }: { store: string; kind: string; id: string; action: FormAction }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="flex flex-wrap items-center gap-2" aria-label={`Restore ${kind} ${id}`}>
      <input type="hidden" name="store" value={store} />
      <input type="hidden" name="kind" value={kind} />
      <input type="hidden" name="id" value={id} />
      <input type="hidden" name="to" value="active" />
      <label className="flex items-center gap-1">
        Reason
        <input name="reason" required maxLength={2000} defaultValue="kept after review" className="rounded border px-2 py-1" />
      </label>
      <button type="submit" disabled={pending} className="rounded border px-2 py-1">
        Restore
      </button>
      <FormStatus state={state} />
    </form>
  );
}
