import type Database from "better-sqlite3";
import { openStoreReaderWithCore, type StoreHandle } from "../../db/connection";
import { runWithinBudget } from "../../db/query-budget";
import { preparedOnce } from "../../db/statements";
import type { KnnSource } from "../../embed/vector-index";
import { broadTopWithinBudget, matchExpression, planQueryVector, rankedByBm25, selectiveTopByBm25, similaritiesOf, similarityFloorFor, vectorNeighbours } from "../../retrieval";
import { CONTEXT_EVIDENCE, type ContextNeighbours } from "../../retrieval/context";
import { MAX_EDGES_PER_SEED, MAX_EDGES_READ, MAX_EVIDENCE_PER_TARGET, MAX_FRAMES_PER_NODE, MAX_FRAMES_READ, relationEvidenceOf, relativeLexical, type EdgeRow, type FrameEvidenceRow, type FrameFactRow, type NodeCandidateRow, type RememberEngine, type RememberReader, type ThoughtCandidateRow } from "../remember";

/**
 * Remember's reads on SQLite: FTS5 (bm25, pruned or ranked from the word
 * lists as search ranks) and the store's KNN (vec0/usearch). The SQL is
 * hand-written: the same text reads the store (schema `main`) and core
 * attached read-only beside it (schema `core`), which Drizzle's tables cannot address.
 */
type Source = { store: string; schema: "main" | "core"; db: Database.Database; fingerprintId: string | null; vectorsLoaded: boolean; floor: number; query: Float32Array | null };

const FTS_TABLES = { thought: "thoughts_fts", node: "kg_node_fts" } as const;
const TABLES = { thought: "thoughts", node: "kg_node" } as const;
const ROW_COLUMNS = {
  thought: "seq, id, content, timestamp, content_hash as hash, framework, consistency",
  node: "seq, id, name, display_name as displayName, entity_type as entityType, updated_at as updatedAt, embed_hash as hash",
} as const;

export const sqliteRemember: RememberEngine = {
  planQueryVector: ({ handle, ...a }) => planQueryVector({ handle: handle as StoreHandle, ...a }),
  async readSource({ handle, core, fp, query }, work) {
    const store = handle as StoreHandle;
    const base = { fingerprintId: fp?.id ?? null, floor: fp ? similarityFloorFor(fp.provider) : 1, query, vectorsLoaded: store.vectors.available };
    if (!core) return work(readerOf({ ...base, store: store.store, schema: "main", db: store.sqlite }));
    // The reader loads sqlite-vec the same way as the store's handle, so the store's status tells whether core's index can be used.
    const db = openStoreReaderWithCore({ handle: store, core: core as StoreHandle });
    try {
      return await work(readerOf({ ...base, store: (core as StoreHandle).store, schema: "core", db }));
    } finally {
      db.close();
    }
  },
  lexicalDetail({ plan, notes }) {
    const match = matchExpression(plan.ftsTerms, "any");
    const common = new Set(notes.flatMap((n) => n.words));
    return match ? `FTS5 over thoughts and nodes, MATCH ${match}${common.size ? `; word(s) ${[...common].join(", ")} scored only on the rarer words' best ${4 * plan.req.candidates} rows` : ""}` : "no word to match";
  },
};

