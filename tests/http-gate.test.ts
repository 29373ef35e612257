import { describe, expect, it } from "vitest";
import { accessForPath, isDocumentRequest } from "@/lib/http/dashboard-access";
import { applySecurityHeaders, contentSecurityPolicy, createNonce, PLAIN_API_PATHS, SECURITY_HEADERS } from "@/lib/http/security-headers";
import * as pageStaticInfo from "next/dist/build/analysis/get-page-static-info";
import { getMiddlewareRouteMatcher } from "next/dist/shared/lib/router/utils/middleware-route-matcher";
import { getPathMatch } from "next/dist/shared/lib/router/utils/path-match";
import type { NextConfig } from "next";
import { config as proxyConfig } from "@/proxy";

describe("accessForPath: deny by default", () => {
  it.each([
    ["/", "signed-in"],
    ["/ledger/tasks/t-1", "signed-in"],
    ["/sessions/s-1/export", "signed-in"],
    ["/search/read/notes/0123456789abcdef0123456789abcdef", "signed-in"],
    ["/a-page-nobody-listed", "signed-in"],
    ["/login", "public"],
    ["/login/anything", "signed-in"],
    ["/loginx", "signed-in"],
    ["/api/v1/health", "public"],
    ["/api/auth/session", "public"],
    ["/api", "signed-in"],
    ["/apix/ledger", "signed-in"],
    ["/_next/static/chunks/app.js", "public"],
    ["/favicon.ico", "public"],
    ["/icon.svg", "public"],
    ["/icons/icon-192.png", "public"],
    ["/apple-touch-icon.png", "public"],
    ["/manifest.webmanifest", "public"],
    ["/icons", "signed-in"],
    ["/icon.svgx", "signed-in"],
    ["/admin", "admin"],
    ["/admin/users", "admin"],
    ["/administrator", "signed-in"],
  ])("%s → %s", (path, access) => {
    expect(accessForPath(path)).toBe(access);
  });

  it.each([
    // The router may decode what the proxy sees raw: the stricter reading wins.
    ["/%61dmin", "admin"],
    ["/%2561dmin", "signed-in"],
    ["/api/..%2Fledger", "signed-in"],
    ["/api/..%2fadmin", "admin"],
    ["/api/%2E%2E/ledger", "signed-in"],
    ["/api/..%5Cledger", "signed-in"],
    ["/login%2F..%2Fledger", "signed-in"],
    ["/_next/..%2Fledger", "signed-in"],
    ["/icons/..%2Fledger", "signed-in"],
    ["/icons/..%2Fadmin", "admin"],
    ["/%6Cogin", "signed-in"],
    ["/%E0%A4%A", "signed-in"],
    ["/api/%E0%A4%A", "signed-in"],
  ])("escaped %s → %s", (path, access) => {
    expect(accessForPath(path)).toBe(access);
  });
});

describe("isDocumentRequest", () => {
  it("is a browser's page load: GET or HEAD asking for HTML", () => {
    expect(isDocumentRequest({ method: "GET", accept: "text/html,application/xhtml+xml,*/*;q=0.8" })).toBe(true);
    expect(isDocumentRequest({ method: "HEAD", accept: "text/html" })).toBe(true);
  });
  it("is not the router's fetches, server actions or a bare client", () => {
    expect(isDocumentRequest({ method: "GET", accept: "*/*" })).toBe(false);
    expect(isDocumentRequest({ method: "GET", accept: null })).toBe(false);
    expect(isDocumentRequest({ method: "POST", accept: "text/x-component" })).toBe(false);
    expect(isDocumentRequest({ method: "POST", accept: "text/html" })).toBe(false);
  });
});

describe("security headers", () => {
  const directives = (policy: string) => new Map(policy.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]));

  it("a page policy allows scripts by nonce only, and forbids framing, plugins, base and form hijacking", () => {
    const nonce = createNonce();
    const d = directives(contentSecurityPolicy({ nonce }));
    expect(d.get("default-src")).toEqual(["'self'"]);
    expect(d.get("script-src")).toEqual(["'self'", `'nonce-${nonce}'`, "'strict-dynamic'"]);
    expect(d.get("frame-ancestors")).toEqual(["'none'"]);
    expect(d.get("object-src")).toEqual(["'none'"]);
    expect(d.get("base-uri")).toEqual(["'self'"]);
    expect(d.get("form-action")).toEqual(["'self'"]);
  });

  it("without a nonce scripts come from this origin only; never unsafe-inline or unsafe-eval outside dev", () => {
    const policy = contentSecurityPolicy();
    expect(directives(policy).get("script-src")).toEqual(["'self'"]);
    expect(directives(contentSecurityPolicy({ nonce: "x" })).get("script-src")).not.toContain("'unsafe-inline'");
    expect(policy).not.toContain("unsafe-eval");
    expect(directives(contentSecurityPolicy({ nonce: "x", dev: true })).get("script-src")).toContain("'unsafe-eval'");
  });

  it("nonces are fresh and 128 bits", () => {
    const a = createNonce();
    expect(Buffer.from(a, "base64")).toHaveLength(16);
    expect(createNonce()).not.toBe(a);
  });

  it("frames, sniffing and cross-site referrers are refused", () => {
    expect(SECURITY_HEADERS).toEqual({ "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin" });
  });
});

