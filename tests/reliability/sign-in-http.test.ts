import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { createUser, signInWithPassword } from "@/lib/backend/users";
import { spawnCli } from "../fixtures/cli";
import { governanceSql, useTestBackend, type TestEnv } from "../backend";
import { hostileCallbackUrls } from "../fixtures/hostile-callback-urls";
import { api, startServer, type RunningServer } from "../fixtures/next-server";
import { recordTally } from "./summary";

/**
 * Sign-in over real HTTP against `next start`: the throttle, session
 * revocation from the CLI and callbackUrl handling, as a browser or a
 * script meets them. The server trusts one proxy (DUALMIND_TRUST_PROXY=1),
 * so each test speaks from its own client address via X-Forwarded-For and
 * the per-address counts of one test do not leak into the next. On
 * PostgreSQL (vitest.reliability.pg.config.ts) the users, the throttle and
 * the audit log are the database's, and the CLI runs against it too.
 */

const SESSION_COOKIE = "next-auth.session-token";
const PASSWORDS = { alice: "alice-password", bob: "bob-password", carol: "carol-password", dave: "dave-password" } as const;
let env: TestEnv;
let server: RunningServer;
const tally = { requests: 0, badInputsTried: 0, serverErrorsSeen: 0 };

beforeAll(async () => {
  env = await useTestBackend();
  for (const [username, password] of Object.entries(PASSWORDS)) await createUser({ input: { username, password, role: "viewer" }, actor: "test" });
  server = await startServer({ dataDir: env.dataDir, env: { DUALMIND_TRUST_PROXY: "1" } });
});
afterAll(async () => {
  await server?.stop();
  recordTally("sign-in throttle, revocation, callbackUrl (HTTP)", tally);
  await env?.cleanup();
});

type Answer = { status: number; headers: Headers; text: string; session: string | null };

async function send(urlPath: string, init: RequestInit & { address: string }): Promise<Answer> {
  tally.requests++;
  const headers = new Headers(init.headers);
  headers.set("x-forwarded-for", init.address);
  // A fresh connection each time (see api() in tests/fixtures/next-server.ts): the CLI runs with spawnSync.
  headers.set("connection", "close");
  const res = await fetch(`${server.url}${urlPath}`, { ...init, headers, redirect: "manual" });
  if (res.status >= 500) tally.serverErrorsSeen++;
  const session = res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .find((c) => c.startsWith(`${SESSION_COOKIE}=`) && c.length > SESSION_COOKIE.length + 1);
  return { status: res.status, headers: res.headers, text: await res.text(), session: session ?? null };
}

/** A CSRF token and its cookie, as next-auth's signIn() fetches them first. */
async function csrf(address: string): Promise<{ token: string; cookie: string }> {
  const res = await send("/api/auth/csrf", { address });
  const { csrfToken } = JSON.parse(res.text) as { csrfToken: string };
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  return { token: csrfToken, cookie };
}

/** POST the credentials form; `json` asks for next-auth's `{ url }` answer as signIn() does. */
async function signIn({ username, password, address, callbackUrl, json = true }: { username: string; password: string; address: string; callbackUrl?: string; json?: boolean }): Promise<Answer> {
  const c = await csrf(address);
  const fields: Record<string, string> = { csrfToken: c.token, username, password };
  if (callbackUrl !== undefined) fields.callbackUrl = callbackUrl;
  if (json) fields.json = "true";
  return send("/api/auth/callback/credentials", { method: "POST", address, headers: { "content-type": "application/x-www-form-urlencoded", cookie: c.cookie }, body: new URLSearchParams(fields).toString() });
}

function errorOf(a: Answer): string | null {
  const url = a.headers.get("location") ?? (JSON.parse(a.text) as { url?: string }).url;
  return url ? new URL(url, server.url).searchParams.get("error") : null;
}