function readerOf(src: Source): RememberReader {
  const knn: KnnSource = { db: src.db, schema: src.schema, vectorsLoaded: src.vectorsLoaded };
  const all = <R>(sql: string, ...params: unknown[]) => preparedOnce({ sqlite: src.db, sql }).all(...params) as R[];
  const ids = (values: unknown[]) => JSON.stringify(values);
  const rowsBy = <R>(kind: "thought" | "node", column: "seq" | "id", values: (number | string)[]): R[] =>
    values.length === 0 ? [] : all<R>(`select ${ROW_COLUMNS[kind]} from ${src.schema}.${TABLES[kind]} where ${column} in (select value from json_each(?))`, ids(values));
  return {
    thoughts: (seqs) => rowsBy<ThoughtCandidateRow>("thought", "seq", seqs),
    thoughtsByIds: (ids) => rowsBy<ThoughtCandidateRow>("thought", "id", ids),
    nodes: (by) => ("seqs" in by ? rowsBy<NodeCandidateRow>("node", "seq", by.seqs) : rowsBy<NodeCandidateRow>("node", "id", by.ids)),
    nearest({ kind, k }) {
      const r = vectorNeighbours({ sources: [{ store: src.store, source: knn, fingerprintId: src.fingerprintId! }], kind, query: src.query!, k, floor: src.floor });
      return { ok: true, seqs: r.hits.map((h) => h.refId), belowFloor: r.belowFloor };
    },
    /**
     * bm25 hits, best first. A query with common words is first ranked from its rarer words' rows (selectiveTopByBm25,
     * or null: the whole query runs); the note names the words scored on those candidates only.
     */
    lexical({ kind, terms, k, budget }) {
      const table = FTS_TABLES[kind];
      const match = matchExpression(terms, "any");
      if (!match) return { hits: [], note: { words: [], tsRank: false } };
      const pruned = runWithinBudget({ sqlite: src.db, budget, fn: () => selectiveTopByBm25({ db: src.db, schema: src.schema, table, terms, k }) });
      // Broad matches on a table with word lists are ranked from them, exactly as the statement below ranks them.
      const broad = pruned ? null : broadTopWithinBudget({ db: src.db, schema: src.schema, table, match, budget });
      const rows = pruned
        ? pruned.rows.map((r) => ({ seq: r.rowid, rank: r.rank }))
        : broad
          ? broad.top(k).map((r) => ({ seq: r.rowid, rank: r.rank }))
          : runWithinBudget({ sqlite: src.db, budget, fn: () => rankedByBm25({ db: src.db, schema: src.schema, table, match, m: k }).map((r) => ({ seq: r.rowid, rank: r.rank })) });
      // bm25 is better when more negative.
      return { hits: relativeLexical(rows.map((r) => ({ seq: r.seq, rank: -r.rank }))), note: { words: pruned?.common ?? [], tsRank: false } };
    },
    /** Each lookup is one seek on (chain_id, timestamp, seq) from the hit outwards (thoughts_chain_time_idx). */
    thoughtNeighbours(seqs) {
      if (seqs.length === 0) return [];
      const t = `${src.schema}.thoughts`;
      // The index reads only the hit's chain within the window: neither every row of the chain (which grows without bound
      // as a conversation goes on) nor every row written in the window (each read to learn its chain).
      return preparedOnce({
        sqlite: src.db,
        sql: `select h.seq as hit,
       (select n.seq from ${t} n where n.timestamp between h.timestamp - @w and h.timestamp and n.chain_id is h.chain_id and (n.timestamp < h.timestamp or n.seq < h.seq) order by n.timestamp desc, n.seq desc limit 1) as before,
       (select n.seq from ${t} n where n.timestamp between h.timestamp and h.timestamp + @w and n.chain_id is h.chain_id and (n.timestamp > h.timestamp or n.seq > h.seq) order by n.timestamp, n.seq limit 1) as after
     from ${t} h where h.seq in (select value from json_each(@seqs))`,
      }).all({ w: CONTEXT_EVIDENCE.windowMs, seqs: ids(seqs) }) as ContextNeighbours[];
    },
    strongestEdges({ seeds, minWeight }) {
      const r = `${src.schema}.kg_relation`;
      // A store without relations (thoughts alone) has nothing to expand over: one row probe instead of two reads per seed.
      if (!preparedOnce({ sqlite: src.db, sql: `select 1 from ${r} limit 1` }).get()) return [];
      const strongest = (end: "from_id" | "to_id") => `select x.id from ${r} x where x.${end} = s.value and x.weight >= @minWeight order by x.weight desc, x.id limit @perSeed`;
      const side = (end: "from_id" | "to_id") => `select e.id, e.from_id as fromId, e.to_id as toId, e.relationship_type as type, e.weight from json_each(@seeds) s join ${r} e on e.id in (${strongest(end)})`;
      return preparedOnce({ sqlite: src.db, sql: `select * from (${side("from_id")} union ${side("to_id")}) order by weight desc, id limit @total` }).all({ minWeight, seeds: ids(seeds), perSeed: MAX_EDGES_PER_SEED, total: MAX_EDGES_READ }) as EdgeRow[];
    },
    similarities: ({ kind, seqs }) => similaritiesOf({ source: knn, kind, fingerprintId: src.fingerprintId!, refIds: seqs, query: src.query! }),
    nodeFrames({ nodeIds, budget }) {
      if (nodeIds.length === 0) return { frames: [], evidence: [] };
      const e = `${src.schema}.kg_frame_evidence`;
      return runWithinBudget({
        sqlite: src.db,
        budget,
        fn: () => {
          // Each node's newest frames, picked by id before any properties are read.
          const frames = all<FrameFactRow>(
            `select f.id, f.node_id as nodeId, f."column" as col, f.properties, f.created_at as createdAt
               from json_each(@nodes) n join ${src.schema}.kg_frame f
                 on f.id in (select x.id from ${src.schema}.kg_frame x where x.node_id = n.value order by x.created_at desc, x.id desc limit @perNode)
              order by n.key, f.created_at desc, f.id desc limit @total`,
            { nodes: ids(nodeIds), perNode: MAX_FRAMES_PER_NODE, total: MAX_FRAMES_READ },
          );
          const evidence = all<FrameEvidenceRow>(
            `select e.frame_id as frameId, e.thought_id as thoughtId, e.stance from json_each(@frames) t join ${e} e
                on e.frame_id = t.value and e.thought_id in (select y.thought_id from ${e} y where y.frame_id = t.value order by y.thought_id limit @most)`,
            { frames: ids(frames.map((f) => f.id)), most: MAX_EVIDENCE_PER_TARGET },
          );
          return { frames, evidence };
        },
      });
    },
    relationEvidence: ({ relationIds, budget }) => {
      if (relationIds.length === 0) return new Map();
      const e = `${src.schema}.kg_relation_evidence`;
      const rows = runWithinBudget({
        sqlite: src.db,
        budget,
        fn: () =>
          all<{ relationId: string; thoughtId: string }>(
            `select e.relation_id as relationId, e.thought_id as thoughtId from json_each(@relations) t join ${e} e
                on e.relation_id = t.value and e.thought_id in (select y.thought_id from ${e} y where y.relation_id = t.value order by y.thought_id limit @most)`,
            { relations: ids(relationIds), most: MAX_EVIDENCE_PER_TARGET },
          ),
      });
      return relationEvidenceOf(rows);
    },
    searchable: () => !!preparedOnce({ sqlite: src.db, sql: `select 1 from ${src.schema}.thoughts union all select 1 from ${src.schema}.kg_node limit 1` }).get(),
  };
}
