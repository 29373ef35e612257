import { pgEngine } from "@/lib/db/engine";
import { beforeAll, describe, expect, it } from "vitest";
import { listAuditTail, pgLedger } from "@/lib/governance/audit";
import { graphOn, type GraphBackend } from "@/lib/graph/backend";
import { createMemorySchema, updateMemorySchema } from "@/lib/index/memories";
import { READER_CONTEXT_BYTES } from "@/lib/index/reader";
import { searchInputSchema } from "@/lib/index/search";
import { recallOn, type RecallBackend } from "@/lib/recall/backend";
import { storesOn, type StoresBackend } from "@/lib/stores/backend";
import { useTwoReplicas } from "./helpers";

/**
 * The reads the dashboard's pages make on PostgreSQL (the pages over HTTP: dashboard-pg.test.ts), on two replicas of
 * one database: what one writes through the API's backends, the other's page reads — the recall log and its ratings,
 * a chunk in a long document, a memory's history across a move, the category tree, what a thought is evidence for.
 */
const replicas = useTwoReplicas({ max: 4 });
type Backends = StoresBackend & RecallBackend & GraphBackend;
let a: Backends;
let b: Backends;
const store = "pages";
const ftsFor = (q: string, extra: Record<string, string> = {}) => searchInputSchema.parse({ q, mode: "fts", limit: "1", ...extra });

beforeAll(async () => {
  a = { ...storesOn(pgEngine(replicas.a())), ...recallOn(pgEngine(replicas.a())), ...graphOn(pgEngine(replicas.a())) };
  b = { ...storesOn(pgEngine(replicas.b())), ...recallOn(pgEngine(replicas.b())), ...graphOn(pgEngine(replicas.b())) };
  await a.createStore({ input: { name: store }, actor: "test" });
});

