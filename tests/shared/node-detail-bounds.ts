import { expect } from "vitest";
import type { GraphBackend } from "@/lib/graph/backend";
import { NODE_DETAIL_LIMITS } from "@/lib/graph/node-detail";

/**
 * A hub node: more relations, frames and evidence than one node detail
 * shows. The detail is bounded (NODE_DETAIL_LIMITS), heaviest relations
 * first, oldest evidence first, and its totals count everything — on either
 * backend (the SQLite unit test and tests/pg/store-graph.test.ts run this).
 */
export async function expectHubNodeDetailBounded(g: GraphBackend, store: string): Promise<void> {
  const { frames: maxFrames, relations: maxRelations, evidencePerItem } = NODE_DETAIL_LIMITS;
  const actor = "hub-test";
  const hub = await g.createNode({ store, input: { name: "hub", entity_type: "system" }, actor });
  const outgoing = maxRelations + 30;
  for (let i = 0; i < outgoing; i++) {
    const leaf = await g.createNode({ store, input: { name: `leaf ${i}`, entity_type: "tool" }, actor });
    // Weights 0.001 … 0.230: the heaviest are the last leaves.
    await g.createOrMergeRelation({ store, input: { from_id: hub.id, to_id: leaf.id, relationship_type: "feeds", weight: (i + 1) / 1000 }, actor });
  }
  const caller = await g.createNode({ store, input: { name: "caller", entity_type: "person" }, actor });
  await g.createOrMergeRelation({ store, input: { from_id: caller.id, to_id: hub.id, relationship_type: "calls" }, actor });
  for (let i = 0; i < maxFrames + 5; i++) await g.createFrame({ store, input: { node_id: hub.id, column: "episodic", properties: { n: i } }, actor });
  const heaviest = (await g.getNodeDetail({ store, id: hub.id })).outgoing[0];
  const thoughts: string[] = [];
  for (let i = 0; i < evidencePerItem + 5; i++) {
    const t = await g.think({ store, input: { content: `observation ${i} about the hub` }, actor });
    thoughts.push(t.id);
    await g.linkEvidence({ store, input: { target: "relation", target_id: heaviest.id, thought_id: t.id }, actor });
    // Links made in the same millisecond are ordered by thought id (random): one per millisecond, so "oldest first" is the order they were made.
    await new Promise((r) => setTimeout(r, 2));
  }

  const detail = await g.getNodeDetail({ store, id: hub.id });
  expect(detail.totals).toEqual({ frames: maxFrames + 5, outgoing, incoming: 1 });
  expect(detail.frames).toHaveLength(maxFrames);
  expect(detail.outgoing).toHaveLength(maxRelations);
  expect(detail.outgoing[0].weight).toBeCloseTo(outgoing / 1000);
  expect(detail.outgoing.at(-1)!.weight).toBeCloseTo((outgoing - maxRelations + 1) / 1000);
  expect(detail.incoming).toMatchObject([{ other: { display_name: "caller" }, evidence: [], evidence_total: 0 }]);
  const top = detail.outgoing[0];
  expect(top.id).toBe(heaviest.id);
  expect(top.evidence_total).toBe(evidencePerItem + 5);
  // The oldest links, in the order they were made.
  expect(top.evidence.map((e) => e.thought_id)).toEqual(thoughts.slice(0, evidencePerItem));
  expect(top.evidence[0].excerpt).toBe("observation 0 about the hub");
  // Every link is listed by GET /evidence, a page at a time, oldest first.
  const query = { target: "relation" as const, target_id: heaviest.id };
  expect(await g.listEvidence({ store, query: { ...query, limit: 10 } })).toMatchObject({ total: evidencePerItem + 5, has_more: true });
  const last = await g.listEvidence({ store, query: { ...query, limit: 10, offset: 20 } });
  expect(last).toMatchObject({ total: evidencePerItem + 5, has_more: false });
  expect(last.evidence.map((e) => e.thought_id)).toEqual(thoughts.slice(20));
  expect(await g.listEvidence({ store, query: { ...query, offset: 100 } })).toEqual({ evidence: [], total: evidencePerItem + 5, has_more: false });
}
