import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getGovernance, getStoreDb, closeAllDatabases } from "@/lib/db/connection";
import { resetConfigForTests } from "@/lib/config";
import { registerEmbeddable } from "@/lib/embed/embeddables";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { resetHoldsForTests } from "@/lib/embed/healing";
import { claimEmbedBatch, enqueueEmbeddings, getEmbedBacklog, listParkedEmbeddings, retryParkedEmbeddings, backoffDelayMs } from "@/lib/embed/queue";
import { drainEmbedQueues, processEmbedBatch, MAX_EMBED_ATTEMPTS } from "@/lib/embed/worker";
import { knnSearch, rebuildVecIndex } from "@/lib/embed/vector-index";
import { BuiltinProvider } from "@/lib/embed/providers/builtin";
import { startFakeOpenAI } from "./fixtures/fake-openai-server";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { drainEmbeddingsWith, governanceSql, itSqliteOnly, seedDocument, seedStore, storeSql, useTestBackend, type TestEnv } from "./backend";
import { useTempDataDir } from "./helpers";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

// A tiny embeddable kind owned by the test: rows in a plain table.
registerEmbeddable({
  kind: "note",
  artifactType: "note",
  load({ handle, refIds: ids }) {
    const rows = handle.sqlite.prepare("select id, body from test_notes where id in (select value from json_each(?))").all(JSON.stringify(ids)) as { id: number; body: string }[];
    return new Map(rows.map((r) => [r.id, { text: r.body, inputHash: sha(r.body) }]));
  },
  *listAll({ handle }) {
    for (const r of handle.sqlite.prepare("select id, body from test_notes").iterate() as IterableIterator<{ id: number; body: string }>) yield { refId: r.id, inputHash: sha(r.body) };
  },
});

const NOTES = [
  "restart the nginx reverse proxy after changing the TLS certificate",
  "postgres vacuum settings for large tables",
  "camera exposure triangle: aperture, shutter speed and ISO",
  "login fails when the session cookie is missing the secure flag",
  "authentication errors after rotating the signing key",
  "sourdough starter feeding schedule",
];

async function addNotes(store: string, bodies: string[]) {
  const h = getStoreDb({ store });
  h.sqlite.exec("create table if not exists test_notes(id integer primary key, body text not null)");
  const ins = h.sqlite.prepare("insert into test_notes(body) values (?) returning id");
  const items = h.sqlite.transaction(() => bodies.map((b) => ({ kind: "note", refId: (ins.get(b) as { id: number }).id, inputHash: sha(b) })))();
  enqueueEmbeddings({ handle: h, items });
  return items;
}

// A test-owned kind ("note") in a SQLite table, and the SQLite vector index and queue functions: PostgreSQL's twins are
// in tests/pg/embed-worker.test.ts. What the app's own kinds show on both backends is at the end of this file.
const NOTE_KIND = "a test-owned embeddable kind in a SQLite table and the SQLite queue and vector index (PostgreSQL: tests/pg/embed-worker.test.ts)";

