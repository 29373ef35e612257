import { describe, expect, it } from "vitest";
import { accessForPath, isDocumentRequest } from "@/lib/http/dashboard-access";
import { contentSecurityPolicy, createNonce, SECURITY_HEADERS } from "@/lib/http/security-headers";

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
