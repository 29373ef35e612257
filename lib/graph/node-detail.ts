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
  const thoughtIds = evidenceThoughtIds(frameEvidence, relationEvidence);
  const excerpts = new Map(
    handle.db
      .select({ id: thoughts.id, excerpt: sql<string>`substr(${thoughts.content}, 1, 200)` })
      .from(thoughts)
      .where(inArray(thoughts.id, thoughtIds))
      .all()
      .map((r) => [r.id, r.excerpt]),
  );
  const others = new Map(
    handle.db
      .select({ id: kgNodes.id, display_name: kgNodes.displayName, entity_type: kgNodes.entityType })
      .from(kgNodes)
      .where(inArray(kgNodes.id, neighbourIds({ outgoing, incoming })))
      .all()
      .map((n) => [n.id, n]),
  );
  return assembleNodeDetail({ node, frames, outgoing, incoming, frameEvidence, relationEvidence, excerpts, others });
}

type EvidenceByTarget = Map<string, { thought_id: string; stance: EvidenceLink["stance"] }[]>;

/** The evidence thoughts of a node's frames and relations (both dialects). */
export function evidenceThoughtIds(...byTarget: EvidenceByTarget[]): string[] {
  return byTarget.flatMap((m) => [...m.values()].flat().map((e) => e.thought_id));
}

/** The nodes at the other end of a node's relations (both dialects). */
export function neighbourIds({ outgoing, incoming }: { outgoing: GraphRelation[]; incoming: GraphRelation[] }): string[] {
  return [...outgoing.map((r) => r.to_id), ...incoming.map((r) => r.from_id)];
}

/** A node's detail from its parts, read by either dialect: evidence with excerpts, relations with the node at the other end. */
export function assembleNodeDetail(p: {
  node: GraphNode;
  frames: GraphFrame[];
  outgoing: GraphRelation[];
  incoming: GraphRelation[];
  frameEvidence: EvidenceByTarget;
  relationEvidence: EvidenceByTarget;
  excerpts: Map<string, string>;
  others: Map<string, NeighbourNode>;
}): NodeDetail {
  const withExcerpts = (links: { thought_id: string; stance: EvidenceLink["stance"] }[] | undefined): Evidence => (links ?? []).map((l) => ({ ...l, excerpt: p.excerpts.get(l.thought_id) ?? null }));
  return {
    node: p.node,
    frames: p.frames.map((f) => ({ ...f, evidence: withExcerpts(p.frameEvidence.get(f.id)) })),
    outgoing: p.outgoing.map((r) => ({ ...r, other: p.others.get(r.to_id)!, evidence: withExcerpts(p.relationEvidence.get(r.id)) })),
    incoming: p.incoming.map((r) => ({ ...r, other: p.others.get(r.from_id)!, evidence: withExcerpts(p.relationEvidence.get(r.id)) })),
  };
}
