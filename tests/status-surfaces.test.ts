import { checkSwitchGate } from "@/lib/eval/self-recall";
import { afterEach, describe, expect, it } from "vitest";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { reembedSwitchReady, waitForFirstProbe } from "@/lib/embed/status";
import { readProviderHealth } from "@/lib/embed/provider-state";
import { listRecentHealthEvents } from "@/lib/governance/health-events";
import { loadStorePage } from "@/lib/metrics/dashboard-views";
import { getOverviewNumbers, loadHealthDashboard, runStatusWatchPass, storeHealthReportFor } from "@/lib/metrics/health";
import { renderPrometheusMetrics } from "@/lib/metrics/prometheus";
import type { StatusHeadline } from "@/lib/metrics/status-summary";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { stores } from "@/lib/stores/backend";
import { startFakeOpenAI } from "./fixtures/fake-openai-server";
import { createMemorySchema, setCategorySchema } from "@/lib/index/memories";
import { drainEmbeddings, drainEmbeddingsWith, itSqliteOnly, seedDocument, seedStore, useTestBackend, type TestEnv } from "./backend";
import { restartWith } from "./helpers";

/**
 * One status, one set of numbers: for each state, the numbers every surface shows — the Overview's
 * headline and tiles, Health (all stores and one), the store page, the API/MCP/CLI health report and the
 * Prometheus gauges — read through the very functions the pages and routes call, and asserted equal.
 */

type Numbers = { pending: number; parked: number; drifted: number | "unknown"; coverage: string };
const ofHeadline = (h: StatusHeadline): Numbers => ({ pending: h.numbers.pending, parked: h.numbers.parked, drifted: h.numbers.drifted ?? "unknown", coverage: h.numbers.coveragePct === null ? "unknown" : h.numbers.coveragePct.toFixed(1) });

/** The Prometheus gauge values of one metric, per store. */
function gauges(body: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of body.matchAll(new RegExp(`^${name}\\{store="([^"]+)"\\} (\\S+)$`, "gm"))) out.set(m[1], Number(m[2]));
  return out;
}

/** Every surface's numbers for `store` and for all stores, checked against each other; returns the all-stores headline. */
async function expectSurfacesAgree(store: string): Promise<StatusHeadline> {
  const names = await stores().listStoreNames();
  const overview = (await getOverviewNumbers()).summary.headline!;
  const healthAll = (await loadHealthDashboard({ store: "all", range: "1h" })).summary.headline!;
  const healthOne = (await loadHealthDashboard({ store, range: "1h" })).summary.headline!;
  const page = (await loadStorePage({ store }))!;
  const reports = await Promise.all(names.map((s) => storeHealthReportFor({ store: s, principal: "operator" })));
  const prom = (await renderPrometheusMetrics({ principal: null })).body;

  // Overview and Health (all stores) are one computation.
  expect(ofHeadline(healthAll)).toEqual(ofHeadline(overview));
  expect([healthAll.state, healthAll.store, healthAll.reason]).toEqual([overview.state, overview.store, overview.reason]);
  // One store: Health, the store page, the API report and Prometheus say the same.
  const report = reports.find((r) => r.store === store)!;
  const fromReport: Numbers = {
    pending: report.backlog.pending,
    parked: report.backlog.parked,
    drifted: report.drift?.drifted ?? "unknown",
    coverage: report.coverage_pct === null ? "unknown" : report.coverage_pct.toFixed(1),
  };
  expect(ofHeadline(healthOne)).toEqual(fromReport);
  expect(ofHeadline(page.headline)).toEqual(fromReport);
  expect([healthOne.state, page.headline.state]).toEqual([report.status, report.status]);
  expect(gauges(prom, "dualmind_store_embed_backlog").get(store)).toBe(report.backlog.pending);
  expect(gauges(prom, "dualmind_store_embed_parked").get(store)).toBe(report.backlog.parked);
  expect(gauges(prom, "dualmind_store_drift_rows").get(store)).toBe(report.drift?.drifted); // absent (undefined) when unknown
  expect(prom).toContain(`dualmind_store_status{store="${store}",status="${report.status}"} 1`);
  // All stores: the headline's totals are the stores' reports added, and a watermark is never summed.
  const sum = (f: (r: (typeof reports)[number]) => number) => reports.reduce((a, r) => a + f(r), 0);
  expect(overview.numbers.pending).toBe(sum((r) => r.backlog.pending));
  expect(overview.numbers.parked).toBe(sum((r) => r.backlog.parked));
  expect(overview.numbers.drifted).toBe(reports.some((r) => r.drift === null) ? null : sum((r) => r.drift!.drifted));
  expect(overview.numbers.watermark).toBe(report.backlog.watermark);
  // The headline names the worst store (or none when all are healthy), with that store's own reason.
  if (overview.state === "healthy") {
    expect(overview.store).toBeNull();
    expect(overview.scope).toBe(`all ${names.length} stores`);
  } else {
    const worst = reports.find((r) => r.store === overview.store)!;
    expect([worst.status, worst.status_reason]).toEqual([overview.state, overview.reason]);
  }
  return overview;
}

