import { getToken } from "next-auth/jwt";
import { NextRequest, NextResponse } from "next/server";
import { getAuthSecret } from "@/lib/auth/secret";
import { resolveSessionUser } from "@/lib/backend/users";
import type { PublicUser } from "@/lib/auth/users";
import { AppError } from "@/lib/errors";
import { isSpeculative, LAST_STORE_COOKIE, LAST_STORE_MAX_AGE_S, storeNamedBy } from "@/lib/http/last-store";
import { accessForPath, isDocumentRequest, type Access } from "@/lib/http/dashboard-access";
import { applySecurityHeaders, contentSecurityPolicy, createNonce } from "@/lib/http/security-headers";

/**
 * The request-level gate: runs before every request is routed, whatever its
 * shape (page load, RSC navigation, prefetch, server action, route handler),
 * so a page's data is never rendered for someone who may not see it — a
 * layout's check does not run when the router renders only a page segment.
 * Pages and actions still check for themselves (app/_server/session.ts).
 * Every answer, refusals included, carries the security headers.
 */
export async function proxy(request: NextRequest): Promise<Response> {
  const { pathname } = request.nextUrl;
  const access = accessForPath(pathname);
  if (access !== "public") {
    const refusal = refuse(request, access, await signedInUser(request));
    if (refusal) return withSecurityHeaders(refusal, contentSecurityPolicy());
  }
  // The agent API (its paths with escapes or dot segments: the plain ones never come here) and build files render no page: the policy without a nonce.
  if (pathname.startsWith("/api/") || pathname.startsWith("/_next/")) return withSecurityHeaders(NextResponse.next(), contentSecurityPolicy());
  // Pages: a fresh nonce. Next reads it from the request's CSP header and puts it on every script it writes.
  const policy = contentSecurityPolicy({ nonce: createNonce(), dev: process.env.NODE_ENV === "development" });
  const forwarded = new Headers(request.headers);
  forwarded.set("content-security-policy", policy);
  const response = NextResponse.next({ request: { headers: forwarded } });
  rememberStore(request, response);
  return withSecurityHeaders(response, policy);
}

/**
 * Every path but the agent API's plain ones (PLAIN_API_PATHS in
 * lib/http/security-headers.ts: /api/v1 and /api/mcp, no escape, no dot
 * segment), build files included, so every other answer gets the headers
 * here; which paths are public is decided in one place, deny by default
 * (lib/http/dashboard-access.ts). The plain API paths are public, need no
 * session and render no page: Next skips the proxy for them and
 * next.config.mjs sets their headers. Next runs the proxy when the raw or the
 * decoded path matches, so a path with an escape always comes here. A literal:
 * Next reads it at build time (tests/http-gate.test.ts keeps it the
 * complement of PLAIN_API_PATHS).
 */
export const config = { matcher: "/((?!api/(?:v1|mcp)(?:/[A-Za-z0-9_~-][A-Za-z0-9_.~-]*)*/?$).*)" };

/**
 * The signed-in person: the next-auth session cookie, verified (signature,
 * expiry), then the one account check (resolveSessionUser: exists, not
 * disabled, session still current). Only the cookie counts: a bearer header
 * is the API's business, not the dashboard's.
 */
async function signedInUser(request: NextRequest): Promise<PublicUser | null> {
  const cookiesOnly = new NextRequest(request.url, { headers: { cookie: request.headers.get("cookie") ?? "" } });
  const claims = await getToken({ req: cookiesOnly, secret: getAuthSecret(), secureCookie: sessionCookieIsSecure(request) });
  return await resolveSessionUser({ claims });
}

/**
 * next-auth names its cookie `__Secure-next-auth.session-token` when the site
 * is https, by its own rule (utils/detect-origin): NEXTAUTH_URL, else the
 * forwarded protocol when the host is trusted, else plain http.
 */
function sessionCookieIsSecure(request: NextRequest): boolean {
  if (process.env.NEXTAUTH_URL) return process.env.NEXTAUTH_URL.startsWith("https://");
  if (process.env.VERCEL ?? process.env.AUTH_TRUST_HOST) return request.headers.get("x-forwarded-proto") !== "http";
  return false;
}

/** The refusal for this request, or null when the person may go on. */
function refuse(request: NextRequest, access: Exclude<Access, "public">, user: PublicUser | null): Response | null {
  const document = isDocumentRequest({ method: request.method, accept: request.headers.get("accept") });
  if (!user) {
    if (document) {
      // Sign in, then come back here.
      const login = new URL("/login", request.url);
      login.searchParams.set("callbackUrl", `${request.nextUrl.pathname}${request.nextUrl.search}`);
      return NextResponse.redirect(login, 307);
    }
    return Response.json(new AppError("unauthorized", "sign in first").toBody(), { status: 401 });
  }
  if (access === "admin" && user.role !== "admin") {
    // A person's page load goes on to the page, whose requireAdmin() answers a 403 "admins only" page inside the
    // layout before it reads anything; every other request shape (RSC, prefetch, action) is refused here, as before.
    if (document) return null;
    return Response.json(new AppError("forbidden", "admins only").toBody(), { status: 403 });
  }
  return null;
}

/**
 * A signed-in page load that names a store: keep it as this browser's last store (lib/http/last-store.ts). Only a
 * full page load: router fetches (navigations and prefetches alike) are left to components/remember-store.tsx.
 * Written even when unchanged: a cookie an older version set HttpOnly cannot be replaced by the page's script until
 * the server rewrites it once, and the year it lasts then counts from the last use.
 */
function rememberStore(request: NextRequest, response: NextResponse): void {
  if (!isDocumentRequest({ method: request.method, accept: request.headers.get("accept") }) || isSpeculative(request.headers)) return;
  const store = storeNamedBy(request.nextUrl);
  if (!store) return;
  response.cookies.set(LAST_STORE_COOKIE, store, { httpOnly: false, sameSite: "lax", path: "/", maxAge: LAST_STORE_MAX_AGE_S, secure: sessionCookieIsSecure(request) });
}

function withSecurityHeaders(response: Response, policy: string): Response {
  applySecurityHeaders({ headers: response.headers, policy });
  // A refusal or a page depends on who asked: never cached.
  if (response.status >= 300) response.headers.set("Cache-Control", "no-store");
  return response;
}
