import { inArray, sql } from "drizzle-orm";
import { withStoreTx, type PgStoreHandle } from "../db/pg-store";
import { kgNodes, thoughts } from "../db/schema/pg/store";
import { listEvidenceByTargetIdsPg } from "./evidence-pg";
import { listFramesByNodeIdPg } from "./frames-pg";
import { assembleNodeDetail, evidenceThoughtIds, neighbourIds, type NodeDetail } from "./node-detail";
import { toGraphNode } from "./nodes";
import { requireNodeRowPg } from "./nodes-pg";
import { listRelationsByNodeIdPg } from "./relations-pg";

/** A node with its frames, relations both ways and their evidence, read in one snapshot (the SQLite twin is ./node-detail.ts). */
export async function getNodeDetailByIdPg({ handle, id }: { handle: PgStoreHandle; id: string }): Promise<NodeDetail> {
  // One snapshot: a frame or relation written on another replica meanwhile is in every part or in none.
  return withStoreTx({ handle, readOnly: true, snapshot: true }, async (tx) => {
    const node = toGraphNode(await requireNodeRowPg(tx, id));
    const frames = await listFramesByNodeIdPg(tx, id);
    const { outgoing, incoming } = await listRelationsByNodeIdPg(tx, id);
    const frameEvidence = await listEvidenceByTargetIdsPg(tx, "frame", frames.map((f) => f.id));
    const relationEvidence = await listEvidenceByTargetIdsPg(tx, "relation", [...outgoing, ...incoming].map((r) => r.id));
    const thoughtIds = evidenceThoughtIds(frameEvidence, relationEvidence);
    const excerpts = new Map(
      thoughtIds.length
        ? (await tx.select({ id: thoughts.id, excerpt: sql<string>`substr(${thoughts.content}, 1, 200)` }).from(thoughts).where(inArray(thoughts.id, thoughtIds))).map((r) => [r.id, r.excerpt])
        : [],
    );
    const otherIds = neighbourIds({ outgoing, incoming });
    const others = new Map(
      otherIds.length ? (await tx.select({ id: kgNodes.id, display_name: kgNodes.displayName, entity_type: kgNodes.entityType }).from(kgNodes).where(inArray(kgNodes.id, otherIds))).map((n) => [n.id, n]) : [],
    );
    return assembleNodeDetail({ node, frames, outgoing, incoming, frameEvidence, relationEvidence, excerpts, others });
  });
}
