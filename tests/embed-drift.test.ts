import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { registerEmbeddable } from "@/lib/embed/embeddables";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { enqueueEmbeddings } from "@/lib/embed/queue";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { computeDrift } from "./fixtures/drift-recount";
import { estimateReembed, getReembedProgress, startReembed } from "@/lib/embed/reembed";
import { verifyAuditChain } from "@/lib/governance/audit";
import { graphBackend } from "@/lib/graph/backend";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { drainEmbeddings, governanceSql, itSqliteOnly, seedStore, useTestBackend, type TestEnv } from "./backend";
import { restartWith, useTempDataDir } from "./helpers";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

registerEmbeddable({
  kind: "memo",
  artifactType: "memo",
  load({ handle, refIds: ids }) {
    const rows = handle.sqlite.prepare("select id, body from test_memos where id in (select value from json_each(?))").all(JSON.stringify(ids)) as { id: number; body: string }[];
    return new Map(rows.map((r) => [r.id, { text: r.body, inputHash: sha(r.body) }]));
  },
  *listAll({ handle }) {
    for (const r of handle.sqlite.prepare("select id, body from test_memos").all() as { id: number; body: string }[]) yield { refId: r.id, inputHash: sha(r.body) };
  },
});

function addMemos(store: string, bodies: string[]) {
  const h = getStoreDb({ store });
  h.sqlite.exec("create table if not exists test_memos(id integer primary key, body text not null)");
  const ins = h.sqlite.prepare("insert into test_memos(body) values (?) returning id");
  const items = h.sqlite.transaction(() => bodies.map((b) => ({ kind: "memo", refId: (ins.get(b) as { id: number }).id, inputHash: sha(b) })))();
  enqueueEmbeddings({ handle: h, items });
}


const BODIES = Array.from({ length: 40 }, (_, i) => `memo number ${i} about topic ${i % 7} and detail ${i * 13}`);

// A test-owned kind ("memo") in a SQLite table: the model-switch, crash-resume and job-total checks need a kind whose
// rows the test edits at will. PostgreSQL's twins are in tests/pg/reembed.test.ts (its status counts the app's kinds only).
const MEMO_KIND = "a test-owned embeddable kind in a SQLite table (PostgreSQL: tests/pg/reembed.test.ts)";

