"use client";

import { useRouter } from "next/navigation";
import { useActionState, useEffect, useState, type InputHTMLAttributes } from "react";
import type { ActionResult } from "@/lib/http/action-result";
import { FieldError, MemoryFormStatus } from "./memory-form-status";
import { MemoryMarkdown } from "./memory-markdown";

type Done = ActionResult<{ href: string }>;
type Action = (prev: Done | null, form: FormData) => Promise<Done>;

export type MemoryDraft = { path: string; body: string; tags: string; summary: string; source: string; expires: string };

/**
 * Create or edit a memory: markdown with a live preview (the same safe
 * renderer as the memory page, so what you see is what readers get) and the
 * frontmatter fields. Everything typed stays on an error; each field shows
 * its own message.
 */
export function MemoryEditor({ store, mode, initial, action, cancelHref }: { store: string; mode: "create" | "edit"; initial: MemoryDraft; action: Action; cancelHref: string }) {
  const [state, formAction, pending] = useActionState(action, null);
  const [draft, setDraft] = useState(initial);
  const router = useRouter();
  useEffect(() => {
    if (state?.ok && state.data) router.push(state.data.href);
  }, [state, router]);
  const fields = state && !state.ok ? (state.fields ?? {}) : {};
  const set = (k: keyof MemoryDraft) => (e: { target: { value: string } }) => setDraft((d) => ({ ...d, [k]: e.target.value }));
  const field = (name: keyof MemoryDraft, label: string, error: string | undefined, extra: InputHTMLAttributes<HTMLInputElement>) => (
    <div>
      <label className="label" htmlFor={`me-${name}`}>
        {label}
      </label>
      <input id={`me-${name}`} className="input" name={name} value={draft[name]} onChange={set(name)} aria-invalid={error ? true : undefined} aria-describedby={error ? `me-${name}-error` : undefined} {...extra} />
      <FieldError id={`me-${name}-error`} message={error} />
    </div>
  );
  return (
    <form action={formAction} className="card space-y-3" aria-label={mode === "create" ? "New memory" : `Edit memory ${initial.path}`}>
      <input type="hidden" name="store" value={store} />
      <div className="grid gap-3 sm:grid-cols-2">
        <div>
          {field("path", "Path (category/…/slug)", fields.path, { className: "input font-mono", readOnly: mode === "edit", required: true, placeholder: "decisions/database-choice" })}
          {mode === "edit" && <p className="mt-1 text-xs text-slate-500">Use Move on the memory page to change the path.</p>}
        </div>
        {field("tags", "Tags (comma-separated)", fields.tags ?? Object.entries(fields).find(([k]) => k.startsWith("tags."))?.[1], { placeholder: "ops, sqlite" })}
        {field("summary", "Summary", fields.summary, { maxLength: 1000 })}
        <div className="grid grid-cols-2 gap-2">
          {field("source", "Source", fields.source, { maxLength: 200 })}
          {field("expires", "Expires (UTC)", fields.expires_at, { type: "date" })}
        </div>
      </div>
      <div className="grid gap-3 lg:grid-cols-2">
        <div>
          <label className="label" htmlFor="me-body">
            Markdown
          </label>
          <textarea
            id="me-body"
            className="input min-h-64 font-mono"
            name="body"
            rows={16}
            value={draft.body}
            onChange={set("body")}
            aria-invalid={fields.body ? true : undefined}
            aria-describedby={fields.body ? "me-body-error" : undefined}
          />
          <FieldError id="me-body-error" message={fields.body} />
        </div>
        <section aria-label="Preview" className="min-w-0 rounded-md border border-dashed border-slate-300 p-3">
          <p className="label mb-2">Preview</p>
          <MemoryMarkdown text={draft.body} />
        </section>
      </div>
      <div className="flex flex-wrap items-center gap-3">
        <button className="btn" disabled={pending}>
          {mode === "create" ? "Create memory" : "Save changes"}
        </button>
        <a className="btn-secondary" href={cancelHref}>
          Cancel
        </a>
        <MemoryFormStatus state={state} />
      </div>
    </form>
  );
}
