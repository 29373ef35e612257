import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import type { KgRelationRow } from "../db/schema/graph";
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

export const RELATION_COLUMNS = `r.id, r.from_id as fromId, r.to_id as toId, r.relationship_type as relationshipType, r.bidirectional, r.weight, r.confidence,
  r.temporal_start as temporalStart, r.temporal_end as temporalEnd, r.attributes, r.created_at as createdAt, r.updated_at as updatedAt, r.created_by as createdBy`;

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

function selectRelationRow(handle: StoreHandle, id: string): KgRelationRow | undefined {
  return handle.sqlite.prepare(`select ${RELATION_COLUMNS} from kg_relation r where r.id = ?`).get(id) as KgRelationRow | undefined;
}

export function getRelationById({ handle, id }: { handle: StoreHandle; id: string }): GraphRelation {
  const row = selectRelationRow(handle, id);
  if (!row) throw notFound("relation", id);
  return toGraphRelation(row);
}

const minDefined = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
const maxDefined = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));

/**
 * Create a relation, or merge it into the one that already links the same
 * nodes with the same type (either direction when either is bidirectional).
 * Merge rule: weight and confidence take the larger value, bidirectional is
 * OR-ed, the time range widens to cover both, attributes merge (new keys
 * win). Self-loops are refused (422).
 */
export function createOrMergeRelation({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof createRelationInputSchema>; actor: string }): { relation: GraphRelation; merged: boolean } {
  const r = createRelationInputSchema.parse(input);
  if (r.from_id === r.to_id) throw new AppError("unprocessable", "a relation cannot link a node to itself", [{ path: "to_id", message: "self-loop" }]);
  const { sqlite } = handle;
  const now = Date.now();
  return sqlite
    .transaction(() => {
      requireNodeRow(handle, r.from_id);
      requireNodeRow(handle, r.to_id);
      const existing = sqlite
        .prepare(
          `select ${RELATION_COLUMNS} from kg_relation r where r.relationship_type = @type and
             ((r.from_id = @from and r.to_id = @to) or (r.from_id = @to and r.to_id = @from and (r.bidirectional = 1 or @bidirectional = 1)))
           order by r.created_at limit 1`,
        )
        .get({ type: r.relationship_type, from: r.from_id, to: r.to_id, bidirectional: r.bidirectional ? 1 : 0 }) as KgRelationRow | undefined;
      if (existing) {
        const attributes = { ...parseJsonColumnOr<Record<string, unknown>>(existing.attributes, {}), ...(r.attributes ?? {}) };
        sqlite
          .prepare("update kg_relation set weight = ?, confidence = ?, bidirectional = ?, temporal_start = ?, temporal_end = ?, attributes = ?, updated_at = ? where id = ?")
          .run(
            Math.max(existing.weight, r.weight),
            Math.max(existing.confidence, r.confidence),
            existing.bidirectional || r.bidirectional ? 1 : 0,
            minDefined(existing.temporalStart, r.temporal_start ?? null),
            maxDefined(existing.temporalEnd, r.temporal_end ?? null),
            JSON.stringify(attributes),
            now,
            existing.id,
          );
        return { relation: getRelationById({ handle, id: existing.id }), merged: true };
      }
      const id = randomUUID();
      sqlite
        .prepare(
          `insert into kg_relation(id, from_id, to_id, relationship_type, bidirectional, weight, confidence, temporal_start, temporal_end, attributes, created_at, updated_at, created_by)
           values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(id, r.from_id, r.to_id, r.relationship_type, r.bidirectional ? 1 : 0, r.weight, r.confidence, r.temporal_start ?? null, r.temporal_end ?? null, JSON.stringify(r.attributes ?? {}), now, now, actor);
      return { relation: getRelationById({ handle, id }), merged: false };
    })
    .immediate();
}

export function updateRelation({ handle, id, input }: { handle: StoreHandle; id: string; input: z.input<typeof updateRelationInputSchema> }): GraphRelation {
  const u = updateRelationInputSchema.parse(input);
  return handle.sqlite
    .transaction(() => {
      const row = selectRelationRow(handle, id);
      if (!row) throw notFound("relation", id);
      const start = u.temporal_start === undefined ? row.temporalStart : u.temporal_start;
      const end = u.temporal_end === undefined ? row.temporalEnd : u.temporal_end;
      if (start !== null && end !== null && start > end) throw new AppError("invalid_request", "temporal_start must not be after temporal_end", [{ path: "temporal_end", message: "before temporal_start" }]);
      handle.sqlite
        .prepare("update kg_relation set weight = ?, confidence = ?, bidirectional = ?, temporal_start = ?, temporal_end = ?, attributes = ?, updated_at = ? where id = ?")
        .run(u.weight ?? row.weight, u.confidence ?? row.confidence, (u.bidirectional ?? Boolean(row.bidirectional)) ? 1 : 0, start, end, u.attributes ? JSON.stringify(u.attributes) : row.attributes, Date.now(), id);
      return getRelationById({ handle, id });
    })
    .immediate();
}

export function deleteRelation({ handle, id, actor }: { handle: StoreHandle; id: string; actor: string }): { deleted: string } {
  handle.sqlite
    .transaction(() => {
      const row = selectRelationRow(handle, id);
      if (!row) throw notFound("relation", id);
      handle.sqlite.prepare("delete from kg_relation where id = ?").run(id);
      appendAudit({ actor, action: "graph.relation.delete", target: `store:${handle.store}/relation:${id}`, details: { from: row.fromId, to: row.toId, type: row.relationshipType } });
    })
    .immediate();
  return { deleted: id };
}

export function listRelationsByNodeId({ handle, nodeId }: { handle: StoreHandle; nodeId: string }): { outgoing: GraphRelation[]; incoming: GraphRelation[] } {
  const out = handle.sqlite.prepare(`select ${RELATION_COLUMNS} from kg_relation r where r.from_id = ? order by r.weight desc, r.id`).all(nodeId) as KgRelationRow[];
  const inc = handle.sqlite.prepare(`select ${RELATION_COLUMNS} from kg_relation r where r.to_id = ? order by r.weight desc, r.id`).all(nodeId) as KgRelationRow[];
  return { outgoing: out.map(toGraphRelation), incoming: inc.map(toGraphRelation) };
}
