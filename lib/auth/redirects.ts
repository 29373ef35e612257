/**
 * Where to send a person after sign-in. A callbackUrl is whatever the link
 * said, so it is parsed the way a browser will parse it (WHATWG URL: a
 * backslash is a slash, tab/CR/LF are dropped, `//host` is another origin)
 * against our own base URL, and anything that lands elsewhere becomes "/".
 * A string check (startsWith("/")) is not enough: `/\evil.example` and
 * `/\t/evil.example` both start with a slash and both leave the site.
 */

/** A path on this site (`/…`, never `//…`) for a callbackUrl; "/" when it would leave baseUrl's origin. */
export function sameOriginPath({ callbackUrl, baseUrl }: { callbackUrl: string | null | undefined; baseUrl: string }): string {
  if (!callbackUrl) return "/";
  let base: URL;
  let target: URL;
  try {
    base = new URL(baseUrl);
    target = new URL(callbackUrl, base);
  } catch {
    return "/";
  }
  if (target.origin !== base.origin) return "/";
  // `http://us//evil.example` is same-origin, but its path alone would read as
  // a host once handed back to a browser; one leading slash keeps it a path.
  const path = target.pathname.replace(/^\/+/, "/") + target.search + target.hash;
  // Belt and braces: the result must itself resolve to our origin.
  try {
    return new URL(path, base).origin === base.origin ? path : "/";
  } catch {
    return "/";
  }
}

/** The absolute form for next-auth's redirect callback: baseUrl's origin plus sameOriginPath. */
export function sameOriginUrl({ callbackUrl, baseUrl }: { callbackUrl: string | null | undefined; baseUrl: string }): string {
  const origin = new URL(baseUrl).origin;
  return origin + sameOriginPath({ callbackUrl, baseUrl });
}
