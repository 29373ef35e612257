"use client";

import { useActionState } from "react";
import type { ActionResult } from "@/lib/http/action-result";
import type { ReflectionSettings } from "@/lib/recall/settings";

type Action = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;

function ActionStatus({ state }: { state: ActionResult | null }) {
  if (!state) return null;
  if (state.ok) return <p role="status" className="text-sm text-emerald-700">{state.message}</p>;
  return (
    <p role="alert" className="text-sm text-red-600">
      {state.error}
      {state.fields ? ` (${Object.entries(state.fields).map(([k, v]) => `${k}: ${v}`).join("; ")})` : ""}
    </p>
  );
}

/** Relevant / not relevant buttons for one recall hit in the rating queue. */
export function RecallRatingButtons({ action, store, hitId }: { action: Action; store: string; hitId: number }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="flex flex-wrap items-center gap-2" aria-label={`Rate hit ${hitId}`}>
      <input type="hidden" name="store" value={store} />
      <input type="hidden" name="hit_id" value={hitId} />
      <button className="btn" name="relevant" value="true" disabled={pending}>
        Relevant
      </button>
      <button className="btn-secondary" name="relevant" value="false" disabled={pending}>
        Not relevant
      </button>
      <ActionStatus state={state} />
    </form>
  );
}

const NUMBER_FIELDS: { name: keyof ReflectionSettings; label: string; step: string }[] = [
  { name: "top_k", label: "Top k", step: "1" },
  { name: "min_score", label: "Min score", step: "0.01" },
  { name: "recency_half_life_days", label: "Recency half-life (days, 0 = off)", step: "1" },
  { name: "failure_warning_score", label: "Failure warning score", step: "0.01" },
  { name: "preference_score", label: "Preference score", step: "0.01" },
];

/** Admin form for a store's reflection settings. */
export function RecallSettingsForm({ action, store, settings }: { action: Action; store: string; settings: ReflectionSettings }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="grid gap-3 sm:grid-cols-3" aria-label="Reflection settings">
      <input type="hidden" name="store" value={store} />
      <label className="flex items-center gap-2 text-sm sm:col-span-3">
        <input type="checkbox" name="enabled" defaultChecked={settings.enabled} /> Reflection recall enabled
      </label>
      {NUMBER_FIELDS.map((f) => (
        <label key={f.name} className="grid gap-1 text-sm">
          {f.label}
          <input className="input" type="number" min="0" step={f.step} name={f.name} defaultValue={String(settings[f.name])} required />
        </label>
      ))}
      <label className="grid gap-1 text-sm">
        Retention TTL (days, empty = keep)
        <input className="input" type="number" min="1" step="1" name="ttl_days" defaultValue={settings.retention.ttl_days ?? ""} />
      </label>
      <label className="grid gap-1 text-sm">
        Retention cap (traces, empty = none)
        <input className="input" type="number" min="10" step="1" name="max_traces" defaultValue={settings.retention.max_traces ?? ""} />
      </label>
      <label className="grid gap-1 text-sm">
        Cap keeps
        <select className="input" name="strategy" defaultValue={settings.retention.strategy}>
          <option value="stratified">newest of every shard/outcome</option>
          <option value="newest">newest overall</option>
        </select>
      </label>
      <div className="flex items-center gap-3 sm:col-span-3">
        <button className="btn" disabled={pending}>
          Save settings
        </button>
        <ActionStatus state={state} />
      </div>
    </form>
  );
}
