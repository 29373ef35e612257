import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { FRAME_COLUMNS, type KgFrameRow } from "../db/schema/graph";
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

export const FRAME_COLUMNS_SQL = `f.id, f.node_id as nodeId, f."column", f.properties, f.created_at as createdAt, f.updated_at as updatedAt, f.created_by as createdBy`;

export function toGraphFrame(r: KgFrameRow): GraphFrame {
  return { id: r.id, node_id: r.nodeId, column: r.column, properties: parseJsonColumnOr<Record<string, unknown>>(r.properties, {}), created_at: r.createdAt, updated_at: r.updatedAt, created_by: r.createdBy };
}

function selectFrameRow(handle: StoreHandle, id: string): KgFrameRow | undefined {
  return handle.sqlite.prepare(`select ${FRAME_COLUMNS_SQL} from kg_frame f where f.id = ?`).get(id) as KgFrameRow | undefined;
}

export function getFrameById({ handle, id }: { handle: StoreHandle; id: string }): GraphFrame {
  const row = selectFrameRow(handle, id);
  if (!row) throw notFound("frame", id);
  return toGraphFrame(row);
}

/** Add a frame to a node; the node's updated_at moves with it (recency of what is known). */
export function createFrame({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof createFrameInputSchema>; actor: string }): GraphFrame {
  const f = createFrameInputSchema.parse(input);
  const id = randomUUID();
  const now = Date.now();
  handle.sqlite
    .transaction(() => {
      requireNodeRow(handle, f.node_id);
      handle.sqlite.prepare(`insert into kg_frame(id, node_id, "column", properties, created_at, updated_at, created_by) values (?, ?, ?, ?, ?, ?, ?)`).run(id, f.node_id, f.column, JSON.stringify(f.properties), now, now, actor);
      handle.sqlite.prepare("update kg_node set updated_at = ? where id = ?").run(now, f.node_id);
    })
    .immediate();
  return getFrameById({ handle, id });
}

export function updateFrame({ handle, id, input }: { handle: StoreHandle; id: string; input: z.input<typeof updateFrameInputSchema> }): GraphFrame {
  const u = updateFrameInputSchema.parse(input);
  const now = Date.now();
  handle.sqlite
    .transaction(() => {
      const row = selectFrameRow(handle, id);
      if (!row) throw notFound("frame", id);
      handle.sqlite.prepare("update kg_frame set properties = ?, updated_at = ? where id = ?").run(JSON.stringify(u.properties), now, id);
      handle.sqlite.prepare("update kg_node set updated_at = ? where id = ?").run(now, row.nodeId);
    })
    .immediate();
  return getFrameById({ handle, id });
}

/** Delete a frame; its evidence links go with it (FK cascade). */
export function deleteFrame({ handle, id, actor }: { handle: StoreHandle; id: string; actor: string }): { deleted: string } {
  handle.sqlite
    .transaction(() => {
      const row = selectFrameRow(handle, id);
      if (!row) throw notFound("frame", id);
      handle.sqlite.prepare("delete from kg_frame where id = ?").run(id);
      appendAudit({ actor, action: "graph.frame.delete", target: `store:${handle.store}/frame:${id}`, details: { node: row.nodeId, column: row.column } });
    })
    .immediate();
  return { deleted: id };
}

export function listFramesByNodeId({ handle, nodeId }: { handle: StoreHandle; nodeId: string }): GraphFrame[] {
  return (handle.sqlite.prepare(`select ${FRAME_COLUMNS_SQL} from kg_frame f where f.node_id = ? order by f."column", f.created_at, f.id`).all(nodeId) as KgFrameRow[]).map(toGraphFrame);
}
