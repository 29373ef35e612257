import { expect, test, type APIResponse } from "@playwright/test";
import { DASHBOARD_ROUTES, listBuiltRoutes, seedDashboardContent } from "./dashboard-routes";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

const REQUIRED_CSP: Record<string, string> = {
  "default-src": "'self'",
  "frame-ancestors": "'none'",
  "object-src": "'none'",
  "base-uri": "'self'",
  "form-action": "'self'",
};
const STRICT_REFERRER = ["no-referrer", "same-origin", "strict-origin", "strict-origin-when-cross-origin"];
const DOCUMENT = { accept: "text/html,application/xhtml+xml,*/*;q=0.8" };

/** The answer's security headers, each present once; returns the CSP directives by name. */
function expectSecurityHeaders(res: APIResponse, what: string): Map<string, string[]> {
  const all = res.headersArray().map((h) => ({ name: h.name.toLowerCase(), value: h.value }));
  const one = (name: string) => {
    const found = all.filter((h) => h.name === name);
    expect(found, `${what}: exactly one ${name}`).toHaveLength(1);
    return found[0].value;
  };
  expect(one("x-frame-options"), what).toBe("DENY");
  expect(one("x-content-type-options"), what).toBe("nosniff");
  expect(STRICT_REFERRER, `${what}: referrer-policy`).toContain(one("referrer-policy"));
  const csp = new Map(
    one("content-security-policy")
      .split(";")
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name, values]),
  );
  for (const [directive, value] of Object.entries(REQUIRED_CSP)) expect(csp.get(directive), `${what}: ${directive}`).toEqual([value]);
  const scripts = csp.get("script-src") ?? csp.get("default-src") ?? [];
  expect(scripts, `${what}: script-src`).not.toContain("'unsafe-inline'");
  expect(scripts, `${what}: script-src`).not.toContain("'unsafe-eval'");
  return csp;
}

const nonceOf = (csp: Map<string, string[]>) => (csp.get("script-src") ?? []).find((v) => v.startsWith("'nonce-"))?.slice(7, -1);

test("every kind of answer carries the security headers: pages, API, refusals, redirects, build files", async ({ playwright, page }) => {
  const anonymous = await playwright.request.newContext({ baseURL: E2E.baseURL });
  const get = (url: string, headers: Record<string, string> = {}) => anonymous.get(url, { headers, maxRedirects: 0 });

  // A page: its scripts carry the nonce its policy names, and the nonce is new each time.
  const login = await get("/login", DOCUMENT);
  expect(login.status()).toBe(200);
  const nonce = nonceOf(expectSecurityHeaders(login, "the sign-in page"));
  expect(nonce, "a page's script-src has a nonce").toBeTruthy();
  const html = await login.text();
  const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
  expect(scripts.length).toBeGreaterThan(0);
  for (const tag of scripts) expect(tag, "every script Next writes carries the nonce").toContain(`nonce="${nonce}"`);
  expect(nonceOf(expectSecurityHeaders(await get("/login", DOCUMENT), "the sign-in page again"))).not.toBe(nonce);

  // Refusals: a redirect to sign in, a 401 for the router's fetch.
  const redirect = await get("/ledger", DOCUMENT);
  expect(redirect.status()).toBe(307);
  expectSecurityHeaders(redirect, "the redirect to sign in");
  const refused = await get("/ledger", { rsc: "1" });
  expect(refused.status()).toBe(401);
  expectSecurityHeaders(refused, "a 401 RSC request");

  // The API: an answer, a refusal and an unknown route.
  const health = await get("/api/v1/health");
  expect(health.status()).toBe(200);
  expectSecurityHeaders(health, "GET /api/v1/health");
  const noToken = await get("/api/v1/stores");
  expect(noToken.status()).toBe(401);
  expectSecurityHeaders(noToken, "the API without a token");
  const listed = await get("/api/v1/stores", bootstrapHeaders());
  expect(listed.status()).toBe(200);
  expectSecurityHeaders(listed, "the API with a token");
  expectSecurityHeaders(await get("/api/v1/no-such-route", bootstrapHeaders()), "an unknown API route");
  // An API path with an escape still goes through the proxy, which judges what it decodes to (/ledger: sign in first).
  const escaped = await get("/api/v1/..%2F..%2Fledger");
  expect(escaped.status()).toBe(401);
  expectSecurityHeaders(escaped, "an escaped API path that decodes to a page");

  // A build file the sign-in page loads.
  const asset = html.match(/src="(\/_next\/static\/[^"]+\.js)"/)?.[1];
  expect(asset, "the sign-in page loads a build file").toBeTruthy();
  const file = await get(asset!);
  expect(file.status()).toBe(200);
  expectSecurityHeaders(file, asset!);
  await anonymous.dispose();

  // A signed-in page.
  await signIn(page, "admin", E2E.adminPassword);
  const overview = await page.request.get("/", { headers: DOCUMENT });
  expect(overview.status()).toBe(200);
  expect(nonceOf(expectSecurityHeaders(overview, "the Overview page"))).toBeTruthy();
  // A session is no API credential: the API (whose plain paths the proxy does not run for) still asks for its token.
  const cookieOnly = await page.request.get("/api/v1/stores");
  expect(cookieOnly.status()).toBe(401);
  expectSecurityHeaders(cookieOnly, "the API with a session cookie and no token");
});

test("every dashboard page renders and hydrates in the browser with no Content-Security-Policy violation", async ({ page, playwright }) => {
  // Every dashboard page, one after another.
  test.slow();
  const api = await playwright.request.newContext({ baseURL: E2E.baseURL });
  const seeded = await seedDashboardContent(api);
  await api.dispose();

  const violations: string[] = [];
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to (execute|load|apply|connect|frame)/i.test(m.text())) violations.push(`${page.url()}: ${m.text()}`);
  });
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      const w = window as unknown as { __cspViolations?: string[] };
      (w.__cspViolations ??= []).push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  const pageViolations = async () => (await page.evaluate(() => (window as unknown as { __cspViolations?: string[] }).__cspViolations ?? [])).map((v) => `${page.url()}: ${v}`);

  await signIn(page, "admin", E2E.adminPassword);
  violations.push(...(await pageViolations()));
  const pages = listBuiltRoutes().filter((r) => r.kind === "page" && r.route in DASHBOARD_ROUTES);
  expect(pages.length).toBeGreaterThan(10);
  for (const { route } of pages) {
    const { url } = DASHBOARD_ROUTES[route](seeded);
    const res = await page.goto(url);
    expect(res?.status(), url).toBe(200);
    await page.getByTestId("current-user").waitFor();
    violations.push(...(await pageViolations()));
  }
  // A page that does not exist renders too (the root layout is per request, so it has a nonce).
  expect((await page.goto("/no-such-page-for-csp"))?.status()).toBe(404);
  violations.push(...(await pageViolations()));

  // The scripts really run: a client-side navigation keeps the same document.
  await page.goto("/");
  await page.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Sessions" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Sessions" })).toBeVisible();
  expect(await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
  violations.push(...(await pageViolations()));

  expect(violations).toEqual([]);
});
