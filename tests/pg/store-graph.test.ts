import { pgEngine } from "@/lib/db/engine";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getConfig } from "@/lib/config";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { withStoreTx } from "@/lib/db/pg-store";
import { listAuditTail, verifyAuditChain, pgLedger } from "@/lib/governance/audit";
import { graphOn, type GraphBackend } from "@/lib/graph/backend";
import { workingMemoryMaxKeys } from "@/lib/graph/working-memory";
import { storesOn } from "@/lib/stores/backend";
import { openStorePg } from "@/lib/stores/engines/pg";
import { expectHubNodeDetailBounded } from "../shared/node-detail-bounds";
import { createTestDatabase } from "./helpers";

/**
 * Thoughts, chains, the knowledge graph and working memory on PostgreSQL,
 * through graphBackend() as the routes and MCP tools call it. Two replicas (two
 * pools on one database) write at once where ordering matters.
 */
let url: string;
let a: PgHandle;
let b: PgHandle;
let A: GraphBackend;
let B: GraphBackend;
const store = "kg";

beforeAll(async () => {
  url = await createTestDatabase();
  // Two replicas of six connections each. Their waits (for a connection, for a row lock) are patient: the races
  // below check what the writes leave, and a busy CI machine stretches every transaction they queue behind.
  const patient = { connectionTimeoutMs: 120_000, timeouts: { ...getConfig().pgTimeouts, lockMs: 120_000 } };
  a = await openPgHandle({ url, max: 6, ...patient });
  b = await openPgHandle({ url, max: 6, ...patient });
  A = graphOn(pgEngine(a));
  B = graphOn(pgEngine(b));
  const stores = storesOn(pgEngine(a));
  await stores.ensureStartupStores();
  await stores.createStore({ input: { name: store }, actor: "test" });
});
afterAll(async () => {
  await closePgHandle(a);
  await closePgHandle(b);
});

const node = (backend: GraphBackend, name: string, entity_type: "system" | "tool" | "concept" = "system", tags?: string[]) => backend.createNode({ store, input: { name, entity_type, tags }, actor: "agent-a" });

