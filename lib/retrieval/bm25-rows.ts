import type Database from "better-sqlite3";
import { preparedOnce } from "../db/statements";
import { bm25Part, docsizeLength, ftsIdf, ftsTotals } from "./fts5-bm25";
import { memoByIndexState, phraseTokens, scratchCounts, tableShape, tokenStats, vocabTables } from "./fts-tokens";
import { plainPhrases } from "./match";

/**
 * FTS5's bm25 of a few given rows for a plain expression, without scoring every row the expression matches
 * (group=document needs the whole-document bm25 of a hundred or so candidates; asking FTS5 for one row recounts
 * every phrase's idf each time). Computed from the index's own numbers (averages record, fts5vocab 'row' and
 * 'instance', %_docsize) with the tokens the table's own tokenizer makes (the scratch table): FTS5's score to the last
 * bit (fts5-bm25.ts), at a cost that follows the query tokens' instances. A broad query (more than `maxInstances`
 * instances) takes each row's counts from its own text (`texts`) instead: a cost that follows the rows' size. A
 * selective one (at most FEW_MATCHES rows match) is ranked by FTS5 itself, every match in one statement.
 * Null (the caller ranks its own way) when the expression is not plain, a phrase is not one token, the vocabulary
 * tables cannot be made, or a broad query has no texts.
 */

/** Rows whose count of one token, read from their text, is kept per index state (bm25OfRows `texts`). */
const MAX_KNOWN_ROWS = 20_000;

/** Instances of the query's tokens past which scanning them costs more than ranking every match (each costs about what ranking one matching row costs). */
export const MAX_SCANNED_INSTANCES = 20_000;

/** Rows a query matches up to which FTS5 itself ranks them all (one capped statement, read before any of the index's numbers). */
export const FEW_MATCHES = 32;

/**
 * The bm25 score (positive, higher is better; FTS5's rank negated) of each
 * listed row the expression matches, or null (see above). Rows it does not
 * match are absent from the map.
 */
export function bm25OfRows({ db, schema, table, match, rowids, maxInstances = MAX_SCANNED_INSTANCES, texts }: { db: Database.Database; schema: string; table: string; match: string; rowids: number[]; maxInstances?: number; /** The listed rows' column values (in the table's column order) as they were indexed, or null to decline (too large). */ texts?: (rowids: number[]) => Map<number, (string | null)[]> | null }): Map<number, number> | null {
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
  // At most FEW_MATCHES rows match: FTS5 ranks them all in one statement, read one row past so that more say so
  // (then the numbers below). No count is read first: the capped read costs what the counts would.
  if (maxInstances > 0) {
    const few = preparedOnce({ sqlite: db, sql: `select rowid, bm25(${table}) as rank from ${schema}.${table} where ${table} match ? limit ${FEW_MATCHES + 1}` }).all(match) as { rowid: number; rank: number }[];
    if (few.length <= FEW_MATCHES) {
      const wanted = new Set(rowids);
      for (const r of few) if (wanted.has(r.rowid)) out.set(r.rowid, -r.rank);
      return out;
    }
  }
  const perToken = new Map<string, { rows: number; instances: number }>();
  let instances = 0;
  for (const t of new Set(tokens)) {
    const r = tokenStats({ db, schema, table, token: t });
    if (!r) return null;
    perToken.set(t, r);
    instances += r.instances;
  }
  const totals = ftsTotals({ db, schema, table, columns });
  if (!totals) return null;
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
