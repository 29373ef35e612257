import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as healthRoute from "@/app/api/v1/stores/[store]/health/route";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { deriveStoreStatus, STORE_STATUS_PRECEDENCE, type StatusInput, type StoreStatusState } from "@/lib/embed/status";
import { startFakeOpenAI } from "./fixtures/fake-openai-server";
import { drainEmbeddings, seedDocument, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

const HEALTHY: StatusInput = { store: "alpha", pending: 3, parked: 0, watermark: 1000, modelChanged: false, stale: 0, missing: 3, artifacts: 40, provider: { ok: true, error: null }, vectors: { available: true, reason: null } };

/** Each fault alone, as the live numbers show it. */
const FAULTS: Record<Exclude<StoreStatusState, "healthy" | "reembedding">, Partial<StatusInput>> = {
  provider_down: { provider: { ok: false, error: "cannot reach http://127.0.0.1:9/v1" } },
  degraded: { pending: 1500 },
  stalled: { queue: { held: "disk_full: database or disk is full", staleClaims: null } },
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
    const order = STORE_STATUS_PRECEDENCE.filter((s): s is Exclude<StoreStatusState, "healthy" | "reembedding"> => s !== "healthy" && s !== "reembedding");
    expect(order).toEqual(["provider_down", "degraded", "stalled", "drifted", "parked", "vectors_unavailable"]);
    for (let i = 0; i < order.length; i++) {
      for (let j = i + 1; j < order.length; j++) {
        expect(deriveStoreStatus({ ...HEALTHY, ...FAULTS[order[j]], ...FAULTS[order[i]] }).state, `${order[i]} + ${order[j]}`).toBe(order[i]);
      }
    }
  });

  it("a planned re-embed is 're-embedding (n of m)', not degraded or drifted; a real fault meanwhile still shows as itself", () => {
    const reembed = { reembed: { done: 10, total: 40, waitingSwitch: false } };
    expect(deriveStoreStatus({ ...HEALTHY, ...reembed })).toMatchObject({ state: "reembedding", reason: expect.stringMatching(/^re-embedding \(10 of 40\)/) });
    // Its own long queue and its model change are what it is for.
    expect(deriveStoreStatus({ ...HEALTHY, ...reembed, ...FAULTS.degraded, ...FAULTS.drifted, stale: 30, missing: 10 }).state).toBe("reembedding");
    for (const fault of ["provider_down", "stalled", "parked", "vectors_unavailable"] as const) expect(deriveStoreStatus({ ...HEALTHY, ...reembed, ...FAULTS[fault] }).state, fault).toBe(fault);
    expect(deriveStoreStatus({ ...HEALTHY, reembed: { done: 40, total: 40, waitingSwitch: true } })).toMatchObject({ state: "reembedding", action: { label: "Compare and switch to the new model" } });
    // Across stores a planned re-embed ranks below every fault.
    expect(STORE_STATUS_PRECEDENCE.slice(-2)).toEqual(["reembedding", "healthy"]);
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
});

describe("the live status of a real store with a stand-in provider (GET /stores/{store}/health)", () => {
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let env: TestEnv;
  let token: string;
  beforeEach(async () => {
    fake = await startFakeOpenAI({ dimension: 32 });
    env = await useTestBackend({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_BACKLOG_WATERMARK: "5", DUALMIND_EMBED_TIMEOUT_MS: "5000" });
    resetEmbedderForTests();
    await getEmbedder().fingerprint;
    token = await seedToken({ label: "watcher", agent_id: "watcher", scopes: ["read"] });
  });
  afterEach(async () => {
    resetEmbedderForTests();
    await env.cleanup();
    await fake.close();
  });

  const health = async () => {
    const r = await callRoute(healthRoute.GET, { token, params: { store: "s" } });
    expect(r.status).toBe(200);
    return r.json as { status: string; backlog: { pending: number; parked: number; watermark: number }; provider: { ok: boolean } };
  };

  it("goes healthy → degraded → healthy → parked as the store fills, drains and meets a bad answer", async () => {
    await seedStore("s");
    expect((await health()).status).toBe("healthy");
    for (let i = 0; i < 8; i++) await seedDocument("s", `n/${i}.md`, `# note ${i}\n\nbody ${i}`);
    expect(await health()).toMatchObject({ status: "degraded", backlog: { pending: 8, watermark: 5 } });
    await drainEmbeddings(["s"]);
    expect(await health()).toMatchObject({ status: "healthy", backlog: { pending: 0 } });
    // An answer of the wrong size is not retryable: the item is parked.
    await seedDocument("s", "n/new.md", "# a new note\n\nwith text never embedded");
    fake.state.defaultMode = "wrong_dim";
    await drainEmbeddings(["s"]);
    expect(await health()).toMatchObject({ status: "parked", backlog: { parked: 1 } });
  });

  it(
    "a provider failing a batch shows provider_down; when it answers again the store is healthy",
    async () => {
      await seedStore("s");
      for (let i = 0; i < 8; i++) await seedDocument("s", `n/${i}.md`, `# note ${i}\n\nbody ${i}`);
      fake.state.defaultMode = "500";
      await drainEmbeddings(["s"]);
      expect(await health()).toMatchObject({ status: "provider_down", provider: { ok: false } });
      // Back up: the worker's next probe (after the hold's short wait) records it, and the held items drain.
      fake.state.defaultMode = "ok";
      for (const deadline = Date.now() + 30_000; Date.now() < deadline && (await health()).status !== "healthy"; ) {
        await drainEmbeddings(["s"]);
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(await health()).toMatchObject({ status: "healthy", provider: { ok: true }, backlog: { pending: 0, parked: 0 } });
    },
  );
});
