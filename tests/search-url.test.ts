import { describe, expect, it } from "vitest";
import { activeFilters, parseSearchUrl, readerHref, SEARCH_MAX_PAGE, searchFrom, searchHref } from "@/components/search-url";

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

describe("the reader's way back to its search", () => {
  it("carries the search in the reader's address and reads back only a search's own fields", () => {
    const state = parseSearchUrl({ q: "restore drill", store: "ops", mode: "fts", page: "3", inspect: "1" }, defaults);
    const href = readerHref({ store: "ops", chunkId: "ab12", from: state });
    expect(href).toMatch(/^\/search\/read\/ops\/ab12\?from=[^#]+#chunk$/);
    const from = new URL(href, "http://x").searchParams.get("from")!;
    expect(searchFrom(from, defaults)).toEqual({ ...state, inspect: false });
    expect(searchHref(searchFrom(from, defaults)!)).toBe("/search?q=restore+drill&store=ops&mode=fts&page=3");
  });

  it("has no way back without a query, and never links anywhere but /search", () => {
    expect(readerHref({ store: "ops", chunkId: "ab12" })).toBe("/search/read/ops/ab12#chunk");
    expect(searchFrom(undefined, defaults)).toBeNull();
    expect(searchFrom("store=ops", defaults)).toBeNull();
    expect(searchHref(searchFrom("q=x&next=https://evil.example", defaults)!)).toBe("/search?q=x&store=notes&mode=hybrid&page=1");
  });
});
