import { randomUUID } from "node:crypto";
import { and, asc, desc, eq, or } from "drizzle-orm";
import { z } from "zod";
import { count, insert, read, remove, row, rows, storeLock, update, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import type { KgRelationRow } from "../db/schema/graph";
import { AppError } from "../errors";
import { audit } from "../index/engine-steps";
import { assertRoomForRow } from "../index/row-room";
import { requireNode } from "./nodes";
import { graphTables } from "./tables";
import { JSON_OBJECT_MAX_BYTES, jsonObjectSchema, notFound, parseJsonColumnOr, snakeCased, unitInterval, uuidSchema, type SnakeCased } from "../common";
import { itemsDeletedOp, supersedesSchema, visibleWhere } from "../index/item-state";
import { validFromSchema } from "../index/facts";
import { poisonFlags, type PoisonFlag } from "../poison";

/** Relations between nodes, one repository over both engines (lib/db/port.ts). */
const relations = graphTables.kgRelations;

const relationTypeSchema = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .transform((s) => s.toLowerCase().replace(/\s+/g, "_"));

const temporalRange = <T extends { temporal_start?: number | null; temporal_end?: number | null }>(r: T) =>
  r.temporal_start == null || r.temporal_end == null || r.temporal_start <= r.temporal_end;

export const createRelationInputSchema = z
  .object({
    from_id: uuidSchema,
    to_id: uuidSchema,
    relationship_type: relationTypeSchema,
    bidirectional: z.boolean().default(false),
    weight: unitInterval.default(0.5),
    confidence: unitInterval.default(0.5),
    temporal_start: z.number().int().nullable().optional(),
    temporal_end: z.number().int().nullable().optional(),
    attributes: jsonObjectSchema.optional(),
    /** Governed memory: the relation this one replaces (retired, kept, linked). */
    supersedes: supersedesSchema,
    /** Governed memory (lib/index/facts.ts): the type holds one target per source, so a new target supersedes the old. */
    exclusive: z.boolean().optional(),
    /** When the relation became true (epoch ms; default temporal_start, else now). */
    valid_from: validFromSchema.optional(),
  })
  .strict()
  .refine(temporalRange, { message: "temporal_start must not be after temporal_end", path: ["temporal_end"] });

export const updateRelationInputSchema = z
  .object({
    weight: unitInterval.optional(),
    confidence: unitInterval.optional(),
    bidirectional: z.boolean().optional(),
    temporal_start: z.number().int().nullable().optional(),
    temporal_end: z.number().int().nullable().optional(),
    attributes: jsonObjectSchema.optional(),
  })
  .strict()
  .refine((o) => Object.keys(o).length > 0, "nothing to update");

/** A relation as returned: the row spelled snake_case, its attributes decoded. */
export type GraphRelation = Omit<SnakeCased<KgRelationRow>, "attributes"> & { attributes: Record<string, unknown>; flags: PoisonFlag[] };

export function toGraphRelation(r: KgRelationRow): GraphRelation {
  const attributes = parseJsonColumnOr<Record<string, unknown>>({ text: r.attributes, fallback: {} });
  return { ...snakeCased(r), bidirectional: Boolean(r.bidirectional), attributes, flags: poisonFlags({ fields: { relationship_type: r.relationshipType, attributes } }) };
}

export function getRelationById<H extends AnyStoreHandle>({ handle, id }: { handle: H; id: string }): On<H, GraphRelation> {
  return read(handle, requireRelation(id));
}

function* requireRelation(id: string): Op<GraphRelation> {
  const found = yield* row(relations, (t) => eq(t.id, id));
  if (!found) throw notFound({ what: "relation", id });
  return toGraphRelation(found);
}

/** The columns a relation counts toward its store's bytes. */
const countedRelation = (r: Pick<KgRelationRow, "id" | "fromId" | "toId" | "relationshipType" | "attributes" | "createdBy">) => ({
  id: r.id,
  from_id: r.fromId,
  to_id: r.toId,
  relationship_type: r.relationshipType,
  attributes: r.attributes,
  created_by: r.createdBy,
});

const minDefined = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
const maxDefined = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));

