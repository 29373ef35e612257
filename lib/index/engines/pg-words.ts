import { sql, type SQL } from "drizzle-orm";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../../db/pg-store";
import { engineStep, type Op } from "../../db/port";
import { bm25Part, ftsIdf } from "../../retrieval/fts5-bm25";
import { phraseTokens, scratchTable } from "../../retrieval/fts-tokens";
import { matchExpression, plainPhrases } from "../../retrieval/match";
import { documentBytes, documentTitle, type ChunkSpan } from "../document-fts";
import { blankFrontmatter } from "../frontmatter";
import { withStoreQuotaPg } from "../store-quota";
import { arrayLiteral, BACKFILL_BATCH, bm25ScoreSql, drainBatches, rowTermsOf, startBackfillPg, type ChunkTerms } from "./pg-fulltext";

/**
 * FTS5's bm25 on PostgreSQL for the full-text tables other than chunks (pg-fulltext.ts's): the same numbers, kept in
 * one set of tables for all (word_postings, word_terms, word_totals, and each row's fts_len, null until tokenized),
 * each a twin of a SQLite FTS5 table tokenized by FTS5 itself at write time (rowTermsOf), so the scores are SQLite's.
 * Scoring is of given rows only, so its cost follows the rows asked about, not how many hold a common word.
 */

/** A full-text table kept here: its statistics' name, the table and key column it mirrors, and its SQLite twin's tokenizer and columns. */
export type WordTable = { tbl: string; table: string; key: string; tokenize: string; columns: number };

/**
 * The whole-document index of group=document (SQLite: documents_fts, migration 0013): path, title and whole
 * text (a memory's frontmatter blanked), without stemming.
 */
export const DOCUMENT_WORDS: WordTable = { tbl: "documents", table: "documents", key: "doc_id", tokenize: "unicode61 remove_diacritics 2", columns: 3 };

/** A document's columns in the whole-document index, as SQLite's ingest writes its documents_fts row. */
export function documentWordValues({ path, kind, text }: { path: string; kind: string; text: string }): string[] {
  const body = kind === "memory" ? blankFrontmatter(text) : text;
  return [path, documentTitle(body), body];
}

/**
 * Store the tokens of rows just written (their key with rowTermsOf of their values), in the writer's transaction;
 * `replace`: the rows may have stored tokens already (an update), which are taken away first.
 */
