import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resetConfigForTests } from "@/lib/config";
import { withStoreTx, type PgStoreHandle } from "@/lib/db/pg-store";
import { drainEmbedQueuesPg } from "@/lib/index/embed-queue-pg";
import { putDocuments } from "@/lib/index/ingest";
import { putDocumentsSchema } from "@/lib/index/ingest";
import { getStoreStatusPg } from "@/lib/metrics/engines/pg";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { storeHealthResponse } from "@/lib/api/responses/embeddings";
import { assertMatchesContract, toWire } from "@/lib/api/contract";
import { closePg, getPg } from "@/lib/db/pg";
import { createStorePg, openStorePg } from "@/lib/stores/engines/pg";
import { recordTrace } from "@/lib/recall/traces";
import { useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

/**
 * The one store status on PostgreSQL: the verdict every surface shows
 * (Overview, the store page, /metrics, GET /stores/{store}/health, MCP
 * store_health), from the store's queue and vectors, through each state a
 * person would see: queued, degraded, healthy, drifted (stale text, another
 * model), parked.
 */
let env: ReturnType<typeof useTempDataDir>;
let store: PgStoreHandle;

beforeAll(async () => {
  env = useTempDataDir({ DATABASE_URL: await createTestDatabase(), DUALMIND_EMBED_BACKLOG_WATERMARK: "5" });
  const pg = await getPg()!;
  await createStorePg({ pg, input: { name: "ops" }, actor: "test" });
  store = await openStorePg({ pg, store: "ops" });
});
afterAll(async () => {
  await closePg();
  env.cleanup();
  resetConfigForTests();
});

const put = (docs: { path: string; content: string }[]) => putDocuments({ handle: store, input: putDocumentsSchema.parse({ documents: docs }), actor: "agent:test" });
const notes = (n: number, word: string) => Array.from({ length: n }, (_, i) => ({ path: `notes/${i}.md`, content: `# Note ${i}\n\nThe ${word} rotation for team ${i}.` }));

describe("store status on PostgreSQL", () => {
  it("goes from queued to degraded to healthy as the backlog grows and drains", async () => {
    await put(notes(3, "pager"));
    let s = await getStoreStatusPg({ handle: store });
    expect(s).toMatchObject({ state: "healthy", backlog: { pending: 3, parked: 0, watermark: 5 } });
    expect(s.reason).toContain("3 items are queued for the worker");
    await put(notes(8, "pager"));
    s = await getStoreStatusPg({ handle: store });
    expect(s.state).toBe("degraded");
    expect(s.reason).toContain("embed backlog 8 is above the watermark 5");
    await drainEmbedQueuesPg({ handles: [store] });
    s = await getStoreStatusPg({ handle: store });
    expect(s).toMatchObject({ state: "healthy", reason: "every row has a vector of its current text", backlog: { pending: 0 }, drift: { artifacts: 8, fresh: 8, stale: 0, missing: 0, modelChanged: false } });
    expect(s.activeModel?.id).toBe(s.provider.configured?.id);
    // A trace is an embeddable row too: queued with its write, then fresh once the worker has run, counted by kind.
    await recordTrace({ handle: store, agentId: "ops-bot", input: { intent: { verb: "restart", target: "pager relay" }, shard_type: "ops", outcome: "success" } });
    s = await getStoreStatusPg({ handle: store });
    expect(s).toMatchObject({ state: "healthy", backlog: { pending: 1 }, drift: { artifacts: 9, fresh: 8, missing: 1, byKind: { trace: { artifacts: 1, fresh: 0, missing: 1 } } } });
    await drainEmbedQueuesPg({ handles: [store] });
    s = await getStoreStatusPg({ handle: store });
    expect(s).toMatchObject({ state: "healthy", drift: { artifacts: 9, fresh: 9, byKind: { chunk: { fresh: 8 }, trace: { fresh: 1 } } } });
    await withStoreTx({ handle: store, work: (tx) => tx.execute(sql`delete from reasoning_traces; delete from embeddings where kind = 'trace'`) });
  });

  it("says drifted when chunks lack a current vector with nothing queued, and when the vectors are of another model", async () => {
    // A vector made from older text, and its queue row lost: nothing will fix it unless someone re-embeds.
    await withStoreTx({ handle: store, work: (tx) => tx.execute(sql`update chunk_embeddings set input_hash = 'old' where chunk_row_id = (select min(id) from chunks)`) });
    let s = await getStoreStatusPg({ handle: store });
    expect(s).toMatchObject({ state: "drifted", drift: { stale: 1, fresh: 7 } });
    expect(s.reason).toContain("at least 1 row has no vector of its current text");
    // The store's vectors, and the model it names as active (store_meta, switched by a re-embed), are another model's.
    await withStoreTx({ handle: store, work: (tx) =>
      tx.execute(sql`update chunk_embeddings set input_hash = c.chunk_sha256, fingerprint_id = 'another-model' from chunks c where c.id = chunk_row_id;
        update store_meta set value = 'another-model' where key = 'active_fingerprint'`),
    });
    s = await getStoreStatusPg({ handle: store });
    expect(s).toMatchObject({ state: "drifted", drift: { modelChanged: true, activeFingerprintId: "another-model", drifted: 8 } });
    expect(s.reason).toContain("the configured model differs from the one whose vectors serve this store");
    expect(s.activeModel).toBeNull();
    const report = await storeHealthReportFor({ store: "ops", principal: "operator" });
    expect(report.drift).toMatchObject({ model_changed: true, other_model_vectors: 0 });
    assertMatchesContract({ schema: storeHealthResponse, wire: toWire({ schema: storeHealthResponse, value: report }), what: "GET /stores/{store}/health" });
    await withStoreTx({ handle: store, work: (tx) => tx.execute(sql`delete from chunk_embeddings; delete from store_meta where key = 'active_fingerprint'`) });
  });

  it("says parked, naming the items, when embedding failed for good; the health report passes the API's schema", async () => {
    await withStoreTx({ handle: store, work: (tx) => tx.execute(sql`truncate documents, chunks, chunk_embeddings, embed_queue cascade`) });
    await put(notes(2, "backup"));
    await withStoreTx({ handle: store, work: (tx) => tx.execute(sql`update embed_queue set parked_at = 1, attempts = 5, last_error = 'provider said 400'`) });
    const s = await getStoreStatusPg({ handle: store });
    expect(s.state).toBe("parked");
    expect(s.reason).toContain("2 items are parked after repeated embedding failures");
    const report = await storeHealthReportFor({ store: "ops", principal: "operator" });
    expect(report).toMatchObject({ status: "parked", backlog: { parked: 2 }, workers: [], recall: { recalls: 0, hit_rate: null, precision: null } });
    expect(report.parked.map((p) => p.last_error)).toEqual(["provider said 400", "provider said 400"]);
    // What the route answers, in the wire's snake_case, must pass the API's declared schema (as the route wrapper checks).
    assertMatchesContract({ schema: storeHealthResponse, wire: toWire({ schema: storeHealthResponse, value: report }), what: "GET /stores/{store}/health" });
  });
});