describe("thoughts and chains on PostgreSQL", () => {
  it("writes a thought on one replica and reads it on the other, queued for its vector", async () => {
    const t = await A.think({ store, input: { content: "The ingest relay stalls when the zanzibar queue backs up.", tags: ["ops", " ops "], importance: 0.8 }, actor: "agent-a" });
    expect(t).toMatchObject({ framework: "conversation", chain_id: null, thought_number: null, importance: 0.8, tags: ["ops"], created_by: "agent-a", novelty: null, embedding: "pending" });
    expect(await B.getThought({ store, id: t.id })).toEqual(t);
    await expect(B.getThought({ store, id: "00000000-0000-4000-8000-000000000000" })).rejects.toMatchObject({ code: "not_found" });
    await expect(B.think({ store: "nowhere", input: { content: "x" }, actor: "a" })).rejects.toMatchObject({ code: "not_found" });
  });

  it("finds thoughts by words with english stemming, any word, stopwords as typed; punctuation never reaches the tsquery", async () => {
    await A.think({ store, input: { content: "Configured the backup rotation for node_modules/cache.js" }, actor: "a" });
    const stemmed = await B.listThoughts({ store, filter: { q: "configuration" } });
    expect(stemmed.thoughts.map((t) => t.content)).toEqual(["Configured the backup rotation for node_modules/cache.js"]);
    expect((await B.listThoughts({ store, filter: { q: "cache" } })).total).toBe(1);
    expect((await B.listThoughts({ store, filter: { q: "zanzibar OR nothing-here" } })).total).toBe(1);
    expect((await B.listThoughts({ store, filter: { q: "relay backup" } })).total).toBe(2);
    expect((await B.listThoughts({ store, filter: { q: "a & !b:* ' \\" } })).total).toBe(0);
    expect(await B.listThoughts({ store, filter: { q: "!!!" } })).toEqual({ thoughts: [], total: 0, next_offset: null });
  });

  it("numbers a chain's thoughts, refuses a taken number, keeps the chain's count through deletes", async () => {
    const one = await A.think({ store, input: { content: "step one", chain_id: "plan-1", framework: "debug" }, actor: "a" });
    const two = await B.think({ store, input: { content: "step two", chain_id: "plan-1", framework: "debug", total_thoughts: 3 }, actor: "b" });
    expect([one.thought_number, two.thought_number]).toEqual([1, 2]);
    await expect(A.think({ store, input: { content: "again", chain_id: "plan-1", thought_number: 2 }, actor: "a" })).rejects.toMatchObject({ code: "conflict" });
    const chain = await B.getChain({ store, id: "plan-1" });
    expect(chain).toMatchObject({ id: "plan-1", thought_count: 2 });
    expect(chain.thoughts.map((t) => t.content)).toEqual(["step one", "step two"]);
    expect((await A.listChains({ store, limit: 10, offset: 0 })).chains.map((c) => c.id)).toEqual(["plan-1"]);
    expect(await A.deleteThought({ store, id: one.id, actor: "a" })).toEqual({ deleted: one.id });
    expect(await B.getChain({ store, id: "plan-1" })).toMatchObject({ thought_count: 1 });
    await expect(A.deleteThought({ store, id: one.id, actor: "a" })).rejects.toMatchObject({ code: "not_found" });
    await expect(A.getChain({ store, id: "no-such-chain" })).rejects.toMatchObject({ code: "not_found" });
  });

  it("moves utility as a moving average of feedback", async () => {
    const t = await A.think({ store, input: { content: "feedback target" }, actor: "a" });
    expect(await B.recordThoughtFeedback({ store, id: t.id, input: { utility: 1 } })).toMatchObject({ utility: 1, feedback_count: 1 });
    expect(await A.recordThoughtFeedback({ store, id: t.id, input: { utility: 0 } })).toMatchObject({ utility: 0.7, feedback_count: 2 });
    await expect(A.recordThoughtFeedback({ store, id: "00000000-0000-4000-8000-000000000000", input: { utility: 1 } })).rejects.toMatchObject({ code: "not_found" });
  });

  it("gives two replicas writing one chain at once gapless, unique numbers and an exact count", async () => {
    const writes = Array.from({ length: 24 }, (_, i) => (i % 2 ? A : B).think({ store, input: { content: `concurrent ${i}`, chain_id: "race" }, actor: i % 2 ? "a" : "b" }));
    const written = await Promise.all(writes);
    expect(written.map((t) => t.thought_number).sort((x, y) => x! - y!)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    const chain = await A.getChain({ store, id: "race" });
    expect(chain.thought_count).toBe(24);
    expect(chain.thoughts.map((t) => t.thought_number)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
  });
});

describe("the knowledge graph on PostgreSQL", () => {
  it("creates, finds, updates and refuses a duplicate node — also when two replicas create it at once", async () => {
    const nginx = await A.createNode({ store, input: { name: "  Nginx  Proxy ", entity_type: "system", tags: ["web"], attributes: { port: 443 } }, actor: "a" });
    expect(nginx).toMatchObject({ name: "nginx proxy", display_name: "Nginx  Proxy", entity_type: "system", tags: ["web"], attributes: { port: 443 }, auto_extracted: false });
    await expect(B.createNode({ store, input: { name: "nginx proxy", entity_type: "system" }, actor: "b" })).rejects.toMatchObject({ code: "conflict", details: [{ id: nginx.id }] });
    const raced = await Promise.allSettled([node(A, "postgres"), node(B, "postgres")]);
    expect(raced.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    expect(raced.find((r) => r.status === "rejected")).toMatchObject({ reason: { code: "conflict" } });

    expect((await B.listNodes({ store, filter: { q: "proxies" } })).nodes.map((n) => n.id)).toEqual([nginx.id]);
    expect((await B.listNodes({ store, filter: { q: "web" } })).nodes.map((n) => n.id)).toEqual([nginx.id]);
    expect((await B.listNodes({ store, filter: { entity_type: "system" } })).total).toBe(2);
    expect((await B.listNodes({ store, filter: { entity_type: "tool" } })).total).toBe(0);

    const updated = await B.updateNode({ store, id: nginx.id, input: { display_name: "NGINX", tags: ["edge"] } });
    expect(updated).toMatchObject({ display_name: "NGINX", tags: ["edge"], attributes: { port: 443 } });
    expect((await A.listNodes({ store, filter: { q: "web" } })).total).toBe(0);
    expect((await A.listNodes({ store, filter: { q: "edge" } })).total).toBe(1);
    await expect(A.updateNode({ store, id: "00000000-0000-4000-8000-000000000000", input: { tags: [] } })).rejects.toMatchObject({ code: "not_found" });
  });

  it("merges relations (also the reverse of a bidirectional one, also when created at once), refuses self-loops, updates and checks time ranges", async () => {
    const api = await node(A, "api gateway");
    const db = await node(A, "orders db");
    const first = await A.createOrMergeRelation({ store, input: { from_id: api.id, to_id: db.id, relationship_type: "Depends On", weight: 0.4, temporal_start: 100 }, actor: "a" });
    expect(first).toMatchObject({ merged: false, relation: { relationship_type: "depends_on", weight: 0.4, bidirectional: false } });
    const again = await B.createOrMergeRelation({ store, input: { from_id: api.id, to_id: db.id, relationship_type: "depends on", weight: 0.9, temporal_end: 200, attributes: { via: "tcp" } }, actor: "b" });
    expect(again).toMatchObject({ merged: true, relation: { id: first.relation.id, weight: 0.9, temporal_start: 100, temporal_end: 200, attributes: { via: "tcp" } } });
    await expect(A.createOrMergeRelation({ store, input: { from_id: api.id, to_id: api.id, relationship_type: "x" }, actor: "a" })).rejects.toMatchObject({ code: "unprocessable" });
    await expect(A.createOrMergeRelation({ store, input: { from_id: api.id, to_id: "00000000-0000-4000-8000-000000000000", relationship_type: "x" }, actor: "a" })).rejects.toMatchObject({ code: "not_found" });

    const raced = await Promise.all([
      A.createOrMergeRelation({ store, input: { from_id: api.id, to_id: db.id, relationship_type: "talks_to", bidirectional: true }, actor: "a" }),
      B.createOrMergeRelation({ store, input: { from_id: db.id, to_id: api.id, relationship_type: "talks_to", bidirectional: true }, actor: "b" }),
    ]);
    expect(raced.map((r) => r.merged).sort()).toEqual([false, true]);
    expect(raced[0].relation.id).toBe(raced[1].relation.id);

    expect(await B.updateRelation({ store, id: first.relation.id, input: { confidence: 0.95 } })).toMatchObject({ confidence: 0.95, weight: 0.9 });
    await expect(B.updateRelation({ store, id: first.relation.id, input: { temporal_start: 500 } })).rejects.toMatchObject({ code: "invalid_request" });
    expect(await A.getRelation({ store, id: first.relation.id })).toMatchObject({ confidence: 0.95 });
  });

  it("shows a node with frames, relations both ways and evidence excerpts; links evidence idempotently", async () => {
    const svc = await node(A, "billing service");
    const queue = await node(A, "billing queue", "tool");
    const rel = (await A.createOrMergeRelation({ store, input: { from_id: svc.id, to_id: queue.id, relationship_type: "publishes_to", weight: 0.7 }, actor: "a" })).relation;
    const frame = await B.createFrame({ store, input: { node_id: svc.id, column: "procedural", properties: { restart: "systemctl restart billing" } }, actor: "b" });
    const why = await A.think({ store, input: { content: "Billing restarts fix the stuck invoices." }, actor: "a" });

    const linked = await A.linkEvidence({ store, input: { target: "frame", target_id: frame.id, thought_id: why.id }, actor: "a" });
    expect(linked).toMatchObject({ created: true, evidence: { target: "frame", target_id: frame.id, thought_id: why.id, stance: "supports", created_by: "a" } });
    const relinked = await B.linkEvidence({ store, input: { target: "frame", target_id: frame.id, thought_id: why.id, stance: "contradicts" }, actor: "b" });
    expect(relinked).toMatchObject({ created: false, evidence: { stance: "contradicts", created_by: "a" } });
    await A.linkEvidence({ store, input: { target: "relation", target_id: rel.id, thought_id: why.id }, actor: "a" });
    await expect(A.linkEvidence({ store, input: { target: "relation", target_id: frame.id, thought_id: why.id }, actor: "a" })).rejects.toMatchObject({ code: "not_found" });
    expect(await B.listEvidence({ store, query: { target: "frame", target_id: frame.id } })).toEqual({ evidence: [{ thought_id: why.id, stance: "contradicts" }], total: 1, has_more: false });

    const detail = await B.getNodeDetail({ store, id: svc.id });
    expect(detail.node.id).toBe(svc.id);
    expect(detail.frames).toMatchObject([{ id: frame.id, column: "procedural", evidence: [{ thought_id: why.id, stance: "contradicts", excerpt: "Billing restarts fix the stuck invoices." }] }]);
    expect(detail.outgoing).toMatchObject([{ id: rel.id, other: { id: queue.id, display_name: "billing queue", entity_type: "tool" }, evidence: [{ thought_id: why.id }] }]);
    expect(detail.incoming).toEqual([]);
    expect((await A.getNodeDetail({ store, id: queue.id })).incoming).toMatchObject([{ id: rel.id, other: { id: svc.id } }]);
    // The frame moved the node's updated_at.
    expect(detail.node.updated_at).toBeGreaterThanOrEqual(frame.created_at);

    expect(await A.updateFrame({ store, id: frame.id, input: { properties: { restart: "kill -HUP" } } })).toMatchObject({ properties: { restart: "kill -HUP" } });
    expect(await B.getFrame({ store, id: frame.id })).toMatchObject({ properties: { restart: "kill -HUP" } });
    expect(await A.unlinkEvidence({ store, input: { target: "relation", target_id: rel.id, thought_id: why.id }, actor: "a" })).toEqual({ deleted: true });
    await expect(A.unlinkEvidence({ store, input: { target: "relation", target_id: rel.id, thought_id: why.id }, actor: "a" })).rejects.toMatchObject({ code: "not_found" });
  });

  it("cascades: a deleted thought leaves no evidence, a deleted node takes its frames, relations and their links", async () => {
    const host = await node(A, "cascade host");
    const peer = await node(A, "cascade peer");
    const rel = (await A.createOrMergeRelation({ store, input: { from_id: host.id, to_id: peer.id, relationship_type: "runs_on" }, actor: "a" })).relation;
    const frame = await A.createFrame({ store, input: { node_id: host.id, column: "semantic", properties: { role: "db" } }, actor: "a" });
    const t1 = await A.think({ store, input: { content: "cascade thought one" }, actor: "a" });
    const t2 = await A.think({ store, input: { content: "cascade thought two", chain_id: "cascade" }, actor: "a" });
    for (const t of [t1, t2]) {
      await A.linkEvidence({ store, input: { target: "frame", target_id: frame.id, thought_id: t.id }, actor: "a" });
      await A.linkEvidence({ store, input: { target: "relation", target_id: rel.id, thought_id: t.id }, actor: "a" });
    }
    await B.deleteThought({ store, id: t1.id, actor: "b" });
    expect((await A.listEvidence({ store, query: { target: "frame", target_id: frame.id } })).evidence.map((e) => e.thought_id)).toEqual([t2.id]);

    expect(await B.deleteNode({ store, id: host.id, actor: "b" })).toEqual({ deleted: host.id, frames: 1, relations: 1 });
    await expect(A.getFrame({ store, id: frame.id })).rejects.toMatchObject({ code: "not_found" });
    await expect(A.getRelation({ store, id: rel.id })).rejects.toMatchObject({ code: "not_found" });
    await expect(A.getNodeDetail({ store, id: host.id })).rejects.toMatchObject({ code: "not_found" });
    const handle = await openStorePg({ pg: a, store });
    const left = await withStoreTx({ handle, readOnly: true, work: async (tx) =>
      (await tx.execute(sql`select (select count(*) from kg_frame_evidence where frame_id = ${frame.id})::int as f, (select count(*) from kg_relation_evidence where relation_id = ${rel.id})::int as r`)).rows[0],
    });
    expect(left).toEqual({ f: 0, r: 0 });
    // The thought stays; its chain too (a chain's thought leaving it is the delete above, not a cascade).
    expect(await A.getThought({ store, id: t2.id })).toMatchObject({ chain_id: "cascade" });

    const actions = (await listAuditTail({ handle: pgLedger(a.db), limit: 50 })).map((r) => r.action);
    for (const action of ["thought.delete", "graph.node.delete", "graph.evidence.unlink"]) expect(actions).toContain(action);
    expect((await verifyAuditChain({ handle: pgLedger(a.db) })).ok).toBe(true);
  });
});

describe("a hub node on PostgreSQL", () => {
  it("bounds its detail as on SQLite: heaviest relations, first frames, oldest evidence, with totals; its evidence pages", async () => {
    await storesOn(pgEngine(a)).createStore({ input: { name: "hub" }, actor: "test" });
    await expectHubNodeDetailBounded(A, "hub");
  });
});

describe("working memory on PostgreSQL", () => {
  it("sets, reads, lists and deletes keys across replicas; an expired key is gone before any sweep", async () => {
    const now = Date.now();
    await A.setWorkingMemory({ store, input: { key: "task/current", value: { step: 3 } }, actor: "a" });
    await B.setWorkingMemory({ store, input: { key: "task.lease", value: "held", ttl_seconds: 60 }, actor: "b" });
    expect(await B.getWorkingMemory({ store, key: "task/current" })).toMatchObject({ key: "task/current", value: { step: 3 }, expires_at: null, updated_by: "a" });
    const lease = await A.getWorkingMemory({ store, key: "task.lease" });
    expect(lease.expires_at).toBeGreaterThanOrEqual(now + 60_000);
    // Listed byte-wise, as SQLite orders keys ('.' before '/').
    expect((await A.listWorkingMemory({ store })).entries.map((e) => e.key)).toEqual(["task.lease", "task/current"]);

    // Expiry is judged at read time: a key written with an expiry already past is never returned.
    const handle = await openStorePg({ pg: a, store });
    await withStoreTx({ handle, work: (tx) => tx.execute(sql`update working_memory set expires_at = ${now - 1} where key = 'task.lease'`) });
    await expect(B.getWorkingMemory({ store, key: "task.lease" })).rejects.toMatchObject({ code: "not_found" });
    expect((await B.listWorkingMemory({ store })).entries.map((e) => e.key)).toEqual(["task/current"]);
    await expect(B.deleteWorkingMemory({ store, key: "task.lease" })).rejects.toMatchObject({ code: "not_found" });

    expect(await A.deleteWorkingMemory({ store, key: "task/current" })).toEqual({ deleted: "task/current" });
    await expect(B.getWorkingMemory({ store, key: "task/current" })).rejects.toMatchObject({ code: "not_found" });
  });

  it("holds the key limit with two replicas adding the last key at once: one is stored, the other is told it is full", async () => {
    const handle = await openStorePg({ pg: a, store });
    await withStoreTx({ handle, work: (tx) =>
      tx.execute(sql`insert into working_memory (key, value, updated_at, updated_by) select 'fill.' || i, '1', ${Date.now()}, 'test' from generate_series(1, ${workingMemoryMaxKeys() - 1}) as i`),
    });
    const raced = await Promise.allSettled([
      A.setWorkingMemory({ store, input: { key: "last.a", value: 1 }, actor: "a" }),
      B.setWorkingMemory({ store, input: { key: "last.b", value: 2 }, actor: "b" }),
    ]);
    expect(raced.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    expect(raced.find((r) => r.status === "rejected")).toMatchObject({ reason: { code: "unprocessable" } });
    expect((await A.listWorkingMemory({ store })).total).toBe(workingMemoryMaxKeys());
    // An existing key may still be overwritten when full.
    expect(await B.setWorkingMemory({ store, input: { key: "fill.1", value: "again" }, actor: "b" })).toMatchObject({ key: "fill.1", value: "again" });
  });
});
