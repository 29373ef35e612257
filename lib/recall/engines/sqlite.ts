import { and, eq, inArray, isNotNull } from "drizzle-orm";
import type { StoreHandle } from "../../db/connection";
import { inCallerTx } from "../../db/port";
import { runWithinBudget } from "../../db/query-budget";
import { embeddings, embedQueue } from "../../db/schema/embed";
import { learnings, reasoningTraces } from "../../db/schema/recall";
import { knnSourceOf } from "../../embed/vector-index";
import { broadTopWithinBudget, matchExpression, planQueryVector, rankedByBm25, selectiveTopByBm25, vectorNeighbours, type Bm25Row } from "../../retrieval";
import { shownRowSql, type HiddenRowsFilter } from "../../index/item-state";
import { lexicalSimilarities, type RecallEngine, type RecallKind, type RecallReader } from "../recall";
import { TRACE_KIND } from "../traces";

/** Recall's full-text leg (FTS5, pruned or ranked from the word lists as search ranks) and vector leg (the store's KNN) on SQLite. */
const TABLES = { trace: { table: "reasoning_traces", textColumn: "summary_descriptor" }, learning: { table: "learnings", textColumn: "semantic_handle" } } as const;

type FtsTextRow = { id: number; text: string };

export const sqliteRecall: RecallEngine = {
  planQueryVector: ({ handle, ...a }) => planQueryVector({ handle: handle as StoreHandle, ...a }),
  read: (handle, work) => work(readerOf(handle as StoreHandle)),
  lexicalDetail: ({ kind, terms }) => `${kind}: FTS5 over ${terms.length ? terms.join(" OR ") : "no word"}`,
};

function readerOf(handle: StoreHandle): RecallReader {
  return {
    run: (op) => inCallerTx(handle, op),
    method: (knn, hybrid) => (knn === null ? "fts5" : `${knn}${hybrid ? "+fts5" : ""}${handle.vectors.available ? "" : " (vectors_index_unavailable)"}`),
    lexical({ kind, terms, limit, awaitingOnly, budget, hidden }) {
      const onlyIds = awaitingOnly ? idsAwaitingVectors({ handle, kind }) : undefined;
      if (terms.length === 0 || onlyIds?.length === 0) return [];
      const { table, textColumn } = TABLES[kind];
      const only = onlyIds ? "and f.rowid in (select value from json_each(@ids))" : "";
      const shown = hidden ? `and ${shownRowSql({ kind, id: "cast(t.id as text)", filter: hidden })}` : "";
      const statement = handle.sqlite.prepare(
        `select t.id, t.${textColumn} as text from ${table}_fts f join ${table} t on t.id = f.rowid
     where ${table}_fts match @expr ${only} ${shown} order by bm25(${table}_fts) limit @limit`,
      );
      const expr = matchExpression(terms, "any")!;
      // Common words over a large store: scored on the selective words' best rows only (max-score pruning, same bm25 scores).
      const pruned = onlyIds ? null : runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => selectiveTopByBm25({ db: handle.sqlite, schema: "main", table: `${table}_fts`, terms, k: limit }) });
      // Broad matches on a table with word lists are ranked from them, exactly as the statement ranks them.
      const broad = onlyIds || pruned ? null : broadTopWithinBudget({ db: handle.sqlite, schema: "main", table: `${table}_fts`, match: expr, budget });
      // With rows to leave out, the pruned ranking goes deeper while they take the places (exactly: the same top m).
      const deeper = (m: number) => runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => (selectiveTopByBm25({ db: handle.sqlite, schema: "main", table: `${table}_fts`, terms, k: m })?.rows ?? rankedByBm25({ db: handle.sqlite, schema: "main", table: `${table}_fts`, match: expr, m })) });
      const top = pruned ? (m: number) => (hidden && m > limit ? deeper(m) : pruned.rows.slice(0, m)) : broad?.top;
      // Up to 32 OR-ed words: common ones over a large store are the slow case, so the query budget bounds it.
      const rows = top ? rowsInRankOrder({ handle, kind, top, limit, hidden }) : runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => statement.all({ expr, limit, ids: JSON.stringify(onlyIds ?? []) }) as FtsTextRow[] });
      return lexicalSimilarities(terms, rows);
    },
    /** Only rows that still exist with the text the vector was made from. */
    vector({ kind, fingerprintId, query, k, floor }) {
      const { hits, method, belowFloor } = vectorNeighbours({ sources: [{ store: handle.store, source: knnSourceOf(handle), fingerprintId }], kind, query, k, floor });
      if (hits.length === 0) return { ok: true, candidates: [], method, belowFloor };
      const current = currentEmbeddingIds({ handle, kind, embeddingIds: hits.map((h) => h.embeddingId) });
      return { ok: true, candidates: hits.filter((h) => current.has(h.embeddingId)).map((h) => ({ refId: h.refId, similarity: h.similarity, match: "vector" as const })), method, belowFloor };
    },
  };
}

/** The first `limit` ranked rows that still exist, with their text (ranked rows read in growing batches). */
function rowsInRankOrder({ handle, kind, top, limit, hidden }: { handle: StoreHandle; kind: RecallKind; top: (m: number) => Bm25Row[]; limit: number; hidden: HiddenRowsFilter }): FtsTextRow[] {
  const shown = hidden ? ` and ${shownRowSql({ kind, id: `cast(${TABLES[kind].table}.id as text)`, filter: hidden })}` : "";
  const read = handle.sqlite.prepare(`select id, ${TABLES[kind].textColumn} as text from ${TABLES[kind].table} where id in (select value from json_each(?))${shown}`);
  for (let m = Math.max(limit, 16); ; m *= 4) {
    const ranked = top(m);
    const texts = new Map((read.all(JSON.stringify(ranked.map((r) => r.rowid))) as FtsTextRow[]).map((r) => [r.id, r.text]));
    const rows = ranked.flatMap((r) => (texts.has(r.rowid) ? [{ id: r.rowid, text: texts.get(r.rowid)! }] : []));
    if (rows.length >= limit || ranked.length < m) return rows.slice(0, limit);
  }
}

/** Rows written but not (yet) embedded: queued by write-behind, or stored without a vector under backpressure. */
function idsAwaitingVectors({ handle, kind }: { handle: StoreHandle; kind: RecallKind }): number[] {
  const queued = handle.db.select({ id: embedQueue.refId }).from(embedQueue).where(eq(embedQueue.kind, kind)).all();
  const skipped = kind === TRACE_KIND ? handle.db.select({ id: reasoningTraces.id }).from(reasoningTraces).where(isNotNull(reasoningTraces.embedSkippedAt)).all() : [];
  return [...new Set([...queued, ...skipped].map((r) => r.id))];
}

/** Of these embedding rows, the ids whose trace or learning still exists with the text the vector was made from. */
function currentEmbeddingIds({ handle, kind, embeddingIds }: { handle: StoreHandle; kind: RecallKind; embeddingIds: number[] }): Set<number> {
  const current =
    kind === TRACE_KIND
      ? and(eq(reasoningTraces.id, embeddings.refId), eq(reasoningTraces.descriptorHash, embeddings.inputHash))
      : and(eq(learnings.id, embeddings.refId), eq(learnings.handleHash, embeddings.inputHash));
  const rows = handle.db
    .select({ id: embeddings.id })
    .from(embeddings)
    .innerJoin(kind === TRACE_KIND ? reasoningTraces : learnings, current)
    .where(inArray(embeddings.id, embeddingIds))
    .all();
  return new Set(rows.map((r) => r.id));
}
