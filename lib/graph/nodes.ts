import { randomUUID } from "node:crypto";
import { and, count, eq, inArray, or } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { ENTITY_TYPES, kgFrames, kgNodes, kgRelations, type KgNodeRow } from "../db/schema/graph";
import { runWithinBudget, startQueryBudget } from "../db/query-budget";
import type { Embeddable } from "../embed/embeddables";
import { enqueueEmbeddings } from "../embed/queue";
import { forgetEmbeddings } from "../embed/vector-index";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { jsonObjectSchema, limitSchema, normalizeTags, notFound, offsetSchema, parseJsonColumnOr, sha256Hex, tagsSchema } from "../common";
import { buildFtsMatch } from "../retrieval";

export const NODE_KIND = "node";

/** What a node's vector is made of: its name, type and labels. */
export function nodeEmbeddingText(n: { displayName: string; entityType: string; tags: string[] }): string {
  return [`${n.displayName} (${n.entityType})`, n.tags.length ? `tags: ${n.tags.join(", ")}` : ""].filter(Boolean).join("\n");
}

export const nodeEmbeddable: Embeddable = {
  kind: NODE_KIND,
  artifactType: NODE_KIND,
  load({ handle, refIds }) {
    const rows = handle.db
      .select({ seq: kgNodes.seq, displayName: kgNodes.displayName, entityType: kgNodes.entityType, tags: kgNodes.tags, embedHash: kgNodes.embedHash })
      .from(kgNodes)
      .where(inArray(kgNodes.seq, refIds))
      .all();
    return new Map(rows.map((r) => [r.seq, { text: nodeEmbeddingText({ ...r, tags: parseJsonColumnOr<string[]>(r.tags, []) }), inputHash: r.embedHash }]));
  },
  listAll({ handle }) {
    return handle.db.select({ refId: kgNodes.seq, inputHash: kgNodes.embedHash }).from(kgNodes).all();
  },
};

/** Canonical node key: the same entity written "Nginx " and "nginx" is one node. */
export function canonicalNodeName(name: string): string {
  return name.trim().replace(/\s+/g, " ").toLowerCase();
}

const nameSchema = z.string().trim().min(1).max(200);

export const createNodeInputSchema = z
  .object({
    name: nameSchema,
    display_name: nameSchema.optional(),
    entity_type: z.enum(ENTITY_TYPES),
    scope: z.string().trim().min(1).max(200).optional(),
    attributes: jsonObjectSchema.optional(),
    tags: tagsSchema.optional(),
    auto_extracted: z.boolean().default(false),
  })
  .strict();

export const updateNodeInputSchema = z
  .object({ display_name: nameSchema.optional(), scope: z.string().trim().min(1).max(200).nullable().optional(), attributes: jsonObjectSchema.optional(), tags: tagsSchema.optional() })
  .strict()
  .refine((o) => Object.keys(o).length > 0, "nothing to update");

export const listNodesQuerySchema = z
  .object({ q: z.string().trim().min(1).max(500).optional(), entity_type: z.enum(ENTITY_TYPES).optional(), limit: limitSchema, offset: offsetSchema })
  .strict();

export type GraphNode = {
  id: string;
  name: string;
  display_name: string;
  entity_type: KgNodeRow["entityType"];
  scope: string | null;
  created_at: number;
  updated_at: number;
  created_by: string;
  attributes: Record<string, unknown>;
  tags: string[];
  auto_extracted: boolean;
};

export const NODE_COLUMNS = `n.seq, n.id, n.name, n.display_name as displayName, n.entity_type as entityType, n.scope, n.created_at as createdAt, n.updated_at as updatedAt,
  n.created_by as createdBy, n.attributes, n.tags, n.embed_hash as embedHash, n.auto_extracted as autoExtracted`;

export function toGraphNode(r: KgNodeRow): GraphNode {
  return {
    id: r.id,
    name: r.name,
    display_name: r.displayName,
    entity_type: r.entityType,
    scope: r.scope,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    created_by: r.createdBy,
    attributes: parseJsonColumnOr<Record<string, unknown>>(r.attributes, {}),
    tags: parseJsonColumnOr<string[]>(r.tags, []),
    auto_extracted: Boolean(r.autoExtracted),
  };
}

function selectNodeRow({ handle, id }: { handle: StoreHandle; id: string }): KgNodeRow | undefined {
  return handle.db.select().from(kgNodes).where(eq(kgNodes.id, id)).get();
}

/** A node's row, or a 404 naming it. */
export function requireNodeRow({ handle, id }: { handle: StoreHandle; id: string }): KgNodeRow {
  const row = selectNodeRow({ handle, id });
  if (!row) throw notFound("node", id);
  return row;
}

/** A new node's row without its seq (both dialects): the canonical name, the display name as written, the hash of its embedding text. */
export function newNodeRow({ input: n, actor, now }: { input: z.output<typeof createNodeInputSchema>; actor: string; now: number }): Omit<KgNodeRow, "seq"> {
  const displayName = n.display_name ?? n.name.trim();
  const tags = normalizeTags(n.tags);
  return {
    id: randomUUID(),
    name: canonicalNodeName(n.name),
    displayName,
    entityType: n.entity_type,
    scope: n.scope ?? null,
    createdAt: now,
    updatedAt: now,
    createdBy: actor,
    attributes: JSON.stringify(n.attributes ?? {}),
    tags: JSON.stringify(tags),
    embedHash: sha256Hex(nodeEmbeddingText({ displayName, entityType: n.entity_type, tags })),
    autoExtracted: n.auto_extracted,
  };
}

/** The 409 of a node that exists by canonical name and type (both dialects). */
export function nodeExists({ entityType, name, id }: { entityType: string; name: string; id: string | undefined }): AppError {
  return new AppError("conflict", `a ${entityType} node named '${name}' already exists`, [{ message: "existing node", id }]);
}