export async function writeRowTermsPg({ tx, table, rows, replace }: { tx: PgStoreTx; table: WordTable; rows: { rid: number; terms: ChunkTerms }[]; replace: boolean }): Promise<void> {
  if (rows.length === 0) return;
  const ids = arrayLiteral(rows.map((r) => r.rid));
  const base = sql.identifier(table.table);
  const key = sql.identifier(table.key);
  // The store's usage row, then the totals row, then token rows: a row's own write takes the usage row first (its
  // trigger), the posting tables' statement triggers take it after, so every writer takes them in this order (a write
  // that refreshes tokens without writing its row once met a row writer in the other order: a deadlock).
  await tx.execute(sql`select 1 from store_usage where id = 1 for update`);
  let tokens = 0;
  for (const r of rows) tokens += r.terms.len;
  if (replace) {
    await tx.execute(
      sql`update word_totals t set rows = t.rows - x.n + ${rows.length}, tokens = t.tokens - x.s + ${tokens}
        from (select count(*) as n, coalesce(sum(fts_len), 0) as s from ${base} where ${key} = any(${ids}::bigint[]) and fts_len is not null) x where t.tbl = ${table.tbl}`,
    );
    await tx.execute(
      // A word no row holds any more goes (drizzle/pg/store/0017): the delete and the decrement touch different rows.
      sql`with gone as (delete from word_postings p where p.tbl = ${table.tbl} and p.rid = any(${ids}::bigint[]) returning p.term),
        counted as (select term, count(*)::int as n from gone group by term),
        dead as (delete from word_terms t using counted c where t.tbl = ${table.tbl} and t.term = c.term and t.rows <= c.n returning t.term)
        update word_terms t set rows = t.rows - c.n from counted c where t.tbl = ${table.tbl} and t.term = c.term and t.rows > c.n`,
    );
  } else await tx.execute(sql`update word_totals set rows = rows + ${rows.length}, tokens = tokens + ${tokens} where tbl = ${table.tbl}`);
  await tx.execute(sql`update ${base} b set fts_len = v.len from unnest(${ids}::bigint[], ${arrayLiteral(rows.map((r) => r.terms.len))}::int[]) as v(id, len) where b.${key} = v.id`);
  const rids: number[] = [];
  const terms: string[] = [];
  const tfs: number[] = [];
  const lens: number[] = [];
  const counts = new Map<string, number>();
  for (const r of rows) {
    for (const [term, tf] of r.terms.tf) {
      rids.push(r.rid);
      terms.push(term);
      tfs.push(tf);
      lens.push(r.terms.len);
      counts.set(term, (counts.get(term) ?? 0) + 1);
    }
  }
  // Large batches go in slices: each slice is a few bound array parameters.
  const SLICE = 50_000;
  for (let i = 0; i < rids.length; i += SLICE) {
    const at = (a: (string | number)[]) => arrayLiteral(a.slice(i, i + SLICE));
    await tx.execute(
      sql`insert into word_postings (tbl, rid, term, tf, len) select ${table.tbl}, * from unnest(${at(rids)}::bigint[], ${at(terms)}::text[], ${at(tfs)}::int[], ${at(lens)}::int[])`,
    );
  }
  const sorted = [...counts.keys()].sort();
  for (let i = 0; i < sorted.length; i += SLICE) {
    const slice = sorted.slice(i, i + SLICE);
    // In token order, so two writers lock the rows they share in the same order.
    await tx.execute(
      sql`insert into word_terms (tbl, term, rows) select ${table.tbl}, term, n from unnest(${arrayLiteral(slice)}::text[], ${arrayLiteral(slice.map((t) => counts.get(t)!))}::int[]) as v(term, n) order by term collate "C"
        on conflict (tbl, term) do update set rows = word_terms.rows + excluded.rows`,
    );
  }
}

/** Store the whole-document tokens of documents just written (their text as ingested), replacing any they had. */
export async function writeDocumentTermsPg({ tx, docs }: { tx: PgStoreTx; docs: { docId: number; path: string; kind: string; text: string; fresh: boolean }[] }): Promise<void> {
  if (docs.length === 0) return;
  const terms = rowTermsOf({ tokenize: DOCUMENT_WORDS.tokenize, columns: DOCUMENT_WORDS.columns, rows: docs.map((d) => documentWordValues(d)) });
  await writeRowTermsPg({ tx, table: DOCUMENT_WORDS, rows: docs.map((d, i) => ({ rid: d.docId, terms: terms[i] })), replace: docs.some((d) => !d.fresh) });
}

export type RowScores = { kind: "scored"; /** bm25 (higher is better) of each asked row the expression matches, by the row's label. */ scores: Map<string, number> } | { kind: "unavailable"; reason: string };

/**
 * FTS5's bm25 (positive: its rank negated) of the rows `among` selects (columns rid bigint, label text) for `words`
 * joined by `mode`, exactly as SQLite's bm25OfRows scores its twin table's rows: one statement.
 */
