import { boundedLists } from "../governance/limits";
import { inArray, sql } from "drizzle-orm";
import { read, select, type AnyStoreHandle, type On } from "../db/port";
import { listEvidenceHeadByTargetIds, type EvidenceHead, type EvidenceLink } from "./evidence";
import { listFramesByNodeId, type GraphFrame } from "./frames";
import { requireNode, toGraphNode, type GraphNode } from "./nodes";
import { listRelationsByNodeId, type GraphRelation } from "./relations";
import { graphTables } from "./tables";

type Evidence = { thought_id: string; stance: EvidenceLink["stance"]; excerpt: string | null }[];
/**
 * A node with a bounded view of what hangs off it: its first frames, its
 * heaviest relations each way and the oldest evidence of each (limits in
 * NODE_DETAIL_LIMITS); `totals` and each item's `evidence_total` say how
 * much there is, so a hub node with 50,000 relations is one bounded answer,
 * not 50,000 rows (GET /relations, /frames and /evidence page through the rest).
 */
export type NodeDetail = {
  node: GraphNode;
  frames: (GraphFrame & { evidence: Evidence; evidence_total: number })[];
  outgoing: (GraphRelation & { other: NeighbourNode; evidence: Evidence; evidence_total: number })[];
  incoming: (GraphRelation & { other: NeighbourNode; evidence: Evidence; evidence_total: number })[];
  totals: { frames: number; outgoing: number; incoming: number };
};
type NeighbourNode = { id: string; display_name: string; entity_type: GraphNode["entity_type"] };

export const NODE_DETAIL_LIMITS = { frames: 100, relations: 200, evidencePerItem: 20 } as const;

/**
 * A node with its frames, relations both ways (with the node at the other
 * end) and the evidence thoughts of each, bounded; on PostgreSQL read in one
 * snapshot, so a frame or relation written on another replica meanwhile is
 * in every part or in none.
 */
export function getNodeDetailById<H extends AnyStoreHandle>({ handle, id }: { handle: H; id: string }): On<H, NodeDetail> {
  return read(handle, function* () {
    const node = toGraphNode(yield* requireNode(id));
    const { frames, total: framesTotal } = yield* listFramesByNodeId({ nodeId: id, limit: NODE_DETAIL_LIMITS.frames });
    const relations = yield* listRelationsByNodeId({ nodeId: id, limit: NODE_DETAIL_LIMITS.relations });
    const { outgoing, incoming } = relations;
    const frameEvidence = yield* listEvidenceHeadByTargetIds({ target: "frame", ids: frames.map((f) => f.id), perTarget: NODE_DETAIL_LIMITS.evidencePerItem });
    const relationEvidence = yield* listEvidenceHeadByTargetIds({ target: "relation", ids: [...outgoing, ...incoming].map((r) => r.id), perTarget: NODE_DETAIL_LIMITS.evidencePerItem });
    const thoughtIds = [frameEvidence, relationEvidence].flatMap((head) => [...head.links.values()].flat().map((e) => e.thought_id));
    const excerptRows = thoughtIds.length
      ? yield* select(graphTables, (db, t) => db.select({ id: t.thoughts.id, excerpt: sql<string>`substr(${t.thoughts.content}, 1, 200)` }).from(t.thoughts).where(inArray(t.thoughts.id, thoughtIds)))
      : [];
    // The nodes at the other end of the relations.
    const otherIds = [...outgoing.map((r) => r.to_id), ...incoming.map((r) => r.from_id)];
    const otherRows = otherIds.length
      ? yield* select(graphTables, (db, t) => db.select({ id: t.kgNodes.id, display_name: t.kgNodes.displayName, entity_type: t.kgNodes.entityType }).from(t.kgNodes).where(inArray(t.kgNodes.id, otherIds)))
      : [];
    const excerpts = new Map(excerptRows.map((r) => [r.id, r.excerpt]));
    const others = new Map<string, NeighbourNode>(otherRows.map((n) => [n.id, n]));
    const evidenceOf = (head: EvidenceHead, id: string) => ({
      evidence: (head.links.get(id) ?? []).map((l): Evidence[number] => ({ ...l, excerpt: excerpts.get(l.thought_id) ?? null })),
      evidence_total: head.totals.get(id) ?? 0,
    });
    // Frames and attributes are up to 64 KiB each: the lists together stay within DUALMIND_LIST_MAX_BYTES (totals say what there is).
    const { shown } = boundedLists({
      lists: {
        frames: frames.map((f) => ({ ...f, ...evidenceOf(frameEvidence, f.id) })),
        outgoing: outgoing.map((r) => ({ ...r, other: others.get(r.to_id)!, ...evidenceOf(relationEvidence, r.id) })),
        incoming: incoming.map((r) => ({ ...r, other: others.get(r.from_id)!, ...evidenceOf(relationEvidence, r.id) })),
      },
      keep: "first",
    });
    return { node, ...shown, totals: { frames: framesTotal, outgoing: relations.outgoingTotal, incoming: relations.incomingTotal } };
  }, { snapshot: true });
}
