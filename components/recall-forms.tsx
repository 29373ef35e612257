"use client";

import { useActionState } from "react";
import type { ActionResult } from "@/lib/http/action-result";
import type { ReflectionSettings } from "@/lib/recall/settings";
import { Field, fieldError, FormStatus, invalidProps, ticked, typed } from "./form-field";

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

/** Admin form for a store's reflection settings. After a refused save it keeps what was typed and marks each field the server named. */
export function RecallSettingsForm({ action, store, settings }: { action: Action; store: string; settings: ReflectionSettings }) {
  const [state, formAction, pending] = useActionState(action, null);
  const err = (name: string) => fieldError(state, name) ?? fieldError(state, `retention.${name}`);
  const value = (name: string, saved: string) => typed(state, name) ?? saved;
  // After a failed save the fields re-mount with what was typed (React resets a form after its action).
  const generation = state && !state.ok ? JSON.stringify(state.values ?? {}) : "saved";
  return (
    <form action={formAction} className="grid gap-3 sm:grid-cols-3" aria-label="Reflection settings" key={generation}>
      <input type="hidden" name="store" value={store} />
      <label className="flex min-h-10 items-center gap-2 text-sm sm:col-span-3">
        <input type="checkbox" name="enabled" defaultChecked={ticked(state, "enabled", "on") ?? settings.enabled} /> Reflection recall enabled
      </label>
      {NUMBER_FIELDS.map((f) => (
        <Field key={f.name} id={`rs-${f.name}`} label={f.label} error={err(f.name)}>
          <input id={`rs-${f.name}`} className="input" type="number" min="0" step={f.step} name={f.name} defaultValue={value(f.name, String(settings[f.name]))} required {...invalidProps(`rs-${f.name}`, err(f.name))} />
        </Field>
      ))}
      <Field id="rs-ttl_days" label="Retention TTL (days, empty = keep)" error={err("ttl_days")}>
        <input id="rs-ttl_days" className="input" type="number" min="1" step="1" name="ttl_days" defaultValue={value("ttl_days", String(settings.retention.ttl_days ?? ""))} {...invalidProps("rs-ttl_days", err("ttl_days"))} />
      </Field>
      <Field id="rs-max_traces" label="Retention cap (traces, empty = none)" error={err("max_traces")}>
        <input id="rs-max_traces" className="input" type="number" min="10" step="1" name="max_traces" defaultValue={value("max_traces", String(settings.retention.max_traces ?? ""))} {...invalidProps("rs-max_traces", err("max_traces"))} />
      </Field>
      <Field id="rs-strategy" label="Cap keeps" error={err("strategy")}>
        <select id="rs-strategy" className="input" name="strategy" defaultValue={value("strategy", settings.retention.strategy)}>
          <option value="stratified">newest of every shard/outcome</option>
          <option value="newest">newest overall</option>
        </select>
      </Field>
      <div className="flex flex-wrap items-center gap-3 sm:col-span-3">
        <button className="btn" disabled={pending}>
          Save settings
        </button>
        <FormStatus state={state} />
      </div>
    </form>
  );
}
