import { pageWithinBudget } from "../governance/limits";
import { randomUUID } from "node:crypto";
import { and, count as countAll, desc, eq, or, sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import type { PgStoreTx } from "../db/pg-store";
import { count, engineStep, inCallerTx, insertOrIgnore, read, remove, row, sqlRows, update, write, type AnyStoreHandle, type On, type Op, type RowLock } from "../db/port";
import { runWithinBudget, runWithinBudgetPg, startQueryBudget } from "../db/query-budget";
import { ENTITY_TYPES, kgNodes, type KgNodeRow } from "../db/schema/graph";
import * as pgGraph from "../db/schema/pg/graph";
import type { Embeddable } from "../embed/embeddables";
import { AppError } from "../errors";
import { missingVectorsSql, type PgEmbeddable } from "../index/embed-kinds-pg";
import { tsqueryFor } from "../index/search-pg";
import { jsonObjectSchema, limitSchema, normalizeTags, notFound, offsetSchema, parseJsonColumnOr, sha256Hex, snakeCased, tagsSchema, type SnakeCased } from "../common";
import { buildFtsMatch, matchTerms } from "../retrieval";
import { audit, forgetVectors } from "../index/engine-steps";
import { enqueueEmbeddingsOp } from "../embed/queue";
import { assertRoomForRow } from "../index/row-room";
import { graphTables } from "./tables";
import { NODE_WORDS, rowWordsWritten } from "../index/engines/pg-words";
import { itemsDeletedOp, listViewQuerySchema, shownRowSql } from "../index/item-state";
import { poisonFlags, type PoisonFlag } from "../poison";

/**
 * Knowledge-graph nodes, one repository over both engines (lib/db/port.ts).
 * Two writers creating the same node meet the unique (name, entity_type)
 * index: one creates it, the other gets a 409 naming it. Updates and deletes
 * lock the node's row first (PostgreSQL; SQLite's write lock covers it). A
 * node is queued for its vector (its name, type and tags, nodeEmbeddingText)
 * in the transaction that creates it, and again by an update that changes
 * that text (its embed_hash).
 */
const nodes = graphTables.kgNodes;

export const NODE_KIND = "node";

/** What a node's vector is made of: its name, type and labels. */
export function nodeEmbeddingText(n: { displayName: string; entityType: string; tags: string[] }): string {
  return [`${n.displayName} (${n.entityType})`, n.tags.length ? `tags: ${n.tags.join(", ")}` : ""].filter(Boolean).join("\n");
}

/** The embed worker reads a node's embedding text by its seq, on either engine; embed_hash is the input hash. */
function* nodeTexts(refIds: number[]): Op<Map<number, { text: string; inputHash: string; chunkingVersion: null }>> {
  if (refIds.length === 0) return new Map();
  const found = yield* sqlRows<{ seq: number | string; displayName: string; entityType: string; tags: string; embedHash: string }>(
    sql`select seq, display_name as "displayName", entity_type as "entityType", tags, embed_hash as "embedHash" from kg_node where seq in ${refIds}`,
  );
  return new Map(found.map((r) => [Number(r.seq), { text: nodeEmbeddingText({ ...r, tags: parseJsonColumnOr<string[]>({ text: r.tags, fallback: [] }) }), inputHash: r.embedHash, chunkingVersion: null }]));
}

export const nodeEmbeddable: Embeddable = {
  kind: NODE_KIND,
  artifactType: NODE_KIND,
  load: ({ handle, refIds }) => inCallerTx(handle, nodeTexts(refIds)),
  listAll: ({ handle }) => handle.db.select({ refId: kgNodes.seq, inputHash: kgNodes.embedHash }).from(kgNodes).all(),
};

export const nodeEmbeddablePg: PgEmbeddable = {
  kind: NODE_KIND,
  artifactType: NODE_KIND,
  // The worker's transaction: nodeTexts only runs statements on it (sqlRows).
  load: ({ tx, refIds }) => inCallerTx(tx as PgStoreTx, nodeTexts(refIds)),
  missingVectors: (fingerprintId) => missingVectorsSql({ kind: NODE_KIND, table: "kg_node", idColumn: "seq", hashColumn: "embed_hash", fingerprintId }),
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
  .object({ q: z.string().trim().min(1).max(500).optional(), entity_type: z.enum(ENTITY_TYPES).optional(), ...listViewQuerySchema, limit: limitSchema, offset: offsetSchema })
  .strict();

/** A node as returned: the row spelled snake_case (its seq and embed hash stay inside), attributes and tags decoded. */
export type GraphNode = Omit<SnakeCased<KgNodeRow>, "seq" | "embed_hash" | "attributes" | "tags"> & { attributes: Record<string, unknown>; tags: string[]; flags: PoisonFlag[] };

const NODE_COLUMNS = `n.seq, n.id, n.name, n.display_name as displayName, n.entity_type as entityType, n.scope, n.created_at as createdAt, n.updated_at as updatedAt,
  n.created_by as createdBy, n.attributes, n.tags, n.embed_hash as embedHash, n.auto_extracted as autoExtracted`;

export function toGraphNode({ seq: _seq, embedHash: _hash, ...r }: KgNodeRow): GraphNode {
  const attributes = parseJsonColumnOr<Record<string, unknown>>({ text: r.attributes, fallback: {} });
  const tags = parseJsonColumnOr<string[]>({ text: r.tags, fallback: [] });
  return {
    ...snakeCased(r),
    attributes,
    tags,
    auto_extracted: Boolean(r.autoExtracted),
    flags: poisonFlags({ fields: { name: r.name, display_name: r.displayName, scope: r.scope, attributes, tags } }),
  };
}

/**
 * A node's row, or a 404 naming it. Locked on PostgreSQL when asked: "update"
 * to change or delete it, "share" to link to it (a delete on another replica
 * waits for the link's transaction, whose node is then still there).
 */
export function* requireNode(id: string, { lock }: { lock?: RowLock } = {}): Op<KgNodeRow> {
  const found = yield* row(graphTables.kgNodes, (t) => eq(t.id, id), { lock });
  if (!found) throw notFound({ what: "node", id });
  return found;
}

/** A new node's row without its seq: the canonical name, the display name as written, the hash of its embedding text. */
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

/** Create a node; an existing node with the same canonical name and type is a 409 naming it. */
export function createNode<H extends AnyStoreHandle>({ handle, input, actor }: { handle: H; input: z.input<typeof createNodeInputSchema>; actor: string }): On<H, GraphNode> {
  const n = createNodeInputSchema.parse(input);
  const values = newNodeRow({ input: n, actor, now: Date.now() });
  return write(handle, function* () {
    yield* assertRoomForRow({ store: handle.store, table: "kg_node", values: { id: values.id, name: values.name, display_name: values.displayName, scope: values.scope, attributes: values.attributes, tags: values.tags, created_by: actor } });
    // On PostgreSQL another replica's create of the same node is waited for by the unique index, then found here.
    const created = yield* insertOrIgnore(nodes, values, (t) => [t.name, t.entityType]);
    if (!created) {
      const existing = yield* row(nodes, (t) => and(eq(t.name, values.name), eq(t.entityType, n.entity_type)));
      throw new AppError("conflict", `a ${n.entity_type} node named '${values.name}' already exists`, [{ message: "existing node", id: existing?.id }]);
    }
    yield* rowWordsWritten({ table: NODE_WORDS, ids: [created.seq] });
    yield* enqueueEmbeddingsOp({ items: [{ kind: NODE_KIND, refId: created.seq, inputHash: created.embedHash }] });
    return toGraphNode(created);
  });
}

/** Update a node; its vector is re-queued only when the embedded text changed. */
export function updateNode<H extends AnyStoreHandle>({ handle, id, input }: { handle: H; id: string; input: z.input<typeof updateNodeInputSchema> }): On<H, GraphNode> {
  const u = updateNodeInputSchema.parse(input);
  return write(handle, function* () {
    const current = yield* requireNode(id, { lock: "update" });
    // The embed hash follows the display name and tags.
    const displayName = u.display_name ?? current.displayName;
    const tags = u.tags ? normalizeTags(u.tags) : parseJsonColumnOr<string[]>({ text: current.tags, fallback: [] });
    const fields = {
      displayName,
      scope: u.scope === undefined ? current.scope : u.scope,
      attributes: u.attributes ? JSON.stringify(u.attributes) : current.attributes,
      tags: JSON.stringify(tags),
      embedHash: sha256Hex(nodeEmbeddingText({ displayName, entityType: current.entityType, tags })),
      updatedAt: Date.now(),
    };
    const counted = (r: Pick<KgNodeRow, "displayName" | "scope" | "attributes" | "tags">) => ({ id: current.id, name: current.name, display_name: r.displayName, scope: r.scope, attributes: r.attributes, tags: r.tags, created_by: current.createdBy });
    yield* assertRoomForRow({ store: handle.store, table: "kg_node", values: counted(fields), replacing: counted(current) });
    const [next] = yield* update(nodes, fields, (t) => eq(t.seq, current.seq));
    yield* rowWordsWritten({ table: NODE_WORDS, ids: [current.seq] });
    if (fields.embedHash !== current.embedHash) yield* enqueueEmbeddingsOp({ items: [{ kind: NODE_KIND, refId: current.seq, inputHash: fields.embedHash }] });
    return toGraphNode(next);
  });
}

/** Delete a node: its frames, relations and their evidence links go with it (FK cascades), and the state and contradictions of each. Audited. */
export function deleteNode<H extends AnyStoreHandle>({ handle, id, actor }: { handle: H; id: string; actor: string }): On<H, { deleted: string; frames: number; relations: number }> {
  return write(handle, function* () {
    const current = yield* requireNode(id, { lock: "update" });
    const frames = yield* count(graphTables.kgFrames, (t) => eq(t.nodeId, id));
    const relations = yield* count(graphTables.kgRelations, (t) => or(eq(t.fromId, id), eq(t.toId, id)));
    // Read before the cascade takes them: the frames' and relations' own rows elsewhere go with them.
    yield* itemsDeletedOp({ kind: "frame", ids: sql`(select f.id from kg_frame f where f.node_id = ${id})` });
    yield* itemsDeletedOp({ kind: "relation", ids: sql`(select r.id from kg_relation r where r.from_id = ${id} union all select r.id from kg_relation r where r.to_id = ${id})` });
    yield* itemsDeletedOp({ kind: "node", ids: [id] });
    yield* remove(nodes, (t) => eq(t.seq, current.seq));
    yield* forgetVectors({ kind: NODE_KIND, refIds: [current.seq] });
    yield* audit({ actor, action: "graph.node.delete", target: `store:${handle.store}/node:${id}`, details: { name: current.name, frames, relations } });
    return { deleted: id, frames, relations };
  });
}

type CountRow = { n: number };
const LISTING_HINT = "use fewer or rarer words in q, a smaller offset, or filter by entity_type";

/**
 * Nodes by type and/or text, any of the words: FTS5 over kg_node_fts (bm25) on SQLite, the tsvector (ts_rank) on
 * PostgreSQL, both statements under one query budget. The answer stops at DUALMIND_LIST_MAX_BYTES with
 * `next_offset`; the dashboard (`budget: false`) pages by number and renders its page on the server.
 */
export function listNodesByFilter<H extends AnyStoreHandle>({ handle, filter, budget = true }: { handle: H; filter: z.input<typeof listNodesQuerySchema>; budget?: boolean }): On<H, { nodes: GraphNode[]; total: number; next_offset: number | null }> {
  const f = listNodesQuerySchema.parse(filter);
  return read(handle, function* () {
    const page = yield* engineStep({
      sqlite: (h) => listNodesSqlite(h, f),
      pg: (tx) => listNodesPg(tx, f),
    });
    return pageWithinBudget({ page, key: "nodes", offset: f.offset, budget });
  });
}

/**
 * The listing's hidden nodes left out (proposals listed too with include_proposed; nothing with include_retired), as
 * SQL text over the row's id both engines run: each row's state looked up by item_state's primary key, as search and
 * recall do (lib/index/item-state.ts shownRowSql), so a listing costs the rows it reads, not how many are hidden.
 */
function shownNodeSql(f: z.output<typeof listNodesQuerySchema>, id: "n.id" | "kg_node.id"): string | null {
  return f.include_retired ? null : shownRowSql({ kind: "node", id, filter: { includeProposed: f.include_proposed === true } });
}

function listNodesSqlite(handle: StoreHandle, f: z.output<typeof listNodesQuerySchema>): { nodes: GraphNode[]; total: number } {
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.entity_type) {
    where.push("n.entity_type = ?");
    args.push(f.entity_type);
  }
  const shown = shownNodeSql(f, "n.id");
  if (shown) where.push(shown);
  let order = "n.updated_at desc, n.seq desc";
  let from = "kg_node n";
  if (f.q) {
    const match = buildFtsMatch(f.q, { match: "any", stopwords: "keep", maxTerms: 16 });
    if (!match) return { nodes: [], total: 0 };
    from = "kg_node_fts f join kg_node n on n.seq = f.rowid";
    where.unshift("kg_node_fts match ?");
    args.unshift(match);
    order = "bm25(kg_node_fts), n.seq";
  }
  const clause = where.length ? `where ${where.join(" and ")}` : "";
  const page = handle.sqlite.prepare(`select ${NODE_COLUMNS} from ${from} ${clause} order by ${order} limit ? offset ?`);
  const total = handle.sqlite.prepare(`select count(*) as n from ${from} ${clause}`);
  const budget = startQueryBudget({ hint: LISTING_HINT });
  const rows = runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => page.all(...args, f.limit, f.offset) as KgNodeRow[] });
  const { n } = runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => total.get(...args) as CountRow });
  return { nodes: rows.map(toGraphNode), total: n };
}

