import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { graphBackend } from "@/lib/graph/backend";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { runTogether } from "./fixtures/start-together";
import { drainEmbeddings, onPg, seedStore, storeSql, useTestBackend, type TestEnv } from "./backend";
import { patience } from "./fixtures/patience";

const THINKER = path.join(process.cwd(), "tests", "fixtures", "graph-thinker.ts");
const store = "mind";
const actor = "t";
const g = () => graphBackend();

let env: TestEnv;
const seed = () => seedStore(store);
beforeEach(async () => {
  env = await useTestBackend({}, { seed });
});
afterEach(async () => {
  await env.cleanup();
  resetEmbedderForTests();
});

/** Rows of a store table, on either backend. */
const count = async (table: string, where = "") => (await storeSql<{ n: number }>(store, `select cast(count(*) as integer) as n from ${table} ${where}`))[0].n;

describe("thoughts and chains", () => {
  it("numbers thoughts in their chain, keeps the count, and refuses a reused number", async () => {
    const a = await g().think({ store, input: { content: "the reindex is slow on big stores", chain_id: "perf-1", framework: "debug" }, actor });
    const b = await g().think({ store, input: { content: "profile shows FTS merge dominating", chain_id: "perf-1", framework: "debug", total_thoughts: 3 }, actor });
    expect([a.thought_number, b.thought_number]).toEqual([1, 2]);
    expect(a.embedding).toBe("pending");
    await expect(g().think({ store, input: { content: "dup", chain_id: "perf-1", thought_number: 2 }, actor })).rejects.toMatchObject({ code: "conflict" });
    await expect(g().think({ store, input: { content: "no chain", thought_number: 2 }, actor })).rejects.toThrow();
    const chain = await g().getChain({ store, id: "perf-1" });
    expect(chain.thought_count).toBe(2);
    expect(chain.thoughts.map((t) => t.content)).toEqual(["the reindex is slow on big stores", "profile shows FTS merge dominating"]);
    // Full-text search finds by word; user syntax never reaches MATCH (or to_tsquery) raw.
    expect((await g().listThoughts({ store, filter: { q: "FTS merge" } })).thoughts.map((t) => t.id)).toEqual([b.id]);
    expect((await g().listThoughts({ store, filter: { q: 'merge" OR content:*' } })).thoughts.map((t) => t.id)).toEqual([b.id]);
    await g().deleteThought({ store, id: a.id, actor });
    expect((await g().getChain({ store, id: "perf-1" })).thought_count).toBe(1);
  });

  it("keeps chain counts consistent when two processes write to the same chains at once", async () => {
    const chains = ["c-a", "c-b", "c-c"];
    // The writers reach this backend the way the app does: DATA_DIR, and DATABASE_URL on PostgreSQL (two replicas).
    const common = { DATA_DIR: env.dataDir, ...(env.databaseUrl ? { DATABASE_URL: env.databaseUrl } : {}), STORE: store, CHAINS: JSON.stringify(chains), PER_CHAIN: "15" };
    const [p1, p2] = await runTogether<{ writer: string; written: number }>(THINKER, [
      { ...common, WRITER: "p1" },
      { ...common, WRITER: "p2" },
    ]);
    expect(p1.written + p2.written).toBe(90);
    for (const id of chains) {
      const chain = await g().getChain({ store, id });
      expect(chain.thought_count).toBe(30);
      expect(chain.thoughts.map((t) => t.thought_number)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    }
  }, 240_000);

  it("gives a repeated thought novelty ≈ 0 once its vector exists, and a new idea high novelty", async () => {
    const first = await g().think({ store, input: { content: "nginx needs a reload after the TLS certificate rotates" }, actor });
    await drainEmbeddings([store]);
    expect((await g().getThought({ store, id: first.id })).novelty).toBe(1);
    const repeat = await g().think({ store, input: { content: "nginx needs a reload after the TLS certificate rotates" }, actor });
    const fresh = await g().think({ store, input: { content: "sourdough starter wants feeding twice a day" }, actor });
    expect(repeat.novelty).toBeNull();
    await drainEmbeddings([store]);
    const r = await g().getThought({ store, id: repeat.id });
    const f = await g().getThought({ store, id: fresh.id });
    expect(r.embedding).toBe("ready");
    expect(r.novelty).toBeCloseTo(0, 5);
    expect(f.novelty!).toBeGreaterThan(0.5);
  });

  it("fills in novelty as 1 − the best cosine to the 50 embedded thoughts before each, whatever the backend", async () => {
    const topics = ["nginx reload", "sourdough starter", "TLS certificate", "postgres vacuum", "garden tomatoes", "kafka lag"];
    // More thoughts than the window, a few of them repeats, so the window's edge and near-zero novelty both count.
    for (let i = 0; i < 70; i++) await g().think({ store, input: { content: `${topics[i % topics.length]} note ${i % 9 === 0 ? "again" : i}` }, actor });
    await drainEmbeddings([store]);
    const { thoughts } = await g().listThoughts({ store, filter: { limit: 200 }, budget: false });
    const stored = await storeSql<{ id: string; seq: number | string; v: Buffer | number[] }>(
      store,
      onPg
        ? "select t.id, t.seq, e.embedding as v from thoughts t join embeddings e on e.kind = 'thought' and e.ref_id = t.seq order by t.seq"
        : "select t.id, t.seq, e.vector as v from thoughts t join embeddings e on e.kind = 'thought' and e.ref_id = t.seq order by t.seq",
    );
    const vectorOf = (v: Buffer | number[]) => (Array.isArray(v) ? v : new Float32Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength)));
    const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
      let s = 0;
      for (let i = 0; i < a.length; i++) s += a[i] * b[i];
      return s;
    };
    const expected = new Map(
      stored.map((t, i) => {
        const window = stored.slice(Math.max(0, i - 50), i).map((p) => dot(vectorOf(t.v), vectorOf(p.v)));
        return [t.id, window.length ? Math.min(1, Math.max(0, 1 - Math.max(...window))) : 1];
      }),
    );
    expect(stored).toHaveLength(70);
    expect(thoughts.map((t) => [t.id, t.novelty])).toEqual(thoughts.map((t) => [t.id, expected.get(t.id)]));
    expect(thoughts.filter((t) => t.novelty! < 0.01).length).toBeGreaterThan(0);
  }, patience(60_000));

  it("moves utility as a moving average of feedback", async () => {
    const t = await g().think({ store, input: { content: "use BEGIN IMMEDIATE for counters" }, actor });
    expect((await g().recordThoughtFeedback({ store, id: t.id, input: { utility: 1 } })).utility).toBe(1);
    const second = await g().recordThoughtFeedback({ store, id: t.id, input: { utility: 0 } });
    expect(second.utility).toBeCloseTo(0.7, 6);
    expect(second.feedback_count).toBe(2);
    await expect(g().recordThoughtFeedback({ store, id: crypto.randomUUID(), input: { utility: 1 } })).rejects.toMatchObject({ code: "not_found" });
    await expect(g().recordThoughtFeedback({ store, id: t.id, input: { utility: 2 } })).rejects.toThrow();
  });
});

