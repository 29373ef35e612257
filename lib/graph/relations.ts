import { randomUUID } from "node:crypto";
import { and, asc, count, desc, eq, or } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { kgRelations, type KgRelationRow } from "../db/schema/graph";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { requireNodeRow } from "./nodes";
import { jsonObjectSchema, notFound, parseJsonColumnOr, unitInterval, uuidSchema } from "../common";

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

export type GraphRelation = {
  id: string;
  from_id: string;
  to_id: string;
  relationship_type: string;
  bidirectional: boolean;
  weight: number;
  confidence: number;
  temporal_start: number | null;
  temporal_end: number | null;
  attributes: Record<string, unknown>;
  created_at: number;
  updated_at: number;
  created_by: string;
};

export function toGraphRelation(r: KgRelationRow): GraphRelation {
  return {
    id: r.id,
    from_id: r.fromId,
    to_id: r.toId,
    relationship_type: r.relationshipType,
    bidirectional: Boolean(r.bidirectional),
    weight: r.weight,
    confidence: r.confidence,
    temporal_start: r.temporalStart,
    temporal_end: r.temporalEnd,
    attributes: parseJsonColumnOr<Record<string, unknown>>(r.attributes, {}),
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    created_by: r.createdBy,
  };
}

function selectRelationRow({ handle, id }: { handle: StoreHandle; id: string }): KgRelationRow | undefined {
  return handle.db.select().from(kgRelations).where(eq(kgRelations.id, id)).get();
}

export function getRelationById({ handle, id }: { handle: StoreHandle; id: string }): GraphRelation {
  const row = selectRelationRow({ handle, id });
  if (!row) throw notFound("relation", id);
  return toGraphRelation(row);
}

const minDefined = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
const maxDefined = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));

type CreateRelation = z.output<typeof createRelationInputSchema>;

/** A new relation's row (both dialects). */
export function newRelationRow({ input: r, actor, now }: { input: CreateRelation; actor: string; now: number }): KgRelationRow {
  return {
    id: randomUUID(),
    fromId: r.from_id,
    toId: r.to_id,
    relationshipType: r.relationship_type,
    bidirectional: r.bidirectional,
    weight: r.weight,
    confidence: r.confidence,
    temporalStart: r.temporal_start ?? null,
    temporalEnd: r.temporal_end ?? null,
    attributes: JSON.stringify(r.attributes ?? {}),
    createdAt: now,
    updatedAt: now,
    createdBy: actor,
  };
}

/** The merge rule of createOrMergeRelation, as the columns to set on the existing relation (both dialects). */
export function mergedRelationFields({ existing, input: r, now }: { existing: KgRelationRow; input: CreateRelation; now: number }) {
  return {
    weight: Math.max(existing.weight, r.weight),
    confidence: Math.max(existing.confidence, r.confidence),
    bidirectional: Boolean(existing.bidirectional) || r.bidirectional,
    temporalStart: minDefined(existing.temporalStart, r.temporal_start ?? null),
    temporalEnd: maxDefined(existing.temporalEnd, r.temporal_end ?? null),
    attributes: JSON.stringify({ ...parseJsonColumnOr<Record<string, unknown>>(existing.attributes, {}), ...(r.attributes ?? {}) }),
    updatedAt: now,
  };
}

/** An update's columns to set (both dialects); a time range that would end before it starts is a 400. */
export function updatedRelationFields({ row, input: u, now }: { row: KgRelationRow; input: z.output<typeof updateRelationInputSchema>; now: number }) {
  const start = u.temporal_start === undefined ? row.temporalStart : u.temporal_start;
  const end = u.temporal_end === undefined ? row.temporalEnd : u.temporal_end;
  if (start !== null && end !== null && start > end) throw new AppError("invalid_request", "temporal_start must not be after temporal_end", [{ path: "temporal_end", message: "before temporal_start" }]);
  return {
    weight: u.weight ?? row.weight,
    confidence: u.confidence ?? row.confidence,
    bidirectional: u.bidirectional ?? Boolean(row.bidirectional),
    temporalStart: start,
    temporalEnd: end,
    attributes: u.attributes ? JSON.stringify(u.attributes) : row.attributes,
    updatedAt: now,
  };
}

