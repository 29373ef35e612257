import { and, asc, count, eq, inArray, lte, sql } from "drizzle-orm";
import type { z } from "zod";
import { bytewise, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { kgFrameEvidence, kgFrames, kgRelationEvidence, kgRelations, thoughts } from "../db/schema/pg/store";
import { AppError } from "../errors";
import { appendAuditPg } from "../governance/audit-pg";
import { notFound } from "../common";
import { evidenceKeySchema, evidencePageOf, groupEvidenceHead, linkEvidenceInputSchema, listEvidenceQuerySchema, type EvidenceHead, type EvidenceLink, type EvidencePage, type EvidenceTarget } from "./evidence";

/**
 * Evidence links on PostgreSQL (the SQLite twin is ./evidence.ts, whose
 * schemas this reuses). A link locks its frame or relation and its thought
 * FOR SHARE while it is written, so a delete of either on another replica
 * waits and then cascades the link away, never leaving one behind.
 */

const TABLES = {
  frame: { links: kgFrameEvidence, parent: kgFrames },
  relation: { links: kgRelationEvidence, parent: kgRelations },
} as const;

async function targetExistsPg(tx: PgStoreTx, target: EvidenceTarget, id: string, { lock = false }: { lock?: boolean } = {}): Promise<boolean> {
  const { parent } = TABLES[target];
  const q = tx.select({ id: parent.id }).from(parent).where(eq(parent.id, id));
  return (lock ? await q.for("share") : await q).length > 0;
}

/** Link a thought as evidence for a frame or relation; linking again is idempotent and may change the stance (created: false). */
export async function linkEvidencePg({ handle, input, actor }: { handle: PgStoreHandle; input: z.input<typeof linkEvidenceInputSchema>; actor: string }): Promise<{ evidence: EvidenceLink; created: boolean }> {
  const e = linkEvidenceInputSchema.parse(input);
  const { links } = TABLES[e.target];
  return withStoreTx({ handle }, async (tx) => {
    if (!(await targetExistsPg(tx, e.target, e.target_id, { lock: true }))) throw notFound(e.target, e.target_id);
    if ((await tx.select({ id: thoughts.id }).from(thoughts).where(eq(thoughts.id, e.thought_id)).for("share")).length === 0) throw notFound("thought", e.thought_id);
    const [row] = await tx
      .insert(links)
      .values({ targetId: e.target_id, thoughtId: e.thought_id, stance: e.stance, createdAt: Date.now(), createdBy: actor })
      .onConflictDoUpdate({ target: [links.targetId, links.thoughtId], set: { stance: e.stance } })
      // xmax is 0 on a row this statement inserted, and set on one it updated.
      .returning({ targetId: links.targetId, thoughtId: links.thoughtId, stance: links.stance, createdAt: links.createdAt, createdBy: links.createdBy, inserted: sql<boolean>`xmax = 0` });
    return { evidence: { target: e.target, target_id: row.targetId, thought_id: row.thoughtId, stance: row.stance, created_at: row.createdAt, created_by: row.createdBy }, created: row.inserted };
  });
}

/** Remove a thought's evidence link from a frame or relation. Audited. */
export async function unlinkEvidencePg({ handle, input, actor }: { handle: PgStoreHandle; input: z.input<typeof evidenceKeySchema>; actor: string }): Promise<{ deleted: true }> {
  const k = evidenceKeySchema.parse(input);
  const { links } = TABLES[k.target];
  await withStoreTx({ handle }, async (tx) => {
    const gone = await tx
      .delete(links)
      .where(and(eq(links.targetId, k.target_id), eq(links.thoughtId, k.thought_id)))
      .returning({ thoughtId: links.thoughtId });
    if (gone.length === 0) throw new AppError("not_found", `thought ${k.thought_id} is not evidence for ${k.target} ${k.target_id}`);
    await appendAuditPg({ db: tx, entry: { actor, action: "graph.evidence.unlink", target: `store:${handle.store}/${k.target}:${k.target_id}`, details: { thought: k.thought_id } } });
  });
  return { deleted: true };
}

/** The evidence of one frame or relation, a page at a time (404 when it does not exist). */
export async function listEvidenceByTargetPg({ handle, query }: { handle: PgStoreHandle; query: z.input<typeof listEvidenceQuerySchema> }): Promise<EvidencePage> {
  const q = listEvidenceQuerySchema.parse(query);
  return withStoreTx({ handle, readOnly: true, snapshot: true }, async (tx) => {
    if (!(await targetExistsPg(tx, q.target, q.target_id))) throw notFound(q.target, q.target_id);
    const { links } = TABLES[q.target];
    const rows = await tx
      .select({ thoughtId: links.thoughtId, stance: links.stance, total: sql<number>`count(*) over ()` })
      .from(links)
      .where(eq(links.targetId, q.target_id))
      .orderBy(asc(links.createdAt), bytewise(links.thoughtId))
      .limit(q.limit)
      .offset(q.offset);
    const total = rows[0]?.total ?? (await tx.select({ n: count() }).from(links).where(eq(links.targetId, q.target_id)))[0].n;
    return evidencePageOf(rows, q, Number(total));
  });
}

/** The first `perTarget` links (oldest first) of each of many frames or relations, and how many each has (the SQLite twin: listEvidenceHeadByTargetIds). */
export async function listEvidenceHeadByTargetIdsPg(tx: PgStoreTx, target: EvidenceTarget, ids: string[], perTarget: number): Promise<EvidenceHead> {
  const { links } = TABLES[target];
  if (ids.length === 0) return { links: new Map(), totals: new Map() };
  const ranked = tx
    .select({
      targetId: links.targetId,
      thoughtId: links.thoughtId,
      stance: links.stance,
      rn: sql<number>`row_number() over (partition by ${links.targetId} order by ${links.createdAt}, ${bytewise(links.thoughtId)})`.as("rn"),
      total: sql<number>`count(*) over (partition by ${links.targetId})`.as("total"),
    })
    .from(links)
    .where(inArray(links.targetId, ids))
    .as("ranked");
  return groupEvidenceHead(await tx.select().from(ranked).where(lte(ranked.rn, perTarget)).orderBy(bytewise(ranked.targetId), asc(ranked.rn)));
}

