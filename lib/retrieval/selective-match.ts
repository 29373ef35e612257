import type Database from "better-sqlite3";
import { preparedOnce } from "../db/statements";
import type { Bm25Row } from "./bm25-top";
import { bm25Bound, bm25Part, ftsIdf, ftsTotals, indexStateOf, matchCountUpTo, rankedByBm25, type Totals } from "./fts5-bm25";
import { databaseFileOf, ftsColumnsOf, ftsTokenizerOf, phraseRowCount, phraseTokens, scratchCounts } from "./fts-tokens";
import { BoundedMemo } from "./bounded-memo";
import { matchExpression } from "./match";

/**
 * The top k of an any-word MATCH by bm25 without FTS5 scoring the rows that only its common words match (remember's
 * and recall's long OR queries; docs/search-and-retrieval.md). bm25 sums idf(word) × a saturating tf part, so rare
 * words weigh most:
 * 1. The rarest words whose rows add up to at most SELECTIVE_ROWS are the selective ones; FTS5 ranks those rows by
 *    their part of the score (the whole query's idf, row count and average length).
 * 2. The best CANDIDATES_PER_K × k are rescored by the whole query with FTS5's numbers (an in-memory FTS5 table with
 *    the same tokenizer), k at a time until no seed left can reach the k-th score.
 * 3. `exact` says whether max-score pruning proves the answer is the whole query's top k (every row left out scores
 *    less); when not, a row matched mostly by common words can be missing (the graph bench measures agreement).
 * 4. When the selective words match fewer than k rows, the rest is the common words' best rows, taken only when
 *    proven exact (withCommonRows).
 * Null (the caller runs the whole query): nothing to prune, the common words' rows cannot be proven, or a small table.
 */

/** Rows FTS5 scores at most for the selective words (a few milliseconds). */
export const SELECTIVE_ROWS = 2_000;
/** Selective rows rescored by the whole query, per row asked for. */
const CANDIDATES_PER_K = 4;
/** Below this many rows a table is scored whole: FTS5 does that in a few milliseconds. */
const MIN_ROWS = 10_000;

export type SelectiveTop = {
  /** The best k rows, as `select rowid, bm25(t) as rank … order by rank, rowid limit k` returns them. */
  rows: Bm25Row[];
  /** Words of the query past the selective ones: scored on the candidates only. */
  common: string[];
  /** Proven to be the whole query's top k (max-score bound); otherwise the best of the candidates. */
  exact: boolean;
};

/**
 * Word → row count per table, reused while the table's row count is within
 * 1% of the one they were counted at: counting a common word walks its whole
 * doclist, and a 1% drift moves its idf by less than 1%.
 */
const rowCounts = new Map<string, { rows: number; counts: Map<string, number> }>();
const MAX_COUNTED_TABLES = 64;
const MAX_COUNTED_WORDS = 50_000;
const MAX_CACHED_WORD = 64;

function rowCountsFor({ db, schema, table, rows }: { db: Database.Database; schema: string; table: string; rows: number }): Map<string, number> {
  const file = databaseFileOf({ db, schema });
  // In-memory databases share no file name: nothing is kept for them.
  if (!file) return new Map();
  const key = `${file}\u0000${schema}\u0000${table}`;
  const cur = rowCounts.get(key);
  if (cur && Math.abs(rows - cur.rows) <= 0.01 * cur.rows && cur.counts.size < MAX_COUNTED_WORDS) return cur.counts;
  const entry = { rows, counts: new Map<string, number>() };
  rowCounts.delete(key);
  rowCounts.set(key, entry);
  while (rowCounts.size > MAX_COUNTED_TABLES) rowCounts.delete(rowCounts.keys().next().value!);
  return entry.counts;
}

/**
 * The top k rows of "any of `terms`" by bm25 among the selective words' best
 * rows, scored as FTS5 scores them, or null when the caller should run the
 * whole query itself (see above).
 * `terms` are words as matchTerms gives them (one token each, unquoted).
 */
export function selectiveTopByBm25(args: { db: Database.Database; schema: string; table: string; terms: string[]; k: number }): SelectiveTop | null {
  const { db, schema, table, terms, k } = args;
  if (terms.length < 2 || k < 1) return null;
  // A repeated query under the same index state (FTS5's structure record, rewritten by every committed change) is answered from its memo.
  const file = databaseFileOf({ db, schema });
  const state = file ? indexStateOf({ db, schema, table }) : null;
  const memoKey = state ? `${file}\u0000${schema}\u0000${table}\u0000${k}\u0000${terms.join("\u0000")}` : null;
  const memo = memoKey && state ? memos.get(memoKey, state) : undefined;
  if (memo !== undefined) return memo;
  const answer = rankFromSelectiveWords(args);
  // A row is an object of two numbers: ~40 bytes in V8.
  if (memoKey && state) memos.set({ key: memoKey, state, value: answer, valueBytes: 40 * (answer?.rows.length ?? 0) + 64 });
  return answer;
}

