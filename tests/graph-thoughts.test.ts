import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { computeDrift } from "@/lib/embed/drift";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { createFrame } from "@/lib/graph/frames";
import { linkEvidence } from "@/lib/graph/evidence";
import { createNode, deleteNode, updateNode } from "@/lib/graph/nodes";
import { createOrMergeRelation } from "@/lib/graph/relations";
import { deleteThought, getChainById, getThoughtById, listThoughtsByFilter, recordThoughtFeedback, thinkThought } from "@/lib/graph/thoughts";
import { deleteWorkingMemoryByKey, getWorkingMemoryByKey, listWorkingMemory, setWorkingMemory } from "@/lib/graph/working-memory";
import { createStore } from "@/lib/stores/stores";
import { runTogether } from "./fixtures/start-together";
import { useTempDataDir } from "./helpers";

const THINKER = path.join(process.cwd(), "tests", "fixtures", "graph-thinker.ts");

let env: ReturnType<typeof useTempDataDir>;
beforeEach(() => {
  env = useTempDataDir();
  resetEmbedderForTests();
  createStore({ input: { name: "mind" }, actor: "test" });
});
afterEach(() => {
  env.cleanup();
  resetEmbedderForTests();
});

describe("thoughts and chains", () => {
  it("numbers thoughts in their chain, keeps the count, and refuses a reused number", async () => {
    const handle = getStoreDb("mind");
    const a = thinkThought({ handle, input: { content: "the reindex is slow on big stores", chain_id: "perf-1", framework: "debug" }, actor: "t" });
    const b = thinkThought({ handle, input: { content: "profile shows FTS merge dominating", chain_id: "perf-1", framework: "debug", total_thoughts: 3 }, actor: "t" });
    expect([a.thought_number, b.thought_number]).toEqual([1, 2]);
    expect(a.embedding).toBe("pending");
    expect(() => thinkThought({ handle, input: { content: "dup", chain_id: "perf-1", thought_number: 2 }, actor: "t" })).toThrow(expect.objectContaining({ code: "conflict" }));
    expect(() => thinkThought({ handle, input: { content: "no chain", thought_number: 2 }, actor: "t" })).toThrow();
    const chain = await getChainById({ handle, id: "perf-1" });
    expect(chain.thought_count).toBe(2);
    expect(chain.thoughts.map((t) => t.content)).toEqual(["the reindex is slow on big stores", "profile shows FTS merge dominating"]);
    // Full-text search finds by word; user syntax never reaches MATCH raw.
    expect((await listThoughtsByFilter({ handle, filter: { q: "FTS merge" } })).thoughts.map((t) => t.id)).toEqual([b.id]);
    expect((await listThoughtsByFilter({ handle, filter: { q: 'merge" OR content:*' } })).thoughts.map((t) => t.id)).toEqual([b.id]);
    deleteThought({ handle, id: a.id, actor: "t" });
    expect((await getChainById({ handle, id: "perf-1" })).thought_count).toBe(1);
  });

  it("keeps chain counts consistent when two processes write to the same chains at once", async () => {
    const chains = ["c-a", "c-b", "c-c"];
    const common = { DATA_DIR: env.dataDir, STORE: "mind", CHAINS: JSON.stringify(chains), PER_CHAIN: "15" };
    const [p1, p2] = await runTogether<{ writer: string; written: number }>(THINKER, [
      { ...common, WRITER: "p1" },
      { ...common, WRITER: "p2" },
    ]);
    expect(p1.written + p2.written).toBe(90);
    const { sqlite } = getStoreDb("mind");
    for (const id of chains) {
      const { thought_count } = sqlite.prepare("select thought_count from chains where id = ?").get(id) as { thought_count: number };
      const numbers = (sqlite.prepare("select thought_number as n from thoughts where chain_id = ? order by n").all(id) as { n: number }[]).map((r) => r.n);
      expect(thought_count).toBe(30);
      expect(numbers).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    }
  }, 30_000);

  it("gives a repeated thought novelty ≈ 0 once its vector exists, and a new idea high novelty", async () => {
    const handle = getStoreDb("mind");
    const first = thinkThought({ handle, input: { content: "nginx needs a reload after the TLS certificate rotates" }, actor: "t" });
    await drainEmbedQueues({ stores: ["mind"] });
    expect((await getThoughtById({ handle, id: first.id })).novelty).toBe(1);
    const repeat = thinkThought({ handle, input: { content: "nginx needs a reload after the TLS certificate rotates" }, actor: "t" });
    const fresh = thinkThought({ handle, input: { content: "sourdough starter wants feeding twice a day" }, actor: "t" });
    expect(repeat.novelty).toBeNull();
    await drainEmbedQueues({ stores: ["mind"] });
    const r = await getThoughtById({ handle, id: repeat.id });
    const f = await getThoughtById({ handle, id: fresh.id });
    expect(r.embedding).toBe("ready");
    expect(r.novelty).toBeCloseTo(0, 5);
    expect(f.novelty!).toBeGreaterThan(0.5);
  });

  it("moves utility as a moving average of feedback", () => {
    const handle = getStoreDb("mind");
    const t = thinkThought({ handle, input: { content: "use BEGIN IMMEDIATE for counters" }, actor: "t" });
    expect(recordThoughtFeedback({ handle, id: t.id, input: { utility: 1 } }).utility).toBe(1);
    const second = recordThoughtFeedback({ handle, id: t.id, input: { utility: 0 } });
    expect(second.utility).toBeCloseTo(0.7, 6);
    expect(second.feedback_count).toBe(2);
    expect(() => recordThoughtFeedback({ handle, id: crypto.randomUUID(), input: { utility: 1 } })).toThrow(expect.objectContaining({ code: "not_found" }));
    expect(() => recordThoughtFeedback({ handle, id: t.id, input: { utility: 2 } })).toThrow();
  });
});

