import { inArray, sql } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { kgNodes, thoughts } from "../db/schema/graph";
import { listEvidenceByTargetIds, type EvidenceLink } from "./evidence";
import { listFramesByNodeId, type GraphFrame } from "./frames";
import { requireNodeRow, toGraphNode, type GraphNode } from "./nodes";
import { listRelationsByNodeId, type GraphRelation } from "./relations";

type Evidence = { thought_id: string; stance: EvidenceLink["stance"]; excerpt: string | null }[];
export type NodeDetail = {
  node: GraphNode;
  frames: (GraphFrame & { evidence: Evidence })[];
  outgoing: (GraphRelation & { other: NeighbourNode; evidence: Evidence })[];
  incoming: (GraphRelation & { other: NeighbourNode; evidence: Evidence })[];
};
export type NeighbourNode = { id: string; display_name: string; entity_type: GraphNode["entity_type"] };

/** A node with its frames, relations both ways (with the node at the other end) and the evidence thoughts of each. */
export function getNodeDetailById({ handle, id }: { handle: StoreHandle; id: string }): NodeDetail {
  const node = toGraphNode(requireNodeRow({ handle, id }));
  const frames = listFramesByNodeId({ handle, nodeId: id });
  const { outgoing, incoming } = listRelationsByNodeId({ handle, nodeId: id });
  const frameEvidence = listEvidenceByTargetIds({ handle, target: "frame", ids: frames.map((f) => f.id) });
  const relationEvidence = listEvidenceByTargetIds({ handle, target: "relation", ids: [...outgoing, ...incoming].map((r) => r.id) });
  const thoughtIds = [...frameEvidence.values(), ...relationEvidence.values()].flat().map((e) => e.thought_id);
  const excerpts = new Map(
    handle.db
      .select({ id: thoughts.id, excerpt: sql<string>`substr(${thoughts.content}, 1, 200)` })
      .from(thoughts)
      .where(inArray(thoughts.id, thoughtIds))
      .all()
      .map((r) => [r.id, r.excerpt]),
  );
  const withExcerpts = (links: { thought_id: string; stance: EvidenceLink["stance"] }[] | undefined): Evidence => (links ?? []).map((l) => ({ ...l, excerpt: excerpts.get(l.thought_id) ?? null }));
  const otherIds = [...outgoing.map((r) => r.to_id), ...incoming.map((r) => r.from_id)];
  const others = new Map(
    handle.db
      .select({ id: kgNodes.id, display_name: kgNodes.displayName, entity_type: kgNodes.entityType })
      .from(kgNodes)
      .where(inArray(kgNodes.id, otherIds))
      .all()
      .map((n) => [n.id, n]),
  );
  return {
    node,
    frames: frames.map((f) => ({ ...f, evidence: withExcerpts(frameEvidence.get(f.id)) })),
    outgoing: outgoing.map((r) => ({ ...r, other: others.get(r.to_id)!, evidence: withExcerpts(relationEvidence.get(r.id)) })),
    incoming: incoming.map((r) => ({ ...r, other: others.get(r.from_id)!, evidence: withExcerpts(relationEvidence.get(r.id)) })),
  };
}
