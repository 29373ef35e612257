import { sql, type SQL } from "drizzle-orm";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../../db/pg-store";
import { bm25Part, ftsIdf } from "../../retrieval/fts5-bm25";
import { phraseTokens, scratchTable } from "../../retrieval/fts-tokens";
import { matchExpression, plainPhrases } from "../../retrieval/match";
import { documentBytes, documentTitle, type ChunkSpan } from "../document-fts";
import { blankFrontmatter } from "../frontmatter";
import { withStoreQuotaPg } from "../store-quota";
import { arrayLiteral, BACKFILL_BATCH, drainBatches, rowTermsOf, startBackfillPg, type ChunkTerms } from "./pg-fulltext";

/**
 * FTS5's bm25 on PostgreSQL for the full-text tables other than chunks
 * (whose statistics and top-k are pg-fulltext.ts's): the same numbers,
 * kept in one set of tables for all of them (migration 0014), each row
 * named by its table and key — word_postings (tbl, rid, term, tf, len),
 * word_terms (tbl, term, rows), word_totals (tbl, rows, tokens) — and the
 * row's fts_len (null until its tokens are stored). A table here is the
 * twin of a SQLite FTS5 table: its tokenizer and its columns, made tokens
 * by FTS5 itself at write time (rowTermsOf), so the scores are SQLite's.
 *
 * Scoring is of given rows only (the candidates of a search leg): a row's
 * counts of the query's tokens are a few index lookups (word_postings'
 * primary key), each token's row count one, so the cost follows the rows
 * asked about, not how many rows hold a common word.
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
  // The totals row first: every writer of a table's statistics (this, the delete trigger, the backfill) locks it
  // before any token row, so writers queue on it instead of locking shared token rows in different orders.
  let tokens = 0;
  for (const r of rows) tokens += r.terms.len;
  if (replace) {
    await tx.execute(
      sql`update word_totals t set rows = t.rows - x.n + ${rows.length}, tokens = t.tokens - x.s + ${tokens}
        from (select count(*) as n, coalesce(sum(fts_len), 0) as s from ${base} where ${key} = any(${ids}::bigint[]) and fts_len is not null) x where t.tbl = ${table.tbl}`,
    );
    await tx.execute(
      sql`with gone as (delete from word_postings p where p.tbl = ${table.tbl} and p.rid = any(${ids}::bigint[]) returning p.term),
        counted as (select term, count(*)::int as n from gone group by term)
        update word_terms t set rows = t.rows - c.n from counted c where t.tbl = ${table.tbl} and t.term = c.term`,
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
