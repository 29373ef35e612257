import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { governanceSql, seedStore, seedToken, sqliteOnlyCheck, useTestBackend, type TestEnv } from "../backend";
import { RELIABILITY_PASSWORD, startServer, type RunningServer } from "../fixtures/next-server";
import { identitySnapshotOf } from "./identity-snapshot";
import { recordTally } from "./summary";

/**
 * The two endpoints outside the /api/v1 wrapper, over real HTTP against
 * `next start` (next-auth reads cookies and headers from Next's request
 * context, so it cannot be called in-process like the API routes). On
 * SQLite and, in vitest.reliability.pg.config.ts, on PostgreSQL.
 */

const SESSION_COOKIE = "next-auth.session-token";
let env: TestEnv;
let server: RunningServer;
const tokens = { admin: "", read: "", otherStore: "", revoked: "" };
const tally = { requests: 0, badInputsTried: 0, serverErrorsSeen: 0 };

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_ADMIN_PASSWORD: RELIABILITY_PASSWORD });
  await seedStore("rel");
  await seedStore("other");
  tokens.admin = await seedToken({ label: "a", agent_id: "http-admin", scopes: ["admin"] });
  tokens.read = await seedToken({ label: "r", agent_id: "http-reader", scopes: ["read"] });
  tokens.otherStore = await seedToken({ label: "o", agent_id: "http-other", scopes: ["read"], stores: ["other"] });
  const revoked = await governance().createApiToken({ input: { label: "x", agent_id: "http-gone", scopes: ["admin"] }, actor: "test" });
  tokens.revoked = revoked.token;
  await governance().revokeApiToken({ id: revoked.info.id, actor: "test" });
  server = await startServer({ dataDir: env.dataDir });
});
afterAll(async () => {
  await server?.stop();
  recordTally("bad input: /api/metrics and /api/auth (HTTP)", tally);
  await env?.cleanup();
});

type Answer = { status: number; headers: Headers; text: string; sessionIssued: boolean };
type HttpCase = { name: string; method?: string; path: string; headers?: Record<string, string>; body?: string | Uint8Array };

/** One request, redirects not followed (next-auth's answer is the redirect); every one is counted, and every 5xx. */
async function send(c: HttpCase, { badInput = true } = {}): Promise<Answer> {
  tally.requests++;
  if (badInput) tally.badInputsTried++;
  const res = await fetch(`${server.url}${c.path}`, { method: c.method ?? "GET", headers: c.headers, body: c.body as BodyInit | undefined, redirect: "manual" });
  if (res.status >= 500) tally.serverErrorsSeen++;
  const sessionIssued = res.headers.getSetCookie().some((cookie) => cookie.startsWith(`${SESSION_COOKIE}=`) && !/=;|Max-Age=0/i.test(cookie));
  return { status: res.status, headers: res.headers, text: await res.text(), sessionIssued };
}

/** Users, tokens and the audit log on this backend (see identity-snapshot.ts). */
const identitySnapshot = () => identitySnapshotOf((sql) => governanceSql(sql));

function isEnvelope(text: string): boolean {
  try {
    const e = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } }).error;
    return typeof e?.code === "string" && typeof e.message === "string" && Array.isArray(e.details);
  } catch {
    return false;
  }
}

