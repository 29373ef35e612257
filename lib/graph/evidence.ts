import { and, asc, count, eq, inArray, lte, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { EVIDENCE_STANCES, kgFrameEvidence, kgFrames, kgNodes, kgRelationEvidence, kgRelations, thoughts } from "../db/schema/graph";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { limitSchema, notFound, offsetSchema, uuidSchema } from "../common";

export const EVIDENCE_TARGETS = ["frame", "relation"] as const;
export type EvidenceTarget = (typeof EVIDENCE_TARGETS)[number];

const TABLES = {
  frame: { links: kgFrameEvidence, parent: kgFrames },
  relation: { links: kgRelationEvidence, parent: kgRelations },
} as const;

/** Whether the frame or relation a link points at exists. */
function targetExists({ handle, target, id }: { handle: StoreHandle; target: EvidenceTarget; id: string }): boolean {
  const { parent } = TABLES[target];
  return handle.db.select({ id: parent.id }).from(parent).where(eq(parent.id, id)).get() !== undefined;
}

export const evidenceKeySchema = z.object({ target: z.enum(EVIDENCE_TARGETS), target_id: uuidSchema, thought_id: uuidSchema }).strict();
export const linkEvidenceInputSchema = evidenceKeySchema.extend({ stance: z.enum(EVIDENCE_STANCES).default("supports") }).strict();

export type EvidenceLink = { target: EvidenceTarget; target_id: string; thought_id: string; stance: (typeof EVIDENCE_STANCES)[number]; created_at: number; created_by: string };

function selectLink({ handle, key }: { handle: StoreHandle; key: z.output<typeof evidenceKeySchema> }): EvidenceLink | undefined {
  const { links } = TABLES[key.target];
  const row = handle.db.select().from(links).where(and(eq(links.targetId, key.target_id), eq(links.thoughtId, key.thought_id))).get();
  return row && { target: key.target, target_id: row.targetId, thought_id: row.thoughtId, stance: row.stance, created_at: row.createdAt, created_by: row.createdBy };
}

/**
 * Link a thought as evidence for a frame or relation. Linking again is
 * idempotent and may change the stance (created: false).
 */
export function linkEvidence({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof linkEvidenceInputSchema>; actor: string }): { evidence: EvidenceLink; created: boolean } {
  const e = linkEvidenceInputSchema.parse(input);
  const { links } = TABLES[e.target];
  const { db } = handle;
  return handle.sqlite
    .transaction(() => {
      if (!targetExists({ handle, target: e.target, id: e.target_id })) throw notFound(e.target, e.target_id);
      if (!db.select({ id: thoughts.id }).from(thoughts).where(eq(thoughts.id, e.thought_id)).get()) throw notFound("thought", e.thought_id);
      const created = !selectLink({ handle, key: e });
      db.insert(links)
        .values({ targetId: e.target_id, thoughtId: e.thought_id, stance: e.stance, createdAt: Date.now(), createdBy: actor })
        .onConflictDoUpdate({ target: [links.targetId, links.thoughtId], set: { stance: e.stance } })
        .run();
      return { evidence: selectLink({ handle, key: e })!, created };
    })
    .immediate();
}

/** Remove a thought's evidence link from a frame or relation. Audited. */
export function unlinkEvidence({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof evidenceKeySchema>; actor: string }): { deleted: true } {
  const k = evidenceKeySchema.parse(input);
  const { links } = TABLES[k.target];
  handle.sqlite
    .transaction(() => {
      const changes = handle.db.delete(links).where(and(eq(links.targetId, k.target_id), eq(links.thoughtId, k.thought_id))).run().changes;
      if (changes === 0) throw new AppError("not_found", `thought ${k.thought_id} is not evidence for ${k.target} ${k.target_id}`);
      appendAudit({ actor, action: "graph.evidence.unlink", target: `store:${handle.store}/${k.target}:${k.target_id}`, details: { thought: k.thought_id } });
    })
    .immediate();
  return { deleted: true };
}

export const listEvidenceQuerySchema = z.object({ target: z.enum(EVIDENCE_TARGETS), target_id: uuidSchema, limit: limitSchema, offset: offsetSchema }).strict();

/** A page of one frame's or relation's evidence links (oldest first) and how many it has. */
export type EvidencePage = { evidence: EvidenceRef[]; total: number; has_more: boolean };

/** The page of links asked for, from the rows of offset … offset + limit (each with the target's total). */
export function evidencePageOf(rows: { thoughtId: string; stance: EvidenceLink["stance"]; total: number | string }[], q: { offset: number; limit: number }, total: number): EvidencePage {
  return { evidence: rows.map((r) => ({ thought_id: r.thoughtId, stance: r.stance })), total, has_more: q.offset + rows.length < total };
}

/** The evidence of one frame or relation, a page at a time (404 when it does not exist). */
export function listEvidenceByTarget({ handle, query }: { handle: StoreHandle; query: z.input<typeof listEvidenceQuerySchema> }): EvidencePage {
  const q = listEvidenceQuerySchema.parse(query);
  if (!targetExists({ handle, target: q.target, id: q.target_id })) throw notFound(q.target, q.target_id);
  const { links } = TABLES[q.target];
  const rows = handle.db
    .select({ thoughtId: links.thoughtId, stance: links.stance, total: sql<number>`count(*) over ()` })
    .from(links)
    .where(eq(links.targetId, q.target_id))
    .orderBy(asc(links.createdAt), asc(links.thoughtId))
    .limit(q.limit)
    .offset(q.offset)
    .all();
  const total = rows[0]?.total ?? handle.db.select({ n: count() }).from(links).where(eq(links.targetId, q.target_id)).get()!.n;
  return evidencePageOf(rows, q, Number(total));
}

/**
 * The first `perTarget` links (oldest first) of each of many frames or
 * relations, and how many each has: a node's detail shows a bounded sample,
 * GET /evidence the rest.
 */
export function listEvidenceHeadByTargetIds({ handle, target, ids, perTarget }: { handle: StoreHandle; target: EvidenceTarget; ids: string[]; perTarget: number }): EvidenceHead {
  const { links } = TABLES[target];
  if (ids.length === 0) return { links: new Map(), totals: new Map() };
  const ranked = handle.db
    .select({
      targetId: links.targetId,
      thoughtId: links.thoughtId,
      stance: links.stance,
      rn: sql<number>`row_number() over (partition by ${links.targetId} order by ${links.createdAt}, ${links.thoughtId})`.as("rn"),
      total: sql<number>`count(*) over (partition by ${links.targetId})`.as("total"),
    })
    .from(links)
    .where(inArray(links.targetId, ids))
    .as("ranked");
  return groupEvidenceHead(handle.db.select().from(ranked).where(lte(ranked.rn, perTarget)).orderBy(asc(ranked.targetId), asc(ranked.rn)).all());
}

/** A sample of each target's evidence links and each target's count of them (both dialects). */
export type EvidenceHead = { links: Map<string, EvidenceRef[]>; totals: Map<string, number> };

/** Ranked link rows (each with its target's total) as an EvidenceHead. */
export function groupEvidenceHead(rows: { targetId: string; thoughtId: string; stance: EvidenceLink["stance"]; total: number | string }[]): EvidenceHead {
  return { links: groupEvidenceByTarget(rows), totals: new Map(rows.map((r) => [r.targetId, Number(r.total)])) };
}

type EvidenceRef = { thought_id: string; stance: EvidenceLink["stance"] };

/** Link rows (in order) grouped by the frame or relation they support (both dialects). */
export function groupEvidenceByTarget(rows: { targetId: string; thoughtId: string; stance: EvidenceLink["stance"] }[]): Map<string, EvidenceRef[]> {
  const out = new Map<string, EvidenceRef[]>();
  for (const r of rows) {
    const list = out.get(r.targetId) ?? [];
    list.push({ thought_id: r.thoughtId, stance: r.stance });
    out.set(r.targetId, list);
  }
  return out;
}

export type EvidenceUse = { target: EvidenceTarget; target_id: string; stance: EvidenceLink["stance"]; node_id: string; node_name: string; label: string };

/** What a thought is evidence for: frames and relations, each with the node to open. */
export function listEvidenceUsesByThoughtId({ handle, thoughtId }: { handle: StoreHandle; thoughtId: string }): EvidenceUse[] {
  const frames = handle.db
    .select({ targetId: kgFrames.id, stance: kgFrameEvidence.stance, nodeId: kgNodes.id, nodeName: kgNodes.displayName, column: kgFrames.column })
    .from(kgFrameEvidence)
    .innerJoin(kgFrames, eq(kgFrames.id, kgFrameEvidence.targetId))
    .innerJoin(kgNodes, eq(kgNodes.id, kgFrames.nodeId))
    .where(eq(kgFrameEvidence.thoughtId, thoughtId))
    .orderBy(asc(kgFrameEvidence.createdAt))
    .all();
  const toNode = alias(kgNodes, "to_node");
  const relations = handle.db
    .select({ targetId: kgRelations.id, stance: kgRelationEvidence.stance, nodeId: kgNodes.id, nodeName: kgNodes.displayName, type: kgRelations.relationshipType, toName: toNode.displayName })
    .from(kgRelationEvidence)
    .innerJoin(kgRelations, eq(kgRelations.id, kgRelationEvidence.targetId))
    .innerJoin(kgNodes, eq(kgNodes.id, kgRelations.fromId))
    .innerJoin(toNode, eq(toNode.id, kgRelations.toId))
    .where(eq(kgRelationEvidence.thoughtId, thoughtId))
    .orderBy(asc(kgRelationEvidence.createdAt))
    .all();
  return [
    ...frames.map((r) => ({ target: "frame" as const, target_id: r.targetId, stance: r.stance, node_id: r.nodeId, node_name: r.nodeName, label: `${r.column} frame` })),
    ...relations.map((r) => ({ target: "relation" as const, target_id: r.targetId, stance: r.stance, node_id: r.nodeId, node_name: r.nodeName, label: `${r.type} → ${r.toName}` })),
  ];
}
