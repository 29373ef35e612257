import { asc, eq } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import { withStoreTx, type PgStoreHandle } from "../db/pg-store";
import { kgFrameEvidence, kgFrames, kgNodes, kgRelationEvidence, kgRelations } from "../db/schema/pg/store";
import type { EvidenceUse } from "./evidence";

/** What a thought is evidence for on PostgreSQL: frames and relations, each with the node to open (see listEvidenceUsesByThoughtId, ./evidence.ts). */
export async function listEvidenceUsesByThoughtIdPg({ handle, thoughtId }: { handle: PgStoreHandle; thoughtId: string }): Promise<EvidenceUse[]> {
  return withStoreTx({ handle, readOnly: true }, async (tx) => {
    const frames = await tx
      .select({ targetId: kgFrames.id, stance: kgFrameEvidence.stance, nodeId: kgNodes.id, nodeName: kgNodes.displayName, column: kgFrames.column })
      .from(kgFrameEvidence)
      .innerJoin(kgFrames, eq(kgFrames.id, kgFrameEvidence.targetId))
      .innerJoin(kgNodes, eq(kgNodes.id, kgFrames.nodeId))
      .where(eq(kgFrameEvidence.thoughtId, thoughtId))
      .orderBy(asc(kgFrameEvidence.createdAt));
    const toNode = alias(kgNodes, "to_node");
    const relations = await tx
      .select({ targetId: kgRelations.id, stance: kgRelationEvidence.stance, nodeId: kgNodes.id, nodeName: kgNodes.displayName, type: kgRelations.relationshipType, toName: toNode.displayName })
      .from(kgRelationEvidence)
      .innerJoin(kgRelations, eq(kgRelations.id, kgRelationEvidence.targetId))
      .innerJoin(kgNodes, eq(kgNodes.id, kgRelations.fromId))
      .innerJoin(toNode, eq(toNode.id, kgRelations.toId))
      .where(eq(kgRelationEvidence.thoughtId, thoughtId))
      .orderBy(asc(kgRelationEvidence.createdAt));
    return [
      ...frames.map((r) => ({ target: "frame" as const, target_id: r.targetId, stance: r.stance, node_id: r.nodeId, node_name: r.nodeName, label: `${r.column} frame` })),
      ...relations.map((r) => ({ target: "relation" as const, target_id: r.targetId, stance: r.stance, node_id: r.nodeId, node_name: r.nodeName, label: `${r.type} → ${r.toName}` })),
    ];
  });
}
