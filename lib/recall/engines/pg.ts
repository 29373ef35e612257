import { sql } from "drizzle-orm";
import { inCallerTx } from "../../db/port";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../../db/pg-store";
import { runWithinBudgetPg } from "../../db/query-budget";
import { LEARNING_WORDS, rowsTopBm25Pg, startRowTermsBackfillPg, TRACE_WORDS, type RowWordTable } from "../../index/engines/pg-words";
import { planQueryVectorPg } from "../../index/query-vector-pg";
import { tsqueryFor } from "../../index/search-pg";
import { kindVectorSpace, spaceNeighboursPg } from "../../index/vectors-pg";
import { lexicalSimilarities, type RecallEngine, type RecallKind, type RecallReader } from "../recall";
import { TRACE_KIND } from "../traces";
import { shownRowSql, type HiddenRowsFilter } from "../../index/item-state";

/**
 * Recall's full-text and vector legs on PostgreSQL, in one read-only transaction: lexical, the query's words OR-ed,
 * cut by FTS5's bm25 from the stored token counts (engines/pg-words.ts), or ts_rank until older rows are tokenized;
 * vector, KNN over the kind's current-text vectors (lib/index/vectors-pg.ts), lexical with vectors_unavailable when
 * the exact scan refuses.
 */
const KINDS: Record<RecallKind, { table: "reasoning_traces" | "learnings"; textColumn: string; hashColumn: string; words: RowWordTable }> = {
  trace: { table: "reasoning_traces", textColumn: "summary_descriptor", hashColumn: "descriptor_hash", words: TRACE_WORDS },
  learning: { table: "learnings", textColumn: "semantic_handle", hashColumn: "handle_hash", words: LEARNING_WORDS },
};

export const pgRecall: RecallEngine = {
  planQueryVector: ({ handle, ...a }) => planQueryVectorPg({ handle: handle as PgStoreHandle, ...a }),
  read: (handle, work) => withStoreTx({ handle: handle as PgStoreHandle, readOnly: true, work: (tx) => work(readerOf(tx, handle as PgStoreHandle)) }),
  lexicalDetail: ({ kind, terms }) => `${kind}: full text, ${terms.length ? terms.join(" OR ") : "no word"} (FTS5 bm25 from the stored token counts, ts_rank until they are built)`,
};

function readerOf(tx: PgStoreTx, handle: PgStoreHandle): RecallReader {
  return {
    run: (op) => inCallerTx(tx, op, handle),
    method: (knn, hybrid) => (knn === null ? "tsvector" : `${knn}${hybrid ? "+tsvector" : ""}`),
    /** `awaitingOnly`: rows waiting for a vector as a subquery, never a list of ids the size of the backlog. */
    lexical: ({ kind, terms, limit, awaitingOnly, budget, hidden }) => runWithinBudgetPg({ tx, budget, fn: () => lexicalCandidates({ tx, handle, kind, terms, limit, awaitingOnly, hidden }) }),
    async vector({ kind, fingerprintId, query, k, floor }) {
      const { table, hashColumn } = KINDS[kind];
      const knn = await spaceNeighboursPg({ tx, space: kindVectorSpace({ kind, table, hashColumn }), fingerprintId, query, k });
      if (!knn.ok) return { ok: false, message: knn.message };
      const kept = knn.hits.filter((h) => h.similarity >= floor);
      return { ok: true, candidates: kept.map((h) => ({ refId: h.id, similarity: h.similarity, match: "vector" as const })), method: knn.method, belowFloor: knn.hits.length - kept.length };
    },
  };
}

async function lexicalCandidates({ tx, handle, kind, terms, limit, awaitingOnly, hidden }: { tx: PgStoreTx; handle: PgStoreHandle; kind: RecallKind; terms: string[]; limit: number; awaitingOnly: boolean; hidden: HiddenRowsFilter }) {
  if (terms.length === 0) return [];
  const { table, textColumn, words } = KINDS[kind];
  const skipped = kind === TRACE_KIND ? sql` or rid in (select id from reasoning_traces where embed_skipped_at is not null)` : sql``;
  // The view's hidden rows are left out where the postings are read, so they never take a candidate's place.
  const shownOf = (id: string) => (hidden ? sql.raw(shownRowSql({ kind, id: `cast(${id} as text)`, filter: hidden })) : null);
  const only = [awaitingOnly ? sql`(rid in (select ref_id from embed_queue where kind = ${kind})${skipped})` : null, shownOf("rid")].filter((w) => w !== null);
  const top = await rowsTopBm25Pg({ tx, table: words, words: terms, k: limit, only: only.length ? sql.join(only, sql` and `) : undefined });
  if (top.kind === "ranked") {
    const ids = top.hits.map((h) => h.rid);
    const texts = ids.length
      ? new Map((await rowsOf<{ id: string; text: string }>({ tx, query: sql`select id, ${sql.identifier(textColumn)} as text from ${sql.identifier(table)} where id = any(${`{${ids.join(",")}}`}::bigint[])` })).map((r) => [Number(r.id), r.text]))
      : new Map<number, string>();
    return lexicalSimilarities(
      terms,
      ids.flatMap((id) => (texts.has(id) ? [{ id, text: texts.get(id)! }] : [])),
    );
  }
  if (top.building) startRowTermsBackfillPg({ handle, table: words });
  const query = tsqueryFor({ terms, match: "any" });
  if (!query) return [];
  const skippedRow = kind === TRACE_KIND ? sql` or t.embed_skipped_at is not null` : sql``;
  const shownRow = shownOf("t.id");
  const onlyRows = sql`${awaitingOnly ? sql` and (t.id in (select ref_id from embed_queue where kind = ${kind})${skippedRow})` : sql``}${shownRow ? sql` and ${shownRow}` : sql``}`;
  const rows = await rowsOf<{ id: string; text: string }>({
    tx,
    query: sql`with q as (select (${query}) as q)
      select t.id, t.${sql.identifier(textColumn)} as text from ${sql.identifier(table)} t, q
      where t.tsv @@ q.q${onlyRows} order by ts_rank(t.tsv, q.q, 1) desc, t.id limit ${limit}`,
  });
  return lexicalSimilarities(
    terms,
    rows.map((r) => ({ id: Number(r.id), text: r.text })),
  );
}