describe("embedding of thoughts and nodes", () => {
  it("covers every thought and node, and re-embeds a node only when its embedded text changes", async () => {
    await g().think({ store, input: { content: "vacuum the database monthly" }, actor });
    const node = await g().createNode({ store, input: { name: "postgres", entity_type: "system" }, actor });
    await drainEmbeddings([store]);
    // The store's health (GET /stores/{store}/health) counts each kind's vectors.
    const byKind = async () => (await storeHealthReportFor({ store, principal: "operator" })).drift?.by_kind;
    expect(await byKind()).toMatchObject({ thought: { artifacts: 1, fresh: 1 }, node: { artifacts: 1, fresh: 1 } });
    const pending = () => count("embed_queue", "where kind = 'node'");
    await g().updateNode({ store, id: node.id, input: { attributes: { version: 16 } } });
    expect(await pending()).toBe(0);
    await g().updateNode({ store, id: node.id, input: { display_name: "PostgreSQL" } });
    expect(await pending()).toBe(1);
    expect((await byKind())?.node).toMatchObject({ artifacts: 1, stale: 1 });
    await drainEmbeddings([store]);
    expect((await byKind())?.node).toMatchObject({ artifacts: 1, fresh: 1 });
  });
});

describe("graph cascades", () => {
  it("deleting a node removes its frames, relations and evidence links; deleting a thought removes its links only", async () => {
    const nginx = await g().createNode({ store, input: { name: "nginx", entity_type: "system" }, actor });
    const tls = await g().createNode({ store, input: { name: "TLS certificates", entity_type: "concept" }, actor });
    const t1 = await g().think({ store, input: { content: "nginx serves the TLS certificate" }, actor });
    const t2 = await g().think({ store, input: { content: "certificates rotate monthly" }, actor });
    const frame = await g().createFrame({ store, input: { node_id: nginx.id, column: "semantic", properties: { role: "reverse proxy" } }, actor });
    const tlsFrame = await g().createFrame({ store, input: { node_id: tls.id, column: "episodic", properties: { rotated: "2026-11-01" } }, actor });
    const { relation } = await g().createOrMergeRelation({ store, input: { from_id: nginx.id, to_id: tls.id, relationship_type: "uses", weight: 0.9 }, actor });
    await g().linkEvidence({ store, input: { target: "frame", target_id: frame.id, thought_id: t1.id }, actor });
    await g().linkEvidence({ store, input: { target: "relation", target_id: relation.id, thought_id: t1.id }, actor });
    await g().linkEvidence({ store, input: { target: "frame", target_id: tlsFrame.id, thought_id: t2.id }, actor });

    await g().deleteThought({ store, id: t2.id, actor });
    expect(await count("kg_frame_evidence")).toBe(1);
    expect(await count("kg_frame")).toBe(2);

    expect(await g().deleteNode({ store, id: nginx.id, actor })).toEqual({ deleted: nginx.id, frames: 1, relations: 1 });
    expect([await count("kg_frame"), await count("kg_relation"), await count("kg_frame_evidence"), await count("kg_relation_evidence")]).toEqual([1, 0, 0, 0]);
    // The thought that was evidence survives; only the links went.
    expect(await count("thoughts")).toBe(1);
    expect(await count("embed_queue", "where kind = 'node'")).toBe(1);
  });
});

