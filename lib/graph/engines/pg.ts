import { inArray, sql, type SQL } from "drizzle-orm";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../../db/pg-store";
import { runWithinBudgetPg } from "../../db/query-budget";
import { kgNodes, thoughts } from "../../db/schema/pg/store";
import { arrayLiteral } from "../../index/engines/pg-fulltext";
import { NODE_WORDS, rowsTopBm25Pg, startRowTermsBackfillPg, THOUGHT_WORDS, type RowWordTable } from "../../index/engines/pg-words";
import { planQueryVectorPg } from "../../index/query-vector-pg";
import { queryStatsPg, tsqueryFor, tsRankExpressionPg } from "../../index/search-pg";
import { normalizeVector, spaceNeighboursPg, type VectorSpace } from "../../index/vectors-pg";
import { similarityFloorFor } from "../../retrieval";
import { CONTEXT_EVIDENCE, type ContextNeighbours } from "../../retrieval/context";
import { MAX_EDGES_PER_SEED, MAX_EDGES_READ, MAX_EVIDENCE_PER_TARGET, MAX_FRAMES_PER_NODE, MAX_FRAMES_READ, relationEvidenceOf, relativeLexical, type EdgeRow, type FrameEvidenceRow, type FrameFactRow, type Kind, type LexicalNote, type RememberEngine, type RememberReader } from "../remember";

/**
 * Remember's reads on PostgreSQL, each source in one read-only transaction: vectors through the one PostgreSQL KNN
 * (current-text vectors only); lexical by FTS5's bm25 from the stored token counts, or Σ idf × ts_rank while rows
 * wait for them. Every full-text statement runs within the query budget.
 */

/** Where each kind lives: its table (code constants), the column its vector's ref_id points at, and its text's hash. */
const KIND_TABLES: Record<Kind, { table: "thoughts" | "kg_node"; hashColumn: "content_hash" | "embed_hash" }> = {
  thought: { table: "thoughts", hashColumn: "content_hash" },
  node: { table: "kg_node", hashColumn: "embed_hash" },
};

/** Each kind's full-text statistics (FTS5's bm25 of its SQLite twin table, lib/index/engines/pg-words.ts). */
const KIND_WORDS: Record<Kind, RowWordTable> = { thought: THOUGHT_WORDS, node: NODE_WORDS };

/** One kind's vectors in `embeddings`, joined to its table by seq so only vectors of a row's current text are neighbours. */
export function graphVectorSpace(kind: Kind): VectorSpace {
  const { table, hashColumn } = KIND_TABLES[kind];
  return {
    table: "embeddings",
    from: sql`embeddings e join ${sql.identifier(table)} r on r.seq = e.ref_id and r.${sql.identifier(hashColumn)} = e.input_hash`,
    id: sql`e.ref_id`,
    where: [sql`e.kind = ${kind}`],
  };
}

export const pgRemember: RememberEngine = {
  planQueryVector: ({ handle, ...a }) => planQueryVectorPg({ handle: handle as PgStoreHandle, ...a }),
  readSource: ({ handle, core, fp, query }, work) => {
    const source = (core ?? handle) as PgStoreHandle;
    const normalized = query ? normalizeVector(query) : null;
    return withStoreTx({ handle: source, readOnly: true, work: (tx) => work(readerOf({ tx, handle: source, fingerprintId: fp?.id ?? null, floor: fp ? similarityFloorFor(fp.provider) : 1, query: normalized })) });
  },
  lexicalDetail({ notes }) {
    const lexemes = [...new Set(notes.flatMap((n) => n.words))];
    const ranking = notes.some((n) => n.tsRank) ? "ranked by Σ idf × ts_rank per lexeme (FTS5's bm25 once the full-text statistics are built)" : "ranked by FTS5's bm25 from the stored token counts";
    return lexemes.length ? `thoughts and nodes, ${lexemes.join(" OR ")}; ${ranking}` : "no word to match";
  },
};

const bigints = (values: number[]) => sql`${`{${values.join(",")}}`}::bigint[]`;

