import "server-only";
import type { InspectLeg } from "@/components/search-inspect";
import { SEARCH_PAGE_SIZE, type SearchUrlState } from "@/components/search-url";
import { actionError } from "@/lib/http/action-result";
import { searchInputSchema, type SearchInput } from "@/lib/index/search";
import type { FlaggedSearchResult as SearchResult } from "@/lib/stores/backend";
import { stores } from "@/lib/stores/backend";

export type SearchOutcome = { result: SearchResult; error: null } | { result: null; error: string };

/** Each shown hit's document title, keyed `store:path`: a title that cannot be read leaves the path in its place. */
export async function titlesOf(result: SearchResult): Promise<Map<string, string>> {
  const byStore = new Map<string, string[]>();
  for (const h of result.results) byStore.set(h.store, [...(byStore.get(h.store) ?? []), h.path]);
  const titles = new Map<string, string>();
  await Promise.all(
    [...byStore].map(async ([store, paths]) => {
      try {
        for (const [path, title] of await stores().documentTitles({ store, paths })) titles.set(`${store}:${path}`, title);
      } catch {
        // Titles are a courtesy: the hits still show their paths.
      }
    }),
  );
  return titles;
}

/**
 * The last page that has results, for a page past the end: a binary search
 * over the pages before it (at most seven searches for the fifty pages), so
 * the page can link straight to it and say how many results there are.
 * Null when even the first page is empty.
 */
export async function lastResultPage(state: SearchUrlState): Promise<{ page: number; results: number } | null> {
  const counted = new Map<number, number>();
  const onPage = async (page: number): Promise<number> => {
    if (!counted.has(page)) counted.set(page, (await searchFromUrl({ ...state, page })).result?.results.length ?? 0);
    return counted.get(page)!;
  };
  let lo = 1;
  let hi = state.page - 1;
  if (hi < 1 || (await onPage(1)) === 0) return null;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if ((await onPage(mid)) > 0) lo = mid;
    else hi = mid - 1;
  }
  return { page: lo, results: (lo - 1) * SEARCH_PAGE_SIZE + (await onPage(lo)) };
}

/** One search from the URL's state, through the one entry point (stores().search); a refused or failed search is a message, never a 500. */
export async function searchFromUrl(state: SearchUrlState, overrides: Partial<Pick<SearchInput, "mode" | "match" | "explain">> = {}): Promise<SearchOutcome> {
  try {
    const input = searchInputSchema.parse({
      q: state.q,
      mode: state.mode,
      kind: state.kind || undefined,
      prefix: state.prefix || undefined,
      tags: state.tags || undefined,
      include_core: state.includeCore,
      explain: state.explain,
      limit: SEARCH_PAGE_SIZE,
      offset: (state.page - 1) * SEARCH_PAGE_SIZE,
    });
    // stores(): the SQLite index, or PostgreSQL with DATABASE_URL (the stores agents write).
    const result = await stores().search({ store: state.store, input: { ...input, ...overrides } });
    return { result, error: null };
  } catch (e) {
    return { result: null, error: actionError({ error: e }).error };
  }
}

/**
 * The inspect view's three legs, each the same search (same filters and page)
 * with explain on: full-text with the any-word matching hybrid's lexical leg
 * uses, vector alone, and the fused hybrid answer.
 */
export async function inspectFromUrl(state: SearchUrlState): Promise<InspectLeg[]> {
  const [fts, vector, hybrid] = await Promise.all([
    searchFromUrl(state, { mode: "fts", match: "any", explain: true }),
    searchFromUrl(state, { mode: "vector", explain: true }),
    searchFromUrl(state, { mode: "hybrid", explain: true }),
  ]);
  return [
    { id: "fts", title: "Full-text", note: "bm25 over chunk text, any of the words (as hybrid's lexical leg)", ...fts },
    { id: "vector", title: "Vector", note: "cosine similarity to the query's embedding", ...vector },
    { id: "hybrid", title: "Fused (hybrid)", note: "weighted reciprocal rank fusion of the two legs", ...hybrid },
  ];
}
