import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POST as createStoreRoute } from "@/app/api/v1/stores/route";
import { DELETE as deleteStoreRoute, GET as getStoreRoute } from "@/app/api/v1/stores/[store]/route";
import { ageStoreHandlesForTests, getGovernance, openStoreHandles } from "@/lib/db/connection";
import { STORES_CREATED_BY_SQLITE } from "@/lib/stores/stores";
import { onPg, seedToken, sqliteOnlyCheck, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/** Store quotas, store delete, and open store connections bounded whatever the number of stores. */
let env: TestEnv;
const tokens = { writer: "", admin: "" };

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_MAX_STORES: "8", DUALMIND_MAX_STORES_PER_TOKEN: "3", DUALMIND_MAX_OPEN_STORES: "4" });
  tokens.writer = await seedToken({ label: "w", agent_id: "store-maker", scopes: ["write"] });
  tokens.admin = await seedToken({ label: "a", agent_id: "store-admin", scopes: ["admin"] });
});
afterAll(async () => env?.cleanup());

const create = (token: string, name: string) => callRoute(createStoreRoute, { token, body: { name } });

describe("store quotas", () => {
  it("creates sent at the same moment by one agent stop exactly at its quota (they are counted one after another)", async () => {
    const racer = await seedToken({ label: "r", agent_id: "store-racer", scopes: ["write"] });
    const names = Array.from({ length: 8 }, (_, i) => `race${i}`);
    const answers = await Promise.all(names.map((name) => create(racer, name)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([201, 201, 201, 422, 422, 422, 422, 422]);
    for (const a of answers.filter((x) => x.status === 422)) expect(a.json.error.details[0].limit).toBe("DUALMIND_MAX_STORES_PER_TOKEN");
    // Leave the instance as the tests below expect it.
    for (const [i, a] of answers.entries()) {
      if (a.status !== 201) continue;
      const gone = await callRoute(deleteStoreRoute, { method: "DELETE", url: `http://127.0.0.1/api/v1/stores/${names[i]}?confirm=${names[i]}`, token: tokens.admin, params: { store: names[i] } });
      expect(gone.status).toBe(200);
    }
  });

  it("the quota reads the store lifecycle index, never every audit row the agent caused", async () => {
    await sqliteOnlyCheck("SQLite's query plan", () => {
      const plan = (getGovernance().sqlite.prepare(`explain query plan ${STORES_CREATED_BY_SQLITE}`).all("agent:x") as { detail: string }[]).map((r) => r.detail).join("; ");
      expect(plan).toContain("audit_log_store_lifecycle_idx");
      expect(plan).not.toContain("audit_log_actor_idx");
    });
  });

  it("an agent's fourth store is refused with 422 naming DUALMIND_MAX_STORES_PER_TOKEN", async () => {
    for (const name of ["w1", "w2", "w3"]) expect((await create(tokens.writer, name)).status).toBe(201);
    const refused = await create(tokens.writer, "w4");
    expect(refused.status).toBe(422);
    expect(refused.json.error.details[0].limit).toBe("DUALMIND_MAX_STORES_PER_TOKEN");
  });

  it("the instance stops at DUALMIND_MAX_STORES (core and default included), never with a 500", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await create(tokens.admin, `a${i}`)).status);
    // core, default, w1-w3: three more fit under 8.
    expect(statuses).toEqual([201, 201, 201, 422, 422, 422]);
    const refused = await create(tokens.admin, "a9");
    expect(refused.json.error.message).toContain("DUALMIND_MAX_STORES");
  });

  it("an admin deletes a store (audited); a write token cannot; core and default stay; a deleted store frees its quota", async () => {
    expect((await callRoute(deleteStoreRoute, { method: "DELETE", token: tokens.writer, params: { store: "w1" } })).status).toBe(403);
    expect((await callRoute(deleteStoreRoute, { method: "DELETE", token: tokens.admin, params: { store: "core" } })).status).toBe(422);
    const deleted = await callRoute(deleteStoreRoute, { method: "DELETE", url: "http://127.0.0.1/api/v1/stores/w1?confirm=w1", token: tokens.admin, params: { store: "w1" } });
    expect(deleted.status).toBe(200);
    expect(deleted.json).toEqual({ deleted: "w1" });
    expect((await callRoute(getStoreRoute, { token: tokens.admin, params: { store: "w1" } })).status).toBe(404);
    expect((await create(tokens.writer, "w5")).status).toBe(201);
  });
});

describe.skipIf(onPg)("open store connections", () => {
  it("stay at DUALMIND_MAX_OPEN_STORES once idle, and a closed store reopens on use", async () => {
    const fdsBefore = fs.readdirSync("/proc/self/fd").length;
    for (const store of ["w2", "w3", "a0", "a1", "a2", "w5", "default", "core"]) {
      ageStoreHandlesForTests();
      expect((await callRoute(getStoreRoute, { token: tokens.admin, params: { store } })).status).toBe(200);
    }
    expect(openStoreHandles().length).toBeLessThanOrEqual(4);
    expect(fs.readdirSync("/proc/self/fd").length).toBeLessThanOrEqual(fdsBefore + 4 * 3);
    ageStoreHandlesForTests();
    expect((await callRoute(getStoreRoute, { token: tokens.admin, params: { store: "w2" } })).status).toBe(200);
  });
});
