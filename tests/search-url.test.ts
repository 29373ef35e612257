import { describe, expect, it } from "vitest";
import { activeFilters, parseSearchUrl, SEARCH_MAX_PAGE, searchHref } from "@/components/search-url";

const defaults = { store: "notes", mode: "hybrid" as const };

describe("the search URL", () => {
  it("round-trips: the URL a search links to opens that same search", () => {
    const state = parseSearchUrl({ q: "restore drill", store: "ops", mode: "fts", kind: "code", prefix: "src/", tags: "a, b", include_core: "1", explain: "1", page: "3", inspect: "1" }, defaults);
    const href = searchHref(state);
    expect(href.startsWith("/search?")).toBe(true);
    const again = parseSearchUrl(Object.fromEntries(new URL(href, "http://x").searchParams), defaults);
    expect(again).toEqual(state);
    expect(state).toMatchObject({ q: "restore drill", store: "ops", mode: "fts", kind: "code", prefix: "src/", tags: "a, b", includeCore: true, explain: true, page: 3, inspect: true });
  });

  it("writes only what is set, so a plain search has a short address", () => {
    expect(searchHref(parseSearchUrl({ q: "x", store: "ops" }, defaults))).toBe("/search?q=x&store=ops&mode=hybrid&page=1");
  });

  it("replaces malformed values with defaults instead of failing", () => {
    const state = parseSearchUrl({ mode: "telepathy", kind: "binary", page: "-2", include_core: "maybe" }, defaults);
    expect(state).toMatchObject({ q: "", store: "notes", mode: "hybrid", kind: "", page: 1, includeCore: false });
    expect(parseSearchUrl({ page: "1.5" }, defaults).page).toBe(1);
    expect(parseSearchUrl({ page: "100000" }, defaults).page).toBe(SEARCH_MAX_PAGE);
  });

  it("names every filter in effect, so none narrows a search unseen", () => {
    expect(activeFilters(parseSearchUrl({ kind: "memory", prefix: "memory/ops/", tags: "x" }, defaults))).toEqual(["kind: memory", "path prefix: memory/ops/", "tags: x"]);
    expect(activeFilters(parseSearchUrl({ q: "x" }, defaults))).toEqual([]);
  });
});