describe("/api/metrics: tokens, methods, query and headers", () => {
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  // A caller that a reverse proxy on this host reports as remote.
  const remote = { "x-forwarded-for": "203.0.113.9" };
  type MetricsCase = HttpCase & { expect: number; envelope?: boolean };
  const cases = (): MetricsCase[] => [
    { name: "no token from a remote caller", path: "/api/metrics", headers: remote, expect: 401, envelope: true },
    { name: "no token, remote behind a loopback hop", path: "/api/metrics", headers: { "x-forwarded-for": "127.0.0.1, 203.0.113.9" }, expect: 401, envelope: true },
    { name: "revoked token", path: "/api/metrics", headers: bearer(tokens.revoked), expect: 401, envelope: true },
    { name: "unknown token", path: "/api/metrics", headers: bearer("dm_not-a-token"), expect: 401, envelope: true },
    { name: "empty bearer", path: "/api/metrics", headers: { authorization: "Bearer " }, expect: 401, envelope: true },
    { name: "token in the wrong scheme", path: "/api/metrics", headers: { authorization: `Basic ${tokens.read}` }, expect: 401, envelope: true },
    { name: "SQL-looking token", path: "/api/metrics", headers: bearer("' OR 1=1 --"), expect: 401, envelope: true },
    { name: "8 KB token", path: "/api/metrics", headers: bearer("x".repeat(8 * 1024)), expect: 401, envelope: true },
    // Node refuses a header block over 16 KB before the app sees it.
    { name: "64 KB authorization header", path: "/api/metrics", headers: bearer("x".repeat(64 * 1024)), expect: 431 },
    { name: "64 KB junk header, valid token", path: "/api/metrics", headers: { ...bearer(tokens.read), "x-junk": "y".repeat(64 * 1024) }, expect: 431 },
    ...["POST", "PUT", "PATCH", "DELETE"].map((method) => ({ name: `${method} with an admin token`, method, path: "/api/metrics", headers: bearer(tokens.admin), body: method === "DELETE" ? undefined : "{}", expect: 405 })),
    { name: "HEAD from a remote caller", method: "HEAD", path: "/api/metrics", headers: remote, expect: 401 },
    // The route takes no query: like every query-less /api/v1 route it ignores one, so junk there changes nothing.
    ...["?limit=-1", "?limit=99999999999999", "?name[]=a&name[]=b", "?%ff=%00", "?format=json&store=../../etc", `?q=${"z".repeat(6000)}`].map((q) => ({ name: `query ${q.slice(0, 30)}`, path: `/api/metrics${q}`, headers: bearer(tokens.read), expect: 200 })),
  ];

  it("table-driven: the right status, the envelope where the app answers, nothing written", async () => {
    const before = await identitySnapshot();
    const wrong: string[] = [];
    for (const c of cases()) {
      const r = await send(c);
      if (r.status !== c.expect) wrong.push(`${c.method ?? "GET"} [${c.name}] → ${r.status} ${r.text.slice(0, 120)}`);
      else if (c.envelope && c.method !== "HEAD" && !isEnvelope(r.text)) wrong.push(`[${c.name}] no error envelope: ${r.text.slice(0, 120)}`);
      else if (c.expect === 200 && !r.text.includes("dualmind_http_requests_total")) wrong.push(`[${c.name}] 200 without the exposition`);
    }
    expect(wrong).toEqual([]);
    expect(await identitySnapshot()).toBe(before);
  });

  it("read scope is enough; a store-scoped token sees only its stores and no governance gauges", async () => {
    for (const t of [tokens.read, tokens.admin]) {
      const r = await send({ name: "scrape", path: "/api/metrics", headers: bearer(t) }, { badInput: false });
      expect(r.status).toBe(200);
      expect(r.text).toContain('dualmind_store_status{store="rel"');
      await sqliteOnlyCheck("the database file sizes are index.db's (PostgreSQL stores have no files)", () => expect(r.text).toContain('dualmind_db_bytes{db="rel"'));
    }
    const scoped = await send({ name: "scoped scrape", path: "/api/metrics", headers: bearer(tokens.otherStore) }, { badInput: false });
    expect(scoped.status).toBe(200);
    expect(scoped.text).toContain('dualmind_store_status{store="other"');
    expect(scoped.text).not.toContain('store="rel"');
    expect(scoped.text).not.toContain('db="rel"');
    expect(scoped.text).not.toContain('db="governance"');
  });
});