describe("embedding of thoughts and nodes", () => {
  it("covers every thought and node, and re-embeds a node only when its embedded text changes", async () => {
    const handle = getStoreDb("mind");
    thinkThought({ handle, input: { content: "vacuum the database monthly" }, actor: "t" });
    const node = createNode({ handle, input: { name: "postgres", entity_type: "system" }, actor: "t" });
    await drainEmbedQueues({ stores: ["mind"] });
    const fp = await getEmbedder().fingerprint;
    expect(computeDrift({ handle: handle, configured: fp }).byKind).toMatchObject({ thought: { artifacts: 1, fresh: 1 }, node: { artifacts: 1, fresh: 1 } });
    const pending = () => (handle.sqlite.prepare("select count(*) as n from embed_queue where kind = 'node'").get() as { n: number }).n;
    updateNode({ handle, id: node.id, input: { attributes: { version: 16 } } });
    expect(pending()).toBe(0);
    updateNode({ handle, id: node.id, input: { display_name: "PostgreSQL" } });
    expect(pending()).toBe(1);
    expect(computeDrift({ handle: handle, configured: fp }).byKind.node).toMatchObject({ artifacts: 1, stale: 1 });
    await drainEmbedQueues({ stores: ["mind"] });
    expect(computeDrift({ handle: handle, configured: fp }).byKind.node).toMatchObject({ artifacts: 1, fresh: 1 });
  });
});

