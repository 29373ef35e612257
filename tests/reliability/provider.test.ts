import { afterAll, beforeAll, expect, it } from "vitest";
import { resetEmbedderForTests, getEmbedder } from "@/lib/embed/model";
import { MAX_EMBED_ATTEMPTS, type BatchResult } from "@/lib/embed/worker";
import { searchInputSchema } from "@/lib/index/search";
import { stores } from "@/lib/stores/backend";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { startFakeOpenAI } from "../fixtures/fake-openai-server";
import { drainEmbeddings, embeddingStatusOf, embedOneBatch, onPg, seedStore, storeSql, useTestBackend, type TestEnv } from "../backend";
import { recordTally } from "./summary";

/**
 * The embedding provider down, slow, then wrong, as the worker meets it (on
 * SQLite the store's index.db queue; on PostgreSQL the store schema's queue
 * and the PostgreSQL worker step).
 */
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let env: TestEnv;
const tally = { faultsInjected: 0, faultsSurvived: 0, writesAcknowledged: 0, writesFound: 0 };

beforeAll(async () => {
  fake = await startFakeOpenAI({ dimension: 32 });
  // A low watermark so a short outage is enough to degrade the store; a short timeout so "slow" (the stand-in never
  // answers) is a failure — not so short that a busy CI machine turns the model probe into one.
  env = await useTestBackend({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32", DUALMIND_EMBED_BACKLOG_WATERMARK: "5", DUALMIND_EMBED_TIMEOUT_MS: "2000", DUALMIND_EMBED_WORKER_TIMEOUT_MS: "2000", DUALMIND_EMBED_OUTAGE_MAX_BACKOFF_MS: "300", DUALMIND_EMBED_BATCH_SIZE: "4" });
  resetEmbedderForTests();
  await getEmbedder().fingerprint;
  await seedStore("prov");
});
afterAll(async () => {
  recordTally("embedding provider down / slow / wrong dimension", tally);
  resetEmbedderForTests();
  await env?.cleanup();
  await fake.close();
});

const search = (q: string) => stores().search({ store: "prov", input: searchInputSchema.parse({ q, mode: "hybrid" }) });
const rewindBackoff = () => storeSql("prov", "update embed_queue set next_attempt_at = 0");
const status = () => embeddingStatusOf("prov");
/** Worker steps (the backoff skipped) until one answers as asked; a hold's short wait is real time. */
async function untilStep(done: (r: BatchResult) => boolean | Promise<boolean>): Promise<BatchResult> {
  for (const deadline = Date.now() + 30_000; ; ) {
    await rewindBackoff();
    const r = await embedOneBatch("prov");
    if (await done(r)) return r;
    if (Date.now() > deadline) throw new Error(`no worker step answered as expected; the last: ${JSON.stringify(r)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}
// Chunk vectors: rows of `embeddings` in index.db; PostgreSQL keeps them in their own table.
const storedVectors = async () => Number((await storeSql<{ n: number }>("prov", `select count(*) as n from ${onPg ? "chunk_embeddings" : "embeddings"}`))[0].n);

it("a provider that is down, then slow, then wrong: the store degrades to lexical and says so, only wrong answers park, and everything recovers", async () => {
  const docs = Array.from({ length: 12 }, (_, i) => ({ path: `p/${i}.md`, content: `# note ${i}\n\nprovider outage drill number ${i}` }));
  await stores().putDocuments({ store: "prov", input: { documents: docs }, actor: "test" });
  tally.writesAcknowledged += docs.length;
  const queued = (await status()).backlog.pending;
  expect(queued).toBeGreaterThan(5);

  // Down: every call fails and the queue is held (no attempts spent); the backlog stays above the watermark.
  fake.state.defaultMode = "500";
  tally.faultsInjected++;
  const down = await embedOneBatch("prov");
  expect(down.held).toBeGreaterThan(0);
  expect(down.embedded).toBe(0);
  expect(await status()).toMatchObject({ degraded: true });
  const degraded = await search("outage drill");
  expect(degraded).toMatchObject({ effective_mode: "fts", degraded: true, fallback: { reason: "backlog" } });
  expect(degraded.results.length).toBeGreaterThan(0);

  // Slow: the held queue's probe outlives the worker's timeout; the queue stays held (no claim, no hang).
  fake.state.defaultMode = "hang";
  tally.faultsInjected++;
  const slow = await untilStep((r) => /^timeout:/.test(r.hold?.error ?? ""));
  expect(slow).toMatchObject({ claimed: 0, embedded: 0 });

  // Wrong dimension: not retryable, parked at once, nothing stored.
  fake.state.defaultMode = "wrong_dim";
  tally.faultsInjected++;
  await rewindBackoff();
  await untilStep((r) => r.parked > 0);
  expect(await storedVectors()).toBe(0);
  const parkedWrong = (await status()).backlog.parked;

  // Down long enough: nothing more parks and no attempt is spent; the wrong answers stay parked with their error.
  fake.state.defaultMode = "500";
  for (let i = 0; i < 3 * MAX_EMBED_ATTEMPTS; i++) {
    await rewindBackoff();
    await embedOneBatch("prov");
  }
  let now = await status();
  expect(now.backlog).toMatchObject({ pending: queued - parkedWrong, parked: parkedWrong });
  expect(now.parked.every((p) => /dimension/.test(p.last_error ?? ""))).toBe(true);

  // Recovered: the held items drain by themselves; an admin retries the wrongly answered ones; hybrid search uses vectors again.
  fake.state.defaultMode = "ok";
  await untilStep(async () => (await status()).backlog.pending === 0);
  expect(await embeddingsBackend().retryParkedEmbeddings({ store: "prov", actor: "test" })).toBe(parkedWrong);
  await drainEmbeddings(["prov"]);
  now = await status();
  expect(now).toMatchObject({ degraded: false, backlog: { pending: 0, parked: 0 } });
  expect(await storedVectors()).toBe(queued);
  const recovered = await search("outage drill");
  expect(recovered.effective_mode).toBe("hybrid");
  expect(recovered.fallback).toBeNull();
  tally.writesFound += Number((await storeSql<{ n: number }>("prov", "select count(*) as n from documents"))[0].n);
  tally.faultsSurvived += 3;
});
