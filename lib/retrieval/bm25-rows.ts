import type Database from "better-sqlite3";
import { preparedOnce } from "../db/statements";
import { bm25Part, docsizeLength, ftsIdf, ftsTotals } from "./fts5-bm25";
import { memoByIndexState, phraseTokens, scratchCounts, tableShape, tokenStats, vocabTables } from "./fts-tokens";
import { plainPhrases } from "./match";

/**
 * FTS5's bm25 of a few given rows for a plain expression, without scoring
 * every row the expression matches.
 *
 * `order by bm25(t)` scores every match (its positions and length), and
 * asking FTS5 for one row (`match ? and rowid = ?`) recounts every phrase's
 * rows for its idf each time. Group=document
 * search needs the whole-document bm25 of its candidate documents only (a
 * hundred or so). bm25 over a plain expression of one-token phrases is, per
 * row, a sum over the phrases of idf × tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))
 * (fts5_aux.c), so it is computed here from the index's own numbers:
 * - row count and total tokens: the averages record (%_data rowid 1);
 * - each token's row count (idf): fts5vocab 'row';
 * - each listed row's length: %_docsize;
 * - each listed row's count of each token: fts5vocab 'instance', filtered
 *   to the listed rows inside SQLite.
 * The tokens are the ones the table's own tokenizer makes of each phrase (a
 * private in-memory table with the same tokenizer), so they are what FTS5
 * looks up. The cost follows the query tokens' instances in the index, not
 * the rows they match with their positions (bench/results/latest.md has
 * the numbers). Scores are FTS5's to the last bit (fts5-bm25.ts).
 *
 * When the tokens occur more than `maxInstances` times in the index (a
 * broad query: walking their instances costs what ranking every match
 * costs), the counts come from the listed rows' own text instead, when the
 * caller can give it (`texts`): each row's values through a private table
 * with the same tokenizer give its count of each token, as FTS5 stored them,
 * at a cost that follows the rows' size, not the words' frequency. Row count,
 * lengths and idf stay the index's own.
 *
 * Null (the caller ranks the rows its own way) when the expression is not
 * plain, a phrase is not exactly one token, the vocabulary tables cannot be
 * made on the connection, or the tokens occur more than `maxInstances` times
 * in the index and no texts are given (or `texts` declines).
 */

/** Rows whose count of one token, read from their text, is kept per index state (bm25OfRows `texts`). */
const MAX_KNOWN_ROWS = 20_000;

/** Instances of the query's tokens past which scanning them costs more than ranking every match (each costs about what ranking one matching row costs). */
export const MAX_SCANNED_INSTANCES = 20_000;

/**
 * The bm25 score (positive, higher is better; FTS5's rank negated) of each
 * listed row the expression matches, or null (see above). Rows it does not
 * match are absent from the map.
 */
export function bm25OfRows({
  db,
  schema,
  table,
  match,
  rowids,
  maxInstances = MAX_SCANNED_INSTANCES,
  texts,
}: {
  db: Database.Database;
  schema: string;
  table: string;
  match: string;
  rowids: number[];
  maxInstances?: number;
  /** The listed rows' column values (in the table's column order) as they were indexed, or null to decline (too large). */
  texts?: (rowids: number[]) => Map<number, (string | null)[]> | null;
}): Map<number, number> | null {
  const plain = plainPhrases(match);
  if (!plain) return null;
  const out = new Map<number, number>();
  if (rowids.length === 0) return out;
  const vocab = vocabTables({ db, schema, table });
  if (!vocab) return null;
  const { tokenize, columns } = tableShape({ db, schema, table });
  // Each phrase's tokens as the table's tokenizer makes them: exactly one each, or FTS5's phrase semantics are not a sum of single tokens.
  const tokens = phraseTokens({ tokenize, phrases: plain.phrases });
  if (!tokens) return null;
  const totals = ftsTotals({ db, schema, table, columns });
  if (!totals) return null;
  const perToken = new Map<string, { rows: number; instances: number }>();
  let instances = 0;
  for (const t of new Set(tokens)) {
    const r = tokenStats({ db, schema, table, token: t });
    if (!r) return null;
    perToken.set(t, r);
    instances += r.instances;
  }
  const ids = JSON.stringify(rowids);
  const lengths = new Map(
    (preparedOnce({ sqlite: db, sql: `select id, sz from ${schema}.${table}_docsize where id in (select value from json_each(?))` }).all(ids) as { id: number; sz: Buffer }[]).map((r) => [
      r.id,
      docsizeLength(r.sz, columns),
    ]),
  );
  const tf = new Map<string, Map<number, number>>();
  if (instances <= maxInstances) {
    const counts = preparedOnce({ sqlite: db, sql: `select doc, count(*) as n from ${vocab.instance} where term = ? and doc in (select value from json_each(?)) group by doc` });
    for (const t of perToken.keys()) tf.set(t, new Map((counts.all(t, ids) as { doc: number; n: number }[]).map((r) => [r.doc, r.n])));
  } else {
    // Each token's counts in the rows read so far, kept per index state: a query asked again (or another sharing its
    // words) tokenizes only the rows it has not met, so later calls cost lookups, not text.
    const tokenList = [...perToken.keys()];
    const known = tokenList.map((t) => memoByIndexState({ db, schema, table, key: `text-tf\u0000${t}`, compute: () => new Map<number, number>() }));
    // Full: emptied before this query's rows are looked up, so every row it asks for is then read or still known.
    for (const m of known) if (m.size + rowids.length > MAX_KNOWN_ROWS) m.clear();
    const unknown = [...new Set(rowids)].filter((id) => lengths.has(id) && known.some((m) => !m.has(id)));
    if (unknown.length > 0) {
      const values = texts?.(unknown);
      if (!values) return null;
      const counted = scratchCounts({ tokenize, columns, rows: [...values].map(([rowid, v]) => ({ rowid, values: v })), tokens: tokenList });
      // The text must be what was indexed: a row whose token count differs from the index's own record of it (text
      // rebuilt from chunks whose byte ranges went stale, say) would be scored wrongly, so the caller ranks its own way.
      for (const id of unknown) if (!values.has(id) || counted.length.get(id) !== lengths.get(id)) return null;
      tokenList.forEach((t, i) => {
        for (const id of unknown) known[i].set(id, counted.tf.get(id)?.get(t) ?? 0);
      });
    }
    tokenList.forEach((t, i) => tf.set(t, known[i]));
  }

  const avgdl = totals.tokens / totals.rows;
  const idf = tokens.map((t) => ftsIdf(db, totals.rows, perToken.get(t)!.rows));
  for (const rowid of new Set(rowids)) {
    const d = lengths.get(rowid);
    if (d === undefined) continue;
    let found = 0;
    let score = 0;
    // Summed in expression order, as FTS5 sums its phrases.
    for (let i = 0; i < tokens.length; i++) {
      const f = tf.get(tokens[i])!.get(rowid) ?? 0;
      if (f > 0) found++;
      score += bm25Part(idf[i], f, d, avgdl);
    }
    if (plain.mode === "all" ? found === tokens.length : found > 0) out.set(rowid, score);
  }
  return out;
}
