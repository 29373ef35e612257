import Database from "better-sqlite3";
import fs from "node:fs";
import path from "node:path";
import { encode } from "next-auth/jwt";
import { expect, test, type APIRequestContext, type BrowserContext } from "@playwright/test";
import { ALL_MARKS, DASHBOARD_ROUTES, isPublicRoute, listBuiltRoutes, MARK, seedDashboardContent, VIEWER_PASSWORD, type RouteRow, type Seeded } from "./dashboard-routes";
import { E2E, signIn } from "./fixtures";
import { listServerActions } from "./server-actions";

/**
 * Who can read a dashboard route, asked the way every kind of request asks:
 * a browser navigation, a bare GET, the router's RSC fetches (with a state
 * tree that claims the dashboard layout is already on screen, so only the
 * page segment renders), prefetches, segment prefetches and server action
 * POSTs. Every route of the build is crawled; seeded content must never reach
 * anyone who is not signed in, and admin-only routes never reach a viewer.
 */

/** The router state tree header as Next's client builds it: the URL-encoded JSON of the segments it already holds, down to a page. */
function stateTree(segments: string[]): string {
  let node: unknown[] = ["__PAGE__", {}];
  for (const segment of [...segments].reverse()) node = [segment, { children: node }];
  return encodeURIComponent(JSON.stringify(["", { children: node }]));
}
const ON_OVERVIEW = stateTree(["(dashboard)"]);
const ON_LEDGER = stateTree(["(dashboard)", "ledger"]);

const DOCUMENT = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" };

type Shape = { name: string; document?: boolean; method?: "GET" | "POST"; headers: Record<string, string>; body?: string };

/** Every way a request can ask for a route; `browserTree` is the header a real client-side navigation sent (captured by the admin control). */
function requestShapes({ browserTree, actionId }: { browserTree: string; actionId: string }): Shape[] {
  return [
    { name: "browser navigation", document: true, headers: DOCUMENT },
    { name: "plain GET", headers: {} },
    { name: "RSC", headers: { rsc: "1" } },
    { name: "RSC + tree holding the dashboard layout (on Overview)", headers: { rsc: "1", "next-router-state-tree": ON_OVERVIEW } },
    { name: "RSC + tree holding the dashboard layout (on Ledger)", headers: { rsc: "1", "next-router-state-tree": ON_LEDGER } },
    { name: "RSC + the tree a real client navigation sent", headers: { rsc: "1", "next-router-state-tree": browserTree } },
    { name: "prefetch", headers: { rsc: "1", "next-router-prefetch": "1", "next-router-state-tree": ON_OVERVIEW } },
    { name: "segment prefetch /_tree", headers: { rsc: "1", "next-router-prefetch": "1", "next-router-segment-prefetch": "/_tree" } },
    { name: "segment prefetch /_index", headers: { rsc: "1", "next-router-prefetch": "1", "next-router-segment-prefetch": "/_index" } },
    {
      name: "server action POST",
      method: "POST",
      headers: { "next-action": actionId, "content-type": "text/plain;charset=UTF-8", accept: "text/x-component", origin: E2E.baseURL, "next-router-state-tree": ON_OVERVIEW },
      body: "[]",
    },
  ];
}

type Probe = { status: number; location: string | null; body: string };

/**
 * One request, redirects not followed, except the one Next itself sends an
 * RSC request to when its `_rsc` cache-busting value does not match its
 * headers: a redirect to the same path, which the router follows.
 */
async function probe(request: APIRequestContext, url: string, shape: Pick<Shape, "method" | "headers" | "body">): Promise<Probe> {
  let target = url;
  for (let hop = 0; ; hop++) {
    const res = await request.fetch(target, { method: shape.method ?? "GET", headers: shape.headers, data: shape.body, maxRedirects: 0 });
    const location = res.headers()["location"] ?? null;
    const samePath = location !== null && new URL(location, E2E.baseURL).pathname === new URL(target, E2E.baseURL).pathname;
    if (res.status() >= 300 && res.status() < 400 && samePath && hop < 3) {
      target = location;
      continue;
    }
    return { status: res.status(), location, body: await res.text() };
  }
}

