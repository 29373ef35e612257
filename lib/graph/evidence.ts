import { and, asc, eq, inArray, lte, sql } from "drizzle-orm";
import { z } from "zod";
import { count, insertOrIgnore, read, remove, row, select, update, write, type AnyStoreHandle, type On, type Op, type RowLock } from "../db/port";
import { EVIDENCE_STANCES } from "../db/schema/graph";
import { AppError } from "../errors";
import { limitSchema, notFound, offsetSchema, uuidSchema } from "../common";
import { pushTo } from "../collections";
import { audit } from "../index/engine-steps";
import { graphTables } from "./tables";

/**
 * Evidence links: a thought supporting or contradicting a frame or a
 * relation; one repository over both engines (lib/db/port.ts). A link locks
 * its frame or relation and its thought FOR SHARE on PostgreSQL while it is
 * written, so a delete of either on another replica waits and then cascades
 * the link away, never leaving one behind.
 */

export const EVIDENCE_TARGETS = ["frame", "relation"] as const;
export type EvidenceTarget = (typeof EVIDENCE_TARGETS)[number];

const TABLES = {
  frame: { links: graphTables.kgFrameEvidence, parent: graphTables.kgFrames },
  relation: { links: graphTables.kgRelationEvidence, parent: graphTables.kgRelations },
} as const;

/** Whether the frame or relation a link points at exists. */
function* targetExists(target: EvidenceTarget, id: string, { lock }: { lock?: RowLock } = {}): Op<boolean> {
  return (yield* row(TABLES[target].parent, (t) => eq(t.id, id), { lock })) !== undefined;
}

export const evidenceKeySchema = z.object({ target: z.enum(EVIDENCE_TARGETS), target_id: uuidSchema, thought_id: uuidSchema }).strict();
export const linkEvidenceInputSchema = evidenceKeySchema.extend({ stance: z.enum(EVIDENCE_STANCES).default("supports") }).strict();

export type EvidenceLink = { target: EvidenceTarget; target_id: string; thought_id: string; stance: (typeof EVIDENCE_STANCES)[number]; created_at: number; created_by: string };

/**
 * Link a thought as evidence for a frame or relation. Linking again is
 * idempotent and may change the stance (created: false).
 */
export function linkEvidence<H extends AnyStoreHandle>({ handle, input, actor }: { handle: H; input: z.input<typeof linkEvidenceInputSchema>; actor: string }): On<H, { evidence: EvidenceLink; created: boolean }> {
  const e = linkEvidenceInputSchema.parse(input);
  const { links } = TABLES[e.target];
  return write(handle, function* () {
    if (!(yield* targetExists(e.target, e.target_id, { lock: "share" }))) throw notFound({ what: e.target, id: e.target_id });
    if (!(yield* row(graphTables.thoughts, (t) => eq(t.id, e.thought_id), { lock: "share" }))) throw notFound({ what: "thought", id: e.thought_id });
    const inserted = yield* insertOrIgnore(links, { targetId: e.target_id, thoughtId: e.thought_id, stance: e.stance, createdAt: Date.now(), createdBy: actor }, (t) => [t.targetId, t.thoughtId]);
    const [written] = inserted ? [inserted] : yield* update(links, { stance: e.stance }, (t) => and(eq(t.targetId, e.target_id), eq(t.thoughtId, e.thought_id)));
    return { evidence: { target: e.target, target_id: written.targetId, thought_id: written.thoughtId, stance: written.stance, created_at: written.createdAt, created_by: written.createdBy }, created: inserted !== undefined };
  });
}

/** Remove a thought's evidence link from a frame or relation. Audited. */
export function unlinkEvidence<H extends AnyStoreHandle>({ handle, input, actor }: { handle: H; input: z.input<typeof evidenceKeySchema>; actor: string }): On<H, { deleted: true }> {
  const k = evidenceKeySchema.parse(input);
  const { links } = TABLES[k.target];
  return write(handle, function* () {
    const gone = yield* remove(links, (t) => and(eq(t.targetId, k.target_id), eq(t.thoughtId, k.thought_id)));
    if (gone.length === 0) throw new AppError("not_found", `thought ${k.thought_id} is not evidence for ${k.target} ${k.target_id}`);
    yield* audit({ actor, action: "graph.evidence.unlink", target: `store:${handle.store}/${k.target}:${k.target_id}`, details: { thought: k.thought_id } });
    return { deleted: true as const };
  });
}

export const listEvidenceQuerySchema = z.object({ target: z.enum(EVIDENCE_TARGETS), target_id: uuidSchema, limit: limitSchema, offset: offsetSchema }).strict();

/** A page of one frame's or relation's evidence links (oldest first) and how many it has. */
export type EvidencePage = { evidence: EvidenceRef[]; total: number; has_more: boolean };