describe("/api/auth (next-auth credentials): never a 5xx, never a session for a bad sign-in", () => {
  type Csrf = { token: string; cookie: string };
  async function freshCsrf(): Promise<Csrf> {
    tally.requests++;
    const res = await fetch(`${server.url}/api/auth/csrf`);
    const { csrfToken } = (await res.json()) as { csrfToken: string };
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    return { token: csrfToken, cookie };
  }
  const form = (csrf: Csrf, fields: Record<string, string>, extra = "") => ({
    method: "POST",
    path: "/api/auth/callback/credentials",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: csrf.cookie },
    body: new URLSearchParams(fields).toString() + extra,
  });
  const json = (csrf: Csrf, body: string | Uint8Array) => ({ method: "POST", path: "/api/auth/callback/credentials", headers: { "content-type": "application/json", cookie: csrf.cookie }, body });
  const raw = (csrf: Csrf, contentType: string, body: string | Uint8Array) => ({ method: "POST", path: "/api/auth/callback/credentials", headers: { "content-type": contentType, cookie: csrf.cookie }, body });
  const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p) : Buffer.from(p))));

  /**
   * Bad sign-ins: each must be refused (a redirect with ?error= or ?csrf=true, or a 4xx), with no session cookie.
   * Failed sign-ins are throttled per name (lib/auth/login-throttle.ts: five are free): these charge admin
   * four, so the right-password sign-in at the end of this file still goes through. The throttle itself is
   * tested in sign-in-http.test.ts.
   */
  function signInCases(csrf: Csrf): (HttpCase & { outcome?: RegExp; status?: number })[] {
    const t = csrf.token;
    const denied = /error=CredentialsSignin/;
    const csrfRefused = /csrf=true/;
    return [
      { name: "wrong password", ...form(csrf, { csrfToken: t, username: "admin", password: "wrong" }), outcome: denied },
      { name: "unknown user", ...form(csrf, { csrfToken: t, username: "nobody", password: RELIABILITY_PASSWORD }), outcome: denied },
      { name: "missing password", ...form(csrf, { csrfToken: t, username: "admin" }), outcome: denied },
      { name: "missing username", ...form(csrf, { csrfToken: t, password: RELIABILITY_PASSWORD }), outcome: denied },
      { name: "missing both", ...form(csrf, { csrfToken: t }), outcome: denied },
      { name: "right password, no CSRF token", ...form(csrf, { username: "admin", password: RELIABILITY_PASSWORD }), outcome: csrfRefused },
      { name: "right password, wrong CSRF token", ...form(csrf, { csrfToken: "0".repeat(64), username: "admin", password: RELIABILITY_PASSWORD }), outcome: csrfRefused },
      { name: "right password, CSRF token without its cookie", ...form({ ...csrf, cookie: "" }, { csrfToken: t, username: "admin", password: RELIABILITY_PASSWORD }), outcome: csrfRefused },
      { name: "1 MB username", ...form(csrf, { csrfToken: t, username: "a".repeat(1024 * 1024), password: "x" }), status: 413 },
      { name: "1 MB password", ...form(csrf, { csrfToken: t, username: "admin", password: "p".repeat(1024 * 1024) }), status: 413 },
      { name: "NUL after the username", ...form(csrf, { csrfToken: t, username: "admin\u0000", password: RELIABILITY_PASSWORD }), outcome: denied },
      { name: "NUL after the right password", ...form(csrf, { csrfToken: t, username: "admin", password: `${RELIABILITY_PASSWORD}\u0000` }), outcome: denied },
      { name: "SQL-looking username", ...form(csrf, { csrfToken: t, username: "admin' --", password: "x" }), outcome: denied },
      { name: "SQL-looking password", ...form(csrf, { csrfToken: t, username: "admin", password: "' OR '1'='1" }), outcome: denied },
      { name: "invalid UTF-8 in the form", ...raw(csrf, "application/x-www-form-urlencoded", bytes(`csrfToken=${t}&username=`, [0xc3, 0x28, 0xff], "&password=%ff%fe")), status: 400 },
      { name: "JSON: fields of the wrong type", ...json(csrf, JSON.stringify({ csrfToken: t, username: 1, password: [RELIABILITY_PASSWORD] })), outcome: denied },
      { name: "JSON: operator object as username", ...json(csrf, JSON.stringify({ csrfToken: t, username: { $ne: null }, password: { $gt: "" } })), outcome: denied },
      { name: "JSON: invalid UTF-8", ...json(csrf, bytes(`{"csrfToken":"${t}","username":"`, [0xc3, 0x28, 0xff], '","password":"x"}')), status: 400 },
      ...["[]", "null", '"text"', "42"].map((b) => ({ name: `JSON: body ${b}`, ...json(csrf, b), outcome: csrfRefused })),
      { name: "JSON: deeply nested (400 kB)", ...json(csrf, "[".repeat(200_000) + "]".repeat(200_000)), status: 413 },
      { name: "JSON: deeply nested within the size limit", ...json(csrf, "[".repeat(5_000) + "]".repeat(5_000)), outcome: csrfRefused },
      { name: "JSON: truncated", ...json(csrf, '{"csrfToken":'), status: 400 },
      { name: "text/plain body with the right password", ...raw(csrf, "text/plain", `csrfToken=${t}&username=admin&password=${RELIABILITY_PASSWORD}`), outcome: csrfRefused },
      { name: "json=true asks for JSON instead of a redirect", ...form(csrf, { csrfToken: t, username: "admin", password: "wrong", json: "true" }), status: 401 },
      { name: "unknown provider's callback", ...form(csrf, { csrfToken: t, username: "admin", password: RELIABILITY_PASSWORD }), path: "/api/auth/callback/github", status: 400 },
      { name: "sign in with an unknown provider", ...form(csrf, { csrfToken: t }), path: "/api/auth/signin/github", outcome: /error|csrf=true/ },
    ];
  }

  /** Sub-paths next-auth does not serve, and methods it does not take. */
  const pathCases: (HttpCase & { status: number | "4xx" | "3xx" })[] = [
    { name: "GET unknown action", path: "/api/auth/nope", status: 400 },
    { name: "POST unknown action", method: "POST", path: "/api/auth/nope", status: 400 },
    { name: "GET deeper unknown path", path: "/api/auth/nope/deeper/still", status: 400 },
    { name: "GET the credentials callback", path: `/api/auth/callback/credentials?username=admin&password=${RELIABILITY_PASSWORD}`, status: 405 },
    { name: "GET the credentials callback, extra segment", path: "/api/auth/callback/credentials/extra", status: 405 },
    { name: "GET sign-in with an unknown provider", path: "/api/auth/signin/github", status: "3xx" },
    { name: "encoded traversal", path: "/api/auth/..%2f..%2fapi%2fv1%2ftokens", status: "4xx" },
    { name: "PUT session", method: "PUT", path: "/api/auth/session", body: "{}", status: "4xx" },
    { name: "DELETE csrf", method: "DELETE", path: "/api/auth/csrf", status: "4xx" },
    { name: "POST sign-out without a CSRF token", method: "POST", path: "/api/auth/signout", status: "3xx" },
  ];

  it("table-driven bad sign-ins: refused, no session cookie, nothing written", async () => {
    const csrf = await freshCsrf();
    const before = await identitySnapshot();
    const wrong: string[] = [];
    for (const c of signInCases(csrf)) {
      const r = await send(c);
      const where = r.headers.get("location") ?? r.text;
      if (r.status >= 500) wrong.push(`[${c.name}] → ${r.status} ${r.text.slice(0, 120)}`);
      else if (r.sessionIssued) wrong.push(`[${c.name}] issued a session cookie`);
      else if (c.status !== undefined && r.status !== c.status) wrong.push(`[${c.name}] → ${r.status}, expected ${c.status}: ${where.slice(0, 120)}`);
      else if (c.outcome && !(r.status === 302 && c.outcome.test(where))) wrong.push(`[${c.name}] → ${r.status} ${where.slice(0, 120)}, expected a redirect matching ${c.outcome}`);
    }
    for (const c of pathCases) {
      const r = await send({ ...c, headers: { ...c.headers, cookie: csrf.cookie } });
      const ok = c.status === "4xx" ? r.status >= 400 && r.status < 500 : c.status === "3xx" ? r.status >= 300 && r.status < 400 : r.status === c.status;
      if (!ok || r.sessionIssued) wrong.push(`${c.method ?? "GET"} ${c.path.slice(0, 60)} [${c.name}] → ${r.status}${r.sessionIssued ? " with a session cookie" : ""} ${r.text.slice(0, 80)}`);
    }
    expect(wrong).toEqual([]);
    expect(await identitySnapshot()).toBe(before);
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
  });

  it("what the person sees after a failed sign-in: the login page with the error, and no session", async () => {
    const csrf = await freshCsrf();
    // An unknown name: it must look exactly like a wrong password, and it leaves admin's free failures alone.
    const failed = await send({ name: "failed sign-in", ...form(csrf, { csrfToken: csrf.token, username: "nobody", password: "wrong" }) });
    // next-auth's error page hands over to our sign-in page (pages.signIn), which shows the error.
    let location = failed.headers.get("location");
    for (let hops = 0; location && hops < 5; hops++) {
      const next = await send({ name: "follow", path: new URL(location, server.url).pathname + new URL(location, server.url).search, headers: { cookie: csrf.cookie } }, { badInput: false });
      if (next.status < 300 || next.status >= 400) break;
      location = next.headers.get("location");
    }
    const landed = new URL(location ?? "", server.url);
    expect(landed.pathname).toBe("/login");
    expect(landed.searchParams.get("error")).toBe("CredentialsSignin");
    const session = await send({ name: "session", path: "/api/auth/session", headers: { cookie: csrf.cookie } }, { badInput: false });
    expect(session.status).toBe(200);
    expect(JSON.parse(session.text)).toEqual({});
  });

  it("the right credentials with the right CSRF token do sign in (so the checks above can see a session)", async () => {
    const csrf = await freshCsrf();
    const ok = await send({ name: "sign in", ...form(csrf, { csrfToken: csrf.token, username: "admin", password: RELIABILITY_PASSWORD }) }, { badInput: false });
    expect(ok.status).toBe(302);
    expect(ok.sessionIssued).toBe(true);
    const cookie = [csrf.cookie, ...ok.headers.getSetCookie().map((c) => c.split(";")[0])].join("; ");
    const session = await send({ name: "session", path: "/api/auth/session", headers: { cookie } }, { badInput: false });
    expect((JSON.parse(session.text) as { user?: { name?: string } }).user?.name).toBe("admin");
  });
});