describe("drift and re-embed", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
    resetEmbedderForTests();
  });
  afterEach(() => {
    restartWith({ DUALMIND_EMBED_DIM: undefined, DUALMIND_EMBED_MODEL: undefined });
    env.cleanup();
  });

  itSqliteOnly("edited text shows as stale; re-embedding only stale rows clears it", MEMO_KIND, async () => {
    addMemos("s", BODIES);
    await drainEmbedQueues({ stores: ["s"] });
    const fp = await getEmbedder().fingerprint;
    const h = getStoreDb({ store: "s" });
    expect(computeDrift({ handle: h, configured: fp })).toMatchObject({ artifacts: 40, fresh: 40, stale: 0, drifted: 0, coverage_pct: 100 });
    h.sqlite.prepare("update test_memos set body = body || ' (edited)' where id <= 3").run();
    expect(computeDrift({ handle: h, configured: fp })).toMatchObject({ fresh: 37, stale: 3, drifted: 3, drift_pct: 7.5 });
    expect(estimateReembed({ handle: h, configured: fp, onlyStale: true }).to_embed).toBe(3);
    startReembed({ handle: h, configured: fp, onlyStale: true, actor: "user:test" });
    await drainEmbedQueues({ stores: ["s"] });
    expect(computeDrift({ handle: h, configured: fp })).toMatchObject({ fresh: 40, stale: 0, drifted: 0 });
    expect(getReembedProgress({ handle: h })).toMatchObject({ status: "done", done: 3, total: 3, remaining: 0 });
  });

  itSqliteOnly("a model change is reported at once; a re-embed interrupted by a crash resumes and switches atomically", MEMO_KIND, async () => {
    addMemos("s", BODIES);
    await drainEmbedQueues({ stores: ["s"] });
    const oldFp = await getEmbedder().fingerprint;

    restartWith({ DUALMIND_EMBED_DIM: "256", DUALMIND_EMBED_MODEL: "dualmind-hash-v1-256" });
    const newFp = await getEmbedder().fingerprint;
    expect(newFp.id).not.toBe(oldFp.id);
    let h = getStoreDb({ store: "s" });
    const drift = computeDrift({ handle: h, configured: newFp });
    expect(drift).toMatchObject({ model_changed: true, active_fingerprint_id: oldFp.id, drifted: 40, drift_pct: 100 });
    expect(() => estimateReembed({ handle: h, configured: newFp, onlyStale: true })).toThrow(/only a full re-embed/);
    expect(estimateReembed({ handle: h, configured: newFp, onlyStale: false }).to_embed).toBe(40);

    startReembed({ handle: h, configured: newFp, onlyStale: false, actor: "user:test" });
    await drainEmbedQueues({ stores: ["s"], batchSize: 8, maxBatches: 2 });
    const mid = getReembedProgress({ handle: h })!;
    expect(mid).toMatchObject({ total: 40, done: 16, remaining: 24 });
    // Old vectors still serve until the switch.
    expect(computeDrift({ handle: h, configured: newFp }).active_fingerprint_id).toBe(oldFp.id);

    // Crash: the process dies; a new one starts with the same config.
    restartWith({});
    h = getStoreDb({ store: "s" });
    expect(getReembedProgress({ handle: h })).toMatchObject({ done: 16, remaining: 24 });
    await drainEmbedQueues({ stores: ["s"], batchSize: 8 });

    const after = computeDrift({ handle: h, configured: newFp });
    expect(after).toMatchObject({ model_changed: false, active_fingerprint_id: newFp.id, fresh: 40, drifted: 0, other_model_vectors: 0 });
    expect(getReembedProgress({ handle: h })).toMatchObject({ status: "done", done: 40, total: 40, remaining: 0 });
    const dims = h.sqlite.prepare("select distinct dim from embeddings").all();
    expect(dims).toEqual([{ dim: 256 }]);
    expect(h.sqlite.prepare("select name from sqlite_master where name = ?").get(`vec_${oldFp.id}`)).toBeUndefined();
    const actions = (await import("@/lib/db/connection")).getGovernance().sqlite.prepare("select action from audit_log where action like 'store.reembed%' order by id").all();
    expect(actions).toEqual([{ action: "store.reembed.start" }, { action: "store.reembed.switch" }]);
    expect(verifyAuditChain().ok).toBe(true);
  });

  itSqliteOnly("re-embed on an up-to-date store starts no job and says so", MEMO_KIND, async () => {
    addMemos("s", BODIES);
    await drainEmbedQueues({ stores: ["s"] });
    const fp = await getEmbedder().fingerprint;
    const h = getStoreDb({ store: "s" });
    const r = startReembed({ handle: h, configured: fp, onlyStale: false, actor: "user:test" });
    expect(r).toEqual({ started: false, reason: expect.stringMatching(/every item already has a current vector/) });
    expect(getReembedProgress({ handle: h })).toBeNull();
    expect(h.sqlite.prepare("select count(*) as n from embed_queue").get()).toEqual({ n: 0 });
    const started = (await import("@/lib/db/connection")).getGovernance().sqlite.prepare("select count(*) as n from audit_log where action like 'store.reembed.%'").get();
    expect(started).toEqual({ n: 0 });
  });

  itSqliteOnly("a re-embed counts only its own items: what is ingested after it started is not in its total, and it ends done (and stays done after a restart)", MEMO_KIND, async () => {
    addMemos("s", BODIES);
    await drainEmbedQueues({ stores: ["s"] });
    const fp = await getEmbedder().fingerprint;
    let h = getStoreDb({ store: "s" });
    h.sqlite.prepare("update test_memos set body = body || ' (edited)' where id <= 5").run();
    const r = startReembed({ handle: h, configured: fp, onlyStale: true, actor: "user:test" });
    expect(r.started && r.job).toMatchObject({ status: "running", total: 5, done: 0, remaining: 5 });

    // Ingest keeps going while the job runs: 30 new memos join the queue.
    addMemos("s", BODIES.slice(0, 30).map((b) => `${b} (new)`));
    expect(getReembedProgress({ handle: h })).toMatchObject({ total: 5, done: 0, remaining: 5 });

    await drainEmbedQueues({ stores: ["s"], batchSize: 4, maxBatches: 1 });
    const mid = getReembedProgress({ handle: h })!;
    expect(mid.total).toBe(5);
    expect(mid.done + mid.remaining).toBe(5);

    await drainEmbedQueues({ stores: ["s"] });
    expect(getReembedProgress({ handle: h })).toMatchObject({ status: "done", total: 5, done: 5, remaining: 0, finished_at: expect.any(Number) });
    restartWith({});
    h = getStoreDb({ store: "s" });
    expect(getReembedProgress({ handle: h })).toMatchObject({ status: "done", total: 5, done: 5 });
  });

  itSqliteOnly("a model switch started during ingest switches once the new items have vectors too, and its total stays its own", MEMO_KIND, async () => {
    addMemos("s", BODIES);
    await drainEmbedQueues({ stores: ["s"] });
    restartWith({ DUALMIND_EMBED_DIM: "256", DUALMIND_EMBED_MODEL: "dualmind-hash-v1-256" });
    const newFp = await getEmbedder().fingerprint;
    const h = getStoreDb({ store: "s" });
    const r = startReembed({ handle: h, configured: newFp, onlyStale: false, actor: "user:test" });
    expect(r.started && r.job.total).toBe(40);
    addMemos("s", ["a memo written during the re-embed", "another one"]);
    await drainEmbedQueues({ stores: ["s"] });
    expect(getReembedProgress({ handle: h })).toMatchObject({ status: "done", total: 40, done: 40 });
    expect(computeDrift({ handle: h, configured: newFp })).toMatchObject({ model_changed: false, active_fingerprint_id: newFp.id, fresh: 42, drifted: 0 });
  });
});