export async function rowsBm25Pg({ tx, table, words, mode, among }: { tx: PgStoreTx; table: WordTable; words: string[]; mode: "all" | "any"; among: SQL }): Promise<RowScores> {
  const expression = matchExpression(words, mode);
  const plain = expression ? plainPhrases(expression) : null;
  if (!plain) return { kind: "unavailable", reason: "no word to match" };
  const tokens = phraseTokens({ tokenize: table.tokenize, phrases: plain.phrases });
  if (!tokens) return { kind: "unavailable", reason: "a query word is not exactly one token" };
  const unique = arrayLiteral([...new Set(tokens)]);
  const [row] = await rowsOf<{ pending: boolean; rows: string; tokens: string; df: Record<string, number> | null; hits: [string, string, number, number][] }>({
    tx,
    query: sql`select exists (select 1 from ${sql.identifier(table.table)} where fts_len is null) as pending, t.rows, t.tokens,
      (select json_object_agg(f.term, f.rows) from word_terms f where f.tbl = ${table.tbl} and f.term = any(${unique}::text[])) as df,
      (select coalesce(json_agg(json_build_array(a.label, p.term, p.tf, p.len)), '[]'::json) from (${among}) a
        join word_postings p on p.tbl = ${table.tbl} and p.rid = a.rid and p.term = any(${unique}::text[])) as hits
      from word_totals t where t.tbl = ${table.tbl}`,
  });
  if (!row || row.pending) return { kind: "unavailable", reason: `the ${table.tbl} full-text statistics are being built` };
  const rows = Number(row.rows);
  const scores = new Map<string, number>();
  if (rows === 0) return { kind: "scored", scores };
  const avgdl = Number(row.tokens) / rows;
  const { db } = scratchTable({ tokenize: table.tokenize, columns: 1 });
  const idf = tokens.map((t) => ftsIdf(db, rows, row.df?.[t] ?? 0));
  const found = new Map<string, { len: number; tf: Map<string, number> }>();
  for (const [label, term, tf, len] of row.hits) {
    let f = found.get(label);
    if (!f) found.set(label, (f = { len, tf: new Map() }));
    f.tf.set(term, tf);
  }
  for (const [label, f] of found) {
    let score = 0;
    let held = 0;
    // Summed in expression order, as FTS5 sums its phrases.
    for (let i = 0; i < tokens.length; i++) {
      const tf = f.tf.get(tokens[i]) ?? 0;
      if (tf > 0) held++;
      score += bm25Part(idf[i], tf, f.len, avgdl);
    }
    if (plain.mode === "all" ? held === tokens.length : held > 0) scores.set(label, score);
  }
  return { kind: "scored", scores };
}

/**
 * Tokenize up to `batch` documents that have no whole-document statistics yet (a store from before them), in one
 * transaction; answers how many were done. A document's text is its stored content, or rebuilt from its chunks.
 */
export async function backfillDocumentTermsBatchPg({ handle, batch = BACKFILL_BATCH }: { handle: PgStoreHandle; batch?: number }): Promise<number> {
  return withStoreTx({ handle, work: (tx) =>
    withStoreQuotaPg({ tx, store: handle.store, write: async () => {
      const docs = await rowsOf<{ docId: string; path: string; kind: string; bytes: number; content: string | null }>({
        tx,
        query: sql`select doc_id as "docId", path, kind, bytes, content from documents where fts_len is null order by doc_id limit ${batch} for update skip locked`,
      });
      if (docs.length === 0) return 0;
      const spans = await rowsOf<{ docId: string; startByte: number; endByte: number; text: string }>({
        tx,
        query: sql`select doc_id as "docId", start_byte as "startByte", end_byte as "endByte", text from chunks where doc_id = any(${arrayLiteral(docs.map((d) => Number(d.docId)))}::bigint[]) order by doc_id, start_byte`,
      });
      const byDoc = new Map<number, ChunkSpan[]>();
      for (const s of spans) (byDoc.get(Number(s.docId)) ?? byDoc.set(Number(s.docId), []).get(Number(s.docId))!).push(s);
      const texts = docs.map((d) => {
        const own = byDoc.get(Number(d.docId)) ?? [];
        const text = documentBytes({ content: d.content, spans: own, lo: 0, hi: d.content !== null ? d.bytes : Math.max(0, ...own.map((s) => s.endByte)) }).toString("utf8");
        return { docId: Number(d.docId), path: d.path, kind: d.kind, text, fresh: false };
      });
      await writeDocumentTermsPg({ tx, docs: texts });
      return docs.length;
    } }),
  });
}

