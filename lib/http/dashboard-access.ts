/**
 * Who may request a path, decided before anything renders (proxy.ts). Deny
 * by default: a path is public only when listed here, so a new page is
 * protected without anyone remembering to list it.
 */

export type Access = "public" | "signed-in" | "admin";

/** Exact public paths: the sign-in page and the files browsers ask for on their own (icons and the web manifest, from public/ and app/manifest.ts). */
const PUBLIC_PATHS = new Set(["/login", "/favicon.ico", "/robots.txt", "/icon.svg", "/apple-touch-icon.png", "/manifest.webmanifest"]);

/**
 * Public prefixes: the agent API (each route checks its bearer token;
 * /api/auth is next-auth itself), Next's own build files and the app's PNG
 * icons (public/icons/).
 */
const PUBLIC_PREFIXES = ["/api/", "/_next/", "/icons/"];

/** Admin-only areas: the path and everything below it. */
const ADMIN_AREAS = ["/admin"];

const RANK: Record<Access, number> = { public: 0, "signed-in": 1, admin: 2 };

function classify(pathname: string): Access {
  if (ADMIN_AREAS.some((a) => pathname === a || pathname.startsWith(`${a}/`))) return "admin";
  if (PUBLIC_PATHS.has(pathname) || PUBLIC_PREFIXES.some((p) => pathname.startsWith(p))) return "public";
  return "signed-in";
}

/** The path with %-escapes decoded and dot segments resolved (`/api/%2E%2E%2Fx` → `/x`), or null when it has a malformed escape. */
function decoded(pathname: string): string | null {
  try {
    return new URL(decodeURIComponent(pathname), "http://path.invalid").pathname;
  } catch {
    return null;
  }
}

/**
 * The access a path needs. The router may decode %-escapes the proxy sees
 * raw (`/%61dmin`), and a raw path may look public when the decoded one is
 * not (`/api/..%2Fledger`), so both spellings are judged and the stricter
 * answer wins; a malformed escape is never public.
 */
export function accessForPath(pathname: string): Access {
  const raw = classify(pathname);
  const plain = decoded(pathname);
  const other = plain === null ? "signed-in" : classify(plain);
  return RANK[other] > RANK[raw] ? other : raw;
}

/**
 * A browser's own page load: it asks for HTML, so a refusal can be a
 * redirect to the sign-in page. The router's RSC fetches, prefetches and
 * server actions ask for `*` or text/x-component and get a plain 401/403
 * instead (Next hides their RSC headers from the proxy; Accept it keeps).
 */
export function isDocumentRequest({ method, accept }: { method: string; accept: string | null }): boolean {
  return (method === "GET" || method === "HEAD") && (accept ?? "").includes("text/html");
}
