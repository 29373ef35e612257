/**
 * A dashboard search lives in its URL: query, mode, store, filters, page and
 * view. So a search can be shared, reloaded and stepped through with the back
 * button, and nothing narrows a search that the URL (and so the form) does not
 * show. Pure: used by the server page, the client form and the tests.
 */

export const SEARCH_PAGE_SIZE = 20;
/** Deep enough for any real reading; full-text serves offsets to 10,000 and vector search to 1,000 (search.ts). */
export const SEARCH_MAX_PAGE = 50;

export const SEARCH_MODES = ["hybrid", "fts", "vector"] as const;
export const SEARCH_KINDS = ["memory", "markdown", "code", "text"] as const;

export type SearchUrlState = {
  q: string;
  store: string;
  mode: (typeof SEARCH_MODES)[number];
  /** Filters: each one is a visible field of the search form. */
  kind: string;
  prefix: string;
  tags: string;
  includeCore: boolean;
  explain: boolean;
  page: number;
  /** The inspect view: full-text, vector and fused legs side by side. */
  inspect: boolean;
};

type Params = Record<string, string | string[] | undefined>;

const one = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? "") : (v ?? "")).trim();
const flag = (v: string | string[] | undefined): boolean => ["1", "true", "on"].includes(one(v));

/** The URL's search, with unknown or malformed values replaced by defaults (the page says so where it matters). */
export function parseSearchUrl(params: Params, defaults: { store: string; mode: SearchUrlState["mode"] }): SearchUrlState {
  const mode = one(params.mode);
  const page = Number(one(params.page));
  return {
    q: one(params.q),
    store: one(params.store) || defaults.store,
    mode: (SEARCH_MODES as readonly string[]).includes(mode) ? (mode as SearchUrlState["mode"]) : defaults.mode,
    kind: (SEARCH_KINDS as readonly string[]).includes(one(params.kind)) ? one(params.kind) : "",
    prefix: one(params.prefix),
    tags: one(params.tags),
    includeCore: flag(params.include_core),
    explain: flag(params.explain),
    page: Number.isInteger(page) && page >= 1 ? Math.min(page, SEARCH_MAX_PAGE) : 1,
    inspect: flag(params.inspect),
  };
}

/** The URL of a search: only what is set, in a stable order, so equal searches have equal URLs. */
export function searchHref(state: SearchUrlState): string {
  const qs = new URLSearchParams();
  qs.set("q", state.q);
  qs.set("store", state.store);
  qs.set("mode", state.mode);
  if (state.kind) qs.set("kind", state.kind);
  if (state.prefix) qs.set("prefix", state.prefix);
  if (state.tags) qs.set("tags", state.tags);
  if (state.includeCore) qs.set("include_core", "1");
  if (state.explain) qs.set("explain", "1");
  qs.set("page", String(state.page));
  if (state.inspect) qs.set("inspect", "1");
  return `/search?${qs}`;
}

/** The filters in effect, as "name: value" labels for the page to show beside the results. */
export function activeFilters(state: SearchUrlState): string[] {
  return [
    state.kind && `kind: ${state.kind}`,
    state.prefix && `path prefix: ${state.prefix}`,
    state.tags && `tags: ${state.tags}`,
    state.includeCore && "including core",
  ].filter((f): f is string => Boolean(f));
}

/** The reader page of one hit: the chunk inside its document, carrying the search it was opened from (so its breadcrumb leads back to it). */
export function readerHref({ store, chunkId, from }: { store: string; chunkId: string; from?: SearchUrlState | null }): string {
  const back = from ? `?from=${encodeURIComponent(searchHref(from).slice("/search?".length))}` : "";
  return `/search/read/${encodeURIComponent(store)}/${encodeURIComponent(chunkId)}${back}#chunk`;
}

/**
 * The search a reader page was opened from (its `from` parameter), parsed
 * like any search URL, so only a search's own fields come back: never a
 * link elsewhere. Null when there is none or it names no query.
 */
export function searchFrom(from: string | string[] | undefined, defaults: { store: string; mode: SearchUrlState["mode"] }): SearchUrlState | null {
  const raw = Array.isArray(from) ? from[0] : from;
  if (!raw || raw.length > 2000) return null;
  const state = parseSearchUrl(Object.fromEntries(new URLSearchParams(raw)), defaults);
  return state.q ? { ...state, inspect: false } : null;
}