function readerOf({ tx, handle, fingerprintId, floor, query }: { tx: PgStoreTx; handle: PgStoreHandle; fingerprintId: string | null; floor: number; query: number[] | null }): RememberReader {
  const t = thoughts;
  const n = kgNodes;
  const thoughtRows = (where: SQL) => tx.select({ seq: t.seq, id: t.id, content: t.content, timestamp: t.timestamp, hash: t.contentHash, framework: t.framework, consistency: t.consistency }).from(t).where(where);
  return {
    thoughts: async (seqs) => (seqs.length ? thoughtRows(inArray(t.seq, seqs)) : []),
    thoughtsByIds: async (ids) => (ids.length ? thoughtRows(inArray(t.id, ids)) : []),
    nodes: async (by) => {
      const where = "seqs" in by ? (by.seqs.length ? inArray(n.seq, by.seqs) : null) : by.ids.length ? inArray(n.id, by.ids) : null;
      return where ? tx.select({ seq: n.seq, id: n.id, name: n.name, displayName: n.displayName, entityType: n.entityType, updatedAt: n.updatedAt, hash: n.embedHash }).from(n).where(where) : [];
    },
    async nearest({ kind, k }) {
      const knn = await spaceNeighboursPg({ tx, space: graphVectorSpace(kind), fingerprintId: fingerprintId!, query: query!, k });
      if (!knn.ok) return { ok: false, message: knn.message };
      const kept = knn.hits.filter((h) => h.similarity >= floor);
      return { ok: true, seqs: kept.map((h) => h.id), belowFloor: knn.hits.length - kept.length };
    },
    /** By FTS5's bm25 from the stored token counts, or by Σ idf × ts_rank per lexeme while the backfill (started here) runs. */
    lexical: ({ kind, terms, k, budget }) =>
      runWithinBudgetPg({ tx, budget, fn: async () => {
        const top = await rowsTopBm25Pg({ tx, table: KIND_WORDS[kind], words: terms, k });
        if (top.kind === "ranked") return { hits: relativeLexical(top.hits.map((h) => ({ seq: h.rid, rank: h.score }))), note: { words: top.tokens, tsRank: false } };
        if (top.building) startRowTermsBackfillPg({ handle, table: KIND_WORDS[kind] });
        return tsRankHits({ tx, kind, terms, k });
      } }),
    async thoughtNeighbours(seqs) {
      if (seqs.length === 0) return [];
      const w = CONTEXT_EVIDENCE.windowMs;
      const rows = await rowsOf<{ hit: string; before: string | null; after: string | null }>({
        tx,
        query: sql`select h.seq as hit,
       (select n.seq from thoughts n where n.timestamp between h.timestamp - ${w} and h.timestamp and n.chain_id is not distinct from h.chain_id and (n.timestamp < h.timestamp or n.seq < h.seq) order by n.timestamp desc, n.seq desc limit 1) as before,
       (select n.seq from thoughts n where n.timestamp between h.timestamp and h.timestamp + ${w} and n.chain_id is not distinct from h.chain_id and (n.timestamp > h.timestamp or n.seq > h.seq) order by n.timestamp, n.seq limit 1) as after
     from thoughts h where h.seq = any(${bigints(seqs)})`,
      });
      return rows.map((r): ContextNeighbours => ({ hit: Number(r.hit), before: r.before === null ? null : Number(r.before), after: r.after === null ? null : Number(r.after) }));
    },
    async strongestEdges({ seeds, minWeight }) {
      const ids = sql`${`{${seeds.map((id) => `"${id.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`).join(",")}}`}::text[]`;
      const side = (end: "from_id" | "to_id") =>
        sql`select e.id, e.from_id as "fromId", e.to_id as "toId", e.relationship_type as type, e.weight from unnest(${ids}) s(id)
            cross join lateral (select * from kg_relation x where x.${sql.identifier(end)} = s.id and x.weight >= ${minWeight} order by x.weight desc, x.id collate "C" limit ${MAX_EDGES_PER_SEED}) e`;
      const edges = await rowsOf<EdgeRow>({ tx, query: sql`select * from (${side("from_id")} union ${side("to_id")}) u order by weight desc, id collate "C" limit ${MAX_EDGES_READ}` });
      return edges.map((e) => ({ ...e, weight: Number(e.weight) }));
    },
    /** Vectors are stored normalized: the cosine is the dot product. */
    async similarities({ kind, seqs }) {
      const out = new Map<number, { similarity: number; inputHash: string }>();
      if (seqs.length === 0) return out;
      const rows = await rowsOf<{ refId: string; inputHash: string; embedding: number[] }>({
        tx,
        query: sql`select ref_id as "refId", input_hash as "inputHash", embedding from embeddings where kind = ${kind} and fingerprint_id = ${fingerprintId} and ref_id = any(${bigints(seqs)})`,
      });
      for (const r of rows) {
        if (r.embedding.length !== query!.length) continue;
        let dot = 0;
        for (let i = 0; i < query!.length; i++) dot += query![i] * r.embedding[i];
        out.set(Number(r.refId), { similarity: dot, inputHash: r.inputHash });
      }
      return out;
    },
    nodeFrames: ({ nodeIds, budget }) =>
      nodeIds.length === 0
        ? { frames: [], evidence: [] }
        : runWithinBudgetPg({
            tx,
            budget,
            fn: async () => {
              // Each node's newest frames, picked by id before any properties are read.
              const frames = await rowsOf<FrameFactRow>({
                tx,
                query: sql`select f.id, f.node_id as "nodeId", f."column" as col, f.properties, f.created_at as "createdAt"
                  from unnest(${arrayLiteral(nodeIds)}::text[]) with ordinality n(id, ord)
                  cross join lateral (select x.id from kg_frame x where x.node_id = n.id order by x.created_at desc, x.id collate "C" desc limit ${MAX_FRAMES_PER_NODE}) k
                  join kg_frame f on f.id = k.id
                  order by n.ord, f.created_at desc, f.id collate "C" desc limit ${MAX_FRAMES_READ}`,
              });
              const evidence = await rowsOf<FrameEvidenceRow>({
                tx,
                query: sql`select e.frame_id as "frameId", e.thought_id as "thoughtId", e.stance
                  from unnest(${arrayLiteral(frames.map((r) => r.id))}::text[]) t(id)
                  cross join lateral (select y.frame_id, y.thought_id, y.stance from kg_frame_evidence y where y.frame_id = t.id order by y.thought_id collate "C" limit ${MAX_EVIDENCE_PER_TARGET}) e`,
              });
              return { frames: frames.map((r) => ({ ...r, createdAt: Number(r.createdAt) })), evidence };
            },
          }),
    relationEvidence: async ({ relationIds, budget }) =>
      relationEvidenceOf(
        relationIds.length === 0
          ? []
          : await runWithinBudgetPg({
              tx,
              budget,
              fn: () =>
                rowsOf<{ relationId: string; thoughtId: string }>({
                  tx,
                  query: sql`select e.relation_id as "relationId", e.thought_id as "thoughtId"
                    from unnest(${arrayLiteral(relationIds)}::text[]) t(id)
                    cross join lateral (select y.relation_id, y.thought_id from kg_relation_evidence y where y.relation_id = t.id order by y.thought_id collate "C" limit ${MAX_EVIDENCE_PER_TARGET}) e`,
                }),
            }),
      ),
    searchable: async () => (await rowsOf<{ searchable: boolean }>({ tx, query: sql`select exists (select 1 from thoughts) or exists (select 1 from kg_node) as searchable` }))[0].searchable,
  };
}

