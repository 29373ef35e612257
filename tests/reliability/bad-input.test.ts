import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { governance } from "@/lib/backend/governance";
import { getStoreDb } from "@/lib/db/connection";
import type { DescribedHandler } from "@/lib/api/route";
import { onPg, seedStore, seedToken, sqliteOnlyCheck, useTestBackend, type TestEnv } from "../backend";
import { snapshotDatabases, snapshotPgDatabase } from "./db-snapshot";
import { recordTally } from "./summary";

type Handler = (req: Request, ctx: { params: Promise<Record<string, string | string[] | undefined>> }) => Promise<Response>;
type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
type Endpoint = {
  file: string;
  urlPath: string;
  method: Method;
  auth: "public" | "read" | "write" | "admin";
  hasBody: boolean;
  hasQuery: boolean;
  /** Set for routes that take a larger body than the global limit (restore). */
  bodyLimitBytes: number;
  paramNames: string[];
  /** An id of the right format (but unknown), so the cases reach the check they are about. */
  idValue: string;
  handler: Handler;
};

const API_ROOT = path.join(process.cwd(), "app", "api", "v1");
const STORE = "rel";

/** Every /api/v1 route file, with what its defineRoute spec declares per method (read from the source, so a new route is covered by itself). */
function discoverEndpoints(): Omit<Endpoint, "handler">[] {
  const files = fs.readdirSync(API_ROOT, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith("route.ts") && !f.includes("[...path]"));
  const out: Omit<Endpoint, "handler">[] = [];
  for (const rel of files) {
    const source = fs.readFileSync(path.join(API_ROOT, rel), "utf8");
    const dir = path.dirname(rel).split(path.sep).join("/");
    const paramNames = [...dir.matchAll(/\[(\w+)\]/g)].map((m) => m[1]);
    const segments = source.split(/export const (GET|POST|PUT|PATCH|DELETE) = defineRoute\(\{/);
    for (let i = 1; i < segments.length; i += 2) {
      const spec = segments[i + 1];
      const auth = /auth:\s*"(\w+)"/.exec(spec)?.[1] as Endpoint["auth"];
      const limit = /maxBodyBytes:\s*([\d\s*]+),/.exec(spec)?.[1];
      out.push({
        file: rel,
        urlPath: `/api/v1/${dir}`,
        method: segments[i] as Method,
        auth,
        hasBody: /\n\s+body:/.test(spec),
        hasQuery: /\n\s+query:/.test(spec),
        bodyLimitBytes: limit ? limit.split("*").reduce((a, b) => a * Number(b.trim()), 1) : 1024 * 1024,
        paramNames,
        idValue: "999999",
      });
    }
  }
  return out;
}

/** Row counts of every table of the backend (and the data dir's listing): "nothing written" means this does not change. */
function snapshot(): Promise<string> {
  return onPg ? snapshotPgDatabase({ dataDir: env.dataDir }) : Promise.resolve(snapshotDatabases({ dataDir: env.dataDir, stores: [STORE, "other"] }));
}

let env: TestEnv;
const tokens = { admin: "", write: "", read: "", revoked: "", otherStore: "", stranger: "" };
let endpoints: Endpoint[] = [];
let tried = 0;
let serverErrors = 0;

beforeAll(async () => {
  // On SQLite (npm run test:reliability) and on PostgreSQL (npm run test:pg, DM_TEST_BACKEND=pg: tests/pg/both-backends.ts).
  env = await useTestBackend({ DUALMIND_BOOTSTRAP_TOKEN: "bad-input-bootstrap-token-0123456789abcdef" });
  await seedStore(STORE);
  await seedStore("other");
  tokens.admin = await seedToken({ label: "a", agent_id: "admin-agent", scopes: ["admin"] });
  tokens.write = await seedToken({ label: "w", agent_id: "writer", scopes: ["write"] });
  tokens.read = await seedToken({ label: "r", agent_id: "reader", scopes: ["read"] });
  tokens.otherStore = await seedToken({ label: "o", agent_id: "other-agent", scopes: ["admin"], stores: ["other"] });
  tokens.stranger = await seedToken({ label: "s", agent_id: "stranger", scopes: ["write"] });
  const revoked = await governance().createApiToken({ input: { label: "x", agent_id: "gone", scopes: ["admin"] }, actor: "test" });
  tokens.revoked = revoked.token;
  await governance().revokeApiToken({ id: revoked.info.id, actor: "test" });
  for (const e of discoverEndpoints()) {
    const mod = (await import(/* @vite-ignore */ path.join(API_ROOT, e.file))) as Partial<Record<Method, Handler>>;
    const handler = mod[e.method];
    if (!handler) throw new Error(`${e.file} declares ${e.method} but does not export it`);
    endpoints.push({ ...e, handler });
  }
  for (const e of endpoints.filter((x) => x.paramNames.some((p) => p !== "store"))) {
    for (const id of ID_FORMATS) {
      const probe = await send({ ...e, idValue: id }, { name: "probe", token: tokens.admin, expect: "4xx" }, false);
      if (probe.json?.error?.message !== "invalid params") {
        e.idValue = id;
        break;
      }
    }
  }
  endpoints = endpoints.sort((x, y) => `${x.urlPath} ${x.method}`.localeCompare(`${y.urlPath} ${y.method}`));
});
afterAll(async () => {
  recordTally(`bad input: every /api/v1 route${onPg ? " (PostgreSQL)" : ""}`, { requests: tried, badInputsTried: tried, serverErrorsSeen: serverErrors });
  await env.cleanup();
});

type Case = { name: string; token?: string; params?: Record<string, string>; query?: string; headers?: Record<string, string>; body?: string | Uint8Array; expect: number | "4xx" };

const ID_FORMATS = ["999999", "00000000-0000-4000-8000-000000000000", "0".repeat(32), "unknown-id"];

async function send(e: Endpoint, c: Case, counted = true): Promise<{ status: number; json: { error?: { code: string; message: string; details: unknown[] } } | null }> {
  if (counted) tried++;
  // An item route's kind is one of a closed set: a real one, so the cases reach the check they are about.
  const params = { ...Object.fromEntries(e.paramNames.map((p) => [p, p === "store" ? STORE : p === "kind" ? "memory" : e.idValue])), ...c.params };
  const urlPath = e.urlPath.replace(/\[(\w+)\]/g, (_, p: string) => encodeURIComponent(params[p]));
  const headers: Record<string, string> = { ...c.headers };
  if (c.token) headers.authorization = `Bearer ${c.token}`;
  if (c.body !== undefined) headers["content-type"] ??= "application/json";
  const req = new Request(`http://127.0.0.1${urlPath}${c.query ?? ""}`, { method: e.method, headers, body: c.body === undefined ? undefined : (c.body as BodyInit) });
  const res = await e.handler(req, { params: Promise.resolve(params) });
  if (res.status >= 500) serverErrors++;
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

const DEEP_JSON = "[".repeat(200_000) + "]".repeat(200_000);
/** 3,000 levels inside a field: deep enough to overflow a recursive validator (a task spec, node attributes), small enough to pass the size limit. */
const DEEP_FIELD = "[".repeat(3000) + "]".repeat(3000);
const INVALID_UTF8 = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0x22, 0x7d]);
const HOSTILE_STRINGS = ["\u0000nul\u0000", "../../../etc/passwd", '" OR 1=1; DROP TABLE documents; --', 'NEAR("a" "b") OR content:*', "<script>window.__xss=1</script>", "x".repeat(100_000), "\ud800"];

/** The table: each endpoint × each bad input it can receive, with the status it must answer. */
function casesFor(e: Endpoint): Case[] {
  const cases: Case[] = [];
  const enough = e.auth === "read" ? tokens.read : e.auth === "write" ? tokens.write : tokens.admin;
  const tooWeak = e.auth === "write" ? tokens.read : e.auth === "admin" ? tokens.write : null;
  if (e.auth !== "public") {
    cases.push({ name: "no token", expect: 401 });
    cases.push({ name: "revoked token", token: tokens.revoked, expect: 401 });
    cases.push({ name: "unknown token", token: "dm_not-a-token", expect: 401 });
    cases.push({ name: "token in the wrong scheme", headers: { authorization: `Basic ${tokens.admin}` }, expect: 401 });
    if (tooWeak) cases.push({ name: `scope below ${e.auth}`, token: tooWeak, expect: 403 });
    if (e.paramNames.includes("store")) cases.push({ name: "token of another store", token: tokens.otherStore, expect: 403 });
  }
  const token = e.auth === "public" ? undefined : enough;
  if (e.paramNames.includes("store")) {
    cases.push({ name: "store path traversal", token, params: { store: "../etc" }, expect: 400 });
    cases.push({ name: "store with NUL", token, params: { store: "rel\u0000x" }, expect: 400 });
    cases.push({ name: "store upper case and spaces", token, params: { store: "Bad Store" }, expect: 400 });
    cases.push({ name: "unknown store", token: tokens.admin, params: { store: "nosuchstore" }, expect: "4xx" });
  }
  for (const p of e.paramNames.filter((n) => n !== "store")) {
    for (const bad of ["../../etc/passwd", "a\u0000b", "9".repeat(400), "-1", "' OR 1=1 --"]) cases.push({ name: `${p}=${JSON.stringify(bad.slice(0, 20))}`, token, params: { [p]: bad }, expect: "4xx" });
  }
  if (e.hasBody) {
    cases.push({ name: "body not JSON content type", token, headers: { "content-type": "text/plain" }, body: "{}", expect: 415 });
    cases.push({ name: "truncated JSON", token, body: '{"a":', expect: 400 });
    cases.push({ name: "invalid UTF-8", token, body: INVALID_UTF8, expect: 400 });
    cases.push({ name: "deeply nested JSON", token, body: DEEP_JSON, expect: 400 });
    const body = (e.handler as DescribedHandler).route.body;
    const fields = Object.keys(body instanceof z.ZodObject ? body.shape : { zz: 1 });
    cases.push({ name: "every body field nested 3,000 deep", token, body: `{${fields.map((f) => `${JSON.stringify(f)}:${DEEP_FIELD}`).join(",")}}`, expect: 400 });
    cases.push({ name: "body over the limit", token, body: JSON.stringify({ content: "x".repeat(e.bodyLimitBytes + 10) }), expect: 413 });
    for (const wrong of ["[]", '"text"', "42", "null", "true"]) cases.push({ name: `body ${wrong}`, token, body: wrong, expect: 400 });
    cases.push({ name: "unknown field", token, body: JSON.stringify({ zz_unknown_field: 1 }), expect: 400 });
    cases.push({ name: "fields of the wrong type", token, body: JSON.stringify({ path: 1, content: [], query: {}, name: null, topic: 7, intent: 5, reasoning: false, spec: undefined, limit: "x" }), expect: 400 });
    for (const s of HOSTILE_STRINGS) cases.push({ name: `hostile string in an unknown field ${JSON.stringify(s.slice(0, 12))}`, token, body: JSON.stringify({ zz_unknown_field: s }), expect: 400 });
  }
  if (e.hasQuery) {
    for (const q of ["?limit=-1", "?limit=99999999999999", "?limit=abc", "?offset=-5", "?zz_unknown_param=1"]) cases.push({ name: `query ${q}`, token, query: q, expect: 400 });
  }
  return cases;
}

describe("bad input on every /api/v1 route: the right 4xx, the envelope, nothing written", () => {
  it("covers every route file", () => {
    expect(endpoints.length).toBeGreaterThan(80);
    expect(new Set(endpoints.map((e) => e.file)).size).toBe(fs.readdirSync(API_ROOT, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith("route.ts") && !f.includes("[...path]")).length);
  });

  it("table-driven: each endpoint × each bad input", async () => {
    const wrong: string[] = [];
    // Each endpoint's cases start from the state the previous endpoint's left (nothing else writes in between).
    let before = await snapshot();
    for (const e of endpoints) {
      for (const c of casesFor(e)) {
        const r = await send(e, c);
        const okStatus = c.expect === "4xx" ? r.status >= 400 && r.status < 500 : r.status === c.expect;
        const envelope = r.json?.error && typeof r.json.error.code === "string" && typeof r.json.error.message === "string" && Array.isArray(r.json.error.details);
        if (!okStatus || !envelope) wrong.push(`${e.method} ${e.urlPath} [${c.name}] → ${r.status} ${JSON.stringify(r.json).slice(0, 160)}`);
      }
      const after = await snapshot();
      if (after !== before) wrong.push(`${e.method} ${e.urlPath}: bad input changed the database`);
      before = after;
    }
    expect(wrong).toEqual([]);
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
  });

  it("unknown API paths answer 404 with the envelope", async () => {
    const { GET, POST } = await import("@/app/api/v1/[...path]/route");
    for (const h of [GET, POST]) {
      tried++;
      const res = await h(new Request("http://127.0.0.1/api/v1/../../etc/passwd", { method: "GET" }), { params: Promise.resolve({ path: ["..", "etc"] }) });
      expect(res.status).toBe(404);
      expect((await res.json()).error.code).toBe("not_found");
    }
  });
});

describe("hostile content that is valid input", () => {
  const byRoute = (urlPath: string, method: Method) => {
    const e = endpoints.find((x) => x.urlPath === urlPath && x.method === method);
    if (!e) throw new Error(`no endpoint ${method} ${urlPath}`);
    return e;
  };

  it("FTS syntax and SQL-looking text in search, recall and remember are searched as words, never run", async () => {
    const put = byRoute("/api/v1/stores/[store]/documents", "PUT");
    expect((await send(put, { name: "seed", token: tokens.write, body: JSON.stringify({ path: "notes/seed.md", content: "# Seed\n\nrotation drill for the backup" }), expect: 200 })).status).toBe(200);
    const docsBefore = (await snapshot()).match(/documents=\d+/g)?.join();
    for (const q of HOSTILE_STRINGS.filter((s) => s.length < 1000 && !s.includes("\ud800"))) {
      for (const mode of ["fts", "hybrid"]) {
        const r = await send(byRoute("/api/v1/stores/[store]/search", "GET"), { name: "q", token: tokens.read, query: `?q=${encodeURIComponent(q)}&mode=${mode}`, expect: 200 });
        expect([200, 400]).toContain(r.status);
      }
      const recall = await send(byRoute("/api/v1/stores/[store]/recall", "POST"), { name: "recall", token: tokens.read, body: JSON.stringify({ query: q }), expect: 200 });
      expect([200, 400]).toContain(recall.status);
      const remember = await send(byRoute("/api/v1/stores/[store]/remember", "POST"), { name: "remember", token: tokens.read, body: JSON.stringify({ query: q }), expect: 200 });
      expect([200, 400]).toContain(remember.status);
    }
    expect((await snapshot()).match(/documents=\d+/g)?.join()).toBe(docsBefore);
    await sqliteOnlyCheck("index.db integrity_check", () => expect(getStoreDb({ store: STORE }).sqlite.pragma("integrity_check", { simple: true })).toBe("ok"));
  });

  it("a NUL character in text to store: never a 500 (PostgreSQL text cannot hold U+0000: a 400 naming it there)", async () => {
    const cases: [Endpoint, string][] = [
      [byRoute("/api/v1/stores/[store]/documents", "PUT"), JSON.stringify({ path: "notes/nul.md", content: "before\u0000after" })],
      [byRoute("/api/v1/stores/[store]/thoughts", "POST"), JSON.stringify({ content: "a thought with \u0000 inside" })],
      [byRoute("/api/v1/stores/[store]/traces", "POST"), JSON.stringify({ intent: { verb: "fix", target: "nul \u0000 byte" }, shard_type: "api", outcome: "failure" })],
    ];
    for (const [e, body] of cases) {
      const r = await send(e, { name: "nul", token: tokens.write, body, expect: "4xx" });
      expect([e.urlPath, r.status < 500]).toEqual([e.urlPath, true]);
      if (r.status >= 400) expect(r.json?.error?.message).toMatch(/U\+0000|invalid/);
    }
  });

  it("path traversal in document and memory paths is refused and no file appears outside the store", async () => {
    const before = await snapshot();
    for (const p of ["../../outside.md", "/etc/passwd", "memory/../../x.md", "a/\u0000/b.md", "..\\..\\win.md"]) {
      expect((await send(byRoute("/api/v1/stores/[store]/documents", "PUT"), { name: "doc", token: tokens.write, body: JSON.stringify({ path: p, content: "x" }), expect: 400 })).status).toBe(400);
      expect((await send(byRoute("/api/v1/stores/[store]/memories", "POST"), { name: "mem", token: tokens.write, body: JSON.stringify({ path: p, body: "x" }), expect: 400 })).status).toBe(400);
    }
    expect(await snapshot()).toBe(before);
    expect(fs.existsSync(path.join(env.dataDir, "outside.md"))).toBe(false);
    expect(fs.existsSync(path.join(env.dataDir, "stores", "outside.md"))).toBe(false);
  });

  it("another agent's dialectic session: a stranger may not post into it, and hears 404 as on GET", async () => {
    await governance().createDialecticSession({ input: { session_id: "private-review", topic: "private", reviewer_agent_id: "reviewer" }, agentId: "writer" });
    const before = await snapshot();
    const post = byRoute("/api/v1/dialectic/sessions/[id]/messages", "POST");
    for (const type of ["thesis", "antithesis", "synthesis"]) {
      const r = await send(post, { name: "stranger", token: tokens.stranger, params: { id: "private-review" }, body: JSON.stringify({ message_type: type, reasoning: "not my session", agrees: true }), expect: "4xx" });
      expect(r.status).toBe(404);
      expect(r.json?.error?.code).toBe("not_found");
    }
    expect(await snapshot()).toBe(before);
  });
});
