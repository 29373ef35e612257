"use client";

import { useRouter } from "next/navigation";
import { useActionState, useEffect, useState } from "react";
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
  const described = (k: string) => (fields[k] ? `me-${k}-error` : undefined);
  return (
    <form action={formAction} className="card space-y-3" aria-label={mode === "create" ? "New memory" : `Edit memory ${initial.path}`}>
      <input type="hidden" name="store" value={store} />
      <div className="grid gap-3 sm:grid-cols-2">
        <div>
          <label className="label" htmlFor="me-path">
            Path (category/…/slug)
          </label>
          <input
            id="me-path"
            className="input font-mono"
            name="path"
            value={draft.path}
            onChange={set("path")}
            readOnly={mode === "edit"}
            required
            placeholder="decisions/database-choice"
            aria-invalid={fields.path ? true : undefined}
            aria-describedby={described("path")}
          />
          <FieldError id="me-path-error" message={fields.path} />
          {mode === "edit" && <p className="mt-1 text-xs text-slate-500">Use Move on the memory page to change the path.</p>}
        </div>
        <div>
          <label className="label" htmlFor="me-tags">
            Tags (comma-separated)
          </label>
          <input id="me-tags" className="input" name="tags" value={draft.tags} onChange={set("tags")} placeholder="ops, sqlite" aria-invalid={fields.tags ? true : undefined} aria-describedby={described("tags")} />
          <FieldError id="me-tags-error" message={fields.tags ?? fields["tags.0"]} />
        </div>
        <div>
          <label className="label" htmlFor="me-summary">
            Summary
          </label>
          <input id="me-summary" className="input" name="summary" value={draft.summary} onChange={set("summary")} maxLength={1000} aria-invalid={fields.summary ? true : undefined} aria-describedby={described("summary")} />
          <FieldError id="me-summary-error" message={fields.summary} />
        </div>
        <div className="grid grid-cols-2 gap-2">
          <div>
            <label className="label" htmlFor="me-source">
              Source
            </label>
            <input id="me-source" className="input" name="source" value={draft.source} onChange={set("source")} maxLength={200} aria-invalid={fields.source ? true : undefined} aria-describedby={described("source")} />
            <FieldError id="me-source-error" message={fields.source} />
          </div>
          <div>
            <label className="label" htmlFor="me-expires">
              Expires (UTC)
            </label>
            <input id="me-expires" className="input" type="date" name="expires" value={draft.expires} onChange={set("expires")} aria-invalid={fields.expires_at ? true : undefined} aria-describedby={described("expires_at")} />
            <FieldError id="me-expires_at-error" message={fields.expires_at} />
          </div>
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
            aria-describedby={described("body")}
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