describe("sign-in throttle over HTTP", () => {
  it("five wrong passwords get 401; the sixth, and then the right password, get 429 with Retry-After and no session", async () => {
    const address = "198.51.100.11";
    for (let i = 0; i < 5; i++) {
      const r = await signIn({ username: "alice", password: `wrong-${i}`, address });
      tally.badInputsTried++;
      expect(r.status, r.text).toBe(401);
      expect(errorOf(r)).toBe("CredentialsSignin");
    }
    for (const password of ["wrong-6", PASSWORDS.alice]) {
      const r = await signIn({ username: "alice", password, address });
      expect(r.status, r.text).toBe(429);
      expect(r.session).toBeNull();
      expect(errorOf(r)).toMatch(/^TooManyAttempts:\d+$/);
      const wait = Number(r.headers.get("retry-after"));
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(30);
    }
    // A form post (no JS) is still a redirect, to the login page that says when to come back.
    const form = await signIn({ username: "alice", password: PASSWORDS.alice, address, json: false });
    expect(form.status).toBe(302);
    expect(form.session).toBeNull();
    expect(Number(form.headers.get("retry-after"))).toBeGreaterThan(0);
    const errorPage = await send(new URL(form.headers.get("location")!).pathname + new URL(form.headers.get("location")!).search, { address });
    expect(errorPage.status).toBe(302);
    const login = new URL(errorPage.headers.get("location")!, server.url);
    expect(login.pathname).toBe("/login");
    const page = await send(login.pathname + login.search, { address });
    expect(page.text).toMatch(/Too many attempts — try again in \d+ s/);
  });

  it("a lockout written by another process on the same DATA_DIR (database) is honoured: the right password is refused", async () => {
    // Ten failures spread over the last 90 minutes, each after its delay: the last one locks bob for 15 min.
    const now = Date.now();
    for (let i = 1; i <= 10; i++) {
      const r = await signInWithPassword({ username: "bob", password: "wrong", address: null, now: now - (10 - i) * 9 * 60_000 - 1000 });
      expect(r).toEqual({ ok: false, reason: "invalid" });
    }
    const lockout = await governanceSql("select target from audit_log where action = 'auth.lockout'");
    expect(lockout).toEqual([{ target: "user:bob" }]);
    const r = await signIn({ username: "bob", password: PASSWORDS.bob, address: "198.51.100.12" });
    expect(r.status, r.text).toBe(429);
    expect(r.session).toBeNull();
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(14 * 60);
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
  });

  it("an API request made during a burst of sign-ins answers, and the burst gets no 5xx", async () => {
    const address = "198.51.100.13";
    const burst = Promise.all(
      Array.from({ length: 24 }, (_, i) => signIn({ username: `burst-${i % 8}`, password: `guess-${i}`, address })),
    );
    const during = await api(server.url, "GET", "/stores");
    const answers = await burst;
    tally.badInputsTried += answers.length;
    expect(during.status).toBe(200);
    expect(answers.map((a) => a.status).filter((s) => s !== 401 && s !== 429)).toEqual([]);
    expect(answers.every((a) => a.session === null)).toBe(true);
  });

  it("X-Forwarded-For entries left of the trusted proxy's cannot move a client to a fresh address", async () => {
    const address = "198.51.100.14";
    for (let i = 0; i < 20; i++) await signIn({ username: `spray-${i}`, password: "wrong", address: `203.0.113.${i}, ${address}` });
    const r = await signIn({ username: "spray-new", password: "wrong", address: `192.0.2.99, ${address}` });
    expect(r.status, r.text).toBe(429);
  });
});