describe("the dashboard's reads on PostgreSQL", () => {
  it("lists recalls newest first with their hits, the recalls that returned one trace, and a rating queue; a rating is audited and counted", async () => {
    const relay = await a.recordTrace({ store, agentId: "ops", input: { intent: { verb: "restart", target: "ingest relay" }, shard_type: "ops", outcome: "failure", key_issue: "relay lost its lease" } });
    const other = await a.recordTrace({ store, agentId: "ops", input: { intent: { verb: "rotate", target: "tls certificates" }, shard_type: "ops", outcome: "success" } });
    const first = await a.recall({ store, agentId: "ops", input: { query: "restart the ingest relay", min_score: 0.1 } });
    const second = await a.recall({ store, agentId: "ops", input: { query: "rotate tls certificates", min_score: 0.1 } });

    const recent = await b.listRecentRecalls({ store, limit: 10 });
    expect(recent.map((r) => r.id)).toEqual([second.event_id, first.event_id]);
    expect(recent[1]).toMatchObject({ query: "restart the ingest relay", agentId: "ops" });
    expect(recent[1].hits[0]).toMatchObject({ rank: 1, artifact: "trace", refId: relay.trace.id, relevant: null });
    expect((await b.getRecall({ store, id: first.event_id })).hits.map((h) => h.refId)).toContain(relay.trace.id);
    await expect(b.getRecall({ store, id: 999_999 })).rejects.toMatchObject({ code: "not_found" });
    expect((await b.listRecallsReturning({ store, artifact: "trace", refId: relay.trace.id })).map((r) => r.id)).toEqual([first.event_id]);
    expect((await b.listRecallsReturning({ store, artifact: "trace", refId: other.trace.id })).map((r) => r.id)).toEqual([second.event_id]);

    const queue = await b.listRatingQueue({ store, limit: 8 });
    expect(queue.length).toBe(recent.reduce((n, r) => n + r.hits.length, 0));
    const hit = queue.find((q) => q.refId === relay.trace.id)!;
    expect(hit).toMatchObject({ eventId: first.event_id, query: "restart the ingest relay" });
    expect(await a.rateRecallHit({ store, input: { hit_id: hit.id, relevant: true }, actor: "user:alice" })).toMatchObject({ id: hit.id, relevant: true, ratedBy: "user:alice" });
    expect((await b.listRatingQueue({ store, limit: 8 })).map((q) => q.id)).not.toContain(hit.id);
    expect((await listAuditTail({ handle: pgLedger(replicas.b().db), limit: 5 })).map((r) => [r.action, r.target])).toContainEqual(["reflection.hit.rate", `store:${store}:recall_hit:${hit.id}`]);
    await expect(a.rateRecallHit({ store, input: { hit_id: 999_999, relevant: false }, actor: "user:alice" })).rejects.toMatchObject({ code: "not_found" });

    const distribution = await b.getScoreDistribution({ store });
    expect(distribution.hits).toBe(queue.length);
    expect(distribution.bins.reduce((n, bin) => n + bin.count, 0)).toBe(distribution.hits);
    expect(distribution.byArtifact.trace + distribution.byArtifact.learning).toBe(distribution.hits);
    expect(distribution).toMatchObject({ rated: 1, relevant: 1 });
    expect((await b.getReflectionOverview({ store })).totals).toMatchObject({ rated: 1, precision: 1 });
  });

  it("reads a chunk inside a long document: the text around it is bounded and cut at chunk edges, with its neighbours and queued vector", async () => {
    const sections = Array.from({ length: 60 }, (_, i) => `## Section ${i}\n\n${`line ${i} of the long runbook, about the pager rotation. `.repeat(12)}\n`);
    await a.putDocuments({ store, input: { documents: [{ path: "runbooks/long.md", content: `# Long\n\n${sections.join("\n")}` }] }, actor: "test" });
    const { documents } = await b.listDocuments({ store, prefix: "runbooks/", limit: 10, offset: 0 });
    expect(documents).toHaveLength(1);
    const [hit] = (await b.search({ store, input: ftsFor("Section 30") })).results;
    const reader = await b.readChunk({ store, chunkId: hit.chunk_id });
    expect(reader.document).toMatchObject({ path: "runbooks/long.md", kind: "markdown", memory: null });
    expect(reader.document.chunks).toBeGreaterThan(3);
    expect(reader.text.chunk).toContain("Section 30");
    expect(reader.text.omittedBefore).toBeGreaterThan(0);
    expect(reader.text.omittedAfter).toBeGreaterThan(0);
    expect(Buffer.byteLength(reader.text.before)).toBeLessThanOrEqual(READER_CONTEXT_BYTES);
    expect(reader.neighbours.prev?.chunkIndex).toBe(reader.chunk.chunkIndex - 1);
    expect(reader.neighbours.next?.chunkIndex).toBe(reader.chunk.chunkIndex + 1);
    expect(reader.vector).toMatchObject({ state: "pending", vectors: [], provenance: [] });
    await expect(b.readChunk({ store, chunkId: "0123456789abcdef0123456789abcdef" })).rejects.toMatchObject({ code: "not_found" });
  });

  it("shows a memory with its tags in the reader, its history across a move, and the whole category tree", async () => {
    await a.createMemory({ store, input: createMemorySchema.parse({ path: "ops/pager/rota", body: "Rota body.", tags: ["pager"] }), actor: "user:alice" });
    await b.updateMemory({ store, input: updateMemorySchema.parse({ path: "ops/pager/rota", body: "Rota body, edited." }), actor: "user:bob" });
    await a.updateMemory({ store, input: updateMemorySchema.parse({ path: "ops/pager/rota", move_to: "ops/oncall/rota" }), actor: "user:alice" });
    const history = await b.listMemoryHistory({ store, memoryPath: "ops/oncall/rota", limit: 30 });
    expect(history.map((h) => [h.action, h.path, h.actor])).toEqual([
      ["memory.move", "ops/oncall/rota", "user:alice"],
      ["memory.update", "ops/pager/rota", "user:bob"],
      ["memory.create", "ops/pager/rota", "user:alice"],
    ]);
    expect(history[0].movedFrom).toBe("ops/pager/rota");
    const tree = (await b.listAllCategories({ store, limit: 100 })).categories;
    expect(tree.map((c) => [c.path, c.memories])).toEqual(expect.arrayContaining([["ops", 1], ["ops/oncall", 1]]));
    const [hit] = (await b.search({ store, input: ftsFor("edited", { kind: "memory" }) })).results;
    const reader = await b.readChunk({ store, chunkId: hit.chunk_id });
    expect(reader.document.memory).toEqual({ path: "ops/oncall/rota", tags: ["pager"], summary: null });
  });

  it("says which frames and relations a thought is evidence for", async () => {
    const thought = await a.think({ store, actor: "agent:ops", input: { content: "The kestrel cache warms at dawn." } });
    const cache = await a.createNode({ store, actor: "agent:ops", input: { name: "Kestrel Cache", entity_type: "system" } });
    const job = await a.createNode({ store, actor: "agent:ops", input: { name: "Warmup Job", entity_type: "tool" } });
    const { relation } = await a.createOrMergeRelation({ store, actor: "agent:ops", input: { from_id: job.id, to_id: cache.id, relationship_type: "warms" } });
    const frame = await a.createFrame({ store, actor: "agent:ops", input: { node_id: cache.id, column: "procedural", properties: { warm: "curl /warm" } } });
    await a.linkEvidence({ store, actor: "agent:ops", input: { target: "frame", target_id: frame.id, thought_id: thought.id } });
    await a.linkEvidence({ store, actor: "agent:ops", input: { target: "relation", target_id: relation.id, thought_id: thought.id, stance: "contradicts" } });
    expect(await b.listEvidenceUses({ store, thoughtId: thought.id })).toEqual([
      { target: "frame", target_id: frame.id, stance: "supports", node_id: cache.id, node_name: "Kestrel Cache", label: "procedural frame" },
      { target: "relation", target_id: relation.id, stance: "contradicts", node_id: job.id, node_name: "Warmup Job", label: "warms → Kestrel Cache" },
    ]);
  });
});