const memos = new BoundedMemo<SelectiveTop | null>({ entries: 256, bytes: 4 * 2 ** 20 });
/** Seeds the last pruned ranking read and rescored (of CANDIDATES_PER_K × k): for tests and the bench. */
let lastRescored = 0;
export const rescoredByLastRanking = (): number => lastRescored;

/** Forget remembered answers and word row counts (benches measuring a query's first sight). */
export function clearSelectiveMatchCaches(): void {
  memos.clear();
  rowCounts.clear();
}

function rankFromSelectiveWords({ db, schema, table, terms, k }: { db: Database.Database; schema: string; table: string; terms: string[]; k: number }): SelectiveTop | null {
  const columns = ftsColumnsOf({ db, schema, table });
  const totals = ftsTotals({ db, schema, table, columns: columns.length });
  if (!totals || totals.rows < MIN_ROWS) return null;
  const counts = rowCountsFor({ db, schema, table, rows: totals.rows });
  const countUpTo = (phrase: string, limit: number) => matchCountUpTo({ db, schema, table, match: phrase, limit });
  const rowCount = (t: string, limit = Number.MAX_SAFE_INTEGER): number => {
    const known = counts.get(t);
    if (known !== undefined) return known;
    const phrase = matchExpression([t], "any")!;
    // A full count from the index's vocabulary (cheaper for a common word); up to a limit, FTS5 stops at it.
    const full = limit === Number.MAX_SAFE_INTEGER ? phraseRowCount({ db, schema, table, phrase }) : null;
    const n = full ?? countUpTo(phrase, limit);
    // Long words are not kept: the cache is bounded in words, and a query may be thousands of characters.
    if (n < limit && t.length <= MAX_CACHED_WORD) counts.set(t, n);
    return n;
  };
  // The rarest words, while their rows add up to at most SELECTIVE_ROWS (counted only that far).
  const byRows = terms.map((t) => ({ t, n: rowCount(t, SELECTIVE_ROWS + 1) })).sort((a, b) => a.n - b.n);
  const selective: string[] = [];
  let total = 0;
  for (const { t, n } of byRows) {
    if (total + n > SELECTIVE_ROWS) break;
    selective.push(t);
    total += n;
  }
  const common = terms.filter((t) => !selective.includes(t));
  if (selective.length === 0) return rankRowsWithEveryWord({ db, schema, table, terms, k, totals, rowsAtLeast: byRows });
  if (common.length === 0) return null;
  // Expression order, as the whole query has them (FTS5 sums phrases in that order).
  selective.sort((a, b) => terms.indexOf(a) - terms.indexOf(b));

  // FTS5 scores the selective words' rows by their part of the score (same idf, row count and average length).
  const selectiveMatch = matchExpression(selective, "any")!;
  const m = CANDIDATES_PER_K * k;
  // FTS5 finds the rows that hold them now, even a word counted in no row before a write (counts are reused within 1%).
  const seeds = rankedByBm25({ db, schema, table, match: selectiveMatch, m });
  // Fewer than k: every row a rare word holds is a seed, and the rest of the list is FTS5's own ranking of the common
  // words (withCommonRows); the seeds' scores are merged with those, so their idf is counted under this index state.
  const fresh = seeds.length < k;
  // Every statement on the store's connection runs before the work on the private scratch database below, so the
  // caller's time budget (one interrupt of this connection) still covers all of them: the full row counts of the
  // common words (their idf) included.
  const freshCount = (phrase: string) => phraseRowCount({ db, schema, table, phrase }) ?? countUpTo(phrase, Number.MAX_SAFE_INTEGER);
  const rowsOfTerm = terms.map((t) => (fresh ? freshCount(matchExpression([t], "any")!) : rowCount(t)));

  // Whole-query scores of the candidates, from FTS5's own numbers, a batch of k at a time in the seeds' order: once
  // the k-th best so far beats what any seed left could reach (its selective part plus the common words' most), the
  // rest cannot enter the top k and are not read or tokenized (the answer is the one rescoring every seed gives).
  // One rowid lookup each (FTS5 reads the row from its content table); `rowid in (…)` was no faster.
  const readRow = preparedOnce({ sqlite: db, sql: `select rowid, ${columns.map((c) => `"${c.replaceAll('"', '""')}"`).join(", ")} from ${schema}.${table} where rowid = ?`, mode: "raw" });
  const tokenize = ftsTokenizerOf({ db, schema, table });
  const avgdl = totals.tokens / totals.rows;
  const idf = rowsOfTerm.map((n) => ftsIdf(db, totals.rows, n));
  const commonBound = common.reduce((sum, t) => sum + bm25Bound(idf[terms.indexOf(t)]), 0);
  // The query's words' tokens once (each batch below counts them in its rows).
  const tokenOf = phraseTokens({ tokenize, phrases: terms.map((t) => matchExpression([t], "any")!) });
  if (!tokenOf) return null;
  const tokens = [...new Set(tokenOf)];
  const rescored: Bm25Row[] = [];
  let kth = -Infinity;
  for (let from = 0; from < seeds.length; from += k) {
    // Scores agree with FTS5's to ~1e-12; the margin keeps a tie with a seed left out from being decided by rounding.
    if (rescored.length >= k && kth > -seeds[from].rank + commonBound + 1e-9) break;
    const texts: [number, ...(string | null)[]][] = [];
    for (const seed of seeds.slice(from, from + k)) {
      const row = readRow.get(seed.rowid) as [number, ...(string | null)[]] | undefined;
      if (row) texts.push(row);
    }
    const { length, tf } = scratchCounts({ tokenize, columns: columns.length, rows: texts.map(([rowid, ...values]) => ({ rowid, values })), tokens });
    for (const [rowid] of texts) {
      const d = length.get(rowid) ?? 0;
      const freq = tf.get(rowid);
      let score = 0;
      for (let i = 0; i < terms.length; i++) {
        const f = freq?.get(tokenOf[i]) ?? 0;
        score += bm25Part(idf[i], f, d, avgdl);
      }
      rescored.push({ rowid, rank: -1.0 * score });
    }
    rescored.sort((a, b) => a.rank - b.rank || a.rowid - b.rowid);
    if (rescored.length >= k) kth = -rescored[k - 1].rank;
  }
  lastRescored = rescored.length;
  if (fresh) return withCommonRows({ db, schema, table, seeds, rescored, common, k, totals, commonRows: common.map((t) => ({ t, n: rowsOfTerm[terms.indexOf(t)] })) });
  if (rescored.length < k) return null;
  // Max-score bound: whether any row left out could reach the k-th score.
  const leftOutBest = commonBound + (seeds.length === m ? -seeds[m - 1].rank : 0);
  return { rows: rescored.slice(0, k), common, exact: -rescored[k - 1].rank > leftOutBest };
}

/**
 * Fewer than k rows hold a selective word: those rows (every one, `rescored` by the whole query) and the best rows
 * only common words match, asked for k more than the seeds: the every-word tier (rankRowsWithEveryWord) when its
 * max-score bound proves it exact, else for two common words topOfTwoWords. So the answer is the whole query's exact
 * top k; null (the caller scores the whole query) when neither proves it.
 */
function withCommonRows({ db, schema, table, seeds, rescored, common, k, totals, commonRows }: { db: Database.Database; schema: string; table: string; seeds: Bm25Row[]; rescored: Bm25Row[]; common: string[]; k: number; totals: Totals; commonRows: { t: string; n: number }[] }): SelectiveTop | null {
  const want = k + seeds.length;
  const every = rankRowsWithEveryWord({ db, schema, table, terms: common, k: want, totals, rowsAtLeast: commonRows });
  const fill = every?.exact ? every.rows : maxScoreOfTwo();
  function maxScoreOfTwo(): Bm25Row[] | null {
    if (common.length !== 2) return null;
    const [a, b] = common.map((t) => matchExpression([t], "any")!);
    return topOfTwoWords({ db, schema, table, a, b, rowsOfA: commonRows[0].n, rowsOfB: commonRows[1].n, totalRows: totals.rows, m: want });
  }
  if (!fill) return null;
  // A seed keeps its whole-query score; one whose row could not be read is left out, as on the rescoring path.
  const seeded = new Set(seeds.map((r) => r.rowid));
  const rows = [...rescored, ...fill.filter((r) => !seeded.has(r.rowid))].sort((a, b) => a.rank - b.rank || a.rowid - b.rowid).slice(0, k);
  return rows.length < k ? null : { rows, common, exact: true };
}

/**
 * Every word of the query is common: the rows holding every word are the candidates, or, when fewer than k (and three
 * words or more), those holding every word but one — each set's AND matching at most SELECTIVE_ROWS rows. Such a row
 * scores the same under that AND as under the OR of all words (the missing ones add 0, same order), so the rows come
 * out with the whole query's scores. `exact` by the max-score bound: a row left out scores at most (k1+1) × the other
 * words' idf. Otherwise the best rows holding every word, for recall and remember also those of the highest coverage.
 */
function rankRowsWithEveryWord({ db, schema, table, terms, k, totals, rowsAtLeast }: { db: Database.Database; schema: string; table: string; terms: string[]; k: number; totals: Totals; /** Each word's row count, counted up to a limit: at least this many. */ rowsAtLeast: { t: string; n: number }[] }): SelectiveTop | null {
  const countUpTo = (match: string) => matchCountUpTo({ db, schema, table, match, limit: SELECTIVE_ROWS + 1 });
  // Word sets whose rows are ranked: every word, then (when fewer than k rows hold every word) every word but one.
  const sets = [terms];
  const every = countUpTo(matchExpression(terms, "all")!);
  if (every > SELECTIVE_ROWS) return null;
  if (every < k) {
    if (terms.length < 3) return null;
    sets.push(...terms.map((_, i) => terms.filter((_, j) => j !== i)));
  }
  // A row's score under the AND of a word set is its whole-query score when it holds no other query word (the missing
  // words add 0, summed in the same order); otherwise less. So each row's best score over the sets is its own.
  const scores = new Map<number, number>();
  for (const set of sets) {
    const and = matchExpression(set, "all")!;
    if (set !== terms && countUpTo(and) > SELECTIVE_ROWS) return null;
    for (const r of rankedByBm25({ db, schema, table, match: and, m: k })) scores.set(r.rowid, Math.min(scores.get(r.rowid) ?? 0, r.rank));
  }
  if (scores.size < k) return null;
  const rows = [...scores].map(([rowid, rank]) => ({ rowid, rank })).sort((a, b) => a.rank - b.rank || a.rowid - b.rowid).slice(0, k);
  // Max-score bound on the rows left out (holding fewer words): from the counts so far, each word's idf is at most this
  // (idf falls as rows grow; a full count of common words costs more than the answer).
  const idf = rowsAtLeast.map(({ n }) => ftsIdf(db, totals.rows, n)).sort((a, b) => a - b);
  const leftOut = bm25Bound(idf.reduce((a, b) => a + b, 0) - idf[0] - (sets.length > 1 ? idf[1] : 0));
  return { rows, common: terms, exact: -rows[k - 1].rank > leftOut };
}

/**
 * The best m rows of `a OR b` by bm25, exactly as `order by bm25, rowid`
 * ranks them, without FTS5 scoring every row either word matches (max-score
 * over three disjoint FTS5 queries):
 * 1. `a b`: the rows holding both words, scored by FTS5 itself. Their score
 *    under `a OR b` is the same sum of the same two phrases' parts.
 * 2. `a NOT b` and `b NOT a`: a row holding one word scores that word's part
 *    alone (the other adds 0), which is below its bm25Bound. Each is ranked
 *    only when that bound reaches the m-th score so far, rarest word first.
 * The three row sets are disjoint and together are the query's rows, so the
 * merge by (score, rowid) is the exhaustive answer.
 */
function topOfTwoWords({ db, schema, table, a, b, rowsOfA, rowsOfB, totalRows, m }: { db: Database.Database; schema: string; table: string; a: string; b: string; rowsOfA: number; rowsOfB: number; totalRows: number; m: number }): Bm25Row[] {
  const ranked = (match: string, n: number) => rankedByBm25({ db, schema, table, match, m: n });
  const oneWord = [
    { match: `${a} NOT ${b}`, bound: bm25Bound(ftsIdf(db, totalRows, rowsOfA)) },
    { match: `${b} NOT ${a}`, bound: bm25Bound(ftsIdf(db, totalRows, rowsOfB)) },
  ].sort((x, y) => y.bound - x.bound);
  let rows = ranked(`${a} ${b}`, m);
  for (const one of oneWord) {
    // Scores agree with FTS5's own to the last bit; the margin keeps a row at the bound from being decided by rounding.
    if (rows.length >= m && -rows[m - 1].rank > one.bound + 1e-9) continue;
    rows = [...rows, ...ranked(one.match, m)].sort((x, y) => x.rank - y.rank || x.rowid - y.rowid).slice(0, m);
  }
  return rows;
}
