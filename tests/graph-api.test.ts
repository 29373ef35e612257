import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as nodesRoute from "@/app/api/v1/stores/[store]/nodes/route";
import * as nodeRoute from "@/app/api/v1/stores/[store]/nodes/[id]/route";
import * as framesRoute from "@/app/api/v1/stores/[store]/frames/route";
import * as relationsRoute from "@/app/api/v1/stores/[store]/relations/route";
import * as evidenceRoute from "@/app/api/v1/stores/[store]/evidence/route";
import * as thoughtsRoute from "@/app/api/v1/stores/[store]/thoughts/route";
import * as chainRoute from "@/app/api/v1/stores/[store]/chains/[id]/route";
import * as feedbackRoute from "@/app/api/v1/stores/[store]/thoughts/[id]/feedback/route";
import * as rememberRoute from "@/app/api/v1/stores/[store]/remember/route";
import * as wmRoute from "@/app/api/v1/stores/[store]/working-memory/route";
import * as wmKeyRoute from "@/app/api/v1/stores/[store]/working-memory/[key]/route";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { graphBackend } from "@/lib/graph/backend";
import { seedStore, seedTokens, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

let env: TestEnv;
let write: string;
let read: string;
const P = { store: "kb" };

/** Store kb, a builder's token and a reader's. */
const seed = async () => {
  await seedStore("kb");
  return seedTokens({ write: { label: "w", agent_id: "builder", scopes: ["write"] }, read: { label: "r", agent_id: "reader", scopes: ["read"] } });
};
beforeEach(async () => {
  const started = await useTestBackend({}, { seed });
  env = started;
  ({ write, read } = started.seeded);
});
afterEach(async () => {
  await env.cleanup();
  resetEmbedderForTests();
});

describe("graph API", () => {
  it("creates a node with a frame, a relation and evidence, and reads them back on the node", async () => {
    const node = await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "SQLite WAL", entity_type: "concept", tags: ["storage"] } });
    expect(node.status).toBe(201);
    expect(node.json.node).toMatchObject({ name: "sqlite wal", display_name: "SQLite WAL", created_by: "agent:builder" });
    const other = await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "checkpoint", entity_type: "concept" } });
    const dup = await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "sqlite  wal", entity_type: "concept" } });
    expect(dup.status).toBe(409);
    expect(dup.json.error.code).toBe("conflict");

    const thought = await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content: "WAL keeps readers going while one writer commits", framework: "review" } });
    expect(thought.status).toBe(201);
    const frame = await callRoute(framesRoute.POST, { token: write, params: P, body: { node_id: node.json.node.id, column: "semantic", properties: { readers_block: false } } });
    expect(frame.status).toBe(201);
    const link = { target: "frame", target_id: frame.json.frame.id, thought_id: thought.json.thought.id };
    expect((await callRoute(evidenceRoute.POST, { token: write, params: P, body: link })).status).toBe(201);
    const again = await callRoute(evidenceRoute.POST, { token: write, params: P, body: { ...link, stance: "contradicts" } });
    expect([again.status, again.json.created, again.json.evidence.stance]).toEqual([200, false, "contradicts"]);
    const listed = await callRoute(evidenceRoute.GET, { token: read, params: P, url: `http://127.0.0.1/api/v1/stores/kb/evidence?target=frame&target_id=${link.target_id}` });
    expect(listed.json.evidence).toEqual([{ thought_id: thought.json.thought.id, stance: "contradicts" }]);
    const rel = await callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id: node.json.node.id, to_id: other.json.node.id, relationship_type: "needs", weight: 0.7 } });
    expect(rel.status).toBe(201);
    const merged = await callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id: node.json.node.id, to_id: other.json.node.id, relationship_type: "needs", weight: 0.2 } });
    expect([merged.status, merged.json.merged, merged.json.relation.weight]).toEqual([200, true, 0.7]);

    const detail = await callRoute(nodeRoute.GET, { token: read, params: { ...P, id: node.json.node.id } });
    expect(detail.status).toBe(200);
    expect(detail.json.frames).toHaveLength(1);
    expect(detail.json.frames[0].evidence).toEqual([{ thought_id: thought.json.thought.id, stance: "contradicts", excerpt: "WAL keeps readers going while one writer commits" }]);
    expect(detail.json.outgoing.map((r: { other: { display_name: string }; weight: number }) => [r.other.display_name, r.weight])).toEqual([["checkpoint", 0.7]]);
    // The thought page lists what the thought is evidence for, with the node to open.
    await callRoute(evidenceRoute.POST, { token: write, params: P, body: { target: "relation", target_id: rel.json.relation.id, thought_id: thought.json.thought.id } });
    expect(await graphBackend().listEvidenceUses({ store: "kb", thoughtId: thought.json.thought.id })).toEqual([
      { target: "frame", target_id: frame.json.frame.id, stance: "contradicts", node_id: node.json.node.id, node_name: "SQLite WAL", label: "semantic frame" },
      { target: "relation", target_id: rel.json.relation.id, stance: "supports", node_id: node.json.node.id, node_name: "SQLite WAL", label: "needs → checkpoint" },
    ]);

    const remembered = await callRoute(rememberRoute.POST, { token: read, params: P, body: { query: "sqlite wal readers" } });
    expect(remembered.status).toBe(200);
    expect(remembered.json.formula).toContain("w_conflict·inconsistency");
    expect(Object.keys(remembered.json.signals)).toEqual(["semantic", "recency", "episodic", "procedure_match", "edge_weight", "inconsistency", "fact_match"]);
    expect(remembered.json.results.map((r: { id: string }) => r.id)).toEqual(expect.arrayContaining([node.json.node.id, thought.json.thought.id]));
  });

  it("answers unknown ids with 404, bad input with 400 and missing scope with 403", async () => {
    const unknown = crypto.randomUUID();
    expect((await callRoute(nodeRoute.GET, { token: read, params: { ...P, id: unknown } })).status).toBe(404);
    expect((await callRoute(nodeRoute.GET, { token: read, params: { ...P, id: "not-a-uuid" } })).status).toBe(400);
    expect((await callRoute(framesRoute.POST, { token: write, params: P, body: { node_id: unknown, column: "semantic", properties: {} } })).status).toBe(404);
    expect((await callRoute(feedbackRoute.POST, { token: write, params: { ...P, id: unknown }, body: { utility: 0.5 } })).status).toBe(404);
    expect((await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "x", entity_type: "planet" } })).status).toBe(400);
    expect((await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "x", entity_type: "tool", extra: 1 } })).status).toBe(400);
    expect((await callRoute(nodesRoute.POST, { token: read, params: P, body: { name: "x", entity_type: "tool" } })).status).toBe(403);
    expect((await callRoute(rememberRoute.POST, { token: read, params: { store: "nope" }, body: { query: "x" } })).status).toBe(404);
    expect((await callRoute(rememberRoute.POST, { token: read, params: P, body: { query: "x", weights: { semantic: -1 } } })).status).toBe(400);
    const a = await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "a", entity_type: "tool" } });
    const loop = await callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id: a.json.node.id, to_id: a.json.node.id, relationship_type: "uses" } });
    expect([loop.status, loop.json.error.code]).toEqual([422, "unprocessable"]);
  });

  it("holds numbers and merged attributes to what both databases store: a thought number past 32 bits is 400, a merge past 64 KiB of attributes 422 with nothing changed", async () => {
    for (const field of ["thought_number", "total_thoughts"]) {
      const r = await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content: "c", chain_id: "chain-a", [field]: 2 ** 31 } });
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.json.error.details)).toContain(field);
    }
    expect((await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content: "c", chain_id: "chain-a", thought_number: 2 ** 31 - 1, total_thoughts: 2 ** 31 - 1 } })).status).toBe(201);
    const a = (await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "a", entity_type: "tool" } })).json.node;
    const b = (await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "b", entity_type: "tool" } })).json.node;
    const relate = (key: string) => callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id: a.id, to_id: b.id, relationship_type: "uses", attributes: { [key]: "x".repeat(30_000) } } });
    expect((await relate("k0")).status).toBe(201);
    expect((await relate("k1")).json.merged).toBe(true);
    // A third key would take the relation past 64 KiB: refused, whatever each request carries on its own.
    const refused = await relate("k2");
    expect(refused.status).toBe(422);
    expect(refused.json.error.details[0]).toMatchObject({ path: "attributes", limit: "JSON_OBJECT_MAX_BYTES" });
    const [relation] = (await callRoute(nodeRoute.GET, { token: read, params: { ...P, id: a.id } })).json.outgoing;
    expect(Object.keys(relation.attributes).sort()).toEqual(["k0", "k1"]);
  });

  it("answers a chain's thoughts within DUALMIND_LIST_MAX_BYTES, and next_offset continues them in the thoughts list", async () => {
    for (let i = 0; i < 60; i++) expect((await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content: `${i} ${"w".repeat(19_990)}`, chain_id: "long" } })).status).toBe(201);
    const chain = await callRoute(chainRoute.GET, { token: read, params: { ...P, id: "long" } });
    expect(chain.status).toBe(200);
    expect(JSON.stringify(chain.json).length).toBeLessThanOrEqual(1024 * 1024 + 64 * 1024);
    const shown = chain.json.chain.thoughts.length;
    expect(shown).toBeGreaterThan(10);
    expect(shown).toBeLessThan(60);
    expect(chain.json.chain.next_offset).toBe(shown);
    const rest = await callRoute(thoughtsRoute.GET, { token: read, params: P, url: `http://127.0.0.1/api/v1/stores/kb/thoughts?chain_id=long&offset=${shown}&limit=200` });
    expect(rest.json.thoughts[0].content.startsWith(`${shown} `)).toBe(true);
  });

  it("answers a node's detail within DUALMIND_LIST_MAX_BYTES however large its frames are; totals say how many there are", async () => {
    const node = (await callRoute(nodesRoute.POST, { token: write, params: P, body: { name: "heavy", entity_type: "concept" } })).json.node;
    for (let i = 0; i < 30; i++) expect((await callRoute(framesRoute.POST, { token: write, params: P, body: { node_id: node.id, column: "semantic", properties: { [`k${i}`]: "p".repeat(60_000) } } })).status).toBe(201);
    const detail = await callRoute(nodeRoute.GET, { token: read, params: { ...P, id: node.id } });
    expect(detail.status).toBe(200);
    expect(JSON.stringify(detail.json).length).toBeLessThanOrEqual(1024 * 1024 + 64 * 1024);
    expect(detail.json.totals.frames).toBe(30);
    expect(detail.json.frames.length).toBeGreaterThanOrEqual(3);
    expect(detail.json.frames.length).toBeLessThan(30);
  });

  it("keeps working memory per store with a TTL", async () => {
    const put = await callRoute(wmRoute.PUT, { token: write, params: P, method: "PUT", body: { key: "plan", value: { step: 1 }, ttl_seconds: 3600 } });
    expect(put.status).toBe(200);
    expect(put.json.entry.expires_at).toBeGreaterThan(Date.now());
    expect((await callRoute(wmKeyRoute.GET, { token: read, params: { ...P, key: "plan" } })).json.entry.value).toEqual({ step: 1 });
    expect((await callRoute(wmRoute.GET, { token: read, params: P })).json.entries).toHaveLength(1);
    expect((await callRoute(wmKeyRoute.DELETE, { token: write, params: { ...P, key: "plan" }, method: "DELETE" })).status).toBe(200);
    expect((await callRoute(wmKeyRoute.GET, { token: read, params: { ...P, key: "plan" } })).status).toBe(404);
  });
});