describe("graph cascades", () => {
  it("deleting a node removes its frames, relations and evidence links; deleting a thought removes its links only", () => {
    const handle = getStoreDb("mind");
    const nginx = createNode({ handle, input: { name: "nginx", entity_type: "system" }, actor: "t" });
    const tls = createNode({ handle, input: { name: "TLS certificates", entity_type: "concept" }, actor: "t" });
    const t1 = thinkThought({ handle, input: { content: "nginx serves the TLS certificate" }, actor: "t" });
    const t2 = thinkThought({ handle, input: { content: "certificates rotate monthly" }, actor: "t" });
    const frame = createFrame({ handle, input: { node_id: nginx.id, column: "semantic", properties: { role: "reverse proxy" } }, actor: "t" });
    const tlsFrame = createFrame({ handle, input: { node_id: tls.id, column: "episodic", properties: { rotated: "2026-11-01" } }, actor: "t" });
    const { relation } = createOrMergeRelation({ handle, input: { from_id: nginx.id, to_id: tls.id, relationship_type: "uses", weight: 0.9 }, actor: "t" });
    linkEvidence({ handle, input: { target: "frame", target_id: frame.id, thought_id: t1.id }, actor: "t" });
    linkEvidence({ handle, input: { target: "relation", target_id: relation.id, thought_id: t1.id }, actor: "t" });
    linkEvidence({ handle, input: { target: "frame", target_id: tlsFrame.id, thought_id: t2.id }, actor: "t" });
    const count = (table: string) => (handle.sqlite.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;

    deleteThought({ handle, id: t2.id, actor: "t" });
    expect(count("kg_frame_evidence")).toBe(1);
    expect(count("kg_frame")).toBe(2);

    expect(deleteNode({ handle, id: nginx.id, actor: "t" })).toEqual({ deleted: nginx.id, frames: 1, relations: 1 });
    expect([count("kg_frame"), count("kg_relation"), count("kg_frame_evidence"), count("kg_relation_evidence")]).toEqual([1, 0, 0, 0]);
    // The thought that was evidence survives; only the links went.
    expect(count("thoughts")).toBe(1);
    expect(handle.sqlite.prepare("select count(*) as n from embed_queue where kind = 'node'").get()).toEqual({ n: 1 });
  });
});

describe("relations", () => {
  it("refuses self-loops and unknown nodes, and merges a duplicate by taking the larger weight", () => {
    const handle = getStoreDb("mind");
    const a = createNode({ handle, input: { name: "Postgres", entity_type: "system" }, actor: "t" });
    const b = createNode({ handle, input: { name: "pgbouncer", entity_type: "tool" }, actor: "t" });
    expect(() => createNode({ handle, input: { name: "  postgres ", entity_type: "system" }, actor: "t" })).toThrow(expect.objectContaining({ code: "conflict" }));
    expect(() => createOrMergeRelation({ handle, input: { from_id: a.id, to_id: a.id, relationship_type: "uses" }, actor: "t" })).toThrow(expect.objectContaining({ code: "unprocessable" }));
    expect(() => createOrMergeRelation({ handle, input: { from_id: a.id, to_id: crypto.randomUUID(), relationship_type: "uses" }, actor: "t" })).toThrow(expect.objectContaining({ code: "not_found" }));
    expect(() => createOrMergeRelation({ handle, input: { from_id: a.id, to_id: b.id, relationship_type: "uses", weight: 1.5 }, actor: "t" })).toThrow();
    const first = createOrMergeRelation({ handle, input: { from_id: b.id, to_id: a.id, relationship_type: "Pools Connections For", weight: 0.4, confidence: 0.9, bidirectional: true }, actor: "t" });
    expect(first.merged).toBe(false);
    expect(first.relation.relationship_type).toBe("pools_connections_for");
    // Same type, reversed direction, on a bidirectional edge: the same relation.
    const again = createOrMergeRelation({ handle, input: { from_id: a.id, to_id: b.id, relationship_type: "pools_connections_for", weight: 0.8, confidence: 0.5, attributes: { since: "v2" } }, actor: "t" });
    expect(again.merged).toBe(true);
    expect(again.relation).toMatchObject({ id: first.relation.id, weight: 0.8, confidence: 0.9, bidirectional: true, attributes: { since: "v2" } });
  });
});

describe("working memory", () => {
  it("never returns expired keys and sweeps them on the next write", () => {
    const handle = getStoreDb("mind");
    const now = 1_800_000_000_000;
    setWorkingMemory({ handle, input: { key: "current-task", value: { step: 2 } }, actor: "t", now });
    setWorkingMemory({ handle, input: { key: "scratch", value: [1, 2], ttl_seconds: 60 }, actor: "t", now });
    expect(getWorkingMemoryByKey({ handle, key: "scratch", now: now + 59_000 }).value).toEqual([1, 2]);
    expect(() => getWorkingMemoryByKey({ handle, key: "scratch", now: now + 60_000 })).toThrow(expect.objectContaining({ code: "not_found" }));
    expect(listWorkingMemory({ handle, now: now + 61_000 }).map((e) => e.key)).toEqual(["current-task"]);
    setWorkingMemory({ handle, input: { key: "other", value: "x" }, actor: "t", now: now + 61_000 });
    expect(handle.sqlite.prepare("select key from working_memory order by key").all()).toEqual([{ key: "current-task" }, { key: "other" }]);
    expect(deleteWorkingMemoryByKey({ handle, key: "other" })).toEqual({ deleted: "other" });
  });
});