/**
 * Create a relation, or merge it into the one that already links the same
 * nodes with the same type (either direction when either is bidirectional).
 * Merge rule: weight and confidence take the larger value, bidirectional is
 * OR-ed, the time range widens to cover both, attributes merge (new keys
 * win). Self-loops are refused (422). On PostgreSQL a create first locks the
 * unordered node pair and type, so two replicas creating the same edge (or
 * its reverse, when bidirectional) at once merge into one relation instead
 * of racing past each other's "exists?" read; the unique (from, to, type)
 * index is the backstop.
 */
export function createOrMergeRelation<H extends AnyStoreHandle>({ handle, input, actor }: { handle: H; input: z.input<typeof createRelationInputSchema>; actor: string }): On<H, { relation: GraphRelation; merged: boolean }> {
  const r = createRelationInputSchema.parse(input);
  // A self-loop is refused (422) before anything is read.
  if (r.from_id === r.to_id) throw new AppError("unprocessable", "a relation cannot link a node to itself", [{ path: "to_id", message: "self-loop" }]);
  const now = Date.now();
  const [low, high] = [r.from_id, r.to_id].sort();
  return write(handle, function* () {
    yield* storeLock("relation", low, high, r.relationship_type);
    yield* requireNode(r.from_id, { lock: "share" });
    yield* requireNode(r.to_id, { lock: "share" });
    const [existing] = yield* rows(relations, {
      where: (t) => {
        const sameDirection = and(eq(t.fromId, r.from_id), eq(t.toId, r.to_id));
        const reversed = and(eq(t.fromId, r.to_id), eq(t.toId, r.from_id));
        return and(eq(t.relationshipType, r.relationship_type), or(sameDirection, r.bidirectional ? reversed : and(reversed, eq(t.bidirectional, true))));
      },
      orderBy: (t) => [asc(t.createdAt)],
      limit: 1,
    });
    if (existing) {
      const merging = {
        weight: Math.max(existing.weight, r.weight),
        confidence: Math.max(existing.confidence, r.confidence),
        bidirectional: Boolean(existing.bidirectional) || r.bidirectional,
        temporalStart: minDefined(existing.temporalStart, r.temporal_start ?? null),
        temporalEnd: maxDefined(existing.temporalEnd, r.temporal_end ?? null),
        attributes: JSON.stringify({ ...parseJsonColumnOr<Record<string, unknown>>({ text: existing.attributes, fallback: {} }), ...(r.attributes ?? {}) }),
        updatedAt: now,
      };
      // The merged attributes are held to what one write may carry, so merges cannot grow one relation without end.
      const mergedBytes = Buffer.byteLength(merging.attributes, "utf8");
      if (mergedBytes > JSON_OBJECT_MAX_BYTES) {
        throw new AppError("unprocessable", `relation ${existing.id} would hold ${mergedBytes} bytes of attributes after the merge, past the most of ${JSON_OBJECT_MAX_BYTES}: update it with fewer attributes (PATCH replaces them)`, [
          { path: "attributes", message: "merged attributes too large", limit: "JSON_OBJECT_MAX_BYTES" },
        ]);
      }
      yield* assertRoomForRow({ store: handle.store, table: "kg_relation", values: countedRelation({ ...existing, attributes: merging.attributes }), replacing: countedRelation(existing) });
      const [merged] = yield* update(relations, merging, (t) => eq(t.id, existing.id));
      return { relation: toGraphRelation(merged), merged: true };
    }
    const id = randomUUID();
    const attributes = JSON.stringify(r.attributes ?? {});
    yield* assertRoomForRow({ store: handle.store, table: "kg_relation", values: countedRelation({ id, fromId: r.from_id, toId: r.to_id, relationshipType: r.relationship_type, attributes, createdBy: actor }) });
    const created = yield* insert(relations, {
      id,
      fromId: r.from_id,
      toId: r.to_id,
      relationshipType: r.relationship_type,
      bidirectional: r.bidirectional,
      weight: r.weight,
      confidence: r.confidence,
      temporalStart: r.temporal_start ?? null,
      temporalEnd: r.temporal_end ?? null,
      attributes,
      createdAt: now,
      updatedAt: now,
      createdBy: actor,
    });
    return { relation: toGraphRelation(created), merged: false };
  });
}

