"use client";

import Link from "next/link";
import { useActionState } from "react";
import type { ActionResult } from "@/app/_server/action-result";
import type { SearchHit, SearchResult } from "@/lib/index/search";

type Action = (prev: ActionResult<SearchResult> | null, form: FormData) => Promise<ActionResult<SearchResult>>;

/** The snippet with matched words in <mark>, built as elements (no HTML from the index reaches the page). */
function Snippet({ hit }: { hit: SearchHit }) {
  const parts: React.ReactNode[] = [];
  let last = 0;
  hit.highlights.forEach(([s, e], i) => {
    if (s > last) parts.push(hit.snippet.slice(last, s));
    parts.push(<mark key={i} className="bg-yellow-200">{hit.snippet.slice(s, e)}</mark>);
    last = e;
  });
  parts.push(hit.snippet.slice(last));
  return <p className="line-clamp-4 text-sm text-slate-700">{parts}</p>;
}

function memoryLink(hit: SearchHit): string | null {
  const m = /^memory\/(.+)\.md$/.exec(hit.path);
  return m ? `/memories?store=${encodeURIComponent(hit.store)}&path=${encodeURIComponent(m[1])}` : null;
}

export function SearchPanel({ stores, defaultStore, action }: { stores: string[]; defaultStore: string; action: Action }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <div className="space-y-4">
      <form action={formAction} className="card grid gap-3 sm:grid-cols-6" aria-label="Search">
        <div className="sm:col-span-4">
          <label className="label" htmlFor="search-q">Query</label>
          <input id="search-q" className="input" name="q" placeholder="words to find" />
        </div>
        <div>
          <label className="label" htmlFor="search-store">Store</label>
          <select id="search-store" className="input" name="store" defaultValue={defaultStore}>
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
          <label className="label" htmlFor="search-kind">Kind</label>
          <select id="search-kind" className="input" name="kind" defaultValue="">
            <option value="">any</option>
            <option value="memory">memory</option>
            <option value="markdown">markdown</option>
            <option value="code">code</option>
            <option value="text">text</option>
          </select>
        </div>
        <div className="sm:col-span-2">
          <label className="label" htmlFor="search-prefix">Path prefix</label>
          <input id="search-prefix" className="input" name="prefix" placeholder="memory/projects/" />
        </div>
        <div className="sm:col-span-2">
          <label className="label" htmlFor="search-tags">Tags (any)</label>
          <input id="search-tags" className="input" name="tags" placeholder="ops, sqlite" />
        </div>
        <label className="flex items-end gap-2 text-sm">
          <input type="checkbox" name="include_core" /> include core
        </label>
      </form>
      {state && !state.ok && (
        <p role="alert" className="text-sm text-red-600">
          {state.error}
        </p>
      )}
      {state?.ok && state.data && (
        <section aria-label="Search results" className="space-y-2" data-testid="search-results">
          <p role="status" className="text-sm text-slate-600">
            {state.message}
          </p>
          {state.data.results.map((hit) => {
            const href = memoryLink(hit);
            return (
              <article key={`${hit.store}:${hit.id}`} className="card space-y-1" data-testid="search-hit">
                <div className="flex flex-wrap items-baseline gap-2 text-sm">
                  {href ? <Link href={href} className="font-medium text-blue-700 underline">{hit.path}</Link> : <span className="font-medium">{hit.path}</span>}
                  <span className="text-xs text-slate-500">
                    {hit.store} · {hit.kind} · chunk {hit.chunkIndex} · score {hit.score.toPrecision(3)}
                  </span>
                </div>
                <Snippet hit={hit} />
              </article>
            );
          })}
        </section>
      )}
    </div>
  );
}