/** A session cookie signed with the server's own secret, carrying whatever claims the test chooses. */
async function signedSessionCookie(claims: Record<string, unknown>): Promise<string> {
  const secret = process.env.NEXTAUTH_SECRET ?? fs.readFileSync(path.join(E2E.dataDir, ".auth-secret"), "utf8").trim();
  return `next-auth.session-token=${await encode({ token: claims, secret })}`;
}

/** A user's id and session version, read from the server's governance.db. */
function userRow(username: string): { id: number; sessionVersion: number } {
  const db = new Database(path.join(E2E.dataDir, "governance.db"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT id, session_version AS sessionVersion FROM users WHERE username = ?").get(username) as { id: number; sessionVersion: number };
  } finally {
    db.close();
  }
}

const isRefusal = (p: Probe) => p.status === 401 || p.status === 403 || p.status === 404 || (p.status >= 300 && p.status < 400 && new URL(p.location ?? "/", E2E.baseURL).pathname === "/login");

const leaked = (body: string, strings: string[]) => strings.filter((s) => body.includes(s));
const show = (p: Probe) => `${p.status}${p.location ? ` → ${p.location}` : ""} ${p.body.slice(0, 120).replace(/\s+/g, " ")}`;

test.describe.serial("dashboard access", () => {
  let seeded: Seeded;
  let rows: [string, RouteRow][];
  let browserTree = ON_OVERVIEW;
  let viewerContext: BrowserContext;

  test.beforeAll(async ({ playwright, browser }) => {
    const api = await playwright.request.newContext({ baseURL: E2E.baseURL });
    seeded = await seedDashboardContent(api);
    await api.dispose();
    rows = Object.entries(DASHBOARD_ROUTES).map(([route, fill]) => [route, fill(seeded)]);

    // A viewer, made by an admin on the Admin page.
    const admin = await browser.newPage({ baseURL: E2E.baseURL });
    await signIn(admin, "admin", E2E.adminPassword);
    await admin.goto("/admin");
    const form = admin.getByRole("form", { name: "Create user" });
    await form.getByLabel("New username").fill(MARK.viewer);
    await form.getByLabel("New user password").fill(VIEWER_PASSWORD);
    await form.getByLabel("Role").selectOption("viewer");
    await form.getByRole("button", { name: "Create user" }).click();
    await expect(form.getByRole("status")).toContainText(`Created viewer ${MARK.viewer}`);
    await admin.close();
    viewerContext = await browser.newContext({ baseURL: E2E.baseURL });
    await signIn(await viewerContext.newPage(), MARK.viewer, VIEWER_PASSWORD);
  });

  test.afterAll(async () => {
    await viewerContext?.close();
  });

  test("every route of the build has a row in the table", () => {
    const built = listBuiltRoutes().map((r) => r.route);
    const missing = built.filter((r) => !isPublicRoute(r) && !(r in DASHBOARD_ROUTES));
    expect(missing, "dashboard routes with no row in DASHBOARD_ROUTES (e2e/dashboard-routes.ts): add one").toEqual([]);
    const stale = Object.keys(DASHBOARD_ROUTES).filter((r) => !built.includes(r));
    expect(stale, "rows for routes the build no longer has").toEqual([]);
  });

  test("control: a signed-in admin sees each route's seeded content, as a page and as a client navigation", async ({ page }) => {
    // Every dashboard route, twice.
    test.slow();
    await signIn(page, "admin", E2E.adminPassword);
    // The state tree header a real client-side navigation sends, for the anonymous replay below.
    const navigation = page.waitForRequest((r) => r.headers()["rsc"] === "1" && !r.headers()["next-router-prefetch"] && new URL(r.url()).pathname === "/ledger");
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Ledger" }).click();
    browserTree = (await navigation).headers()["next-router-state-tree"];
    expect(decodeURIComponent(browserTree)).toContain('"(dashboard)"');
    await expect(page.getByRole("heading", { level: 1, name: "Ledger" })).toBeVisible();

    const wrong: string[] = [];
    for (const [route, row] of rows) {
      for (const shape of [{ name: "page", headers: DOCUMENT }, { name: "client navigation", headers: { rsc: "1", "next-router-state-tree": row.url === "/" ? ON_LEDGER : ON_OVERVIEW } }]) {
        const r = await probe(page.request, row.url, shape);
        const missing = row.shows.filter((s) => !r.body.includes(s));
        if (r.status !== 200 || missing.length) wrong.push(`${route} [${shape.name}] → ${r.status}, missing ${JSON.stringify(missing)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test("no session: every dashboard route, in every request shape, is refused with no content", async ({ playwright }) => {
    const anonymous = await playwright.request.newContext({ baseURL: E2E.baseURL });
    const shapes = requestShapes({ browserTree, actionId: listServerActions()[0].id });
    const wrong: string[] = [];
    for (const [route, row] of rows) {
      for (const shape of shapes) {
        const r = await probe(anonymous, row.url, shape);
        const seen = leaked(r.body, [...ALL_MARKS, ...row.shows]);
        if (seen.length) wrong.push(`${route} [${shape.name}] leaked ${JSON.stringify(seen)}: ${show(r)}`);
        if (shape.document) {
          // A person's browser goes to the sign-in page and comes back here afterwards.
          const to = r.location ? new URL(r.location, E2E.baseURL) : null;
          const ok = r.status >= 300 && r.status < 400 && to?.pathname === "/login" && to.searchParams.get("callbackUrl") === row.url;
          if (!ok) wrong.push(`${route} [${shape.name}] expected a redirect to /login?callbackUrl=${row.url}, got ${show(r)}`);
        } else if (r.status !== 401 || !r.body.includes('"unauthorized"')) {
          wrong.push(`${route} [${shape.name}] expected 401 unauthorized, got ${show(r)}`);
        }
      }
    }
    await anonymous.dispose();
    expect(wrong).toEqual([]);
  });

  test("viewer: admin-only routes are refused in every request shape; every other route is served", async () => {
    const shapes = requestShapes({ browserTree, actionId: listServerActions()[0].id });
    const wrong: string[] = [];
    for (const [route, row] of rows) {
      if (row.role === "admin") {
        for (const shape of shapes) {
          const r = await probe(viewerContext.request, row.url, shape);
          const seen = leaked(r.body, row.shows);
          if (seen.length) wrong.push(`${route} [${shape.name}] showed a viewer ${JSON.stringify(seen)}: ${show(r)}`);
          // Every shape gets 403; a person's page load gets the "Admins only" page inside the layout (SECURITY.md).
          if (r.status !== 403) wrong.push(`${route} [${shape.name}] expected 403, got ${show(r)}`);
          if (shape.document && !r.body.includes("Admins only")) wrong.push(`${route} [${shape.name}] expected the "Admins only" page, got ${show(r)}`);
        }
      } else {
        const r = await probe(viewerContext.request, row.url, { headers: DOCUMENT });
        const missing = row.shows.filter((s) => !r.body.includes(s));
        if (r.status !== 200 || missing.length) wrong.push(`${route} [viewer page] → ${r.status}, missing ${JSON.stringify(missing)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test("forged and stale sessions: a bad cookie, a signed token for no account, and a viewer's token claiming admin are refused", async ({ playwright }) => {
    const viewer = userRow(MARK.viewer);
    const identities = [
      { name: "forged cookie", cookie: "next-auth.session-token=forged.not.a.jwt", admin: false },
      { name: "signed token for an account that does not exist", cookie: await signedSessionCookie({ uid: 999_999, role: "admin", sv: 0, name: "ghost" }), admin: false },
      // The role is read from governance.db, never from the token: claiming admin changes nothing.
      { name: "a viewer's signed token claiming admin", cookie: await signedSessionCookie({ uid: viewer.id, role: "admin", sv: viewer.sessionVersion, name: MARK.viewer }), admin: true },
    ];
    const anonymous = await playwright.request.newContext({ baseURL: E2E.baseURL });
    // Control: the same signing, for the real admin, is a working session, so the refusals below are about the claims.
    const admin = userRow("admin");
    const real = await signedSessionCookie({ uid: admin.id, role: "admin", sv: admin.sessionVersion, name: "admin" });
    const control = await probe(anonymous, "/ledger", { headers: { ...DOCUMENT, cookie: real } });
    expect(control.status, show(control)).toBe(200);
    expect(control.body).toContain(MARK.task);

    const shapes = requestShapes({ browserTree, actionId: listServerActions()[0].id });
    const wrong: string[] = [];
    for (const identity of identities) {
      for (const [route, row] of rows) {
        if (identity.admin && row.role !== "admin") continue;
        for (const shape of shapes) {
          const r = await probe(anonymous, row.url, { ...shape, headers: { ...shape.headers, cookie: identity.cookie } });
          const seen = leaked(r.body, [...ALL_MARKS, ...row.shows]);
          if (seen.length || !isRefusal(r)) wrong.push(`${route} [${identity.name}, ${shape.name}] → ${show(r)} leaked ${JSON.stringify(seen)}`);
        }
      }
    }
    await anonymous.dispose();
    expect(wrong).toEqual([]);
  });

  test("no session: the app icon, its PNG sizes and the web manifest are served, and the pages link them", async ({ playwright, page }) => {
    const anonymous = await playwright.request.newContext({ baseURL: E2E.baseURL });
    const expected: [string, RegExp][] = [
      ["/icon.svg", /^image\/svg\+xml/],
      ["/icons/icon-192.png", /^image\/png/],
      ["/icons/icon-512.png", /^image\/png/],
      ["/apple-touch-icon.png", /^image\/png/],
      ["/favicon.ico", /^image\/(x-icon|vnd\.microsoft\.icon)/],
      ["/manifest.webmanifest", /^application\/manifest\+json/],
    ];
    for (const [url, type] of expected) {
      const r = await anonymous.get(url, { maxRedirects: 0 });
      expect(r.status(), url).toBe(200);
      expect(r.headers()["content-type"], url).toMatch(type);
    }
    const manifest = (await (await anonymous.get("/manifest.webmanifest")).json()) as { name: string; icons: { src: string }[] };
    expect(manifest.name).toBe("dualmind");
    for (const icon of manifest.icons) expect((await anonymous.get(icon.src)).status(), icon.src).toBe(200);
    await anonymous.dispose();
    // The sign-in page (public) links the manifest and the icons.
    await page.goto("/login");
    await expect(page.locator('link[rel="manifest"]')).toHaveAttribute("href", "/manifest.webmanifest");
    await expect(page.locator('link[rel="icon"][type="image/svg+xml"]')).toHaveAttribute("href", "/icon.svg");
  });

  test("no session: path tricks around the public prefixes reach no dashboard content", async ({ playwright }) => {
    const anonymous = await playwright.request.newContext({ baseURL: E2E.baseURL });
    const task = `ledger/tasks/${seeded.taskId}`;
    const paths = [
      `/api/..%2f${task}`,
      `/api/%2e%2e/${task}`,
      `/api/v1/..%2f..%2f${task}`,
      `/login/..%2f${task}`,
      `/login%2f..%2f${task}`,
      `/%6c${task.slice(1)}`,
      `/${task}/`,
      `/${task.toUpperCase()}`,
      `/_next/static/..%2f..%2f${task}`,
      `/_next/image?url=${encodeURIComponent(`/${task}`)}&w=64&q=75`,
      `/favicon.ico/..%2f${task}`,
    ];
    const wrong: string[] = [];
    for (const p of paths) {
      for (const shape of [{ name: "document", headers: DOCUMENT }, { name: "RSC + tree", headers: { rsc: "1", "next-router-state-tree": ON_OVERVIEW } }]) {
        const r = await probe(anonymous, p, shape);
        const seen = leaked(r.body, ALL_MARKS);
        if (seen.length || (r.status >= 200 && r.status < 300)) wrong.push(`${p} [${shape.name}] → ${show(r)} leaked ${JSON.stringify(seen)}`);
      }
    }
    await anonymous.dispose();
    expect(wrong).toEqual([]);
  });
});
