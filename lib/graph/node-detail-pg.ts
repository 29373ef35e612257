import { inArray, sql } from "drizzle-orm";
import { withStoreTx, type PgStoreHandle } from "../db/pg-store";
import { kgNodes, thoughts } from "../db/schema/pg/store";
import { listEvidenceHeadByTargetIdsPg } from "./evidence-pg";
import { listFramesByNodeIdPg } from "./frames-pg";
import { assembleNodeDetail, evidenceThoughtIds, neighbourIds, NODE_DETAIL_LIMITS, type NodeDetail } from "./node-detail";
import { toGraphNode } from "./nodes";
import { requireNodeRowPg } from "./nodes-pg";
import { listRelationsByNodeIdPg } from "./relations-pg";

/** A node with its frames, relations both ways and their evidence, bounded as on SQLite, read in one snapshot (the SQLite twin is ./node-detail.ts). */
export async function getNodeDetailByIdPg({ handle, id }: { handle: PgStoreHandle; id: string }): Promise<NodeDetail> {
  // One snapshot: a frame or relation written on another replica meanwhile is in every part or in none.
  return withStoreTx({ handle, readOnly: true, snapshot: true }, async (tx) => {
    const node = toGraphNode(await requireNodeRowPg(tx, id));
    const { frames, total: framesTotal } = await listFramesByNodeIdPg(tx, id, NODE_DETAIL_LIMITS.frames);
    const relations = await listRelationsByNodeIdPg(tx, id, NODE_DETAIL_LIMITS.relations);
    const { outgoing, incoming } = relations;
    const frameEvidence = await listEvidenceHeadByTargetIdsPg(tx, "frame", frames.map((f) => f.id), NODE_DETAIL_LIMITS.evidencePerItem);
    const relationEvidence = await listEvidenceHeadByTargetIdsPg(tx, "relation", [...outgoing, ...incoming].map((r) => r.id), NODE_DETAIL_LIMITS.evidencePerItem);
    const thoughtIds = evidenceThoughtIds(frameEvidence.links, relationEvidence.links);
    const excerpts = new Map(
      thoughtIds.length
        ? (await tx.select({ id: thoughts.id, excerpt: sql<string>`substr(${thoughts.content}, 1, 200)` }).from(thoughts).where(inArray(thoughts.id, thoughtIds))).map((r) => [r.id, r.excerpt])
        : [],
    );
    const otherIds = neighbourIds({ outgoing, incoming });
    const others = new Map(
      otherIds.length ? (await tx.select({ id: kgNodes.id, display_name: kgNodes.displayName, entity_type: kgNodes.entityType }).from(kgNodes).where(inArray(kgNodes.id, otherIds))).map((n) => [n.id, n]) : [],
    );
    return assembleNodeDetail({ node, frames, framesTotal, relations, frameEvidence, relationEvidence, excerpts, others });
  });
}