describe("relations", () => {
  it("refuses self-loops and unknown nodes, and merges a duplicate by taking the larger weight", async () => {
    const a = await g().createNode({ store, input: { name: "Postgres", entity_type: "system" }, actor });
    const b = await g().createNode({ store, input: { name: "pgbouncer", entity_type: "tool" }, actor });
    await expect(g().createNode({ store, input: { name: "  postgres ", entity_type: "system" }, actor })).rejects.toMatchObject({ code: "conflict" });
    await expect(g().createOrMergeRelation({ store, input: { from_id: a.id, to_id: a.id, relationship_type: "uses" }, actor })).rejects.toMatchObject({ code: "unprocessable" });
    await expect(g().createOrMergeRelation({ store, input: { from_id: a.id, to_id: crypto.randomUUID(), relationship_type: "uses" }, actor })).rejects.toMatchObject({ code: "not_found" });
    await expect(g().createOrMergeRelation({ store, input: { from_id: a.id, to_id: b.id, relationship_type: "uses", weight: 1.5 }, actor })).rejects.toThrow();
    const first = await g().createOrMergeRelation({ store, input: { from_id: b.id, to_id: a.id, relationship_type: "Pools Connections For", weight: 0.4, confidence: 0.9, bidirectional: true }, actor });
    expect(first.merged).toBe(false);
    expect(first.relation.relationship_type).toBe("pools_connections_for");
    // Same type, reversed direction, on a bidirectional edge: the same relation.
    const again = await g().createOrMergeRelation({ store, input: { from_id: a.id, to_id: b.id, relationship_type: "pools_connections_for", weight: 0.8, confidence: 0.5, attributes: { since: "v2" } }, actor });
    expect(again.merged).toBe(true);
    expect(again.relation).toMatchObject({ id: first.relation.id, weight: 0.8, confidence: 0.9, bidirectional: true, attributes: { since: "v2" } });
  });
});

describe("working memory", () => {
  it("never returns expired keys and sweeps them on the next write", async () => {
    await g().setWorkingMemory({ store, input: { key: "current-task", value: { step: 2 } }, actor });
    await g().setWorkingMemory({ store, input: { key: "scratch", value: [1, 2], ttl_seconds: 60 }, actor });
    expect((await g().getWorkingMemory({ store, key: "scratch" })).value).toEqual([1, 2]);
    // The TTL runs out: the key's expiry moved to just now (no waiting a minute).
    await storeSql(store, "update working_memory set expires_at = ? where key = 'scratch'", [Date.now() - 1]);
    await expect(g().getWorkingMemory({ store, key: "scratch" })).rejects.toMatchObject({ code: "not_found" });
    expect((await g().listWorkingMemory({ store })).entries.map((e) => e.key)).toEqual(["current-task"]);
    await g().setWorkingMemory({ store, input: { key: "other", value: "x" }, actor });
    expect(await storeSql(store, "select key from working_memory order by key")).toEqual([{ key: "current-task" }, { key: "other" }]);
    expect(await g().deleteWorkingMemory({ store, key: "other" })).toEqual({ deleted: "other" });
  });
});
