import { randomUUID } from "node:crypto";
import { asc, count, eq } from "drizzle-orm";
import type { z } from "zod";
import { bytewise, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { kgFrames, kgNodes } from "../db/schema/pg/store";
import { appendAuditPg } from "../governance/audit-pg";
import { notFound } from "../common";
import { createFrameInputSchema, toGraphFrame, updateFrameInputSchema, type GraphFrame } from "./frames";
import { requireNodeRowPg } from "./nodes-pg";

/** Frames on PostgreSQL (the SQLite twin is ./frames.ts, whose schemas and shaper this reuses). */

export async function getFrameByIdPg({ handle, id }: { handle: PgStoreHandle; id: string }): Promise<GraphFrame> {
  const [row] = await withStoreTx({ handle, readOnly: true }, (tx) => tx.select().from(kgFrames).where(eq(kgFrames.id, id)));
  if (!row) throw notFound("frame", id);
  return toGraphFrame(row);
}

/** Add a frame to a node; the node's updated_at moves with it (recency of what is known). */
export async function createFramePg({ handle, input, actor }: { handle: PgStoreHandle; input: z.input<typeof createFrameInputSchema>; actor: string }): Promise<GraphFrame> {
  const f = createFrameInputSchema.parse(input);
  const now = Date.now();
  return withStoreTx({ handle }, async (tx) => {
    // Locked: the node's updated_at is written below, and a delete on another replica waits for this frame.
    await requireNodeRowPg(tx, f.node_id, { lock: "update" });
    const [row] = await tx
      .insert(kgFrames)
      .values({ id: randomUUID(), nodeId: f.node_id, column: f.column, properties: JSON.stringify(f.properties), createdAt: now, updatedAt: now, createdBy: actor })
      .returning();
    await tx.update(kgNodes).set({ updatedAt: now }).where(eq(kgNodes.id, f.node_id));
    return toGraphFrame(row);
  });
}

export async function updateFramePg({ handle, id, input }: { handle: PgStoreHandle; id: string; input: z.input<typeof updateFrameInputSchema> }): Promise<GraphFrame> {
  const u = updateFrameInputSchema.parse(input);
  const now = Date.now();
  return withStoreTx({ handle }, async (tx) => {
    const [row] = await tx.update(kgFrames).set({ properties: JSON.stringify(u.properties), updatedAt: now }).where(eq(kgFrames.id, id)).returning();
    if (!row) throw notFound("frame", id);
    await tx.update(kgNodes).set({ updatedAt: now }).where(eq(kgNodes.id, row.nodeId));
    return toGraphFrame(row);
  });
}

/** Delete a frame; its evidence links go with it (FK cascade). Audited. */
export async function deleteFramePg({ handle, id, actor }: { handle: PgStoreHandle; id: string; actor: string }): Promise<{ deleted: string }> {
  await withStoreTx({ handle }, async (tx) => {
    const [row] = await tx.delete(kgFrames).where(eq(kgFrames.id, id)).returning();
    if (!row) throw notFound("frame", id);
    await appendAuditPg({ db: tx, entry: { actor, action: "graph.frame.delete", target: `store:${handle.store}/frame:${id}`, details: { node: row.nodeId, column: row.column } } });
  });
  return { deleted: id };
}

/** A node's frames by column, oldest first (inside the caller's transaction). */
/** A node's first `limit` frames (by column, then age) and how many it has (the SQLite twin: listFramesByNodeId). */
export async function listFramesByNodeIdPg(tx: PgStoreTx, nodeId: string, limit: number): Promise<{ frames: GraphFrame[]; total: number }> {
  const rows = await tx
    .select()
    .from(kgFrames)
    .where(eq(kgFrames.nodeId, nodeId))
    .orderBy(bytewise(kgFrames.column), asc(kgFrames.createdAt), bytewise(kgFrames.id))
    .limit(limit);
  const [{ n }] = await tx.select({ n: count() }).from(kgFrames).where(eq(kgFrames.nodeId, nodeId));
  return { frames: rows.map(toGraphFrame), total: n };
}
