import Link from "next/link";
import type { SearchResult } from "@/lib/index/search";
import { ConfidenceBadge, WeakAnswerNote } from "./confidence-band";
import { SearchHitExplain, SearchHitLink, SearchSnippet } from "./search-hit";
import { SEARCH_MAX_PAGE, SEARCH_PAGE_SIZE, searchHref, type SearchUrlState } from "./search-url";

/** What answered and what the caller should know: the mode that really ran, the model, a fallback or degradation, warnings. */
export function SearchAnswerNotes({ result }: { result: SearchResult }) {
  return (
    <>
      {result.fallback && (
        <p className="rounded bg-amber-50 p-2 text-sm text-amber-800" data-testid="search-fallback">
          {result.degraded ? "Degraded: " : "Fallback: "}
          {result.fallback.message}
        </p>
      )}
      <WeakAnswerNote reason={result.reason} />
      {result.warnings.map((w) => (
        <p key={w.code} className="text-xs text-amber-700">
          {w.message}
        </p>
      ))}
    </>
  );
}

/** "results 21–40" and the links to the pages beside this one. */
export function SearchPager({ state, shown, hasMore, label = "Result pages" }: { state: SearchUrlState; shown: number; hasMore: boolean; label?: string }) {
  const first = (state.page - 1) * SEARCH_PAGE_SIZE + 1;
  const canNext = hasMore && state.page < SEARCH_MAX_PAGE;
  return (
    <nav aria-label={label} className="flex flex-wrap items-center gap-3 text-sm" data-testid="search-pager">
      <span data-testid="search-range">{shown === 0 ? "no results on this page" : `results ${first}–${first + shown - 1}${hasMore ? "" : " (the last)"}`}</span>
      {state.page > 1 &&
        (shown === 0 ? (
          // Past the last result (a page number typed or kept from an older answer): the page before may be empty too.
          <Link className="text-blue-700 underline" href={searchHref({ ...state, page: 1 })} data-testid="search-first-page">
            ← First page
          </Link>
        ) : (
          <Link className="text-blue-700 underline" href={searchHref({ ...state, page: state.page - 1 })} rel="prev">
            ← Previous
          </Link>
        ))}
      {canNext && (
        <Link className="text-blue-700 underline" href={searchHref({ ...state, page: state.page + 1 })} rel="next">
          Next →
        </Link>
      )}
      {hasMore && !canNext && <span className="text-slate-500">more results exist: narrow the query or the filters to reach them</span>}
    </nav>
  );
}

/** One page of results, each hit linking to its reader. */
export function SearchResults({ state, result }: { state: SearchUrlState; result: SearchResult }) {
  return (
    <section aria-label="Search results" className="space-y-2" data-testid="search-results">
      <p role="status" className="text-sm text-slate-600">
        {result.results.length === 0 ? "no results" : `${result.results.length} result${result.results.length === 1 ? "" : "s"} on this page${result.hasMore ? ", more on the next" : ""}`} · {result.effectiveMode}
        {result.vectors && ` · model ${result.vectors.model.provider}:${result.vectors.model.model} (${result.vectors.model.id})`}
      </p>
      <SearchAnswerNotes result={result} />
      <SearchPager state={state} shown={result.results.length} hasMore={result.hasMore} />
      {result.results.map((hit) => (
        <article key={`${hit.store}:${hit.id}`} className="card space-y-1" data-testid="search-hit">
          <div className="flex flex-wrap items-baseline gap-2 text-sm">
            <ConfidenceBadge band={hit.confidence} score={hit.score} />
            <SearchHitLink hit={hit} />
            <span className="text-xs text-slate-500">
              {hit.store} · {hit.kind} · chunk {hit.chunkIndex}
            </span>
          </div>
          <SearchSnippet hit={hit} />
          <SearchHitExplain hit={hit} />
        </article>
      ))}
      {result.results.length > 5 && <SearchPager state={state} shown={result.results.length} hasMore={result.hasMore} label="Result pages, bottom" />}
    </section>
  );
}
