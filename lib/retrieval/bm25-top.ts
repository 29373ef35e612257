import type Database from "better-sqlite3";
import { runWithinBudget, type QueryBudget } from "../db/query-budget";
import { BoundedMemo } from "./bounded-memo";
import { clearIndexStateMemos, databaseFileOf } from "./fts-tokens";
import { clearSelectiveMatchCaches } from "./selective-match";
import { matchCountUpTo } from "./fts5-bm25";
import { clearWordListMemos, hasReadyWordLists, wordListAnswerState, wordListScores, type RowScores } from "./word-lists";

/**
 * Top-k by FTS5 bm25 for broad queries, exactly, without FTS5 scoring every match: the word lists (word-lists.ts)
 * give every matching row's score, FTS5's to the last bit; here the best are picked. Anything else is the caller's
 * own FTS5 query.
 */

/** A query matching more rows than this is broad: fewer are scored exhaustively by FTS5 itself (cheap). */
export const BROAD_MATCH_ROWS = 2000;

/** One row as `select rowid, bm25(t) as rank … order by rank, rowid` returns it. */
export type Bm25Row = { rowid: number; rank: number };

/** What a broad query did, for explain output. */
export type Bm25Plan = {
  /** `word_lists`: every matching row scored from the table's stored word lists (exact). */
  path: "word_lists";
  /** Rows the expression matches. */
  matches: number;
  detail: string;
};

/**
 * The best rows of broad expressions asked before, kept while the index and its lists stay as they were
 * (wordListAnswerState): a repeated query is a lookup, where the scores behind it (word-lists.ts keeps them too, but
 * at 100k rows 1.6 MB an expression, so only a few dozen) would be computed again. At most RANKED_MEMO_ROWS rows an
 * expression, RANKED_MEMO_ENTRIES expressions (their keys are request text) and RANKED_MEMO_BYTES in all, keys
 * counted; least recently used go first.
 */
export const RANKED_MEMO_ROWS = 1024;
export const RANKED_MEMO_ENTRIES = 2048;
export const RANKED_MEMO_BYTES = 16 * 2 ** 20;
type Ranked = { matches: number; ranked: Bm25Row[] };
const rankedMemos = ((globalThis as unknown as { __dualmindBroadRanked?: BoundedMemo<Ranked> }).__dualmindBroadRanked ??= new BoundedMemo({ entries: RANKED_MEMO_ENTRIES, bytes: RANKED_MEMO_BYTES }));

/** What the ranked memo holds now (tests: its bounds). */
export function rankedMemoSize(): { entries: number; bytes: number } {
  return rankedMemos.size();
}

/** Forget every score and count kept in this process (tests' and benches' "first sight"). */
export function clearFullTextMemos(): void {
  rankedMemos.clear();
  clearWordListMemos();
  clearIndexStateMemos();
  clearSelectiveMatchCaches();
}

/** For a broad plain expression on a table with ready word lists, `top(m)` gives the best m rows exactly as FTS5 ranks them; null: run FTS5. */
export function broadTopByBm25({ db, schema, table, match }: { db: Database.Database; schema: string; table: string; match: string }): { top: (m: number) => Bm25Row[]; plan: Bm25Plan } | null {
  if (!hasReadyWordLists({ db, schema, table })) return null;
  // Read before anything is computed: a write committed meanwhile gives a later state, under which this entry is never read.
  const state = wordListAnswerState({ db, schema, table });
  const memoKey = `${databaseFileOf({ db, schema })}\u0000${schema}\u0000${table}\u0000${match}`;
  const kept = state ? rankedMemos.get(memoKey, state) : undefined;
  if (kept) {
    let whole: ReturnType<typeof broadTopByBm25> | undefined;
    // Deeper than what was kept (a filter dropped many): computed as on a first sight.
    const top = (m: number) => (m <= kept.ranked.length || kept.ranked.length === kept.matches ? kept.ranked.slice(0, m) : (whole ??= broadTopComputed({ db, schema, table, match, state: null, memoKey }))?.top(m) ?? kept.ranked.slice(0, m));
    return { top, plan: planOf(kept.matches, "kept from an earlier identical query under the same index") };
  }
  return broadTopComputed({ db, schema, table, match, state, memoKey });
}

function planOf(matches: number, how?: string): Bm25Plan {
  return { path: "word_lists", matches, detail: `broad query (${matches} matches): exact bm25 from the table's word lists (each common word's rows and counts, kept through writes)${how ? `; ${how}` : ""}` };
}

function broadTopComputed({ db, schema, table, match, state, memoKey }: { db: Database.Database; schema: string; table: string; match: string; state: string | null; memoKey: string }): ReturnType<typeof broadTopByBm25> {
  if (matchCountUpTo({ db, schema, table, match, limit: BROAD_MATCH_ROWS + 1 }) <= BROAD_MATCH_ROWS) return null;
  const listed = wordListScores({ db, schema, table, match });
  if (!listed) return null;
  const matches = listed.ids.length;
  // The ranked prefix grows as callers ask for more.
  let ranked: Bm25Row[] = [];
  const top = (m: number) => {
    if (ranked.length < Math.min(m, matches)) {
      ranked = bestOf(listed, Math.max(m, 2 * ranked.length));
      // A row is an object of two numbers: ~40 bytes in V8.
      if (state) rankedMemos.set({ key: memoKey, state, value: { matches, ranked: ranked.slice(0, RANKED_MEMO_ROWS) }, valueBytes: 40 * Math.min(ranked.length, RANKED_MEMO_ROWS) + 64 });
    }
    return ranked.slice(0, m);
  };
  return { top, plan: planOf(matches) };
}

/** broadTopByBm25 under a request's query budget. */
export function broadTopWithinBudget(args: { db: Database.Database; schema: string; table: string; match: string; budget: QueryBudget }): ReturnType<typeof broadTopByBm25> {
  // A table without ready lists has nothing to rank from them: one indexed read tells, with no budget to arm for it.
  if (!hasReadyWordLists(args)) return null;
  return runWithinBudget({ sqlite: args.db, budget: args.budget, fn: () => broadTopByBm25(args) });
}

/** The best `m` of the rows: score descending, rowid ascending (as `order by bm25, rowid`). */
function bestOf(all: RowScores, m: number): Bm25Row[] {
  if (m <= 0) return [];
  // Only the rows at or above the m-th score (ties included) are sorted.
  const kth = all.ids.length > m ? kthLargest(all.scores, m) : -Infinity;
  const keep: number[] = [];
  for (let i = 0; i < all.scores.length; i++) if (all.scores[i] >= kth) keep.push(i);
  keep.sort((a, b) => all.scores[b] - all.scores[a] || all.ids[a] - all.ids[b]);
  return keep.slice(0, m).map((i) => ({ rowid: all.ids[i], rank: -all.scores[i] }));
}

/** The k-th largest of `values` (1-based), by selection on a copy (Hoare's quickselect: linear on average). */
function kthLargest(values: Float64Array, k: number): number {
  const a = Float64Array.from(values);
  // The k-th largest is the (n − k)-th smallest (0-based).
  const target = a.length - k;
  let lo = 0;
  let hi = a.length - 1;
  while (lo < hi) {
    // Median of three as the pivot: sorted or constant runs stay linear.
    const mid = (lo + hi) >>> 1;
    const pivot = Math.max(Math.min(a[lo], a[mid]), Math.min(Math.max(a[lo], a[mid]), a[hi]));
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else return a[target];
  }
  return a[target];
}