/** Tokenize every document without whole-document statistics, a batch per transaction; answers how many. */
export async function backfillDocumentTermsPg({ handle, batch = BACKFILL_BATCH }: { handle: PgStoreHandle; batch?: number }): Promise<number> {
  return drainBatches(() => backfillDocumentTermsBatchPg({ handle, batch }));
}

/** Start the whole-document backfill of a store in the background (startBackfillPg). */
export const startDocumentTermsBackfillPg = (handle: PgStoreHandle): void =>
  startBackfillPg({ handle, what: "whole-document full-text statistics", run: () => backfillDocumentTermsPg({ handle }) });

/** A full-text table of remember or recall: a WordTable with the text columns its SQLite twin indexes, in order. */
export type RowWordTable = WordTable & { text: string[] };

/** SQLite: thoughts_fts, kg_node_fts, reasoning_traces_fts, learnings_fts (migrations 0005 and 0008), porter-stemmed. */
export const THOUGHT_WORDS: RowWordTable = { tbl: "thoughts", table: "thoughts", key: "seq", tokenize: "porter unicode61", columns: 1, text: ["content"] };
export const NODE_WORDS: RowWordTable = { tbl: "kg_node", table: "kg_node", key: "seq", tokenize: "porter unicode61", columns: 3, text: ["name", "display_name", "tags"] };
export const TRACE_WORDS: RowWordTable = { tbl: "reasoning_traces", table: "reasoning_traces", key: "id", tokenize: "porter unicode61", columns: 1, text: ["summary_descriptor"] };
export const LEARNING_WORDS: RowWordTable = { tbl: "learnings", table: "learnings", key: "id", tokenize: "porter unicode61", columns: 1, text: ["semantic_handle"] };

/** Store (again) the tokens of rows of `table` by their current text, in the writer's transaction (`lock`: rows read for update). */
export async function refreshRowTermsPg({ tx, table, ids, lock = false }: { tx: PgStoreTx; table: RowWordTable; ids: number[]; lock?: boolean }): Promise<number> {
  if (ids.length === 0) return 0;
  const key = sql.identifier(table.key);
  const cols = sql.join(
    table.text.map((c) => sql.identifier(c)),
    sql`, `,
  );
  const rows = await rowsOf<Record<string, string | null>>({
    tx,
    query: sql`select ${key}::text as rid, ${cols} from ${sql.identifier(table.table)} where ${key} = any(${arrayLiteral(ids)}::bigint[]) order by ${key}${lock ? sql` for update` : sql``}`,
  });
  if (rows.length === 0) return 0;
  const terms = rowTermsOf({ tokenize: table.tokenize, columns: table.columns, rows: rows.map((r) => table.text.map((c) => r[c])) });
  await writeRowTermsPg({ tx, table, rows: rows.map((r, i) => ({ rid: Number(r.rid), terms: terms[i] })), replace: true });
  return rows.length;
}

/** A repository step after rows of `table` were written or their text changed: their tokens on PostgreSQL (FTS5's triggers keep SQLite's). */
export const rowWordsWritten = ({ table, ids }: { table: RowWordTable; ids: number[] }): Op<void> =>
  engineStep({ sqlite: () => undefined, pg: async (tx) => void (await refreshRowTermsPg({ tx, table, ids })) });

/** Tokenize up to `batch` rows of `table` without statistics (written before them), in one transaction; answers how many. */
export async function backfillRowTermsBatchPg({ handle, table, batch = BACKFILL_BATCH }: { handle: PgStoreHandle; table: RowWordTable; batch?: number }): Promise<number> {
  return withStoreTx({
    handle,
    work: (tx) =>
      withStoreQuotaPg({
        tx,
        store: handle.store,
        write: async () => {
          const key = sql.identifier(table.key);
          const ids = await rowsOf<{ rid: string }>({ tx, query: sql`select ${key}::text as rid from ${sql.identifier(table.table)} where fts_len is null order by ${key} limit ${batch} for update skip locked` });
          return refreshRowTermsPg({ tx, table, ids: ids.map((r) => Number(r.rid)) });
        },
      }),
  });
}