describe("sessions end when the account changes", () => {
  const cli = (...args: string[]) => spawnCli({ args, env: { DATA_DIR: env.dataDir, DUALMIND_LOG_LEVEL: "warn" } });
  const address = "198.51.100.21";

  /** What the cookie gets: the dashboard itself, and next-auth's session endpoint. */
  async function whoIs(cookie: string): Promise<{ dashboard: string; sessionUser: string | null }> {
    // As a browser asks for a page: the gate redirects a page load to /login and answers other requests 401.
    const page = await send("/", { address, headers: { cookie, accept: "text/html" } });
    const dashboard = page.status === 200 && page.text.includes('data-testid="current-user"') ? "open" : `${page.status} ${page.headers.get("location") ?? ""}`;
    const session = JSON.parse((await send("/api/auth/session", { address, headers: { cookie } })).text) as { user?: { name?: string } };
    return { dashboard, sessionUser: session.user?.name ?? null };
  }

  async function cookieFor(username: string, password: string): Promise<string> {
    const r = await signIn({ username, password, address });
    expect(r.status, r.text).toBe(200);
    expect(r.session).not.toBeNull();
    return r.session!;
  }

  it("a session cookie stops working after `users reset-password` and `users disable` from the CLI", async () => {
    const before = await cookieFor("carol", PASSWORDS.carol);
    expect(await whoIs(before)).toEqual({ dashboard: "open", sessionUser: "carol" });

    const reset = cli("users", "reset-password", "carol", "--password", "carol-new-password");
    expect(reset.code, reset.stderr).toBe(0);
    const revoked = await whoIs(before);
    expect(revoked.dashboard).toMatch(/^30[37] .*\/login/);
    expect(revoked.sessionUser).toBeNull();

    const after = await cookieFor("carol", "carol-new-password");
    expect(await whoIs(after)).toEqual({ dashboard: "open", sessionUser: "carol" });
    expect(cli("users", "disable", "carol").code).toBe(0);
    expect((await whoIs(after)).sessionUser).toBeNull();
    expect(cli("users", "enable", "carol").code).toBe(0);
    // Enabling lets carol sign in again; it does not bring back the session the disable ended.
    expect((await whoIs(after)).sessionUser).toBeNull();
    expect(await whoIs(await cookieFor("carol", "carol-new-password"))).toEqual({ dashboard: "open", sessionUser: "carol" });
  });
});

describe("callbackUrl never sends anyone off this origin", () => {
  const address = "198.51.100.31";
  const home = () => new URL(server.url).origin;
  /** Where a browser goes with this Location: our origin, and a path no later resolution reads as a host. */
  const staysHome = (location: string | null) => {
    if (!location) return false;
    const url = new URL(location, `${server.url}/login`);
    return url.origin === home() && !/^[/\\]{2}/.test(url.pathname);
  };

  it("after a successful sign-in, for every hostile callbackUrl", async () => {
    const wrong: string[] = [];
    for (const hostile of hostileCallbackUrls(new URL(server.url).host)) {
      tally.badInputsTried++;
      const r = await signIn({ username: "dave", password: PASSWORDS.dave, address, callbackUrl: hostile, json: false });
      const location = r.headers.get("location");
      if (r.status !== 302 || !r.session || !staysHome(location)) wrong.push(`${JSON.stringify(hostile)} → ${r.status} ${location}`);
    }
    expect(wrong).toEqual([]);
  });

  it("from the sign-in and sign-out routes, which hand the callbackUrl on", async () => {
    const wrong: string[] = [];
    for (const hostile of hostileCallbackUrls(new URL(server.url).host)) {
      tally.badInputsTried++;
      const c = await csrf(address);
      const signin = await send(`/api/auth/signin?callbackUrl=${encodeURIComponent(hostile)}`, { address, headers: { cookie: c.cookie } });
      const loginPage = new URL(signin.headers.get("location") ?? "", server.url);
      const handedOn = loginPage.searchParams.get("callbackUrl");
      if (!staysHome(signin.headers.get("location")) || (handedOn !== null && !staysHome(handedOn))) wrong.push(`signin ${JSON.stringify(hostile)} → ${signin.headers.get("location")}`);
      const signout = await send("/api/auth/signout", {
        method: "POST",
        address,
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: c.cookie },
        body: new URLSearchParams({ csrfToken: c.token, callbackUrl: hostile }).toString(),
      });
      if (!staysHome(signout.headers.get("location"))) wrong.push(`signout ${JSON.stringify(hostile)} → ${signout.status} ${signout.headers.get("location")}`);
    }
    expect(wrong).toEqual([]);
  });
});
