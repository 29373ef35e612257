import { afterAll, beforeAll, expect, it } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { resetEmbedderForTests, getEmbedder } from "@/lib/embed/model";
import { retryParkedEmbeddings } from "@/lib/embed/queue";
import { getEmbeddingStatus } from "@/lib/embed/status";
import { drainEmbedQueues, MAX_EMBED_ATTEMPTS, processEmbedBatch } from "@/lib/embed/worker";
import { putDocuments } from "@/lib/index/ingest";
import { searchInputSchema, searchStore } from "@/lib/index/search";
import { createStore, openStore } from "@/lib/stores/stores";
import { startFakeOpenAI } from "../fixtures/fake-openai-server";
import { useTempDataDir } from "../helpers";
import { recordTally } from "./summary";

let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let env: ReturnType<typeof useTempDataDir>;
const tally = { faultsInjected: 0, faultsSurvived: 0, writesAcknowledged: 0, writesFound: 0 };

beforeAll(async () => {
  fake = await startFakeOpenAI({ dimension: 32 });
  // A low watermark so a short outage is enough to degrade the store; a short timeout so "slow" is a failure.
  env = useTempDataDir({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_BACKLOG_WATERMARK: "5", DUALMIND_EMBED_TIMEOUT_MS: "300", DUALMIND_EMBED_BATCH_SIZE: "4" });
  resetEmbedderForTests();
  await getEmbedder().fingerprint;
  createStore({ input: { name: "prov" }, actor: "test" });
});
afterAll(async () => {
  recordTally("embedding provider down / slow / wrong dimension", tally);
  resetEmbedderForTests();
  env.cleanup();
  await fake.close();
});

const search = (q: string) => searchStore({ handle: openStore({ store: "prov" }), core: null, input: searchInputSchema.parse({ q, mode: "hybrid" }) });
const rewindBackoff = () => getStoreDb("prov").sqlite.exec("update embed_queue set next_attempt_at = 0");

it("a provider that is down, then slow, then wrong: the store degrades to lexical and says so, items park, and everything recovers", async () => {
  const docs = Array.from({ length: 12 }, (_, i) => ({ path: `p/${i}.md`, content: `# note ${i}\n\nprovider outage drill number ${i}` }));
  putDocuments({ handle: openStore({ store: "prov" }), input: { documents: docs }, actor: "test" });
  tally.writesAcknowledged += docs.length;
  const queued = (await getEmbeddingStatus({ handle: getStoreDb("prov") })).backlog.pending;
  expect(queued).toBeGreaterThan(5);

  // Down: every call fails; the backlog stays above the watermark.
  fake.state.defaultMode = "500";
  tally.faultsInjected++;
  const down = await processEmbedBatch({ handle: getStoreDb("prov") });
  expect(down.failed).toBeGreaterThan(0);
  expect(down.embedded).toBe(0);
  let status = await getEmbeddingStatus({ handle: getStoreDb("prov") });
  expect(status).toMatchObject({ degraded: true });
  const degraded = await search("outage drill");
  expect(degraded).toMatchObject({ effectiveMode: "fts", degraded: true, fallback: { reason: "backlog" } });
  expect(degraded.results.length).toBeGreaterThan(0);

  // Slow: the request outlives the timeout and counts as a failure, not a hang.
  fake.state.defaultMode = "hang";
  tally.faultsInjected++;
  rewindBackoff();
  const slow = await processEmbedBatch({ handle: getStoreDb("prov") });
  expect(slow.failed).toBeGreaterThan(0);
  expect(slow.embedded).toBe(0);

  // Wrong dimension: not retryable, parked at once, nothing stored.
  fake.state.defaultMode = "wrong_dim";
  tally.faultsInjected++;
  rewindBackoff();
  const wrong = await processEmbedBatch({ handle: getStoreDb("prov") });
  expect(wrong.parked).toBeGreaterThan(0);
  expect((getStoreDb("prov").sqlite.prepare("select count(*) as n from embeddings").get() as { n: number }).n).toBe(0);

  // Down long enough: the rest park after the retry limit, with the error visible.
  fake.state.defaultMode = "500";
  // A failing batch stops a drain (backoff does the pacing), so step batch by batch with the backoff skipped.
  for (let i = 0; i < MAX_EMBED_ATTEMPTS * queued && (await getEmbeddingStatus({ handle: getStoreDb("prov") })).backlog.pending > 0; i++) {
    rewindBackoff();
    await processEmbedBatch({ handle: getStoreDb("prov") });
  }
  status = await getEmbeddingStatus({ handle: getStoreDb("prov") });
  expect(status.backlog).toMatchObject({ pending: 0, parked: queued });
  expect(status.parked.some((p) => /dimension/.test(p.lastError ?? ""))).toBe(true);

  // Recovered: an admin retries the parked items, the worker drains them, and hybrid search uses vectors again.
  fake.state.defaultMode = "ok";
  expect(retryParkedEmbeddings({ handle: getStoreDb("prov"), actor: "test" })).toBe(queued);
  await drainEmbedQueues({ stores: ["prov"] });
  status = await getEmbeddingStatus({ handle: getStoreDb("prov") });
  expect(status).toMatchObject({ degraded: false, backlog: { pending: 0, parked: 0 } });
  const recovered = await search("outage drill");
  expect(recovered.effectiveMode).toBe("hybrid");
  expect(recovered.fallback).toBeNull();
  tally.writesFound += (getStoreDb("prov").sqlite.prepare("select count(*) as n from documents").get() as { n: number }).n;
  tally.faultsSurvived += 3;
});
