"use client";

import Link from "next/link";
import { useActionState } from "react";
import type { ActionResult } from "@/lib/http/action-result";
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

/** The explain view: why this hit ranks where it does. */
function Explain({ hit }: { hit: SearchHit }) {
  const s = hit.signals;
  if (!s) return null;
  return (
    <dl className="grid grid-cols-2 gap-x-4 text-xs text-slate-500 sm:grid-cols-4" data-testid="search-explain">
      <div>
        <dt className="inline">lexical: </dt>
        <dd className="inline">{s.fts ? `#${s.fts.rank} (bm25 ${s.fts.score.toFixed(2)})` : "—"}</dd>
      </div>
      <div>
        <dt className="inline">vector: </dt>
        <dd className="inline">{s.vector ? `#${s.vector.rank} (cos ${s.vector.similarity.toFixed(3)})` : "—"}</dd>
      </div>
      <div>
        <dt className="inline">fused: </dt>
        <dd className="inline">{s.fused.toFixed(4)}</dd>
      </div>
      <div>
        <dt className="inline">decay: </dt>
        <dd className="inline">{s.decay === null ? "off" : s.decay.toFixed(3)}</dd>
      </div>
    </dl>
  );
}

function memoryLink(hit: SearchHit): string | null {
  const m = /^memory\/(.+)\.md$/.exec(hit.path);
  return m ? `/memories?store=${encodeURIComponent(hit.store)}&path=${encodeURIComponent(m[1])}` : null;
}

export function SearchPanel({ stores, defaultStore, action }: { stores: string[]; defaultStore: string; action: Action }) {
  const [state, formAction, pending] = useActionState(action, null);
  // React resets the form after an action; these keep what was just searched.
  const last = state?.ok ? state.data : undefined;
  return (
    <div className="space-y-4">
      <form action={formAction} className="card grid gap-3 sm:grid-cols-6" aria-label="Search">
        <div className="sm:col-span-4">
          <label className="label" htmlFor="search-q">Query</label>
          <input id="search-q" className="input" name="q" placeholder="words to find" defaultValue={last?.query} key={`q:${last?.query ?? ""}`} />
        </div>
        <div>
          <label className="label" htmlFor="search-store">Store</label>
          <select id="search-store" className="input" name="store" defaultValue={last?.stores[0] ?? defaultStore} key={`s:${last?.stores[0] ?? ""}`}>
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
        <div>
          <label className="label" htmlFor="search-mode">Mode</label>
          <select id="search-mode" className="input" name="mode" defaultValue={last?.mode ?? "hybrid"} key={`m:${last?.mode ?? ""}`}>
            <option value="hybrid">hybrid</option>
            <option value="fts">full-text</option>
            <option value="vector">vector</option>
          </select>
        </div>
        <label className="flex items-end gap-2 text-sm">
          <input type="checkbox" name="include_core" /> include core
        </label>
        <label className="flex items-end gap-2 text-sm">
          <input type="checkbox" name="explain" defaultChecked={!!last?.results[0]?.signals} key={`e:${!!last?.results[0]?.signals}`} /> explain
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
            {state.message} · {state.data.effectiveMode}
            {state.data.vectors && ` · model ${state.data.vectors.model.provider}:${state.data.vectors.model.model} (${state.data.vectors.model.id})`}
          </p>
          {state.data.fallback && (
            <p className="rounded bg-amber-50 p-2 text-sm text-amber-800" data-testid="search-fallback">
              {state.data.degraded ? "Degraded: " : "Fallback: "}
              {state.data.fallback.message}
            </p>
          )}
          {state.data.warnings.map((w) => (
            <p key={w.code} className="text-xs text-amber-700">
              {w.message}
            </p>
          ))}
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
                <Explain hit={hit} />
              </article>
            );
          })}
        </section>
      )}
    </div>
  );
}
