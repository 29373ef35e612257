import type { ActionResult, FormValues } from "@/lib/http/action-result";

/** The message for one field of a failed action, matching nested paths too ("stores.1" belongs to "stores"). */
export function fieldError(state: ActionResult<unknown> | null, name: string): string | undefined {
  if (!state || state.ok || !state.fields) return undefined;
  return state.fields[name] ?? Object.entries(state.fields).find(([k]) => k.startsWith(`${name}.`))?.[1];
}

/** What was typed into a field before a failed submit, so the form shows it again. */
export function typed(state: ActionResult<unknown> | null, name: string): string | undefined {
  if (!state || state.ok || !state.values) return undefined;
  const v = (state.values as FormValues)[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Whether a checkbox was ticked before a failed submit (undefined: no failed submit, use the default). */
export function ticked(state: ActionResult<unknown> | null, name: string, value: string): boolean | undefined {
  if (!state || state.ok || !state.values) return undefined;
  const v = (state.values as FormValues)[name];
  return Array.isArray(v) ? v.includes(value) : v === value;
}

/** A labelled form control with its own error line below it. */
export function Field({ label, error, id, children, className = "" }: { label: string; error?: string; id: string; children: React.ReactNode; className?: string }) {
  return (
    <div className={`grid content-start gap-1 text-sm ${className}`}>
      <label htmlFor={id} className="text-xs font-medium text-slate-600">
        {label}
      </label>
      {children}
      {error && (
        <p id={`${id}-error`} className="text-xs text-red-700" data-testid={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

/** Props that mark a control invalid and point it at its error line. */
export function invalidProps(id: string, error: string | undefined) {
  return error ? { "aria-invalid": true as const, "aria-describedby": `${id}-error` } : {};
}

/** The outcome line of a form: the success message, or the error summary (field messages sit beside their fields). */
export function FormStatus({ state }: { state: ActionResult<unknown> | null }) {
  if (!state) return null;
  if (state.ok) return <p role="status" className="text-sm text-emerald-700">{state.message}</p>;
  return (
    <p role="alert" className="text-sm text-red-700">
      {state.error}
    </p>
  );
}