describe("write-behind embedding", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
    resetEmbedderForTests();
  });
  afterEach(() => {
    env.cleanup();
    resetEmbedderForTests();
  });

  /** Run with the openai provider pointed at a local stand-in server on a fresh DATA_DIR. */
  async function withFakeOpenAI(fn: (fake: Awaited<ReturnType<typeof startFakeOpenAI>>) => Promise<void>) {
    const fake = await startFakeOpenAI({ dimension: 32 });
    try {
      env.cleanup();
      env = useTempDataDir({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32" });
      resetEmbedderForTests();
      await getEmbedder().fingerprint;
      await fn(fake);
    } finally {
      await fake.close();
    }
  }

  itSqliteOnly("drains the queue into vectors that KNN finds; approximate and exact agree", NOTE_KIND, async () => {
    await addNotes("ops", NOTES);
    const h = getStoreDb({ store: "ops" });
    expect(getEmbedBacklog({ handle: h }).pending).toBe(NOTES.length);
    const r = await drainEmbedQueues({ stores: ["ops"] });
    expect(r.embedded).toBe(NOTES.length);
    expect(getEmbedBacklog({ handle: h })).toEqual({ pending: 0, oldest_enqueued_at: null, parked: 0 });
    const fp = await getEmbedder().fingerprint;
    // System 2 can say which model made each vector, from which text.
    const proofs = getGovernance()
      .sqlite.prepare("select artifact_id, model_name, fingerprint, input_hash from provenance where store = 'ops' and artifact_type = 'note_vector' order by cast(artifact_id as integer)")
      .all() as { artifact_id: string; model_name: string; fingerprint: string; input_hash: string }[];
    expect(proofs).toHaveLength(NOTES.length);
    expect(proofs[0]).toEqual({ artifact_id: "1", model_name: "builtin:dualmind-hash-v1", fingerprint: fp.id, input_hash: sha(NOTES[0]) });
    const [q] = await new BuiltinProvider().embed(["authentication login errors"], "query");
    const approx = knnSearch({ handle: h, kind: "note", fingerprintId: fp.id, query: q, k: 2 });
    const exact = knnSearch({ handle: h, kind: "note", fingerprintId: fp.id, query: q, k: 2, exact: true });
    expect(approx.method).toBe("simhash+rescore");
    expect(exact.method).toBe("exact-scan");
    expect(approx.hits.map((x) => x.refId)).toEqual(exact.hits.map((x) => x.refId));
    expect(approx.hits.map((x) => x.refId).sort()).toEqual([4, 5]);
    expect(approx.hits[0].distance).toBeCloseTo(exact.hits[0].distance, 5);
    // Filters restrict the candidates before ranking.
    const filtered = knnSearch({ handle: h, kind: "note", fingerprintId: fp.id, query: q, k: 2, allowedRefIds: [1, 2, 3] });
    expect(filtered.hits.every((x) => [1, 2, 3].includes(x.refId))).toBe(true);
  });

  itSqliteOnly("the vec index can be rebuilt from the BLOBs alone", NOTE_KIND, async () => {
    await addNotes("ops", NOTES);
    await drainEmbedQueues({ stores: ["ops"] });
    const h = getStoreDb({ store: "ops" });
    const fp = await getEmbedder().fingerprint;
    const [q] = await new BuiltinProvider().embed(["proxy certificate"], "query");
    const before = knnSearch({ handle: h, kind: "note", fingerprintId: fp.id, query: q, k: 3 }).hits;
    h.sqlite.exec(`delete from vec_${fp.id}`);
    expect(rebuildVecIndex({ handle: h, fingerprintId: fp.id, actor: "test" })).toBe(NOTES.length);
    expect(knnSearch({ handle: h, kind: "note", fingerprintId: fp.id, query: q, k: 3 }).hits).toEqual(before);
  });

  itSqliteOnly("identical texts are embedded once (embedding cache)", NOTE_KIND, async () => {
    await withFakeOpenAI(async (fake) => {
      await addNotes("ops", ["same text", "same text", "other text"]);
      await getEmbedder().fingerprint;
      fake.state.requests.length = 0; // the fingerprint probe is not counted
      await drainEmbedQueues({ stores: ["ops"] });
      const sent = fake.state.requests.flatMap((r) => r.input);
      expect(sent.filter((t) => t === "same text")).toHaveLength(1);
      expect(getStoreDb({ store: "ops" }).sqlite.prepare("select count(*) as n from embeddings").get()).toEqual({ n: 3 });
      await addNotes("ops", ["other text"]);
      await drainEmbedQueues({ stores: ["ops"] });
      expect(fake.state.requests.flatMap((r) => r.input)).toHaveLength(2);
    });
  });

  itSqliteOnly("a provider outage (500) holds the queue without spending attempts; once it answers the items drain without an admin", NOTE_KIND, async () => {
    await withFakeOpenAI(async (fake) => {
      await addNotes("ops", ["alpha", "beta"]);
      const h = getStoreDb({ store: "ops" });
      fake.state.defaultMode = "500";
      const first = await processEmbedBatch({ handle: getStoreDb({ store: "ops" }) });
      expect(first).toMatchObject({ claimed: 2, embedded: 0, failed: 0, held: 2, parked: 0 });
      const row = h.sqlite.prepare("select attempts, next_attempt_at, last_error, claimed_by from embed_queue limit 1").get() as { attempts: number; next_attempt_at: number; last_error: string; claimed_by: string | null };
      expect(row).toMatchObject({ attempts: 0, claimed_by: null, last_error: expect.stringMatching(/^server: provider failed \(500\)/) });
      expect(row.next_attempt_at).toBeGreaterThan(Date.now());
      // Held: nothing is claimed or sent until the probe answers, however often the worker asks.
      fake.state.requests.length = 0;
      for (let i = 0; i < 3 * MAX_EMBED_ATTEMPTS; i++) {
        h.sqlite.exec("update embed_queue set next_attempt_at = 0");
        expect((await processEmbedBatch({ handle: getStoreDb({ store: "ops" }) })).claimed).toBe(0);
      }
      expect(fake.state.requests.flatMap((r) => r.input).filter((t) => t === "alpha" || t === "beta")).toEqual([]);
      expect(getEmbedBacklog({ handle: h })).toMatchObject({ pending: 2, parked: 0 });
      // It answers again: the next probe reopens the queue and the items embed, no retry-parked needed.
      fake.state.defaultMode = "ok";
      const deadline = Date.now() + 30_000;
      while (getEmbedBacklog({ handle: h }).pending > 0 && Date.now() < deadline) {
        await drainEmbedQueues({ stores: ["ops"] });
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(getEmbedBacklog({ handle: h })).toMatchObject({ pending: 0, parked: 0 });
      expect(h.sqlite.prepare("select count(*) as n from embeddings").get()).toEqual({ n: 2 });
    });
  });

  itSqliteOnly("an input the provider refuses (400) parks alone: its batch-mates embed, and an admin's retry is audited once", NOTE_KIND, async () => {
    await withFakeOpenAI(async (fake) => {
      await addNotes("ops", ["alpha", "poison", "beta"]);
      const h = getStoreDb({ store: "ops" });
      fake.state.refuseTexts.add("poison");
      const r = await processEmbedBatch({ handle: h });
      expect(r).toMatchObject({ claimed: 3, embedded: 2, failed: 1, parked: 1, held: 0 });
      expect(listParkedEmbeddings({ handle: h })).toEqual([expect.objectContaining({ kind: "note", ref_id: 2, attempts: 1, last_error: expect.stringMatching(/^bad_request: .*poison/) })]);
      // New work is not blocked by parked items.
      await addNotes("ops", ["gamma"]);
      expect((await drainEmbedQueues({ stores: ["ops"] })).embedded).toBe(1);
      fake.state.refuseTexts.clear();
      expect(retryParkedEmbeddings({ handle: h, actor: "user:admin" })).toBe(1);
      // The domain writes the audit row itself, once, with who asked.
      const audits = getGovernance().sqlite.prepare("select actor, target, details from audit_log where action = 'store.embeddings.retry_parked'").all();
      expect(audits).toEqual([{ actor: "user:admin", target: "store:ops", details: JSON.stringify({ requeued: 1 }) }]);
      expect((await drainEmbedQueues({ stores: ["ops"] })).embedded).toBe(1);
      expect(getEmbedBacklog({ handle: h })).toMatchObject({ pending: 0, parked: 0 });
    });
  });

  itSqliteOnly("a non-retryable error (wrong dimension) parks at once and stores nothing", NOTE_KIND, async () => {
    await withFakeOpenAI(async (fake) => {
      await addNotes("ops", ["alpha"]);
      fake.state.defaultMode = "wrong_dim";
      const r = await processEmbedBatch({ handle: getStoreDb({ store: "ops" }) });
      expect(r).toMatchObject({ failed: 1, parked: 1 });
      expect(listParkedEmbeddings({ handle: getStoreDb({ store: "ops" }) })[0].last_error).toMatch(/^dimension_mismatch/);
      expect(getStoreDb({ store: "ops" }).sqlite.prepare("select count(*) as n from embeddings").get()).toEqual({ n: 0 });
    });
  });

  itSqliteOnly("two workers never claim the same row", NOTE_KIND, async () => {
    await addNotes("ops", NOTES);
    const h = getStoreDb({ store: "ops" });
    const a = claimEmbedBatch({ handle: h, workerId: "a", limit: 4, leaseMs: 60_000 });
    const b = claimEmbedBatch({ handle: h, workerId: "b", limit: 4, leaseMs: 60_000 });
    expect(a).toHaveLength(4);
    expect(b).toHaveLength(2);
    expect(new Set([...a, ...b].map((x) => x.id)).size).toBe(6);
    // An expired lease (crashed worker) is claimable again.
    const later = claimEmbedBatch({ handle: h, workerId: "c", limit: 10, leaseMs: 60_000, now: Date.now() + 120_000 });
    expect(later).toHaveLength(6);
  });

  it("backoff grows exponentially with jitter and is capped", () => {
    expect(backoffDelayMs({ attempts: 1, random: () => 0 })).toBe(500);
    expect(backoffDelayMs({ attempts: 1, random: () => 1 })).toBe(1000);
    expect(backoffDelayMs({ attempts: 4, random: () => 1 })).toBe(8000);
    expect(backoffDelayMs({ attempts: 30, random: () => 1 })).toBe(300_000);
  });

  itSqliteOnly("without sqlite-vec, search still answers by scanning the BLOBs", NOTE_KIND, async () => {
    await addNotes("ops", NOTES);
    await drainEmbedQueues({ stores: ["ops"] });
    closeAllDatabases();
    process.env.DUALMIND_DISABLE_VECTORS = "true";
    resetConfigForTests();
    try {
      const h = getStoreDb({ store: "ops" });
      expect(h.vectors.available).toBe(false);
      const fp = await getEmbedder().fingerprint;
      const [q] = await new BuiltinProvider().embed(["sourdough"], "query");
      const r = knnSearch({ handle: h, kind: "note", fingerprintId: fp.id, query: q, k: 1 });
      expect(r.method).toBe("exact-scan-js");
      expect(r.hits[0].refId).toBe(6);
    } finally {
      delete process.env.DUALMIND_DISABLE_VECTORS;
      resetConfigForTests();
    }
  });
});

describe("write-behind embedding of the app's documents (both backends)", () => {
  let env: TestEnv;
  const store = "ops";
  afterEach(async () => {
    await env.cleanup();
    resetEmbedderForTests();
  });
  const ingest = async () => {
    for (const [i, body] of NOTES.entries()) await seedDocument(store, `notes/${i}.md`, body);
    return (await storeSql<{ n: number }>(store, "select cast(count(*) as integer) as n from chunks"))[0].n;
  };

  it("drains the queue into vectors, each with its provenance in System 2 (model, fingerprint, input hash)", async () => {
    env = await useTestBackend();
    resetEmbedderForTests();
    await seedStore(store);
    const chunks = await ingest();
    expect((await storeHealthReportFor({ store, principal: "operator" })).backlog.pending).toBe(chunks);
    expect(await drainEmbeddingsWith([store])).toMatchObject({ embedded: chunks, failed: 0 });
    expect((await storeHealthReportFor({ store, principal: "operator" })).backlog).toMatchObject({ pending: 0, parked: 0 });
    const fp = await getEmbedder().fingerprint;
    const proofs = await governanceSql<{ model_name: string; fingerprint: string; input_hash: string }>(
      "select model_name, fingerprint, input_hash from provenance where store = ? and artifact_type = 'chunk_vector'",
      [store],
    );
    expect(proofs).toHaveLength(chunks);
    const hashes = (await storeSql<{ h: string }>(store, "select chunk_sha256 as h from chunks")).map((r) => r.h).sort();
    expect(proofs.map((p) => p.input_hash).sort()).toEqual(hashes);
    expect(new Set(proofs.map((p) => `${p.model_name} ${p.fingerprint}`))).toEqual(new Set([`builtin:dualmind-hash-v1 ${fp.id}`]));
  });

  it("a refused input parks with the error visible while a provider outage parks nothing; an admin's retry is audited once, and the items then embed", async () => {
    const fake = await startFakeOpenAI({ dimension: 32 });
    try {
      env = await useTestBackend({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "fake", DUALMIND_EMBED_BASE_URL: fake.baseUrl, DUALMIND_EMBED_DIM: "32" });
      resetEmbedderForTests();
      await seedStore(store);
      await getEmbedder().fingerprint;
      await seedDocument(store, "notes/a.md", "alpha");
      await seedDocument(store, "notes/b.md", "beta");
      fake.state.defaultMode = "500";
      for (let i = 0; i < MAX_EMBED_ATTEMPTS; i++) {
        await storeSql(store, "update embed_queue set next_attempt_at = 0");
        expect(await drainEmbeddingsWith([store])).toMatchObject({ embedded: 0, failed: 0 });
      }
      expect((await storeHealthReportFor({ store, principal: "operator" })).backlog).toMatchObject({ pending: 2, parked: 0 });
      expect(await storeSql<{ n: number }>(store, "select cast(max(attempts) as integer) as n from embed_queue")).toEqual([{ n: 0 }]);
      // The outage is over but the input is refused (a 400): the probe would reopen the queue; skip its wait.
      resetHoldsForTests();
      fake.state.defaultMode = "400";
      await storeSql(store, "update embed_queue set next_attempt_at = 0");
      expect(await drainEmbeddingsWith([store])).toMatchObject({ embedded: 0, failed: 2 });
      const health = await storeHealthReportFor({ store, principal: "operator" });
      expect(health.backlog).toMatchObject({ pending: 0, parked: 2 });
      expect(health.parked[0]).toMatchObject({ kind: "chunk", attempts: 1, last_error: expect.stringMatching(/^bad_request: provider rejected the request \(400\)/) });
      fake.state.defaultMode = "ok";
      expect(await embeddingsBackend().retryParkedEmbeddings({ store, actor: "user:admin" })).toBe(2);
      // The domain writes the audit row itself, once, with who asked.
      expect(await governanceSql("select actor, target, details from audit_log where action = 'store.embeddings.retry_parked'")).toEqual([
        { actor: "user:admin", target: `store:${store}`, details: JSON.stringify({ requeued: 2 }) },
      ]);
      expect(await drainEmbeddingsWith([store])).toMatchObject({ embedded: 2, failed: 0 });
      expect((await storeHealthReportFor({ store, principal: "operator" })).backlog).toMatchObject({ pending: 0, parked: 0 });
    } finally {
      await fake.close();
    }
  });
});
