import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { EVIDENCE_STANCES } from "../db/schema/graph";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { notFound, uuidSchema } from "../common";

export const EVIDENCE_TARGETS = ["frame", "relation"] as const;
export type EvidenceTarget = (typeof EVIDENCE_TARGETS)[number];

const TABLES = {
  frame: { table: "kg_frame_evidence", column: "frame_id", parent: "kg_frame" },
  relation: { table: "kg_relation_evidence", column: "relation_id", parent: "kg_relation" },
} as const;

export const evidenceKeySchema = z.object({ target: z.enum(EVIDENCE_TARGETS), target_id: uuidSchema, thought_id: uuidSchema }).strict();
export const linkEvidenceInputSchema = evidenceKeySchema.extend({ stance: z.enum(EVIDENCE_STANCES).default("supports") }).strict();

export type EvidenceLink = { target: EvidenceTarget; target_id: string; thought_id: string; stance: (typeof EVIDENCE_STANCES)[number]; created_at: number; created_by: string };

function selectLink(handle: StoreHandle, k: z.output<typeof evidenceKeySchema>): EvidenceLink | undefined {
  const t = TABLES[k.target];
  const row = handle.sqlite.prepare(`select thought_id as thoughtId, stance, created_at as createdAt, created_by as createdBy from ${t.table} where ${t.column} = ? and thought_id = ?`).get(k.target_id, k.thought_id) as
    | { thoughtId: string; stance: EvidenceLink["stance"]; createdAt: number; createdBy: string }
    | undefined;
  return row && { target: k.target, target_id: k.target_id, thought_id: row.thoughtId, stance: row.stance, created_at: row.createdAt, created_by: row.createdBy };
}

/**
 * Link a thought as evidence for a frame or relation. Linking again is
 * idempotent and may change the stance (created: false).
 */
export function linkEvidence({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof linkEvidenceInputSchema>; actor: string }): { evidence: EvidenceLink; created: boolean } {
  const e = linkEvidenceInputSchema.parse(input);
  const t = TABLES[e.target];
  const { sqlite } = handle;
  return sqlite
    .transaction(() => {
      if (!sqlite.prepare(`select 1 from ${t.parent} where id = ?`).get(e.target_id)) throw notFound(e.target, e.target_id);
      if (!sqlite.prepare("select 1 from thoughts where id = ?").get(e.thought_id)) throw notFound("thought", e.thought_id);
      const existing = selectLink(handle, e);
      if (existing) {
        sqlite.prepare(`update ${t.table} set stance = ? where ${t.column} = ? and thought_id = ?`).run(e.stance, e.target_id, e.thought_id);
        return { evidence: selectLink(handle, e)!, created: false };
      }
      sqlite.prepare(`insert into ${t.table}(${t.column}, thought_id, stance, created_at, created_by) values (?, ?, ?, ?, ?)`).run(e.target_id, e.thought_id, e.stance, Date.now(), actor);
      return { evidence: selectLink(handle, e)!, created: true };
    })
    .immediate();
}

export function unlinkEvidence({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof evidenceKeySchema>; actor: string }): { deleted: true } {
  const k = evidenceKeySchema.parse(input);
  const t = TABLES[k.target];
  handle.sqlite
    .transaction(() => {
      const changes = handle.sqlite.prepare(`delete from ${t.table} where ${t.column} = ? and thought_id = ?`).run(k.target_id, k.thought_id).changes;
      if (changes === 0) throw new AppError("not_found", `thought ${k.thought_id} is not evidence for ${k.target} ${k.target_id}`);
      appendAudit({ actor, action: "graph.evidence.unlink", target: `store:${handle.store}/${k.target}:${k.target_id}`, details: { thought: k.thought_id } });
    })
    .immediate();
  return { deleted: true };
}

export const listEvidenceQuerySchema = z.object({ target: z.enum(EVIDENCE_TARGETS), target_id: uuidSchema }).strict();

/** The evidence of one frame or relation (404 when it does not exist). */
export function listEvidenceByTarget({ handle, query }: { handle: StoreHandle; query: z.input<typeof listEvidenceQuerySchema> }): { evidence: { thought_id: string; stance: EvidenceLink["stance"] }[] } {
  const q = listEvidenceQuerySchema.parse(query);
  if (!handle.sqlite.prepare(`select 1 from ${TABLES[q.target].parent} where id = ?`).get(q.target_id)) throw notFound(q.target, q.target_id);
  return { evidence: listEvidenceByTargetIds({ handle, target: q.target, ids: [q.target_id] }).get(q.target_id) ?? [] };
}

/** Evidence links of many frames or relations at once: target id → links (oldest first). */
export function listEvidenceByTargetIds({ handle, target, ids }: { handle: StoreHandle; target: EvidenceTarget; ids: string[] }): Map<string, { thought_id: string; stance: EvidenceLink["stance"] }[]> {
  const t = TABLES[target];
  const out = new Map<string, { thought_id: string; stance: EvidenceLink["stance"] }[]>();
  if (ids.length === 0) return out;
  const rows = handle.sqlite
    .prepare(`select ${t.column} as targetId, thought_id as thoughtId, stance from ${t.table} where ${t.column} in (select value from json_each(?)) order by created_at, thought_id`)
    .all(JSON.stringify(ids)) as { targetId: string; thoughtId: string; stance: EvidenceLink["stance"] }[];
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
  const frames = handle.sqlite
    .prepare(
      `select 'frame' as target, f.id as targetId, e.stance, n.id as nodeId, n.display_name as nodeName, f."column" || ' frame' as label
       from kg_frame_evidence e join kg_frame f on f.id = e.frame_id join kg_node n on n.id = f.node_id where e.thought_id = ? order by e.created_at`,
    )
    .all(thoughtId) as { target: "frame"; targetId: string; stance: EvidenceLink["stance"]; nodeId: string; nodeName: string; label: string }[];
  const relations = handle.sqlite
    .prepare(
      `select 'relation' as target, r.id as targetId, e.stance, a.id as nodeId, a.display_name as nodeName, r.relationship_type || ' → ' || b.display_name as label
       from kg_relation_evidence e join kg_relation r on r.id = e.relation_id join kg_node a on a.id = r.from_id join kg_node b on b.id = r.to_id
       where e.thought_id = ? order by e.created_at`,
    )
    .all(thoughtId) as { target: "relation"; targetId: string; stance: EvidenceLink["stance"]; nodeId: string; nodeName: string; label: string }[];
  return [...frames, ...relations].map((r) => ({ target: r.target, target_id: r.targetId, stance: r.stance, node_id: r.nodeId, node_name: r.nodeName, label: r.label }));
}