export function updateRelation<H extends AnyStoreHandle>({ handle, id, input }: { handle: H; id: string; input: z.input<typeof updateRelationInputSchema> }): On<H, GraphRelation> {
  const u = updateRelationInputSchema.parse(input);
  return write(handle, function* () {
    const current = yield* row(relations, (t) => eq(t.id, id), { lock: "update" });
    if (!current) throw notFound({ what: "relation", id });
    const start = u.temporal_start === undefined ? current.temporalStart : u.temporal_start;
    const end = u.temporal_end === undefined ? current.temporalEnd : u.temporal_end;
    if (start !== null && end !== null && start > end) throw new AppError("invalid_request", "temporal_start must not be after temporal_end", [{ path: "temporal_end", message: "before temporal_start" }]);
    const fields = {
      weight: u.weight ?? current.weight,
      confidence: u.confidence ?? current.confidence,
      bidirectional: u.bidirectional ?? Boolean(current.bidirectional),
      temporalStart: start,
      temporalEnd: end,
      attributes: u.attributes ? JSON.stringify(u.attributes) : current.attributes,
      updatedAt: Date.now(),
    };
    yield* assertRoomForRow({ store: handle.store, table: "kg_relation", values: countedRelation({ ...current, attributes: fields.attributes }), replacing: countedRelation(current) });
    const [written] = yield* update(relations, fields, (t) => eq(t.id, id));
    return toGraphRelation(written);
  });
}

/** Delete a relation; its evidence links (FK cascade), state and contradictions go with it. Audited. */
export function deleteRelation<H extends AnyStoreHandle>({ handle, id, actor }: { handle: H; id: string; actor: string }): On<H, { deleted: string }> {
  return write(handle, function* () {
    const [gone] = yield* remove(relations, (t) => eq(t.id, id));
    if (!gone) throw notFound({ what: "relation", id });
    yield* itemsDeletedOp({ kind: "relation", ids: [id] });
    yield* audit({ actor, action: "graph.relation.delete", target: `store:${handle.store}/relation:${id}`, details: { from: gone.fromId, to: gone.toId, type: gone.relationshipType } });
    return { deleted: id };
  });
}

/** A node's relations each way: the `limit` heaviest (ties by id) and how many there are. */
export type NodeRelations = { outgoing: GraphRelation[]; incoming: GraphRelation[]; outgoingTotal: number; incomingTotal: number };

export function* listRelationsByNodeId({ nodeId, limit }: { nodeId: string; limit: number }): Op<NodeRelations> {
  // Active relations to active nodes only: a retired, proposed or rejected relation or neighbour is not what is known (item state).
  function* side(end: "fromId" | "toId") {
    const other = end === "fromId" ? "toId" : "fromId";
    const page = yield* rows(relations, { where: (t) => and(eq(t[end], nodeId), visibleWhere({ kind: "relation", id: t.id }), visibleWhere({ kind: "node", id: t[other] })), orderBy: (t, o) => [desc(t.weight), o.bytewise(t.id)], limit });
    return { rows: page.map(toGraphRelation), total: yield* count(relations, (t) => and(eq(t[end], nodeId), visibleWhere({ kind: "relation", id: t.id }), visibleWhere({ kind: "node", id: t[other] }))) };
  }
  const out = yield* side("fromId");
  const inc = yield* side("toId");
  return { outgoing: out.rows, incoming: inc.rows, outgoingTotal: out.total, incomingTotal: inc.total };
}
