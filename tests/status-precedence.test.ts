import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { deriveStoreStatus, getStoreStatus, STORE_STATUS_PRECEDENCE, worstStatus, type StatusInput, type StoreStatusState } from "@/lib/embed/status";
import { processEmbedBatch } from "@/lib/embed/worker";
import { putDocuments } from "@/lib/index/ingest";
import { createStore, openStore } from "@/lib/stores/stores";
import { startFakeOpenAI } from "./fixtures/fake-openai-server";
import { useTempDataDir } from "./helpers";

const HEALTHY: StatusInput = { store: "alpha", pending: 3, parked: 0, watermark: 1000, modelChanged: false, stale: 0, missing: 3, artifacts: 40, provider: { ok: true, error: null }, vectors: { available: true, reason: null } };

/** Each fault alone, as the live numbers show it. */
const FAULTS: Record<Exclude<StoreStatusState, "healthy">, Partial<StatusInput>> = {
  provider_down: { provider: { ok: false, error: "cannot reach http://127.0.0.1:9/v1" } },
  degraded: { pending: 1500 },
  drifted: { modelChanged: true },
  parked: { parked: 4, missing: 4 },
  vectors_unavailable: { vectors: { available: false, reason: "sqlite-vec failed to load" } },
};

describe("status precedence (as documented in lib/embed/status.ts)", () => {
  it("each fault alone gives its own verdict, with a reason and a fixing action", () => {
    expect(deriveStoreStatus(HEALTHY)).toMatchObject({ state: "healthy", action: null });
    for (const [state, fault] of Object.entries(FAULTS)) {
      const v = deriveStoreStatus({ ...HEALTHY, ...fault });
      expect(v.state).toBe(state);
      expect(v.reason.length).toBeGreaterThan(10);
      expect(v.action?.href).toMatch(/^\/(health|stores)\b/);
    }
    expect(deriveStoreStatus({ ...HEALTHY, ...FAULTS.degraded }).reason).toContain("1,500");
    expect(deriveStoreStatus({ ...HEALTHY, ...FAULTS.parked }).action?.label).toBe("Retry 4 parked items");
    // "Check the embed worker" leads to the card that shows the worker.
    expect(deriveStoreStatus({ ...HEALTHY, ...FAULTS.degraded }).action?.href).toBe("/health?store=alpha#worker-heading");
  });

  it("with every pair of faults present, the one earlier in the documented order wins", () => {
    const order = STORE_STATUS_PRECEDENCE.filter((s): s is Exclude<StoreStatusState, "healthy"> => s !== "healthy");
    expect(order).toEqual(["provider_down", "degraded", "drifted", "parked", "vectors_unavailable"]);
    for (let i = 0; i < order.length; i++) {
      for (let j = i + 1; j < order.length; j++) {
        expect(deriveStoreStatus({ ...HEALTHY, ...FAULTS[order[j]], ...FAULTS[order[i]] }).state, `${order[i]} + ${order[j]}`).toBe(order[i]);
      }
    }
  });

  it("rows without a current vector are backlog while work is queued for them, drift when nothing is", () => {
    expect(deriveStoreStatus({ ...HEALTHY, stale: 3, missing: 0, pending: 3 })).toMatchObject({ state: "healthy", reason: expect.stringContaining("3 items are queued") });
    expect(deriveStoreStatus({ ...HEALTHY, stale: 3, missing: 0, pending: 0 })).toMatchObject({ state: "drifted", reason: expect.stringContaining("at least 3 rows have no vector") });
    // "81.7% embedded, 860 missing" with 860 queued is not "vectors are current": it says what is queued.
    expect(deriveStoreStatus({ ...HEALTHY, artifacts: 4700, missing: 860, pending: 860 }).reason).toContain("860 items are queued");
    expect(deriveStoreStatus({ ...HEALTHY, artifacts: 4700, missing: 860, pending: 0 }).state).toBe("drifted");
    expect(deriveStoreStatus({ ...HEALTHY, missing: 0, pending: 0 }).reason).toBe("every row has a vector of its current text");
    // A backlog exactly at the watermark is not above it.
    expect(deriveStoreStatus({ ...HEALTHY, pending: 1000, missing: 1000 }).state).toBe("healthy");
  });

  it("the overall status is the worst store's", () => {
    const stores = [
      { store: "a", ...deriveStoreStatus({ ...HEALTHY, store: "a" }) },
      { store: "b", ...deriveStoreStatus({ ...HEALTHY, store: "b", ...FAULTS.parked }) },
      { store: "c", ...deriveStoreStatus({ ...HEALTHY, store: "c", ...FAULTS.drifted }) },
    ];
    expect(worstStatus(stores)).toMatchObject({ store: "c", state: "drifted" });
    expect(worstStatus([])).toBeNull();
  });
});

describe("getStoreStatus against a real store and a stand-in provider", () => {
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(async () => {
    fake = await startFakeOpenAI({ dimension: 32 });
    env = useTempDataDir({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_BACKLOG_WATERMARK: "5", DUALMIND_EMBED_TIMEOUT_MS: "5000" });
    resetEmbedderForTests();
    await getEmbedder().fingerprint;
  });
  afterEach(async () => {
    resetEmbedderForTests();
    env.cleanup();
    await fake.close();
  });

  it("goes healthy → degraded → provider down → parked → healthy as the store and the provider change", async () => {
    createStore({ input: { name: "s" }, actor: "test" });
    const handle = openStore({ store: "s" });
    expect((await getStoreStatus({ handle })).state).toBe("healthy");
    putDocuments({ handle, input: { documents: Array.from({ length: 8 }, (_, i) => ({ path: `n/${i}.md`, content: `# note ${i}\n\nbody ${i}` })) }, actor: "test" });
    expect(await getStoreStatus({ handle })).toMatchObject({ state: "degraded", backlog: { pending: 8, watermark: 5 } });

    fake.state.defaultMode = "500";
    await processEmbedBatch({ handle });
    expect(await getStoreStatus({ handle })).toMatchObject({ state: "provider_down", provider: { ok: false } });

    // Back up: the next real call (here a batch) records it; items that failed are parked by a non-retryable error.
    fake.state.defaultMode = "ok";
    getStoreDb("s").sqlite.exec("update embed_queue set next_attempt_at = 0");
    while ((await processEmbedBatch({ handle })).claimed > 0);
    expect((await getStoreStatus({ handle })).state).toBe("healthy");
    putDocuments({ handle, input: { path: "n/new.md", content: "# a new note\n\nwith text never embedded" }, actor: "test" });
    fake.state.defaultMode = "wrong_dim";
    await processEmbedBatch({ handle });
    expect(await getStoreStatus({ handle })).toMatchObject({ state: "parked", backlog: { parked: 1 } });
  });
});