/**
 * Which requests skip the proxy, decided by Next's own matching code (as
 * `next start` runs it): the proxy runs when the raw or the decoded path
 * matches its matcher; next.config's headers match the raw path.
 */
describe("the proxy's matcher and the API's headers", () => {
  // Not in Next's type declarations; the function `next build` compiles a proxy's matcher with.
  const { getMiddlewareMatchers } = pageStaticInfo as unknown as { getMiddlewareMatchers: (matcher: string, config: object) => Parameters<typeof getMiddlewareRouteMatcher>[0] };
  const matcher = getMiddlewareRouteMatcher(getMiddlewareMatchers(proxyConfig.matcher, {}));
  const noRequest = { headers: {} } as never;
  const proxyRuns = (p: string) => {
    let decodedPath = p;
    try {
      decodedPath = decodeURIComponent(p);
    } catch {
      // Next matches the raw path alone then
    }
    return matcher(p, noRequest, {}) || matcher(decodedPath, noRequest, {});
  };
  const apiHeaders = getPathMatch(PLAIN_API_PATHS, { strict: true, removeUnnamedParams: true, sensitive: true });
  const headersFromConfig = (p: string) => apiHeaders(p) !== false;

  it("runs for pages, sign-in, build files and any path with an escape or a dot segment; not for the plain agent API", () => {
    for (const p of ["/", "/login", "/ledger", "/admin/users", "/stores/kb", "/api/auth/csrf", "/api/auth/callback/credentials", "/api/metrics", "/_next/static/x.js", "/api/v1/..%2Fledger", "/api/v1/%2e%2e/admin", "/api/mcp/%2E%2E/ledger", "/api/v1/st%6Fres", "/API/v1/health", "/api/v1/.hidden", "/api/v1/../ledger", "/api/v12/x", "/api/mcpx", "/%61dmin"]) {
      expect([p, proxyRuns(p)]).toEqual([p, true]);
    }
    for (const p of ["/api/v1/health", "/api/v1/stores", "/api/v1/stores/kb/search", "/api/v1/stores/kb/memories/ops~deploy", "/api/v1/openapi.json", "/api/v1/jobs/0b7d3c7e-1f0a-4c2b-9e8f-2a6d5c4b3a21", "/api/mcp", "/api/v1/"]) {
      expect([p, proxyRuns(p)]).toEqual([p, false]);
    }
  });

  it("every path gets the security headers from exactly one place, and a path that skips the proxy is public and reaches the router as written", () => {
    const alphabet = ["/", "a", "p", "i", "v", "1", "m", "c", "A", ".", "%", "2", "e", "F", "~", "-", "_", " ", "api/", "v1/", "mcp", "%2F", "%2e", "..", "admin", "ledger"];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const paths = Array.from({ length: 4000 }, () => `/${Array.from({ length: 1 + Math.floor(next() * 8) }, () => alphabet[Math.floor(next() * alphabet.length)]).join("")}`);
    for (const p of [...paths, ...paths.map((p) => `/api/v1${p}`), ...paths.map((p) => `/api/mcp${p}`)]) {
      expect([p, proxyRuns(p) !== headersFromConfig(p)]).toEqual([p, true]);
      if (proxyRuns(p)) continue;
      expect([p, accessForPath(p)]).toEqual([p, "public"]);
      expect(decodeURIComponent(p)).toBe(p);
      expect(new URL(p, "http://x").pathname).toBe(p);
    }
  });

  it("next.config gives those paths the same headers the proxy gives the rest", async () => {
    const configFile = "../next.config.mjs";
    const nextConfig = ((await import(/* @vite-ignore */ configFile)) as { default: NextConfig }).default;
    const rules = await nextConfig.headers!();
    expect(rules.map((r) => r.source)).toEqual([PLAIN_API_PATHS]);
    const proxied = new Headers();
    applySecurityHeaders({ headers: proxied, policy: contentSecurityPolicy() });
    expect(Object.fromEntries(rules[0].headers.map((h) => [h.key.toLowerCase(), h.value]))).toEqual(Object.fromEntries(proxied.entries()));
  });

  it("those header values hold no colon, so Next sets them as written instead of compiling each as a path pattern per request", async () => {
    const configFile = "../next.config.mjs";
    const nextConfig = ((await import(/* @vite-ignore */ configFile)) as { default: NextConfig }).default;
    const [rule] = await nextConfig.headers!();
    expect(rule.headers.filter((h) => h.value.includes(":"))).toEqual([]);
    // Pages keep inline images (charts, avatars): only answers that render no page drop data: and blob:.
    expect(contentSecurityPolicy({ nonce: createNonce() })).toContain("img-src 'self' data: blob:");
    expect(contentSecurityPolicy()).toContain("img-src 'self';");
  });
});