describe("every surface shows the same status and numbers (builtin provider)", () => {
  let env: TestEnv;
  afterEach(async () => {
    restartWith({ DUALMIND_EMBED_DIM: undefined, DUALMIND_EMBED_MODEL: undefined, DUALMIND_EMBED_BACKLOG_WATERMARK: undefined });
    await env.cleanup();
  });

  it("healthy: no store is named as the 'worst', the reason speaks of all stores", async () => {
    env = await useTestBackend({ DUALMIND_EMBED_BACKLOG_WATERMARK: "5" });
    await seedStore("docs");
    await seedDocument("docs", "a.md", "# a\n\nsome words");
    await drainEmbeddings(["docs"]);
    const h = await expectSurfacesAgree("docs");
    expect(h).toMatchObject({ state: "healthy", store: null, numbers: { pending: 0, drifted: 0, coveragePct: 100 } });
    expect(h.reason).not.toMatch(/nothing to embed/);
  });

  itSqliteOnly("memory files on disk count memories, not category description files", "memory files are SQLite's truth (PostgreSQL has none)", async () => {
    env = await useTestBackend();
    await seedStore("docs");
    for (const p of ["ops/a", "ops/b", "notes/c"]) await stores().createMemory({ store: "docs", input: createMemorySchema.parse({ path: p, body: `# ${p}` }), actor: "test" });
    for (const c of ["ops", "notes"]) await stores().setCategoryDescription({ store: "docs", input: setCategorySchema.parse({ path: c, description: `about ${c}` }), actor: "test" });
    const info = await stores().describeStore({ store: "docs" });
    expect([info.files?.memory_files, info.counts.memories]).toEqual([3, 3]);
    expect((await loadStorePage({ store: "docs" }))!.info.files?.memory_files).toBe(3);
  });

  it("backlog: the headline names the store with the backlog and its number is the tile's", async () => {
    env = await useTestBackend({ DUALMIND_EMBED_BACKLOG_WATERMARK: "5" });
    await seedStore("docs");
    for (let i = 0; i < 8; i++) await seedDocument("docs", `n/${i}.md`, `# note ${i}\n\nbody ${i}`);
    const h = await expectSurfacesAgree("docs");
    expect(h).toMatchObject({ state: "degraded", store: "docs", numbers: { pending: 8, watermark: 5 } });
  });

  it("drift: a model change drifts every row, and nobody says 100% embedded beside it", async () => {
    env = await useTestBackend();
    await seedStore("docs");
    for (let i = 0; i < 3; i++) await seedDocument("docs", `n/${i}.md`, `# note ${i}\n\nbody ${i}`);
    await drainEmbeddings(["docs"]);
    restartWith({ DUALMIND_EMBED_DIM: "256", DUALMIND_EMBED_MODEL: "dualmind-hash-v1-256" });
    const h = await expectSurfacesAgree("docs");
    expect(h.state).toBe("drifted");
    expect(h.numbers.drifted).toBeGreaterThan(0);
    expect(h.numbers.coveragePct).toBe(0);
  });

  it("a planned re-embed is 're-embedding (n of m)', one event when it starts and one when it ends; the switch is offered only when it is complete", async () => {
    env = await useTestBackend();
    await seedStore("docs");
    for (let i = 0; i < 6; i++) await seedDocument("docs", `n/${i}.md`, `# note ${i}\n\nbody ${i}`);
    await drainEmbeddings(["docs"]);
    await runStatusWatchPass();
    restartWith({ DUALMIND_EMBED_DIM: "256", DUALMIND_EMBED_MODEL: "dualmind-hash-v1-256", DUALMIND_EMBED_BACKLOG_WATERMARK: "2" });
    await runStatusWatchPass(); // drifted: an unplanned change, its own event
    const fp = await getEmbedder().fingerprint;
    const started = await embeddingsBackend().startReembed({ store: "docs", configured: fp, onlyStale: false, holdSwitch: true, actor: "user:test" });
    expect(started.started).toBe(true);
    let h = await expectSurfacesAgree("docs");
    // Its backlog is above the watermark of 2: still not "degraded".
    expect(h).toMatchObject({ state: "reembedding", store: "docs" });
    expect(h.reason).toMatch(/^re-embedding \(0 of \d+\)/);
    expect(reembedSwitchReady(await embeddingsBackend().getReembedProgress({ store: "docs" }))).toBe(false);
    await runStatusWatchPass();
    await drainEmbeddingsWith(["docs"], { batchSize: 2, maxBatches: 1 });
    h = await expectSurfacesAgree("docs");
    expect(h.reason).toMatch(/^re-embedding \([1-9]\d* of \d+\)/);
    await runStatusWatchPass();
    await drainEmbeddings(["docs"]);
    h = await expectSurfacesAgree("docs");
    expect(h).toMatchObject({ state: "reembedding" });
    expect(h.reason).toMatch(/wait for an admin to compare and switch/);
    expect(reembedSwitchReady(await embeddingsBackend().getReembedProgress({ store: "docs" }))).toBe(true);
    await runStatusWatchPass();
    // As the switch route does: the self-recall gate first (nothing measured here: it lets the switch through as unmeasured).
    const gate = await checkSwitchGate({ store: "docs", actor: "user:test", tokenLabel: "test" });
    await embeddingsBackend().switchHeldReembed({ store: "docs", actor: "user:test", gate });
    h = await expectSurfacesAgree("docs");
    expect(h.state).toBe("healthy");
    await runStatusWatchPass();
    const events = (await listRecentHealthEvents({ store: "docs" })).reverse().map((e) => e.status);
    expect(events).toEqual(["drifted", "reembedding", "healthy"]);
  });
});