/** The evidence of one frame or relation, a page at a time (404 when it does not exist), read in one snapshot. */
export function listEvidenceByTarget<H extends AnyStoreHandle>({ handle, query }: { handle: H; query: z.input<typeof listEvidenceQuerySchema> }): On<H, EvidencePage> {
  const q = listEvidenceQuerySchema.parse(query);
  return read(handle, function* () {
    if (!(yield* targetExists(q.target, q.target_id))) throw notFound({ what: q.target, id: q.target_id });
    const page = yield* select({ links: TABLES[q.target].links }, (db, { links }, o) =>
      db
        .select({ thoughtId: links.thoughtId, stance: links.stance, total: sql<number>`count(*) over ()` })
        .from(links)
        .where(eq(links.targetId, q.target_id))
        .orderBy(asc(links.createdAt), o.bytewise(links.thoughtId))
        .limit(q.limit)
        .offset(q.offset),
    );
    const total = page[0]?.total ?? (yield* count(TABLES[q.target].links, (t) => eq(t.targetId, q.target_id)));
    return { evidence: page.map((r) => ({ thought_id: r.thoughtId, stance: r.stance })), total: Number(total), has_more: q.offset + page.length < Number(total) };
  }, { snapshot: true });
}

/**
 * The first `perTarget` links (oldest first) of each of many frames or
 * relations, and how many each has: a node's detail shows a bounded sample,
 * GET /evidence the rest.
 */
export function* listEvidenceHeadByTargetIds({ target, ids, perTarget }: { target: EvidenceTarget; ids: string[]; perTarget: number }): Op<EvidenceHead> {
  if (ids.length === 0) return { links: new Map(), totals: new Map() };
  const ranked = yield* select({ links: TABLES[target].links }, (db, { links }, o) => {
    const sub = db
      .select({
        targetId: links.targetId,
        thoughtId: links.thoughtId,
        stance: links.stance,
        rn: sql<number>`row_number() over (partition by ${links.targetId} order by ${links.createdAt}, ${o.bytewise(links.thoughtId)})`.as("rn"),
        total: sql<number>`count(*) over (partition by ${links.targetId})`.as("total"),
      })
      .from(links)
      .where(inArray(links.targetId, ids))
      .as("ranked");
    return db.select().from(sub).where(lte(sub.rn, perTarget)).orderBy(o.bytewise(sub.targetId), asc(sub.rn));
  });
  const links = new Map<string, EvidenceRef[]>();
  for (const r of ranked) pushTo(links, r.targetId, { thought_id: r.thoughtId, stance: r.stance });
  return { links, totals: new Map(ranked.map((r) => [r.targetId, Number(r.total)])) };
}

/** A sample of each target's evidence links and each target's count of them. */
export type EvidenceHead = { links: Map<string, EvidenceRef[]>; totals: Map<string, number> };

type EvidenceRef = { thought_id: string; stance: EvidenceLink["stance"] };

export type EvidenceUse = { target: EvidenceTarget; target_id: string; stance: EvidenceLink["stance"]; node_id: string; node_name: string; label: string };

/** What a thought is evidence for: frames and relations, each with the node to open. */
export function listEvidenceUsesByThoughtId<H extends AnyStoreHandle>({ handle, thoughtId }: { handle: H; thoughtId: string }): On<H, EvidenceUse[]> {
  return read(handle, function* () {
    const frames = yield* select(graphTables, (db, t) =>
      db
        .select({ targetId: t.kgFrames.id, stance: t.kgFrameEvidence.stance, nodeId: t.kgNodes.id, nodeName: t.kgNodes.displayName, column: t.kgFrames.column })
        .from(t.kgFrameEvidence)
        .innerJoin(t.kgFrames, eq(t.kgFrames.id, t.kgFrameEvidence.targetId))
        .innerJoin(t.kgNodes, eq(t.kgNodes.id, t.kgFrames.nodeId))
        .where(eq(t.kgFrameEvidence.thoughtId, thoughtId))
        .orderBy(asc(t.kgFrameEvidence.createdAt)),
    );
    const relations = yield* select(graphTables, (db, t, o) => {
      const toNode = o.alias(t.kgNodes, "to_node");
      return db
        .select({ targetId: t.kgRelations.id, stance: t.kgRelationEvidence.stance, nodeId: t.kgNodes.id, nodeName: t.kgNodes.displayName, type: t.kgRelations.relationshipType, toName: toNode.displayName })
        .from(t.kgRelationEvidence)
        .innerJoin(t.kgRelations, eq(t.kgRelations.id, t.kgRelationEvidence.targetId))
        .innerJoin(t.kgNodes, eq(t.kgNodes.id, t.kgRelations.fromId))
        .innerJoin(toNode, eq(toNode.id, t.kgRelations.toId))
        .where(eq(t.kgRelationEvidence.thoughtId, thoughtId))
        .orderBy(asc(t.kgRelationEvidence.createdAt));
    });
    return [
      ...frames.map((r) => ({ target: "frame" as const, target_id: r.targetId, stance: r.stance, node_id: r.nodeId, node_name: r.nodeName, label: `${r.column} frame` })),
      ...relations.map((r) => ({ target: "relation" as const, target_id: r.targetId, stance: r.stance, node_id: r.nodeId, node_name: r.nodeName, label: `${r.type} → ${r.toName}` })),
    ];
  });
}
