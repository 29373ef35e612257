import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as storesRoute from "@/app/api/v1/stores/route";
import * as storeRoute from "@/app/api/v1/stores/[store]/route";
import * as tokensRoute from "@/app/api/v1/tokens/route";
import * as tokenRoute from "@/app/api/v1/tokens/[id]/route";
import * as healthRoute from "@/app/api/v1/health/route";
import { stores } from "@/lib/stores/backend";
import { onPg, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

const BOOTSTRAP = "bootstrap-token-for-tests-0123456789abcdef";

describe("agent API", () => {
  let env: TestEnv;
  let readToken: string;
  let writeToken: string;
  const storeNames = () => stores().listStoreNames();
  beforeEach(async () => {
    env = await useTestBackend({ DUALMIND_BOOTSTRAP_TOKEN: BOOTSTRAP, DUALMIND_MAX_BODY_BYTES: "2048" });
    readToken = await seedToken({ label: "r", agent_id: "reader", scopes: ["read"] });
    writeToken = await seedToken({ label: "w", agent_id: "writer", scopes: ["write"], stores: ["core", "notes"] });
  });
  afterEach(() => env.cleanup());

  it("health needs no token", async () => {
    const r = await callRoute(healthRoute.GET);
    expect(r.status).toBe(200);
    expect(r.json.ok).toBe(true);
    expect(r.json.versions.sqlite).toMatch(/^3\./);
  });

  it("no token → 401, bad token → 401, with the envelope", async () => {
    const none = await callRoute(storesRoute.GET);
    expect(none.status).toBe(401);
    expect(none.json.error.code).toBe("unauthorized");
    const bad = await callRoute(storesRoute.GET, { token: "dm_nope" });
    expect(bad.status).toBe(401);
    const malformed = await callRoute(storesRoute.GET, { headers: { authorization: "Basic abc" } });
    expect(malformed.status).toBe(401);
  });

  it("read token lists stores but cannot create one (403)", async () => {
    const list = await callRoute(storesRoute.GET, { token: readToken });
    expect(list.status).toBe(200);
    expect(list.json.stores.map((s: { name: string }) => s.name)).toEqual(["core", "default"]);
    const create = await callRoute(storesRoute.POST, { token: readToken, body: { name: "notes" } });
    expect(create.status).toBe(403);
    expect(create.json.error.code).toBe("forbidden");
    expect(await storeNames()).toEqual(["core", "default"]);
  });

  it("write token creates a store in its allow-list, not outside it", async () => {
    const ok = await callRoute(storesRoute.POST, { token: writeToken, body: { name: "notes", description: "field notes" } });
    expect(ok.status).toBe(201);
    expect(ok.json).toMatchObject({ name: "notes", description: "field notes", vectors: { available: true } });
    const outside = await callRoute(storesRoute.POST, { token: writeToken, body: { name: "secret" } });
    expect(outside.status).toBe(403);
    const again = await callRoute(storesRoute.POST, { token: writeToken, body: { name: "notes" } });
    expect(again.status).toBe(409);
    expect(await storeNames()).toEqual(["core", "default", "notes"]);
  });

  it("malformed body → 400 with field details; bad JSON → 400; nothing written", async () => {
    const bad = await callRoute(storesRoute.POST, { token: writeToken, body: { name: "../../etc", extra: 1 } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe("invalid_request");
    const paths = bad.json.error.details.map((d: { path: string }) => d.path);
    expect(paths).toContain("body.name");
    const json = await callRoute(storesRoute.POST, { token: writeToken, rawBody: '{"name": "x",' });
    expect(json.status).toBe(400);
    expect(json.json.error.code).toBe("invalid_json");
    const type = await callRoute(storesRoute.POST, { token: writeToken, rawBody: "name=x", headers: { "content-type": "text/plain" } });
    expect(type.status).toBe(415);
    expect(await storeNames()).toEqual(["core", "default"]);
  });

  it("oversized body → 413, even without a content-length", async () => {
    const big = await callRoute(storesRoute.POST, { token: writeToken, body: { name: "notes", description: "x".repeat(5000) } });
    expect(big.status).toBe(413);
    expect(big.json.error.code).toBe("payload_too_large");
    expect(await storeNames()).toEqual(["core", "default"]);
  });

  it("describes a store; unknown → 404; store outside allow-list → 403; bad name → 400", async () => {
    const core = await callRoute(storeRoute.GET, { token: readToken, params: { store: "core" } });
    expect(core.status).toBe(200);
    expect(core.json.name).toBe("core");
    // SQLite describes the store's files; a PostgreSQL store has none.
    if (onPg) expect(core.json.files).toBeNull();
    else expect(core.json.files.index_bytes).toBeGreaterThan(0);
    expect((await callRoute(storeRoute.GET, { token: readToken, params: { store: "ghost" } })).status).toBe(404);
    expect((await callRoute(storeRoute.GET, { token: writeToken, params: { store: "default" } })).status).toBe(403);
    expect((await callRoute(storeRoute.GET, { token: readToken, params: { store: "Bad..Name" } })).status).toBe(400);
  });

  it("tokens: admin scope creates (shown once) and revokes; others get 403", async () => {
    const denied = await callRoute(tokensRoute.POST, { token: writeToken, body: { label: "x", agent_id: "y", scopes: ["read"] } });
    expect(denied.status).toBe(403);
    const created = await callRoute(tokensRoute.POST, { token: BOOTSTRAP, body: { label: "ci", agent_id: "ci-bot", scopes: ["read"] } });
    expect(created.status).toBe(201);
    expect(created.json.token).toMatch(/^dm_/);
    const list = await callRoute(tokensRoute.GET, { token: BOOTSTRAP });
    expect(JSON.stringify(list.json)).not.toContain(created.json.token);
    expect((await callRoute(storesRoute.GET, { token: created.json.token })).status).toBe(200);
    const revoked = await callRoute(tokenRoute.DELETE, { token: BOOTSTRAP, params: { id: String(created.json.id) } });
    expect(revoked.status).toBe(200);
    expect(revoked.json.revoked_at).toBeGreaterThan(0);
    expect((await callRoute(storesRoute.GET, { token: created.json.token })).status).toBe(401);
    expect((await callRoute(tokenRoute.DELETE, { token: BOOTSTRAP, params: { id: "999" } })).status).toBe(404);
  });
});
