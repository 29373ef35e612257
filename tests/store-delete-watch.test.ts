import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { POST as createStoreRoute } from "@/app/api/v1/stores/route";
import { DELETE as deleteStoreRoute, GET as getStoreRoute } from "@/app/api/v1/stores/[store]/route";
import { POST as createMemoryRoute } from "@/app/api/v1/stores/[store]/memories/route";
import { storeExists } from "@/lib/db/store-names";
import { startMemoryWatch, stopMemoryWatch } from "@/lib/index/watch";
import { onPg, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/** A deleted store stays deleted: nothing running in the background brings its folder back. */
let env: TestEnv;
let admin = "";

beforeAll(async () => {
  env = await useTestBackend();
  admin = await seedToken({ label: "a", agent_id: "store-admin", scopes: ["admin"] });
});
afterEach(async () => stopMemoryWatch());
afterAll(async () => env?.cleanup());

describe.skipIf(onPg)("deleting a watched store", () => {
  it("the memory folder watch does not recreate the store it saw deleted", async () => {
    expect((await callRoute(createStoreRoute, { token: admin, body: { name: "doomed" } })).status).toBe(201);
    expect((await callRoute(createMemoryRoute, { token: admin, params: { store: "doomed" }, body: { path: "notes/a", body: "words\n" } })).status).toBe(201);
    startMemoryWatch({ scanMs: 60_000, batchMs: 20 });
    // Let the start-up scan of every store settle, so the watcher is attached to doomed/memory.
    await new Promise((r) => setTimeout(r, 300));
    expect((await callRoute(deleteStoreRoute, { method: "DELETE", url: "http://127.0.0.1/api/v1/stores/doomed?confirm=doomed", token: admin, params: { store: "doomed" } })).status).toBe(200);
    // The removal is a burst of file events on the watched folder: give the batch time to run.
    await new Promise((r) => setTimeout(r, 500));
    expect(storeExists("doomed")).toBe(false);
    expect((await callRoute(getStoreRoute, { token: admin, params: { store: "doomed" } })).status).toBe(404);
  });
});