/** Lexical hits by Σ idf × ts_rank per lexeme (idf from each lexeme's row count, counted on the GIN index), as search's fallback ranks. */
async function tsRankHits({ tx, kind, terms, k }: { tx: PgStoreTx; kind: Kind; terms: string[]; k: number }): Promise<{ hits: { seq: number; lexical: number }[]; note: LexicalNote }> {
  const table = sql`${sql.identifier(KIND_TABLES[kind].table)}`;
  const query = tsqueryFor({ terms, match: "any" });
  const stats = query ? await queryStatsPg({ tx, table, terms, query }) : null;
  if (!stats || stats.terms.length === 0) return { hits: [], note: { words: [], tsRank: true } };
  // Each lexeme's text is PostgreSQL's own, passed back as a parameter.
  const match = sql.join(
    stats.terms.map((s) => sql`${s.q}::tsquery`),
    sql` || `,
  );
  const rows = await rowsOf<{ seq: string; rank: number }>({ tx, query: sql`select x.seq, ${tsRankExpressionPg({ stats, tsv: sql`x.tsv` })} as rank from ${table} x where x.tsv @@ (${match}) order by rank desc, x.seq limit ${k}` });
  return { hits: relativeLexical(rows.map((r) => ({ seq: Number(r.seq), rank: Number(r.rank) }))), note: { words: stats.terms.map((s) => s.q), tsRank: true } };
}
