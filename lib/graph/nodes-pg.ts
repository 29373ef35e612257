import { and, count, desc, eq, or, sql, type SQL } from "drizzle-orm";
import type { z } from "zod";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { runWithinBudgetPg, startQueryBudget } from "../db/query-budget";
import { kgFrames, kgNodes, kgRelations, type PgKgNodeRow } from "../db/schema/pg/store";
import { appendAuditPg } from "../governance/audit-pg";
import { missingVectorsSql, type PgEmbeddable } from "../index/embed-kinds-pg";
import { enqueueEmbeddingsPg } from "../index/embed-queue-pg";
import { tsqueryFor } from "../index/search-pg";
import { forgetKindEmbeddingsPg } from "../index/vectors-pg";
import { notFound, parseJsonColumnOr } from "../common";
import { matchTerms } from "../retrieval";
import { createNodeInputSchema, listNodesQuerySchema, newNodeRow, NODE_KIND, nodeEmbeddingText, nodeExists, toGraphNode, updatedNodeFields, updateNodeInputSchema, type GraphNode } from "./nodes";

/**
 * Knowledge-graph nodes on PostgreSQL (the SQLite twin is ./nodes.ts, whose
 * schemas, canonical names and shaper this reuses). Two replicas creating
 * the same node meet the unique (name, entity_type) index: one creates it,
 * the other gets the same 409 as on SQLite. Updates and deletes lock the
 * node's row first. A node is queued for its vector (kind "node": its name,
 * type and tags, nodeEmbeddingText) in the transaction that creates it, and
 * again by an update that changes that text (its embed_hash), as on SQLite;
 * the PostgreSQL embed worker writes the vector to `embeddings`.
 */

/** The worker reads a node's embedding text by its seq, built as on SQLite; embed_hash is the input hash. */
export const nodeEmbeddablePg: PgEmbeddable = {
  kind: NODE_KIND,
  artifactType: NODE_KIND,
  async load({ tx, refIds }) {
    const rows = await rowsOf<{ seq: string; displayName: string; entityType: string; tags: string; embedHash: string }>(
      tx,
      sql`select seq, display_name as "displayName", entity_type as "entityType", tags, embed_hash as "embedHash" from kg_node where seq in ${refIds}`,
    );
    return new Map(rows.map((r) => [Number(r.seq), { text: nodeEmbeddingText({ ...r, tags: parseJsonColumnOr<string[]>(r.tags, []) }), inputHash: r.embedHash, chunkingVersion: null }]));
  },
  missingVectors: (fingerprintId) => missingVectorsSql({ kind: NODE_KIND, table: "kg_node", idColumn: "seq", hashColumn: "embed_hash", fingerprintId }),
};

/**
 * A node's row, or a 404 naming it. Locked when asked: "update" to change or
 * delete it, "share" to link to it (a delete on another replica waits for
 * the link's transaction, whose node is then still there).
 */
export async function requireNodeRowPg(tx: PgStoreTx, id: string, { lock }: { lock?: "update" | "share" } = {}): Promise<PgKgNodeRow> {
  const q = tx.select().from(kgNodes).where(eq(kgNodes.id, id));
  const [row] = lock ? await q.for(lock) : await q;
  if (!row) throw notFound("node", id);
  return row;
}

/** Create a node; an existing node with the same canonical name and type is a 409 naming it. */
export async function createNodePg({ handle, input, actor }: { handle: PgStoreHandle; input: z.input<typeof createNodeInputSchema>; actor: string }): Promise<GraphNode> {
  const n = createNodeInputSchema.parse(input);
  const values = newNodeRow({ input: n, actor, now: Date.now() });
  return withStoreTx({ handle }, async (tx) => {
    // Another replica's create of the same node is waited for by the unique index, then found here.
    const [created] = await tx
      .insert(kgNodes)
      .values(values)
      .onConflictDoNothing({ target: [kgNodes.name, kgNodes.entityType] })
      .returning();
    if (created) {
      await enqueueEmbeddingsPg({ tx, items: [{ kind: NODE_KIND, refId: created.seq, inputHash: created.embedHash }] });
      return toGraphNode(created);
    }
    const [existing] = await tx
      .select({ id: kgNodes.id })
      .from(kgNodes)
      .where(and(eq(kgNodes.name, values.name), eq(kgNodes.entityType, n.entity_type)));
    throw nodeExists({ entityType: n.entity_type, name: values.name, id: existing?.id });
  });
}

