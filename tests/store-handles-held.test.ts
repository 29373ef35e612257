import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { POST as searchPOST } from "@/app/api/v1/stores/[store]/search/route";
import { PUT as putDocuments } from "@/app/api/v1/stores/[store]/documents/route";
import { startEvaluation } from "@/lib/eval/self-recall";
import { getEvaluationJob } from "@/lib/eval/jobs";
import { bootstrapApp } from "@/lib/bootstrap";
import { ageStoreHandlesForTests, getStoreDb, holdingStoreHandles, openStoreHandles } from "@/lib/db/connection";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { startFakeOpenAI } from "./fixtures/fake-openai-server";
import { onPg, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/**
 * Open store connections are bounded by closing idle ones; a request still
 * working with a store (waiting on the embedding provider) is not idle,
 * however long it waits and however many other stores are opened meanwhile.
 */
let env: TestEnv;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let token = "";

beforeAll(async () => {
  fake = await startFakeOpenAI({ dimension: 32 });
  env = await useTestBackend(
    { DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_TIMEOUT_MS: "1000", DUALMIND_MAX_OPEN_STORES: "2" },
    { bootstrap: false },
  );
  resetEmbedderForTests();
  await bootstrapApp();
  await getEmbedder().fingerprint;
  for (const s of ["busy", "o1", "o2", "o3"]) await seedStore(s);
  token = await seedToken({ label: "r", agent_id: "reader", scopes: ["read"] });
});
afterAll(async () => {
  resetEmbedderForTests();
  await env?.cleanup();
  await fake?.close();
});

describe.skipIf(onPg)("a store handle in use", () => {
  it("is not closed under a search waiting on a slow provider while other stores are opened", async () => {
    fake.state.hangOn = /slowquery/;
    const search = callRoute(searchPOST, { token, params: { store: "busy" }, body: { q: "slowquery words", mode: "hybrid" } });
    await new Promise((r) => setTimeout(r, 300));
    // As if the wait had lasted past the idle grace: then three other stores are opened, over DUALMIND_MAX_OPEN_STORES.
    ageStoreHandlesForTests();
    for (const s of ["o1", "o2", "o3"]) getStoreDb({ store: s });
    const r = await search;
    expect(r.status, JSON.stringify(r.json)).toBe(200);
  });

  it("is not closed under a self-recall evaluation while other stores are opened", async () => {
    const writer = await seedToken({ label: "w", agent_id: "writer", scopes: ["write"] });
    await seedStore("evald");
    const documents = Array.from({ length: 30 }, (_, i) => ({ path: `d${i}.md`, content: `# Topic ${i}\n\nNotes on subject number ${i}: zebra${i} quokka${i} and the reasons behind them.` }));
    expect((await callRoute(putDocuments, { method: "PUT", token: writer, params: { store: "evald" }, body: { documents } })).status).toBe(200);
    let aged = false;
    const job = await startEvaluation({
      store: "evald",
      actor: "test",
      input: { per_kind: 5 },
      wait: true,
      onProgress: () => {
        if (aged) return;
        aged = true;
        // As if the evaluation had run past the idle grace: then three other stores are opened, over DUALMIND_MAX_OPEN_STORES.
        ageStoreHandlesForTests();
        for (const s of ["o1", "o2", "o3"]) getStoreDb({ store: s });
      },
    });
    expect(aged).toBe(true);
    expect((await getEvaluationJob({ id: job.id, store: "evald" }))?.status).toBe("succeeded");
  });

  it("a task that finished work left running holds nothing: its store closes when idle", async () => {
    let later: Promise<void> = Promise.resolve();
    await holdingStoreHandles({ work: () => {
      later = new Promise((resolve) => setTimeout(() => resolve(void getStoreDb({ store: "o1" })), 20));
    } });
    await later;
    ageStoreHandlesForTests();
    for (const s of ["o2", "o3"]) getStoreDb({ store: s });
    expect(openStoreHandles().map((h) => h.store)).not.toContain("o1");
  });

  it("is held when another copy of lib/db in the process opens it within the work (Next bundles one per layer)", async () => {
    vi.resetModules();
    const copy = await import("@/lib/db/connection");
    expect(copy.getStoreDb).not.toBe(getStoreDb);
    let stillOpen = false;
    await holdingStoreHandles({ work: async () => {
      const handle = copy.getStoreDb({ store: "o1" });
      await new Promise((r) => setTimeout(r, 10));
      ageStoreHandlesForTests();
      for (const s of ["o2", "o3"]) getStoreDb({ store: s });
      stillOpen = handle.sqlite.open && !!(handle.sqlite.prepare("select count(*) as n from chunks").get() as { n: number });
    } });
    expect(stillOpen).toBe(true);
  });
});