describe("every surface shows the same status and numbers (a stand-in provider that goes down)", () => {
  let env: TestEnv;
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  afterEach(async () => {
    resetEmbedderForTests();
    await env.cleanup();
    await fake.close();
  });

  it("provider down: the headline names the store whose backlog grows, with the tile's number; drift is 'unknown' everywhere", async () => {
    fake = await startFakeOpenAI({ dimension: 32 });
    env = await useTestBackend({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_TIMEOUT_MS: "5000" });
    resetEmbedderForTests();
    await getEmbedder().fingerprint;
    await seedStore("docs");
    fake.state.defaultMode = "500";
    for (let i = 0; i < 5; i++) await seedDocument("docs", `n/${i}.md`, `# note ${i}\n\nbody ${i}`);
    await drainEmbeddings(["docs"]);
    // A process that never heard the configured model answer does not know which model it is (its probe fails).
    resetEmbedderForTests();
    await getEmbedder().fingerprint.catch(() => undefined);
    const h = await expectSurfacesAgree("docs");
    expect(h).toMatchObject({ state: "provider_down", store: "docs", numbers: { pending: 5, drifted: null, coveragePct: null } });
    const report = await storeHealthReportFor({ store: "docs", principal: "operator" });
    expect([report.drift, report.coverage_pct]).toEqual([null, null]);
  });

  it("a provider slow to answer a new process's first probe is not down: the status says the model is not checked yet and records no change; the CLI waits for the answer", async () => {
    fake = await startFakeOpenAI({ dimension: 32 });
    // The test lets the provider answer itself; its own timeout is far away.
    const config = { DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_TIMEOUT_MS: "60000" };
    env = await useTestBackend(config);
    resetEmbedderForTests();
    await seedStore("docs");
    for (let i = 0; i < 3; i++) await seedDocument("docs", `n/${i}.md`, `# note ${i}\n\nbody ${i}`);
    await drainEmbeddings(["docs"]);
    await runStatusWatchPass();
    // The operator switches to another model: drifted, on record.
    restartWith({ ...config, DUALMIND_EMBED_MODEL: "fake-b" });
    await getEmbedder().fingerprint;
    await runStatusWatchPass();
    const events = async () => (await listRecentHealthEvents({ store: "docs" })).map((e) => [e.status, e.previousStatus]);
    expect(await events()).toEqual([["drifted", "healthy"]]);
    // A restart (still fake-b), and the provider is slow to answer (a status waits 2 s).
    restartWith({ ...config, DUALMIND_EMBED_MODEL: "fake-b" });
    let answer = () => {};
    fake.state.held = new Promise<void>((resolve) => (answer = resolve));
    const early = await storeHealthReportFor({ store: "docs", principal: "operator" });
    expect(early).toMatchObject({ status: "healthy", provider: { ok: true } });
    expect(early.status_reason).toMatch(/has not answered its first probe yet: a model change is not checked/);
    // Not an outage for every process, and not a change on record: no drifted → healthy (and back) in the history.
    expect((await readProviderHealth())?.ok).not.toBe(false);
    await runStatusWatchPass();
    expect(await events()).toEqual([["drifted", "healthy"]]);
    fake.state.held = null;
    answer();
    await getEmbedder().fingerprint;
    expect((await storeHealthReportFor({ store: "docs", principal: "operator" })).status).toBe("drifted");
    await runStatusWatchPass();
    expect(await events()).toEqual([["drifted", "healthy"]]);
    // A one-shot process (the CLI) waits for the first answer instead (up to the provider's timeout) and checks the model.
    resetEmbedderForTests();
    fake.state.delayMs = 2_500;
    waitForFirstProbe("provider-timeout");
    try {
      const report = await storeHealthReportFor({ store: "docs", principal: "operator" });
      expect([report.status, report.status_reason]).toEqual(["drifted", expect.not.stringMatching(/first probe/)]);
    } finally {
      waitForFirstProbe("server");
    }
  });
});