/** A self-loop is refused (422) before anything is read. */
export function refuseSelfLoop(r: CreateRelation): void {
  if (r.from_id === r.to_id) throw new AppError("unprocessable", "a relation cannot link a node to itself", [{ path: "to_id", message: "self-loop" }]);
}

/**
 * Create a relation, or merge it into the one that already links the same
 * nodes with the same type (either direction when either is bidirectional).
 * Merge rule: weight and confidence take the larger value, bidirectional is
 * OR-ed, the time range widens to cover both, attributes merge (new keys
 * win). Self-loops are refused (422).
 */
export function createOrMergeRelation({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof createRelationInputSchema>; actor: string }): { relation: GraphRelation; merged: boolean } {
  const r = createRelationInputSchema.parse(input);
  refuseSelfLoop(r);
  const { db } = handle;
  const now = Date.now();
  return handle.sqlite
    .transaction(() => {
      requireNodeRow({ handle, id: r.from_id });
      requireNodeRow({ handle, id: r.to_id });
      const sameDirection = and(eq(kgRelations.fromId, r.from_id), eq(kgRelations.toId, r.to_id));
      const reversed = and(eq(kgRelations.fromId, r.to_id), eq(kgRelations.toId, r.from_id));
      const existing = db
        .select()
        .from(kgRelations)
        .where(and(eq(kgRelations.relationshipType, r.relationship_type), or(sameDirection, r.bidirectional ? reversed : and(reversed, eq(kgRelations.bidirectional, true)))))
        .orderBy(asc(kgRelations.createdAt))
        .limit(1)
        .get();
      if (existing) {
        const merged = db
          .update(kgRelations)
          .set(mergedRelationFields({ existing, input: r, now }))
          .where(eq(kgRelations.id, existing.id))
          .returning()
          .get();
        return { relation: toGraphRelation(merged), merged: true };
      }
      const created = db
        .insert(kgRelations)
        .values(newRelationRow({ input: r, actor, now }))
        .returning()
        .get();
      return { relation: toGraphRelation(created), merged: false };
    })
    .immediate();
}

export function updateRelation({ handle, id, input }: { handle: StoreHandle; id: string; input: z.input<typeof updateRelationInputSchema> }): GraphRelation {
  const u = updateRelationInputSchema.parse(input);
  return handle.sqlite
    .transaction(() => {
      const row = selectRelationRow({ handle, id });
      if (!row) throw notFound("relation", id);
      const updated = handle.db
        .update(kgRelations)
        .set(updatedRelationFields({ row, input: u, now: Date.now() }))
        .where(eq(kgRelations.id, id))
        .returning()
        .get();
      return toGraphRelation(updated);
    })
    .immediate();
}

/** Delete a relation; its evidence links go with it (FK cascade). Audited. */
export function deleteRelation({ handle, id, actor }: { handle: StoreHandle; id: string; actor: string }): { deleted: string } {
  handle.sqlite
    .transaction(() => {
      const row = handle.db.delete(kgRelations).where(eq(kgRelations.id, id)).returning().get();
      if (!row) throw notFound("relation", id);
      appendAudit({ actor, action: "graph.relation.delete", target: `store:${handle.store}/relation:${id}`, details: { from: row.fromId, to: row.toId, type: row.relationshipType } });
    })
    .immediate();
  return { deleted: id };
}

/** A node's relations each way: the `limit` heaviest (ties by id) and how many there are. */
export type NodeRelations = { outgoing: GraphRelation[]; incoming: GraphRelation[]; outgoingTotal: number; incomingTotal: number };

export function listRelationsByNodeId({ handle, nodeId, limit }: { handle: StoreHandle; nodeId: string; limit: number }): NodeRelations {
  const byWeight = [desc(kgRelations.weight), asc(kgRelations.id)] as const;
  const side = (at: typeof kgRelations.fromId | typeof kgRelations.toId) => ({
    rows: handle.db.select().from(kgRelations).where(eq(at, nodeId)).orderBy(...byWeight).limit(limit).all().map(toGraphRelation),
    total: handle.db.select({ n: count() }).from(kgRelations).where(eq(at, nodeId)).get()!.n,
  });
  const out = side(kgRelations.fromId);
  const inc = side(kgRelations.toId);
  return { outgoing: out.rows, incoming: inc.rows, outgoingTotal: out.total, incomingTotal: inc.total };
}
