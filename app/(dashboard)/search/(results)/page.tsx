import Link from "@/components/link";
import { pickRememberedStore } from "@/app/_server/pages";
import { requireUser } from "@/app/_server/session";
import { SearchForm } from "@/components/search-form";
import { SearchInspect } from "@/components/search-inspect";
import { SearchPager, SearchResults } from "@/components/search-results";
import { activeFilters, parseSearchUrl, SEARCH_PAGE_SIZE, searchHref } from "@/components/search-url";
import { DEFAULT_SEARCH_MODE } from "@/lib/index/search";
import { inspectFromUrl, lastResultPage, searchFromUrl, titlesOf } from "../run";

type Params = Record<string, string | string[] | undefined>;

// This page sits in the (results) group so its loading skeleton does not wrap the reader below /search/read:
// a streamed page has already answered 200, and the reader's unknown chunk must answer a real 404.

export default async function SearchPage({ searchParams }: { searchParams: Promise<Params> }) {
  await requireUser();
  const sp = await searchParams;
  const requested = typeof sp.store === "string" ? sp.store.trim() : undefined;
  const { store, stores } = await pickRememberedStore(requested);
  const unknownStore = requested && requested !== store ? requested : null;
  const state = { ...parseSearchUrl(sp, { store, mode: DEFAULT_SEARCH_MODE }), store };
  const searching = state.q !== "" && !unknownStore;
  const legs = searching && state.inspect ? await inspectFromUrl(state) : null;
  const outcome = searching && !state.inspect ? await searchFromUrl(state) : null;
  const titles = outcome?.result ? await titlesOf(outcome.result) : new Map<string, string>();
  // A page past the last result: find the last page that has some, to link to it.
  const pastEnd = outcome?.result && outcome.result.results.length === 0 && state.page > 1 ? await lastResultPage(state) : null;
  const filters = activeFilters(state);
  const tab = (inspect: boolean, label: string) => (
    <Link href={searchHref({ ...state, inspect })} aria-current={state.inspect === inspect ? "page" : undefined} className={`rounded px-3 py-1 ${state.inspect === inspect ? "bg-slate-900 text-white" : "text-blue-700 underline"}`}>
      {label}
    </Link>
  );

  return (
    // On a phone, once there is a search, its results come first: the long help and the form move out of their way.
    <div className="flex flex-col gap-4">
      <h1 className="text-2xl font-semibold">Search</h1>
      <p className={`text-sm text-slate-600 ${searching ? "max-md:hidden" : ""}`}>
        Search a store&apos;s documents and memories: hybrid (bm25 fused with vector similarity, the measured default), full-text only, or vector only. Your words are matched as words: operators and quotes have no special meaning here. Tick explain to see why each hit ranks where it does, or open Inspect to see each leg&apos;s ranking side by side. The search is in the page&apos;s address: share it, or go back to an earlier one.
      </p>
      <div className={searching ? "max-md:order-last" : undefined}>
        <SearchForm stores={stores} state={state} />
      </div>
      {unknownStore && (
        <p role="alert" className="text-sm text-red-600">
          There is no store named {unknownStore}. Pick one of the stores above.
        </p>
      )}
      {searching && (
        <div className="flex flex-wrap items-center gap-3 text-sm">
          <a href="#search-q" className="text-blue-700 underline md:hidden">
            Change the search
          </a>
          <nav aria-label="Search views" className="flex gap-1">
            {tab(false, "Results")}
            {tab(true, "Inspect")}
          </nav>
          <span className="text-slate-600" data-testid="search-filters">
            {filters.length ? `Filters: ${filters.join(" · ")}` : "No filters"}
          </span>
          {filters.length > 0 && (
            <Link className="text-blue-700 underline" href={searchHref({ ...state, kind: "", prefix: "", tags: "", includeCore: false, page: 1 })}>
              Clear filters
            </Link>
          )}
        </div>
      )}
      {!searching && !unknownStore && <p className="text-sm text-slate-600">Type some words to search {store}.</p>}
      {outcome?.error && (
        <p role="alert" className="text-sm text-red-600">
          {outcome.error}
        </p>
      )}
      {outcome?.result && <SearchResults state={state} result={outcome.result} titles={titles} pastEnd={pastEnd} />}
      {legs && (
        <>
          <SearchPager state={state} shown={Math.max(...legs.map((l) => l.result?.results.length ?? 0))} hasMore={legs.some((l) => l.result?.has_more)} />
          <SearchInspect legs={legs} firstRank={(state.page - 1) * SEARCH_PAGE_SIZE + 1} />
        </>
      )}
    </div>
  );
}
