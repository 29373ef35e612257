import { randomUUID } from "node:crypto";
import { and, asc, eq } from "drizzle-orm";
import { z } from "zod";
import { count, insert, read, remove, row, rows, update, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import { FRAME_COLUMNS, type KgFrameRow } from "../db/schema/graph";
import { jsonObjectSchema, notFound, parseJsonColumnOr, snakeCased, uuidSchema, type SnakeCased } from "../common";
import { audit } from "../index/engine-steps";
import { assertRoomForRow } from "../index/row-room";
import { requireNode } from "./nodes";
import { graphTables } from "./tables";
import { itemsDeletedOp, supersedesSchema, visibleWhere } from "../index/item-state";
import { validFromSchema } from "../index/facts";
import { poisonFlags, type PoisonFlag } from "../poison";

/** A node's frames, one repository over both engines (lib/db/port.ts). */
const frames = graphTables.kgFrames;
const nodes = graphTables.kgNodes;

export const createFrameInputSchema = z
  .object({
    node_id: uuidSchema,
    column: z.enum(FRAME_COLUMNS),
    properties: jsonObjectSchema,
    supersedes: supersedesSchema,
    /** Governed memory (lib/index/facts.ts): a frame with the same node, column and property keys and other values supersedes this one. */
    exclusive: z.boolean().optional(),
    /** When what the frame states became true (epoch ms; default now). */
    valid_from: validFromSchema.optional(),
  })
  .strict();
export const updateFrameInputSchema = z.object({ properties: jsonObjectSchema }).strict();

/** A frame as returned: the row spelled snake_case, its properties decoded. */
export type GraphFrame = Omit<SnakeCased<KgFrameRow>, "properties"> & { properties: Record<string, unknown>; flags: PoisonFlag[] };

export function toGraphFrame(r: KgFrameRow): GraphFrame {
  const properties = parseJsonColumnOr<Record<string, unknown>>({ text: r.properties, fallback: {} });
  return { ...snakeCased(r), properties, flags: poisonFlags({ fields: { properties } }) };
}

export function getFrameById<H extends AnyStoreHandle>({ handle, id }: { handle: H; id: string }): On<H, GraphFrame> {
  return read(handle, function* () {
    const found = yield* row(frames, (t) => eq(t.id, id));
    if (!found) throw notFound({ what: "frame", id });
    return toGraphFrame(found);
  });
}

/** Add a frame to a node; the node's updated_at moves with it (recency of what is known). */
export function createFrame<H extends AnyStoreHandle>({ handle, input, actor }: { handle: H; input: z.input<typeof createFrameInputSchema>; actor: string }): On<H, GraphFrame> {
  const f = createFrameInputSchema.parse(input);
  const now = Date.now();
  return write(handle, function* () {
    // Locked: the node's updated_at is written below, and a delete on another replica waits for this frame.
    yield* requireNode(f.node_id, { lock: "update" });
    const values = { id: randomUUID(), nodeId: f.node_id, column: f.column, properties: JSON.stringify(f.properties), createdAt: now, updatedAt: now, createdBy: actor };
    yield* assertRoomForRow({ store: handle.store, table: "kg_frame", values: { id: values.id, node_id: values.nodeId, properties: values.properties, created_by: actor } });
    const created = yield* insert(frames, values);
    yield* update(nodes, { updatedAt: now }, (t) => eq(t.id, f.node_id));
    return toGraphFrame(created);
  });
}

export function updateFrame<H extends AnyStoreHandle>({ handle, id, input }: { handle: H; id: string; input: z.input<typeof updateFrameInputSchema> }): On<H, GraphFrame> {
  const u = updateFrameInputSchema.parse(input);
  const now = Date.now();
  return write(handle, function* () {
    const current = yield* row(frames, (t) => eq(t.id, id), { lock: "update" });
    if (!current) throw notFound({ what: "frame", id });
    const properties = JSON.stringify(u.properties);
    const counted = (p: string) => ({ id, node_id: current.nodeId, properties: p, created_by: current.createdBy });
    yield* assertRoomForRow({ store: handle.store, table: "kg_frame", values: counted(properties), replacing: counted(current.properties) });
    const [written] = yield* update(frames, { properties, updatedAt: now }, (t) => eq(t.id, id));
    yield* update(nodes, { updatedAt: now }, (t) => eq(t.id, written.nodeId));
    return toGraphFrame(written);
  });
}

/** Delete a frame; its evidence links (FK cascade), state and contradictions go with it. Audited. */
export function deleteFrame<H extends AnyStoreHandle>({ handle, id, actor }: { handle: H; id: string; actor: string }): On<H, { deleted: string }> {
  return write(handle, function* () {
    const [gone] = yield* remove(frames, (t) => eq(t.id, id));
    if (!gone) throw notFound({ what: "frame", id });
    yield* itemsDeletedOp({ kind: "frame", ids: [id] });
    yield* audit({ actor, action: "graph.frame.delete", target: `store:${handle.store}/frame:${id}`, details: { node: gone.nodeId, column: gone.column } });
    return { deleted: id };
  });
}

/** A node's first `limit` frames (by column, then age) and how many it has. */
export function* listFramesByNodeId({ nodeId, limit }: { nodeId: string; limit: number }): Op<{ frames: GraphFrame[]; total: number }> {
  // Active frames only: a retired, proposed or rejected one is not what is known about the node (item state).
  const page = yield* rows(frames, { where: (t) => and(eq(t.nodeId, nodeId), visibleWhere({ kind: "frame", id: t.id })), orderBy: (t, o) => [o.bytewise(t.column), asc(t.createdAt), o.bytewise(t.id)], limit });
  return { frames: page.map(toGraphFrame), total: yield* count(frames, (t) => and(eq(t.nodeId, nodeId), visibleWhere({ kind: "frame", id: t.id }))) };
}