/** An update's columns to set (both dialects): the embed hash follows the display name and tags. */
export function updatedNodeFields({ row, input: u, now }: { row: KgNodeRow; input: z.output<typeof updateNodeInputSchema>; now: number }) {
  const displayName = u.display_name ?? row.displayName;
  const tags = u.tags ? normalizeTags(u.tags) : parseJsonColumnOr<string[]>(row.tags, []);
  return {
    displayName,
    scope: u.scope === undefined ? row.scope : u.scope,
    attributes: u.attributes ? JSON.stringify(u.attributes) : row.attributes,
    tags: JSON.stringify(tags),
    embedHash: sha256Hex(nodeEmbeddingText({ displayName, entityType: row.entityType, tags })),
    updatedAt: now,
  };
}

/** Create a node; an existing node with the same canonical name and type is a 409 naming it. */
export function createNode({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof createNodeInputSchema>; actor: string }): GraphNode {
  const n = createNodeInputSchema.parse(input);
  const { db } = handle;
  const values = newNodeRow({ input: n, actor, now: Date.now() });
  const row = handle.sqlite
    .transaction(() => {
      const existing = db.select({ id: kgNodes.id }).from(kgNodes).where(and(eq(kgNodes.name, values.name), eq(kgNodes.entityType, n.entity_type))).get();
      if (existing) throw nodeExists({ entityType: n.entity_type, name: values.name, id: existing.id });
      const created = db.insert(kgNodes).values(values).returning().get();
      enqueueEmbeddings({ handle, items: [{ kind: NODE_KIND, refId: created.seq, inputHash: values.embedHash }] });
      return created;
    })
    .immediate();
  return toGraphNode(row);
}

/** Update a node; its vector is re-queued only when the embedded text changed. */
export function updateNode({ handle, id, input }: { handle: StoreHandle; id: string; input: z.input<typeof updateNodeInputSchema> }): GraphNode {
  const u = updateNodeInputSchema.parse(input);
  const updated = handle.sqlite
    .transaction(() => {
      const row = requireNodeRow({ handle, id });
      const fields = updatedNodeFields({ row, input: u, now: Date.now() });
      const next = handle.db.update(kgNodes).set(fields).where(eq(kgNodes.seq, row.seq)).returning().get();
      if (fields.embedHash !== row.embedHash) enqueueEmbeddings({ handle, items: [{ kind: NODE_KIND, refId: row.seq, inputHash: fields.embedHash }] });
      return next;
    })
    .immediate();
  return toGraphNode(updated);
}

/** Delete a node: its frames, relations and their evidence links go with it (FK cascades). Audited. */
export function deleteNode({ handle, id, actor }: { handle: StoreHandle; id: string; actor: string }): { deleted: string; frames: number; relations: number } {
  const { db } = handle;
  return handle.sqlite
    .transaction(() => {
      const row = requireNodeRow({ handle, id });
      const { frames } = db.select({ frames: count() }).from(kgFrames).where(eq(kgFrames.nodeId, id)).get()!;
      const { relations } = db
        .select({ relations: count() })
        .from(kgRelations)
        .where(or(eq(kgRelations.fromId, id), eq(kgRelations.toId, id)))
        .get()!;
      db.delete(kgNodes).where(eq(kgNodes.seq, row.seq)).run();
      forgetEmbeddings({ handle, items: [{ kind: NODE_KIND, refId: row.seq }] });
      appendAudit({ actor, action: "graph.node.delete", target: `store:${handle.store}/node:${id}`, details: { name: row.name, frames, relations } });
      return { deleted: id, frames, relations };
    })
    .immediate();
}

type CountRow = { n: number };

/** Nodes by type and/or text; the text search is FTS5 ranked by bm25, so this one query stays SQL (rows typed as KgNodeRow). */
export function listNodesByFilter({ handle, filter }: { handle: StoreHandle; filter: z.input<typeof listNodesQuerySchema> }): { nodes: GraphNode[]; total: number } {
  const f = listNodesQuerySchema.parse(filter);
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.entity_type) {
    where.push("n.entity_type = ?");
    args.push(f.entity_type);
  }
  let order = "n.updated_at desc, n.seq desc";
  let from = "kg_node n";
  if (f.q) {
    const match = listingMatch(f.q);
    if (!match) return { nodes: [], total: 0 };
    from = "kg_node_fts f join kg_node n on n.seq = f.rowid";
    where.unshift("kg_node_fts match ?");
    args.unshift(match);
    order = "bm25(kg_node_fts), n.seq";
  }
  const clause = where.length ? `where ${where.join(" and ")}` : "";
  const page = handle.sqlite.prepare(`select ${NODE_COLUMNS} from ${from} ${clause} order by ${order} limit ? offset ?`);
  const total = handle.sqlite.prepare(`select count(*) as n from ${from} ${clause}`);
  // A text filter (`q`) or a deep offset is the caller's to make expensive: both statements share one query budget.
  const budget = startQueryBudget({ hint: "use fewer or rarer words in q, a smaller offset, or filter by entity_type" });
  const rows = runWithinBudget(handle.sqlite, budget, () => page.all(...args, f.limit, f.offset) as KgNodeRow[]);
  const { n } = runWithinBudget(handle.sqlite, budget, () => total.get(...args) as CountRow);
  return { nodes: rows.map(toGraphNode), total: n };
}

/** A listing's `q` filter: any of its words (quoted by the one match builder), stopwords kept, as typed. */
function listingMatch(q: string): string | null {
  return buildFtsMatch(q, { match: "any", stopwords: "keep", maxTerms: 16 });
}
