import Link from "@/components/link";
import type { FlaggedSearchResult as SearchResult } from "@/lib/stores/backend";
import { PoisonFlagBadges } from "./poison-flags";
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

/** Where a page past the last result sends the reader: the last page with results, and how many there are. */
export type PastEnd = { page: number; results: number } | null;

/** "results 21–40 of 53" (or "of more than 40" while the search knows only that more exist) and the links to the pages beside this one. */
export function SearchPager({ state, shown, hasMore, pastEnd = null, label = "Result pages" }: { state: SearchUrlState; shown: number; hasMore: boolean; pastEnd?: PastEnd; label?: string }) {
  const first = (state.page - 1) * SEARCH_PAGE_SIZE + 1;
  const last = first + shown - 1;
  const canNext = hasMore && state.page < SEARCH_MAX_PAGE;
  const beyond = shown === 0 && state.page > 1;
  return (
    <nav aria-label={label} className="flex flex-wrap items-center gap-3 text-sm" data-testid="search-pager">
      <span data-testid="search-range">
        {shown > 0
          ? `results ${first}–${last} of ${hasMore ? `more than ${last}` : last}`
          : beyond && pastEnd
            ? `page ${state.page} is past the end: this search has ${pastEnd.results} result${pastEnd.results === 1 ? "" : "s"} on ${pastEnd.page} page${pastEnd.page === 1 ? "" : "s"}`
            : "no results"}
      </span>
      {beyond && pastEnd && (
        // Past the last result (a page number typed or kept from an older answer): straight to the last page that has results.
        <Link className="text-blue-700 underline" href={searchHref({ ...state, page: pastEnd.page })} data-testid="search-last-page">
          Go to the last page ({pastEnd.page})
        </Link>
      )}
      {state.page > 1 && !beyond && (
        <Link className="text-blue-700 underline" href={searchHref({ ...state, page: state.page - 1 })} rel="prev">
          ← Previous
        </Link>
      )}
      {canNext && (
        <Link className="text-blue-700 underline" href={searchHref({ ...state, page: state.page + 1 })} rel="next">
          Next →
        </Link>
      )}
      {hasMore && !canNext && <span className="text-slate-500">more results exist: narrow the query or the filters to reach them</span>}
    </nav>
  );
}

/** How many results there are, as far as the search knows: an exact count once the last page is reached, else "more than N". */
export function resultCount({ state, shown, hasMore }: { state: SearchUrlState; shown: number; hasMore: boolean }): string {
  const upTo = (state.page - 1) * SEARCH_PAGE_SIZE + shown;
  if (shown === 0) return "no results on this page";
  return hasMore ? `more than ${upTo} results` : `${upTo} result${upTo === 1 ? "" : "s"}`;
}

/** One page of results, each hit linking to its reader. */
export function SearchResults({ state, result, titles, pastEnd = null }: { state: SearchUrlState; result: SearchResult; titles: Map<string, string>; pastEnd?: PastEnd }) {
  return (
    <section aria-label="Search results" className="space-y-2" data-testid="search-results">
      <p role="status" className="text-sm text-slate-600">
        {resultCount({ state, shown: result.results.length, hasMore: result.has_more })} · {result.effective_mode}
        {result.vectors && ` · model ${result.vectors.model.provider}:${result.vectors.model.model} (${result.vectors.model.id})`}
      </p>
      <SearchAnswerNotes result={result} />
      <SearchPager state={state} shown={result.results.length} hasMore={result.has_more} pastEnd={pastEnd} />
      {result.results.map((hit) => (
        <article key={`${hit.store}:${hit.id}`} className="card space-y-1" data-testid="search-hit">
          <div className="flex flex-wrap items-baseline gap-2 text-sm">
            <ConfidenceBadge band={hit.confidence} score={hit.score} />
            <SearchHitLink hit={hit} title={titles.get(`${hit.store}:${hit.path}`)} from={state} />
            <PoisonFlagBadges flags={hit.flags} />
            <span className="text-xs text-slate-500">
              {hit.store} · {hit.kind} · chunk {hit.chunk_index}
            </span>
            <span className="basis-full break-all font-mono text-xs text-slate-500" data-testid="search-hit-path">
              {hit.path}
            </span>
          </div>
          <SearchSnippet hit={hit} />
          <SearchHitExplain hit={hit} />
        </article>
      ))}
      {result.results.length > 5 && <SearchPager state={state} shown={result.results.length} hasMore={result.has_more} label="Result pages, bottom" />}
    </section>
  );
}