/** Tokenize every row of `table` without statistics, a batch per transaction; answers how many. */
export async function backfillRowTermsPg({ handle, table, batch = BACKFILL_BATCH }: { handle: PgStoreHandle; table: RowWordTable; batch?: number }): Promise<number> {
  return drainBatches(() => backfillRowTermsBatchPg({ handle, table, batch }));
}

/** Start the backfill of a table's statistics in the background (startBackfillPg). */
export const startRowTermsBackfillPg = ({ handle, table }: { handle: PgStoreHandle; table: RowWordTable }): void =>
  startBackfillPg({ handle, what: `${table.tbl} full-text statistics`, run: () => backfillRowTermsPg({ handle, table }) });

export type RowsTop = { kind: "ranked"; /** bm25 (higher is better), best first, ties by key. */ hits: { rid: number; score: number }[]; tokens: string[] } | { kind: "unavailable"; reason: string; /** Rows wait for their tokens (the backfill). */ building: boolean };

/**
 * The best `k` rows of `table` for `words` joined by any, by FTS5's bm25: exactly SQLite's
 * `select rowid, bm25(t_fts) … where t_fts match <any> order by rank, rowid limit k` on the same content, the rank
 * negated. Every row holding a query token is scored in the statement that reads its counts through the token index
 * (bm25Part's arithmetic on the same float8 numbers in the same order), only the best k sent back. `only`: a
 * condition on `rid` (the row's key) a row must also meet.
 */
export async function rowsTopBm25Pg({ tx, table, words, k, only }: { tx: PgStoreTx; table: RowWordTable; words: string[]; k: number; only?: SQL }): Promise<RowsTop> {
  const expression = matchExpression(words, "any");
  const plain = expression ? plainPhrases(expression) : null;
  if (!plain) return { kind: "unavailable", reason: "no word to match", building: false };
  const tokens = phraseTokens({ tokenize: table.tokenize, phrases: plain.phrases });
  if (!tokens) return { kind: "unavailable", reason: "a query word is not exactly one token", building: false };
  const unique = [...new Set(tokens)];
  const [totals] = await rowsOf<{ pending: boolean; rows: string; tokens: string; df: (number | null)[] }>({
    tx,
    query: sql`select exists (select 1 from ${sql.identifier(table.table)} where fts_len is null) as pending, t.rows, t.tokens,
      array(select f.rows from unnest(${arrayLiteral(unique)}::text[]) with ordinality as u(term, i) left join word_terms f on f.tbl = ${table.tbl} and f.term = u.term order by u.i) as df
      from word_totals t where t.tbl = ${table.tbl}`,
  });
  if (!totals || totals.pending) return { kind: "unavailable", reason: `the ${table.tbl} full-text statistics are being built`, building: true };
  const rows = Number(totals.rows);
  const dfOf = new Map(unique.map((t, i) => [t, totals.df[i] ?? 0]));
  if (rows === 0 || unique.every((t) => dfOf.get(t)! === 0)) return { kind: "ranked", hits: [], tokens };
  const avgdl = Number(totals.tokens) / rows;
  const { db } = scratchTable({ tokenize: table.tokenize, columns: 1 });
  const idf = tokens.map((t) => ftsIdf(db, rows, dfOf.get(t)!));
  const { score, pivot } = bm25ScoreSql({ tokens, idf, avgdl });
  const live = unique.filter((t) => dfOf.get(t)! > 0);
  const got = await rowsOf<{ rid: string; score: number }>({
    tx,
    query: sql`with p as (select rid, term, tf, len from word_postings where tbl = ${table.tbl} and term = any(${arrayLiteral(live)}::text[])${only ? sql` and (${only})` : sql``}),
      m as (select rid, len, ${pivot} from p group by rid, len)
      select rid, ${score} as score from m order by score desc, rid limit ${k}`,
  });
  return { kind: "ranked", hits: got.map((r) => ({ rid: Number(r.rid), score: Number(r.score) })), tokens };
}