async function listNodesPg(tx: PgStoreTx, f: z.output<typeof listNodesQuerySchema>): Promise<{ nodes: GraphNode[]; total: number }> {
  const t = pgGraph.kgNodes;
  const shownNode = shownNodeSql(f, "kg_node.id");
  let query: SQL | null = null;
  if (f.q) {
    query = tsqueryFor({ terms: matchTerms(f.q, { stopwords: "keep", maxTerms: 16 }), match: "any" });
    if (!query) return { nodes: [], total: 0 };
  }
  const where = and(f.entity_type ? eq(t.entityType, f.entity_type) : undefined, query ? sql`kg_node.tsv @@ (${query})` : undefined, shownNode ? sql.raw(shownNode) : undefined);
  const order = query ? [sql`ts_rank(kg_node.tsv, ${query}) desc`, t.seq] : [desc(t.updatedAt), desc(t.seq)];
  const budget = startQueryBudget({ hint: LISTING_HINT });
  return runWithinBudgetPg({ tx, budget, fn: async () => {
    const rows = await tx
      .select()
      .from(t)
      .where(where)
      .orderBy(...order)
      .limit(f.limit)
      .offset(f.offset);
    const [{ n }] = await tx.select({ n: countAll() }).from(t).where(where);
    return { nodes: rows.map(toGraphNode), total: n };
  } });
}
