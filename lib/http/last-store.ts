/**
 * "Remember the last store used" (docs/api-and-mcp.md): a cookie pages that
 * pick a store start from, checked against the stores that exist before use.
 * Written by proxy.ts on a full page load and components/remember-store.tsx
 * after a client-side navigation, never on a prefetch: the proxy cannot tell
 * Next's prefetches from a navigation, and the last prefetch to answer would
 * overwrite the store just opened.
 */
import { STORE_NAME_RE } from "../names";

export const LAST_STORE_COOKIE = "dualmind-store";
/** A year: a preference, not a credential (readable by the page's script, which writes it after client navigations). */
export const LAST_STORE_MAX_AGE_S = 365 * 24 * 3600;

/** A browser's own speculative load (link prefetch, speculation rules) of a whole page: not a page anyone saw. */
export function isSpeculative(headers: Headers): boolean {
  return /\bprefetch\b/i.test(`${headers.get("sec-purpose") ?? ""} ${headers.get("purpose") ?? ""}`);
}

/** The store a dashboard URL names, or null. */
export function storeNamedBy(url: URL): string | null {
  const fromQuery = url.searchParams.get("store");
  const fromPath = /^\/(?:stores|graph)\/([^/]+)/.exec(url.pathname)?.[1];
  const name = fromQuery ?? (fromPath ? safeDecode(fromPath) : null);
  return name !== null && STORE_NAME_RE.test(name) ? name : null;
}

function safeDecode(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}