describe("methods the fetch standard forbids (fetch cannot send them: raw node:http)", () => {
  /** One raw request: status, headers and body. */
  function raw(method: string, urlPath: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
    tally.requests++;
    tally.badInputsTried++;
    return new Promise((resolve, reject) => {
      const req = http.request(`${server.url}${urlPath}`, { method }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          if ((res.statusCode ?? 0) >= 500) tally.serverErrorsSeen++;
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
        });
      });
      req.on("error", reject);
      req.end();
    });
  }

  it("TRACE and methods this server does not serve (PROPFIND, MKCOL) answer 405 with the error envelope and the security headers on the API, MCP, pages and sign-in (TRACE answered 500 with a stack trace in the log, PROPFIND 400 with no body)", async () => {
    const wrong: string[] = [];
    for (const method of ["TRACE", "PROPFIND", "MKCOL"]) {
      for (const urlPath of ["/api/v1/health", "/api/v1/stores/rel/search?q=x", "/api/mcp", "/", "/login", "/api/auth/session", "/api/metrics", "/no-such-page"]) {
        const r = await raw(method, urlPath);
        if (r.status !== 405 || !isEnvelope(r.text) || r.headers["x-content-type-options"] !== "nosniff" || !r.headers["content-security-policy"] || r.headers.allow !== "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS") {
          wrong.push(`${method} ${urlPath} → ${r.status} ${r.text.slice(0, 100)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
    // The server still answers everything else.
    expect((await raw("GET", "/api/v1/health")).status).toBe(200);
  });

  it("a TRACE asking for a connection upgrade is answered 405 and the connection closed (it was left open, with a stack trace in the log)", async () => {
    const { port } = new URL(server.url);
    for (const urlPath of ["/", "/api/v1/health"]) {
      tally.requests++;
      tally.badInputsTried++;
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(port), "127.0.0.1", () => socket.write(`TRACE ${urlPath} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`));
        let text = "";
        socket.setEncoding("utf8");
        socket.on("data", (c: string) => (text += c));
        // The server ends the connection: "end" comes without the test closing anything.
        socket.on("end", () => resolve(text));
        socket.on("error", reject);
      });
      expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 405 Method Not Allowed");
      expect(isEnvelope(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toBe(true);
    }
    expect((await raw("GET", "/api/v1/health")).status).toBe(200);
  });
});
