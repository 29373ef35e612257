/**
 * "Remember the last store used": when a page the person sees names a store
 * (the `store` query parameter, or /stores/<name>, /graph/<name>), it is kept
 * in a cookie and pages that pick a store start there next time
 * (app/_server/pages.ts pickStore). The value is only a preference: the page
 * checks it against the stores that exist before using it.
 *
 * Who writes it: proxy.ts on a full page load, and components/remember-store.tsx
 * in the browser after a client-side navigation. Never a prefetch: Next's
 * router fetches every Link in view ahead of a click (the Overview links every
 * store), and the proxy cannot tell those from a navigation (Next strips the
 * router's headers before the proxy runs). Remembering from them let whichever
 * prefetch answered last overwrite the store just opened.
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
