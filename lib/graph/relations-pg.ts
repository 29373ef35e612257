import { and, asc, count, desc, eq, or, sql } from "drizzle-orm";
import type { z } from "zod";
import { bytewise, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { kgRelations, type PgKgRelationRow } from "../db/schema/pg/store";
import { appendAuditPg } from "../governance/audit-pg";
import { notFound } from "../common";
import { requireNodeRowPg } from "./nodes-pg";
import {
  createRelationInputSchema,
  mergedRelationFields,
  newRelationRow,
  refuseSelfLoop,
  toGraphRelation,
  updatedRelationFields,
  updateRelationInputSchema,
  type GraphRelation,
  type NodeRelations,
} from "./relations";

/**
 * Relations on PostgreSQL (the SQLite twin is ./relations.ts, whose schemas,
 * merge rule and shaper this reuses). A create first takes a transaction
 * advisory lock on the unordered node pair and type, so two replicas
 * creating the same edge (or its reverse, when bidirectional) at once merge
 * into one relation instead of racing past each other's "exists?" read; the
 * unique (from, to, type) index is the backstop.
 */

async function selectRelationRowPg(tx: PgStoreTx, id: string, { lock = false }: { lock?: boolean } = {}): Promise<PgKgRelationRow | undefined> {
  const q = tx.select().from(kgRelations).where(eq(kgRelations.id, id));
  const [row] = lock ? await q.for("update") : await q;
  return row;
}

export async function getRelationByIdPg({ handle, id }: { handle: PgStoreHandle; id: string }): Promise<GraphRelation> {
  const row = await withStoreTx({ handle, readOnly: true }, (tx) => selectRelationRowPg(tx, id));
  if (!row) throw notFound("relation", id);
  return toGraphRelation(row);
}

/** Create a relation or merge it into the one that already links the same nodes with the same type (see ./relations.ts). */
export async function createOrMergeRelationPg({ handle, input, actor }: { handle: PgStoreHandle; input: z.input<typeof createRelationInputSchema>; actor: string }): Promise<{ relation: GraphRelation; merged: boolean }> {
  const r = createRelationInputSchema.parse(input);
  refuseSelfLoop(r);
  const now = Date.now();
  const [low, high] = [r.from_id, r.to_id].sort();
  return withStoreTx({ handle }, async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`dualmind:relation:${handle.schema}:${low}:${high}:${r.relationship_type}`}, 0))`);
    await requireNodeRowPg(tx, r.from_id, { lock: "share" });
    await requireNodeRowPg(tx, r.to_id, { lock: "share" });
    const sameDirection = and(eq(kgRelations.fromId, r.from_id), eq(kgRelations.toId, r.to_id));
    const reversed = and(eq(kgRelations.fromId, r.to_id), eq(kgRelations.toId, r.from_id));
    const [existing] = await tx
      .select()
      .from(kgRelations)
      .where(and(eq(kgRelations.relationshipType, r.relationship_type), or(sameDirection, r.bidirectional ? reversed : and(reversed, eq(kgRelations.bidirectional, true)))))
      .orderBy(asc(kgRelations.createdAt))
      .limit(1);
    if (existing) {
      const [merged] = await tx.update(kgRelations).set(mergedRelationFields({ existing, input: r, now })).where(eq(kgRelations.id, existing.id)).returning();
      return { relation: toGraphRelation(merged), merged: true };
    }
    const [created] = await tx.insert(kgRelations).values(newRelationRow({ input: r, actor, now })).returning();
    return { relation: toGraphRelation(created), merged: false };
  });
}

export async function updateRelationPg({ handle, id, input }: { handle: PgStoreHandle; id: string; input: z.input<typeof updateRelationInputSchema> }): Promise<GraphRelation> {
  const u = updateRelationInputSchema.parse(input);
  return withStoreTx({ handle }, async (tx) => {
    const row = await selectRelationRowPg(tx, id, { lock: true });
    if (!row) throw notFound("relation", id);
    const [updated] = await tx.update(kgRelations).set(updatedRelationFields({ row, input: u, now: Date.now() })).where(eq(kgRelations.id, id)).returning();
    return toGraphRelation(updated);
  });
}

/** Delete a relation; its evidence links go with it (FK cascade). Audited. */
export async function deleteRelationPg({ handle, id, actor }: { handle: PgStoreHandle; id: string; actor: string }): Promise<{ deleted: string }> {
  await withStoreTx({ handle }, async (tx) => {
    const [row] = await tx.delete(kgRelations).where(eq(kgRelations.id, id)).returning();
    if (!row) throw notFound("relation", id);
    await appendAuditPg({ db: tx, entry: { actor, action: "graph.relation.delete", target: `store:${handle.store}/relation:${id}`, details: { from: row.fromId, to: row.toId, type: row.relationshipType } } });
  });
  return { deleted: id };
}

/** A node's relations both ways, heaviest first (inside the caller's transaction). */
export async function listRelationsByNodeIdPg(tx: PgStoreTx, nodeId: string, limit: number): Promise<NodeRelations> {
  const byWeight = [desc(kgRelations.weight), bytewise(kgRelations.id)] as const;
  const side = async (at: typeof kgRelations.fromId | typeof kgRelations.toId) => ({
    rows: (await tx.select().from(kgRelations).where(eq(at, nodeId)).orderBy(...byWeight).limit(limit)).map(toGraphRelation),
    total: (await tx.select({ n: count() }).from(kgRelations).where(eq(at, nodeId)))[0].n,
  });
  const out = await side(kgRelations.fromId);
  const inc = await side(kgRelations.toId);
  return { outgoing: out.rows, incoming: inc.rows, outgoingTotal: out.total, incomingTotal: inc.total };
}