export async function updateNodePg({ handle, id, input }: { handle: PgStoreHandle; id: string; input: z.input<typeof updateNodeInputSchema> }): Promise<GraphNode> {
  const u = updateNodeInputSchema.parse(input);
  return withStoreTx({ handle }, async (tx) => {
    const row = await requireNodeRowPg(tx, id, { lock: "update" });
    const fields = updatedNodeFields({ row, input: u, now: Date.now() });
    const [next] = await tx.update(kgNodes).set(fields).where(eq(kgNodes.seq, row.seq)).returning();
    // Re-queued only when the embedded text changed (its hash), as on SQLite.
    if (fields.embedHash !== row.embedHash) await enqueueEmbeddingsPg({ tx, items: [{ kind: NODE_KIND, refId: row.seq, inputHash: fields.embedHash }] });
    return toGraphNode(next);
  });
}

/** Delete a node: its frames, relations and their evidence links go with it (FK cascades). Audited. */
export async function deleteNodePg({ handle, id, actor }: { handle: PgStoreHandle; id: string; actor: string }): Promise<{ deleted: string; frames: number; relations: number }> {
  return withStoreTx({ handle }, async (tx) => {
    const row = await requireNodeRowPg(tx, id, { lock: "update" });
    const [{ frames }] = await tx.select({ frames: count() }).from(kgFrames).where(eq(kgFrames.nodeId, id));
    const [{ relations }] = await tx
      .select({ relations: count() })
      .from(kgRelations)
      .where(or(eq(kgRelations.fromId, id), eq(kgRelations.toId, id)));
    await tx.delete(kgNodes).where(eq(kgNodes.seq, row.seq));
    await forgetKindEmbeddingsPg({ tx, kind: NODE_KIND, refIds: [row.seq] });
    await appendAuditPg({ db: tx, entry: { actor, action: "graph.node.delete", target: `store:${handle.store}/node:${id}`, details: { name: row.name, frames, relations } } });
    return { deleted: id, frames, relations };
  });
}

/**
 * Nodes by type and/or text. The text search is the tsvector over name,
 * display name and tags (0005), any of the words, ranked by ts_rank — on
 * SQLite bm25 over kg_node_fts.
 */
export async function listNodesByFilterPg({ handle, filter }: { handle: PgStoreHandle; filter: z.input<typeof listNodesQuerySchema> }): Promise<{ nodes: GraphNode[]; total: number }> {
  const f = listNodesQuerySchema.parse(filter);
  let query: SQL | null = null;
  if (f.q) {
    query = tsqueryFor(matchTerms(f.q, { stopwords: "keep", maxTerms: 16 }), "any");
    if (!query) return { nodes: [], total: 0 };
  }
  const where = and(f.entity_type ? eq(kgNodes.entityType, f.entity_type) : undefined, query ? sql`kg_node.tsv @@ (${query})` : undefined);
  const order = query ? [sql`ts_rank(kg_node.tsv, ${query}) desc`, kgNodes.seq] : [desc(kgNodes.updatedAt), desc(kgNodes.seq)];
  // A text filter (`q`) or a deep offset is the caller's to make expensive: both statements share one query budget.
  const budget = startQueryBudget({ hint: "use fewer or rarer words in q, a smaller offset, or filter by entity_type" });
  return withStoreTx({ handle, readOnly: true }, (tx) =>
    runWithinBudgetPg(tx, budget, async () => {
      const rows = await tx
        .select()
        .from(kgNodes)
        .where(where)
        .orderBy(...order)
        .limit(f.limit)
        .offset(f.offset);
      const [{ n }] = await tx.select({ n: count() }).from(kgNodes).where(where);
      return { nodes: rows.map(toGraphNode), total: n };
    }),
  );
}
