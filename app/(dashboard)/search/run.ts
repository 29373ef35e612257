import "server-only";
import type { InspectLeg } from "@/components/search-inspect";
import { SEARCH_PAGE_SIZE, type SearchUrlState } from "@/components/search-url";
import { actionError } from "@/lib/http/action-result";
import { searchInputSchema, type SearchInput, type SearchResult } from "@/lib/index/search";
import { stores } from "@/lib/stores/backend";

export type SearchOutcome = { result: SearchResult; error: null } | { result: null; error: string };

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
    return { result: null, error: actionError(e).error };
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