describe("drift and re-embed of the app's own kinds (both backends)", () => {
  let env: TestEnv;
  const store = "s";
  beforeEach(async () => {
    env = await useTestBackend();
    resetEmbedderForTests();
    await seedStore(store);
  });
  afterEach(async () => env.cleanup());

  async function seedNodes(n: number) {
    const nodes = [];
    for (let i = 0; i < n; i++) nodes.push(await graphBackend().createNode({ store, input: { name: `service ${i}`, entity_type: "system" }, actor: "t" }));
    await drainEmbeddings([store]);
    return nodes;
  }
  const drift = async () => (await storeHealthReportFor({ store, principal: "operator" })).drift;

  it("a renamed node shows as stale until its new vector is made; the store's health says so", async () => {
    const nodes = await seedNodes(6);
    expect(await drift()).toMatchObject({ artifacts: 6, fresh: 6, stale: 0, drifted: 0, coverage_pct: 100 });
    for (const node of nodes.slice(0, 2)) await graphBackend().updateNode({ store, id: node.id, input: { display_name: `${node.display_name} (renamed)` } });
    expect(await drift()).toMatchObject({ artifacts: 6, fresh: 4, stale: 2, drifted: 2 });
    await drainEmbeddings([store]);
    expect(await drift()).toMatchObject({ artifacts: 6, fresh: 6, stale: 0, drifted: 0 });
  });

  it("re-embed on an up-to-date store starts no job and says so", async () => {
    await seedNodes(3);
    const fp = await getEmbedder().fingerprint;
    const r = await embeddingsBackend().startReembed({ store, configured: fp, onlyStale: false, holdSwitch: false, actor: "user:test" });
    expect(r).toEqual({ started: false, reason: expect.stringMatching(/every item already has a current vector/) });
    expect(await embeddingsBackend().getReembedProgress({ store })).toBeNull();
    expect((await storeHealthReportFor({ store, principal: "operator" })).backlog.pending).toBe(0);
    expect(await governanceSql("select cast(count(*) as integer) as n from audit_log where action like 'store.reembed.%'")).toEqual([{ n: 0 }]);
  });

  it("the confirmation of each re-embed intent says what it would do, in the same words on both backends", async () => {
    const [node] = await seedNodes(3);
    const fp = await getEmbedder().fingerprint;
    const model = `${fp.provider}:${fp.model}`;
    const describe = (intent: "start" | "start_stale" | "start_hold" | "switch") => embeddingsBackend().describeReembedIntent({ store, configured: fp, intent });
    expect(await describe("switch")).toBe("There is no re-embed waiting for a switch.");
    expect(await describe("start")).toBe(`Nothing to re-embed: every item already has a current vector from ${model}. No job will start.`);
    await graphBackend().updateNode({ store, id: node.id, input: { display_name: "renamed" } });
    expect(await describe("start_stale")).toBe(`Embeds 1 stale item(s) (text changed since their vector was made) with ${model}. Items ingested meanwhile are embedded too but do not count in this job.`);
    expect(await embeddingsBackend().startReembed({ store, configured: fp, onlyStale: true, holdSwitch: false, actor: "user:test" })).toMatchObject({ started: true });
    expect(await describe("start")).toBe(`A re-embed to ${model} is already running (0 of 1 done): confirming resumes it; no second job starts.`);
    expect(await describe("switch")).toBe(`Switches the store to ${fp.id} now and deletes 0 vector(s) of the previous model. Vector search uses the new model from then on.`);
  });
});
