"use client";

import { useRouter } from "next/navigation";
import { useTransition, type FormEvent } from "react";
import { SEARCH_KINDS, searchHref, type SearchUrlState } from "./search-url";

/**
 * The search box. Submitting navigates to the search's URL (page 1), so the
 * results render on the server from the URL and the back button steps
 * through earlier searches. Every filter is a visible field here: switching
 * store keeps exactly what you see, nothing hidden. Without JavaScript the
 * form is a plain GET to the same page.
 */
export function SearchForm({ stores, state }: { stores: string[]; state: SearchUrlState }) {
  const router = useRouter();
  const [pending, startTransition] = useTransition();

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const text = (name: string) => String(f.get(name) ?? "").trim();
    const next: SearchUrlState = {
      q: text("q"),
      store: text("store"),
      mode: text("mode") as SearchUrlState["mode"],
      kind: text("kind"),
      prefix: text("prefix"),
      tags: text("tags"),
      includeCore: f.get("include_core") === "1",
      explain: f.get("explain") === "1",
      page: 1,
      inspect: state.inspect,
    };
    startTransition(() => router.push(searchHref(next)));
  }

  // Keyed by the URL's search: back/forward re-renders the form with that search's values.
  return (
    <form key={searchHref(state)} action="/search" method="get" onSubmit={submit} className="card grid gap-3 sm:grid-cols-6" aria-label="Search" data-testid="search-form">
      <div className="sm:col-span-4">
        <label className="label" htmlFor="search-q">
          Query
        </label>
        <input id="search-q" className="input" name="q" placeholder="words to find" defaultValue={state.q} maxLength={2000} />
      </div>
      <div>
        <label className="label" htmlFor="search-store">
          Store
        </label>
        <select id="search-store" className="input" name="store" defaultValue={state.store}>
          {stores.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
      </div>
      <div className="flex items-end">
        <button className="btn w-full justify-center" disabled={pending}>
          {pending ? "Searching…" : "Search"}
        </button>
      </div>
      <div>
        <label className="label" htmlFor="search-mode">
          Mode
        </label>
        <select id="search-mode" className="input" name="mode" defaultValue={state.mode}>
          <option value="hybrid">hybrid</option>
          <option value="fts">full-text</option>
          <option value="vector">vector</option>
        </select>
      </div>
      <div>
        <label className="label" htmlFor="search-kind">
          Kind
        </label>
        <select id="search-kind" className="input" name="kind" defaultValue={state.kind}>
          <option value="">any</option>
          {SEARCH_KINDS.map((k) => (
            <option key={k}>{k}</option>
          ))}
        </select>
      </div>
      <div className="sm:col-span-2">
        <label className="label" htmlFor="search-prefix">
          Path prefix
        </label>
        <input id="search-prefix" className="input" name="prefix" placeholder="memory/projects/" defaultValue={state.prefix} maxLength={512} />
      </div>
      <div className="sm:col-span-2">
        <label className="label" htmlFor="search-tags">
          Tags (any)
        </label>
        <input id="search-tags" className="input" name="tags" placeholder="ops, sqlite" defaultValue={state.tags} />
      </div>
      <label className="flex items-center gap-2 text-sm sm:col-span-3">
        <input type="checkbox" name="include_core" value="1" defaultChecked={state.includeCore} /> include core
      </label>
      <label className="flex items-center gap-2 text-sm sm:col-span-3">
        <input type="checkbox" name="explain" value="1" defaultChecked={state.explain} /> explain
      </label>
      {/* Without JavaScript the GET form carries the view and starts at page 1; with it, submit() builds the same URL. */}
      <input type="hidden" name="page" value="1" />
      {state.inspect && <input type="hidden" name="inspect" value="1" />}
    </form>
  );
}
