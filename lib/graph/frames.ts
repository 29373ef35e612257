import { randomUUID } from "node:crypto";
import { asc, count, eq } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { FRAME_COLUMNS, kgFrames, kgNodes, type KgFrameRow } from "../db/schema/graph";
import { appendAudit } from "../governance/audit";
import { requireNodeRow } from "./nodes";
import { jsonObjectSchema, notFound, parseJsonColumnOr, uuidSchema } from "../common";

export const createFrameInputSchema = z.object({ node_id: uuidSchema, column: z.enum(FRAME_COLUMNS), properties: jsonObjectSchema }).strict();
export const updateFrameInputSchema = z.object({ properties: jsonObjectSchema }).strict();

export type GraphFrame = {
  id: string;
  node_id: string;
  column: KgFrameRow["column"];
  properties: Record<string, unknown>;
  created_at: number;
  updated_at: number;
  created_by: string;
};

export function toGraphFrame(r: KgFrameRow): GraphFrame {
  return { id: r.id, node_id: r.nodeId, column: r.column, properties: parseJsonColumnOr<Record<string, unknown>>(r.properties, {}), created_at: r.createdAt, updated_at: r.updatedAt, created_by: r.createdBy };
}

function selectFrameRow({ handle, id }: { handle: StoreHandle; id: string }): KgFrameRow | undefined {
  return handle.db.select().from(kgFrames).where(eq(kgFrames.id, id)).get();
}

export function getFrameById({ handle, id }: { handle: StoreHandle; id: string }): GraphFrame {
  const row = selectFrameRow({ handle, id });
  if (!row) throw notFound("frame", id);
  return toGraphFrame(row);
}

/** Add a frame to a node; the node's updated_at moves with it (recency of what is known). */
export function createFrame({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof createFrameInputSchema>; actor: string }): GraphFrame {
  const f = createFrameInputSchema.parse(input);
  const now = Date.now();
  return handle.sqlite
    .transaction(() => {
      requireNodeRow({ handle, id: f.node_id });
      const row = handle.db
        .insert(kgFrames)
        .values({ id: randomUUID(), nodeId: f.node_id, column: f.column, properties: JSON.stringify(f.properties), createdAt: now, updatedAt: now, createdBy: actor })
        .returning()
        .get();
      handle.db.update(kgNodes).set({ updatedAt: now }).where(eq(kgNodes.id, f.node_id)).run();
      return toGraphFrame(row);
    })
    .immediate();
}

export function updateFrame({ handle, id, input }: { handle: StoreHandle; id: string; input: z.input<typeof updateFrameInputSchema> }): GraphFrame {
  const u = updateFrameInputSchema.parse(input);
  const now = Date.now();
  return handle.sqlite
    .transaction(() => {
      const row = handle.db.update(kgFrames).set({ properties: JSON.stringify(u.properties), updatedAt: now }).where(eq(kgFrames.id, id)).returning().get();
      if (!row) throw notFound("frame", id);
      handle.db.update(kgNodes).set({ updatedAt: now }).where(eq(kgNodes.id, row.nodeId)).run();
      return toGraphFrame(row);
    })
    .immediate();
}

/** Delete a frame; its evidence links go with it (FK cascade). Audited. */
export function deleteFrame({ handle, id, actor }: { handle: StoreHandle; id: string; actor: string }): { deleted: string } {
  handle.sqlite
    .transaction(() => {
      const row = handle.db.delete(kgFrames).where(eq(kgFrames.id, id)).returning().get();
      if (!row) throw notFound("frame", id);
      appendAudit({ actor, action: "graph.frame.delete", target: `store:${handle.store}/frame:${id}`, details: { node: row.nodeId, column: row.column } });
    })
    .immediate();
  return { deleted: id };
}

/** A node's first `limit` frames (by column, then age) and how many it has. */
export function listFramesByNodeId({ handle, nodeId, limit }: { handle: StoreHandle; nodeId: string; limit: number }): { frames: GraphFrame[]; total: number } {
  const frames = handle.db.select().from(kgFrames).where(eq(kgFrames.nodeId, nodeId)).orderBy(asc(kgFrames.column), asc(kgFrames.createdAt), asc(kgFrames.id)).limit(limit).all().map(toGraphFrame);
  return { frames, total: handle.db.select({ n: count() }).from(kgFrames).where(eq(kgFrames.nodeId, nodeId)).get()!.n };
}
