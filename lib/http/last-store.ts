/**
 * "Remember the last store used": when a dashboard page names a store (the
 * `store` query parameter, or /stores/<name>, /graph/<name>), proxy.ts keeps
 * it in a cookie and pages that pick a store start there next time
 * (app/_server/pages.ts pickStore). The value is only a preference: the page
 * checks it against the stores that exist before using it.
 */
import { STORE_NAME_RE } from "../common";

export const LAST_STORE_COOKIE = "dualmind-store";


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
