import DatabaseCtor from "better-sqlite3";
import type Database from "better-sqlite3";
import { isRequestReader } from "../db/connection";
import { runWithinBudget, startQueryBudget, type QueryBudget } from "../db/query-budget";
import { preparedOnce } from "../db/statements";
import { phraseTokens, tableShape, vocabTables } from "./fts-tokens";
import { clearWordListMemos, wordListScores } from "./word-lists";

/**
 * Top-k by FTS5 bm25 for broad queries, exactly, without FTS5 scoring every
 * match each time.
 *
 * FTS5 answers `order by bm25(t) limit k` by scoring every matching row
 * (~5–10 µs a row: positions plus a docsize lookup), so a query whose words
 * occur in most rows costs the same whether it asks for 10 rows or all of
 * them (1–6 s over 100k chunks). bm25 is a sum over the expression's phrases
 * of idf(phrase) × f(tf, row length), with idf, row count and average length
 * the same in every row, so a plain expression's score is the sum of its
 * phrases' single-phrase scores, in expression order, to the last bit. Here
 * each broad phrase's scores are computed once per index state (one FTS5
 * pass over that phrase, kept in memory, sorted by rowid) and a query over
 * them is a merge (intersection for `all`, union for `any`) plus a heap: a
 * few milliseconds at 100k, and the same ranking as the exhaustive query.
 *
 * The cache follows the index: its key is the database file and table, and
 * an entry is valid only while the table's FTS5 structure record (rewritten
 * by every committed change, from any connection or process) is the one it
 * was built under. A phrase's scores are built the second time the phrase
 * takes part in a broad query under the same index state, and only when its
 * rows are at most BUILD_RATIO times the query's matches (at most
 * MAX_PHRASES_BUILT per query), so a one-off query, a store being written
 * between queries, or an AND of common words that rarely meet runs the
 * exhaustive query instead. The building query costs about twice that
 * query (measured: 1.3–2.1 s vs 0.6–1.1 s for two words in all 100k rows on
 * a loaded machine); every later one a few milliseconds.
 *
 * That is the `legacy` planner. Its building call was issue 19's cliff (over
 * the 1 s budget at 100k chunks), so the default (`off_path`,
 * broadTopOffPath) builds big phrases between requests instead, ranks a
 * two-word any query by max-score over FTS5 meanwhile, and reads cached
 * phrases with the threshold algorithm.
 */

/** A query matching more rows than this is broad: fewer are scored exhaustively by FTS5 itself (cheap). */
export const BROAD_MATCH_ROWS = 2000;
/** Memory for cached phrase scores, all databases together (16 bytes a matching row); least recently used go first. */
export const PHRASE_CACHE_BYTES = 64 * 2 ** 20;

/** One row as `select rowid, bm25(t) as rank … order by rank, rowid` returns it. */
export type Bm25Row = { rowid: number; rank: number };

/** What a broad query did, for explain output. */
export type Bm25Plan = {
  /**
   * `word_lists`: scored from the table's stored word lists (word-lists.ts; exact); `phrase_scores`: merged from per-phrase scores (exact); `max_score`: FTS5 ranked the rows holding both words, and
   * the rows holding one word only when they could still reach the k-th score (exact); `exhaustive`: the caller's own FTS5 query.
   */
  path: "word_lists" | "phrase_scores" | "max_score" | "exhaustive";
  /** Rows the expression matches (exact on the phrase-score path; `> BROAD_MATCH_ROWS` is all that is known otherwise). */
  matches: number | null;
  /** Phrases whose scores were built by this query (the rest came from the cache). */
  built: number;
  detail: string;
};

/** A plain expression: quoted phrases joined all by spaces (AND) or all by OR, as matchExpression builds them. */
export function plainPhrases(match: string): { phrases: string[]; mode: "all" | "any" } | null {
  const phrases: string[] = [];
  const seps: string[] = [];
  let i = 0;
  while (i < match.length) {
    if (phrases.length > 0) {
      if (match.startsWith(" OR ", i)) {
        seps.push("OR");
        i += 4;
      } else if (match[i] === " ") {
        seps.push("AND");
        i += 1;
      } else return null;
    }
    if (match[i] !== '"') return null;
    let j = i + 1;
    for (; j < match.length; j++) {
      if (match[j] === '"') {
        if (match[j + 1] === '"') j++;
        else break;
      }
    }
    if (j >= match.length) return null;
    phrases.push(match.slice(i, j + 1));
    i = j + 1;
  }
  if (phrases.length === 0 || new Set(seps).size > 1) return null;
  return { phrases, mode: seps[0] === "OR" ? "any" : "all" };
}

export type PhraseScores = { ids: Float64Array; scores: Float64Array };
type CacheEntry = { state: string; scores: PhraseScores; bytes: number };

const globalCache = globalThis as unknown as { __dualmindPhraseScores?: { entries: Map<string, CacheEntry>; seen: Map<string, string>; bytes: number } };
const cache = (globalCache.__dualmindPhraseScores ??= { entries: new Map(), seen: new Map(), bytes: 0 });

/** Forget every cached phrase score (tests; a cache entry is otherwise only ever replaced or evicted). */
export function clearPhraseScoreCache(): void {
  clearWordListMemos();
  cache.entries.clear();
  cache.seen.clear();
  memos.clear();
  rowCounts.clear();
  stateMemos.clear();
  buildQueue.length = 0;
  buildsQueued.clear();
  cache.bytes = 0;
}

function remember(key: string, entry: CacheEntry): void {
  const old = cache.entries.get(key);
  if (old) {
    cache.bytes -= old.bytes;
    cache.entries.delete(key);
  }
  if (entry.bytes > PHRASE_CACHE_BYTES) return;
  for (const [k, e] of cache.entries) {
    if (cache.bytes + entry.bytes <= PHRASE_CACHE_BYTES) break;
    cache.entries.delete(k);
    cache.bytes -= e.bytes;
  }
  cache.entries.set(key, entry);
  cache.bytes += entry.bytes;
}

function cached(key: string, state: string): PhraseScores | null {
  const e = cache.entries.get(key);
  if (!e || e.state !== state) return null;
  // Map order is recency order: touch on use.
  cache.entries.delete(key);
  cache.entries.set(key, e);
  return e.scores;
}

/** Every row matching one phrase with its single-phrase bm25 score (positive, higher is better), by rowid. */
function scorePhrase({ db, schema, table, phrase }: { db: Database.Database; schema: string; table: string; phrase: string }): PhraseScores {
  const rows = db.prepare(`select rowid, bm25(${table}) from ${schema}.${table} where ${table} match ? order by rowid`).raw().all(phrase) as [number, number][];
  const ids = new Float64Array(rows.length);
  const scores = new Float64Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    ids[i] = rows[i][0];
    scores[i] = -rows[i][1];
  }
  return { ids, scores };
}

/** Rowids and summed scores of the rows matching all (intersection) or any (union) of the phrases, by rowid. */
function combine(lists: PhraseScores[], mode: "all" | "any"): PhraseScores {
  const n = lists.length;
  const pos = new Int32Array(n);
  if (mode === "all") {
    // Walk the shortest list; the others only move forward (all are sorted by rowid).
    let shortest = 0;
    for (let li = 1; li < n; li++) if (lists[li].ids.length < lists[shortest].ids.length) shortest = li;
    const base = lists[shortest].ids;
    const ids = new Float64Array(base.length);
    const scores = new Float64Array(base.length);
    let out = 0;
    outer: for (let r = 0; r < base.length; r++) {
      const id = base[r];
      for (let li = 0; li < n; li++) {
        const l = lists[li].ids;
        let p = pos[li];
        while (p < l.length && l[p] < id) p++;
        pos[li] = p;
        if (p === l.length) break outer;
        if (l[p] !== id) continue outer;
      }
      // FTS5 adds phrase scores in expression order, starting from 0: do the same for the same double.
      let sum = 0;
      for (let li = 0; li < n; li++) sum += lists[li].scores[pos[li]];
      ids[out] = id;
      scores[out++] = sum;
    }
    return { ids: ids.subarray(0, out), scores: scores.subarray(0, out) };
  }
  let total = 0;
  for (const l of lists) total += l.ids.length;
  const ids = new Float64Array(total);
  const scores = new Float64Array(total);
  let out = 0;
  for (;;) {
    let next = Infinity;
    for (let li = 0; li < n; li++) if (pos[li] < lists[li].ids.length && lists[li].ids[pos[li]] < next) next = lists[li].ids[pos[li]];
    if (next === Infinity) break;
    let sum = 0;
    for (let li = 0; li < n; li++) if (pos[li] < lists[li].ids.length && lists[li].ids[pos[li]] === next) sum += lists[li].scores[pos[li]++];
    ids[out] = next;
    scores[out++] = sum;
  }
  return { ids: ids.subarray(0, out), scores: scores.subarray(0, out) };
}

/** How many rows match all (intersection) or any (union) of the lists: a merge of their sorted rowids, nothing allocated. */
function countCombined(lists: PhraseScores[], mode: "all" | "any"): number {
  if (lists.length === 1) return lists[0].ids.length;
  const pos = new Int32Array(lists.length);
  let n = 0;
  for (;;) {
    let next = Infinity;
    let live = 0;
    for (let li = 0; li < lists.length; li++) {
      if (pos[li] < lists[li].ids.length) {
        live++;
        if (lists[li].ids[pos[li]] < next) next = lists[li].ids[pos[li]];
      }
    }
    if (next === Infinity || (mode === "all" && live < lists.length)) return n;
    let holding = 0;
    for (let li = 0; li < lists.length; li++) {
      if (pos[li] < lists[li].ids.length && lists[li].ids[pos[li]] === next) {
        holding++;
        pos[li]++;
      }
    }
    if (mode === "any" || holding === lists.length) n++;
  }
}

/** A phrase's rows by score descending, rowid ascending (indices into ids/scores), made once per cached list. */
const scoreOrders = new WeakMap<PhraseScores, Int32Array>();
/** A phrase list's rows in score order (best first, rowid ascending on ties): the head thresholdTop reads (exported for tests). */
export function scoreOrderOf(list: PhraseScores): Int32Array {
  let order = scoreOrders.get(list);
  if (!order) {
    const { ids, scores } = list;
    const n = ids.length;
    // Only the head is ever read (thresholdTop stops within ORDER_DEPTH rows of a list): past that, the rows scoring at
    // least the ORDER_DEPTH-th best (ties included, so the head is exact), found in linear time, then sorted.
    const cut = n > ORDER_DEPTH ? kthLargest(scores, ORDER_DEPTH) : -Infinity;
    let kept = 0;
    for (let i = 0; i < n; i++) if (scores[i] >= cut) kept++;
    order = new Int32Array(kept);
    for (let i = 0, j = 0; i < n; i++) if (scores[i] >= cut) order[j++] = i;
    order.sort((x, y) => scores[y] - scores[x] || ids[x] - ids[y]);
    scoreOrders.set(list, order);
  }
  return order;
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

/** Position of `id` in a list's sorted rowids, or -1. */
export function indexOfRow(ids: Float64Array, id: number): number {
  let lo = 0;
  let hi = ids.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid] < id) lo = mid + 1;
    else if (ids[mid] > id) hi = mid - 1;
    else return mid;
  }
  return -1;
}

/** Rows the threshold algorithm looks at, at most, per row asked for, before the whole merge is cheaper. */
const THRESHOLD_ROWS_PER_ASKED = 64;
/** Most rows asked of thresholdTop (a page of documents' chunks); deeper asks (offsets, filters) take the merge's heap. */
const THRESHOLD_MAX_ASKED = 1024;
/** Rows of a list's score order thresholdTop can read: it gives up once it has met more rows than its limit. */
export const ORDER_DEPTH = THRESHOLD_ROWS_PER_ASKED * THRESHOLD_MAX_ASKED + 2;

/**
 * The best m rows of the lists' combination by the threshold algorithm
 * (Fagin et al.): walk every list in score order, one depth at a time; each
 * row met is scored whole (its score in each list, found by rowid, summed in
 * list order as `combine` does: the same double); stop once the m-th best
 * beats the sum of the scores at the current depth, which bounds every row
 * not met yet. Exact, and it reads the lists' heads only: the cost follows
 * how deep the answer lies, not how many rows match. Null when that is deep
 * (more than THRESHOLD_ROWS_PER_ASKED × m rows met): the merge does it then.
 */
function thresholdTop(lists: PhraseScores[], mode: "all" | "any", m: number): Bm25Row[] | null {
  const orders = lists.map(scoreOrderOf);
  const longest = Math.max(...lists.map((l) => l.ids.length));
  const limit = Math.max(4096, THRESHOLD_ROWS_PER_ASKED * m);
  const seen = new Set<number>();
  const best: Bm25Row[] = [];
  const better = (a: Bm25Row, b: Bm25Row) => a.rank < b.rank || (a.rank === b.rank && a.rowid < b.rowid);
  for (let d = 0; d < longest; d++) {
    let threshold = 0;
    for (let li = 0; li < lists.length; li++) {
      const { ids, scores } = lists[li];
      // An intersection is over once one list is: every row of it has been met.
      if (d >= ids.length) {
        if (mode === "all") return finish(best, m);
        continue;
      }
      // Past the head kept in score order (never, within the limit below; kept as a guard): the merge answers.
      if (d >= orders[li].length) return null;
      const at = orders[li][d];
      threshold += scores[at];
      const id = ids[at];
      if (seen.has(id)) continue;
      seen.add(id);
      if (seen.size > limit) return null;
      let sum = 0;
      let held = 0;
      for (let lj = 0; lj < lists.length; lj++) {
        const k = lj === li ? at : indexOfRow(lists[lj].ids, id);
        if (k < 0) continue;
        sum += lists[lj].scores[k];
        held++;
      }
      if (mode === "all" && held < lists.length) continue;
      // Kept sorted by insertion: m is small (a page, or a few hundred documents).
      const row = { rowid: id, rank: -sum };
      if (best.length < m) best.push(row);
      else if (better(row, best[m - 1])) best[m - 1] = row;
      else continue;
      for (let i = best.length - 1; i > 0 && better(best[i], best[i - 1]); i--) [best[i], best[i - 1]] = [best[i - 1], best[i]];
    }
    // A row not met yet scores at most the threshold; strictly below it, it cannot displace the m-th (ties go by rowid).
    if (best.length >= m && -best[m - 1].rank > threshold) return finish(best, m);
  }
  return finish(best, m);
}

const finish = (best: Bm25Row[], m: number) => best.slice(0, m);

/** The best `m` of the combined rows: score descending, rowid ascending (as `order by bm25, rowid`). */
function bestOf(all: PhraseScores, m: number): Bm25Row[] {
  // Many rows, few asked for: only the rows at or above the m-th score (ties included) go through the heap.
  if (m > 0 && all.ids.length > 8 * m) {
    const kth = kthLargest(all.scores, m);
    const keep: number[] = [];
    for (let i = 0; i < all.scores.length; i++) if (all.scores[i] >= kth) keep.push(i);
    if (keep.length < all.ids.length) return bestOf({ ids: Float64Array.from(keep, (i) => all.ids[i]), scores: Float64Array.from(keep, (i) => all.scores[i]) }, m);
  }
  const { ids, scores } = all;
  const worse = (a: number, b: number) => scores[a] < scores[b] || (scores[a] === scores[b] && ids[a] > ids[b]);
  // A heap of indices whose root is the worst kept row.
  const heap: number[] = [];
  const up = (i: number) => {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!worse(heap[i], heap[p])) break;
      [heap[i], heap[p]] = [heap[p], heap[i]];
      i = p;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let w = i;
      if (l < heap.length && worse(heap[l], heap[w])) w = l;
      if (r < heap.length && worse(heap[r], heap[w])) w = r;
      if (w === i) break;
      [heap[i], heap[w]] = [heap[w], heap[i]];
      i = w;
    }
  };
  for (let i = 0; i < ids.length; i++) {
    if (heap.length < m) {
      heap.push(i);
      up(heap.length - 1);
    } else if (m > 0 && worse(heap[0], i)) {
      heap[0] = i;
      down(0);
    }
  }
  heap.sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0));
  return heap.map((i) => ({ rowid: ids[i], rank: -scores[i] }));
}

/** The file behind an attached schema ('' for an in-memory or temporary database, which is never cached). */
function fileOf(db: Database.Database, schema: string): string {
  return (preparedOnce(db, "select file from pragma_database_list where name = ?").get(schema) as { file: string } | undefined)?.file ?? "";
}

/** Phrases scored per query at most: an OR of many common words is left to the exhaustive query. */
export const MAX_PHRASES_BUILT = 4;
/** A phrase is scored only if it matches at most this many times the rows its query matches. */
const BUILD_RATIO = 3;

/**
 * For a broad plain expression (more than BROAD_MATCH_ROWS matches), the
 * matching rows ranked by bm25 exactly as FTS5 ranks them, served from
 * per-phrase scores: `top(m)` gives the best m (callers that filter ask for
 * more until enough pass). Null when the caller should run its own
 * exhaustive FTS5 query: the expression is not plain (syntax=fts5 operators),
 * matches few rows, the database is in memory, or a phrase's scores are not
 * worth building yet (first sighting under this index state, or too many).
 * `build` runs the one-off scoring of a phrase (callers give it its own time
 * budget: it is work for later queries too); if it throws, this query is
 * answered exhaustively and the phrase is not tried again in this index state.
 * `requester` names the request asking (its query budget): it never runs a
 * slice of builds it queued itself (helpBuild).
 */
export function broadTopByBm25(args: { db: Database.Database; schema: string; table: string; match: string; build?: <T>(fn: () => T) => T; sizes?: BuildSizes; requester?: object }): { top: (m: number) => Bm25Row[]; plan: Bm25Plan } | null {
  return broadPlanner === "legacy" ? broadTopLegacy(args) : broadTopOffPath(args);
}

/**
 * Which planner answers broad queries. `off_path` (the default): a broad
 * query's phrase scores are built off the request path, a slice at a time,
 * and until they are ready a two-word any query is ranked by max-score
 * (maxScoreTopOfTwo); `legacy`: built on the request path on a query's
 * second sighting, as before issue 19's cliff (kept so the bench times both
 * in one run).
 */
export type BroadPlanner = "off_path" | "legacy";
let broadPlanner: BroadPlanner = "off_path";

/** Bench only: which planner answers broad queries from now on; returns the one it replaces. */
export function setBroadPlanner(planner: BroadPlanner): BroadPlanner {
  const before = broadPlanner;
  broadPlanner = planner;
  return before;
}

/** The planner before issue 19's cliff: phrase scores built on the request path on a query's second sighting. */
function broadTopLegacy({
  db,
  schema,
  table,
  match,
  build = (fn) => fn(),
}: {
  db: Database.Database;
  schema: string;
  table: string;
  match: string;
  build?: <T>(fn: () => T) => T;
}): { top: (m: number) => Bm25Row[]; plan: Bm25Plan } | null {
  const plain = plainPhrases(match);
  if (!plain) return null;
  const file = fileOf(db, schema);
  if (!file) return null;
  // Rewritten by every committed change to the index (FTS5's structure record, rowid 10 of the %_data table).
  const block = (preparedOnce(db, `select block from ${schema}.${table}_data where id = 10`).get() as { block: Buffer } | undefined)?.block;
  if (!block) return null;
  const state = block.toString("base64");
  const keyOf = (phrase: string) => `${file}\u0000${table}\u0000${phrase}`;
  const memoKey = `${keyOf(match)}\u0000${plain.mode}`;
  const memo = memos.get(memoKey);
  if (memo && memo.state === state) return { top: memo.top, plan: memo.plan ?? { path: "phrase_scores", matches: memo.matches, built: 0, detail: planDetail(memo.matches, 0) } };

  const counter = preparedOnce(db, `select count(*) as n from (select 1 from ${schema}.${table} where ${table} match ? limit ?)`);
  const count = { get: (m: string, limit: number) => (counter.get(m, limit) as { n: number }).n };
  const matching = count.get(match, BROAD_MATCH_ROWS + 1);
  if (matching <= BROAD_MATCH_ROWS) return null;
  const lists: (PhraseScores | null)[] = plain.phrases.map((p) => cached(keyOf(p), state));
  const missing = plain.phrases.filter((_, i) => !lists[i]);
  const refused = cache.seen.get(memoKey) === `${state}!`;
  const readyToBuild = !refused && missing.length <= MAX_PHRASES_BUILT && missing.every((p) => cache.seen.get(keyOf(p)) === state);
  if (!readyToBuild) {
    for (const p of missing) cache.seen.set(keyOf(p), state);
    while (cache.seen.size > 10_000) cache.seen.delete(cache.seen.keys().next().value!);
    return null;
  }
  // Scoring a phrase costs what ranking its own rows costs: worth it when they are not many more than the query's matches
  // (always for `any`; for `all` of common words whose rows mostly overlap). Otherwise not again in this index state.
  const matches = count.get(match, Number.MAX_SAFE_INTEGER);
  for (const p of missing) {
    if (count.get(p, BUILD_RATIO * matches + 1) > BUILD_RATIO * matches) {
      cache.seen.set(memoKey, `${state}!`);
      return null;
    }
  }
  for (let i = 0; i < lists.length; i++) {
    if (lists[i]) continue;
    const key = keyOf(plain.phrases[i]);
    let scores: PhraseScores;
    try {
      scores = build(() => scorePhrase({ db, schema, table, phrase: plain.phrases[i] }));
    } catch {
      // Too costly to build now: not again for this expression until the index changes ('!' never equals a state).
      cache.seen.set(memoKey, `${state}!`);
      return null;
    }
    remember(key, { state, scores, bytes: scores.ids.byteLength + scores.scores.byteLength });
    cache.seen.delete(key);
    lists[i] = scores;
  }
  const all = combine(lists as PhraseScores[], plain.mode);
  const plan: Bm25Plan = { path: "phrase_scores", matches: all.ids.length, built: missing.length, detail: planDetail(all.ids.length, missing.length) };
  // The ranked prefix grows as callers ask for more; a repeated query reads it from here.
  let ranked: Bm25Row[] = [];
  const top = (m: number) => {
    if (ranked.length < Math.min(m, all.ids.length)) ranked = bestOf(all, Math.max(m, 2 * ranked.length));
    return ranked.slice(0, m);
  };
  memos.set(memoKey, { state, top, matches: all.ids.length });
  while (memos.size > MAX_MEMOS) memos.delete(memos.keys().next().value!);
  return { top, plan };
}

/** Missing phrase rows scored inline, on a query's second sighting (a few tens of ms); more are built off the request path. */
export const INLINE_BUILD_ROWS = 20_000;
/** Rows of one phrase scored per background slice (~20–50 ms at 100k chunks), so a request waits at most one slice. */
export const BUILD_SLICE_ROWS = 16_384;
/** Off the request path, a phrase is worth scoring if it matches at most this many times the rows its query matches. */
const OFF_PATH_BUILD_RATIO = 10;
/**
 * Phrases waiting to be scored between requests, at most: a flood of new broad queries queues this much work and no
 * more (each build is seconds of CPU at 1M rows); a phrase turned away is queued by a later query once there is room.
 */
export const MAX_QUEUED_BUILDS = 32;
/** Bytes a cached phrase costs per row at most (rowid, score, score order: bytesOf). */
const BYTES_PER_CACHED_ROW = 20;
/** Where the off-path planner builds phrase scores inline, how big its slices are and how many may wait (tests use small ones on small stores). */
export type BuildSizes = { inlineRows?: number; sliceRows?: number; maxQueued?: number };

/** Phrases queued to be scored between requests (tests). */
export function queuedPhraseBuilds(): number {
  return buildQueue.length;
}

/**
 * The off-path planner (default). Broad queries are answered exactly, and
 * no request pays for building the phrase scores of a big store:
 * - every phrase cached under this index state: ranked from them by the
 *   threshold algorithm (thresholdTop), or merged whole when the answer lies deep;
 * - otherwise the missing phrases' scores are built off the request path
 *   (scheduleBuild: background slices of BUILD_SLICE_ROWS rows, between
 *   requests), or inline on the query's second sighting when they are few
 *   (at most INLINE_BUILD_ROWS rows: a small store, as before);
 * - meanwhile a two-word any query is ranked by max-score (maxScoreTopOfTwo),
 *   and the rest by the caller's exhaustive FTS5 query (null).
 * Measured at 100k chunks (bench/results/latest.md, branch cliff19): the
 * legacy second call built both phrases inside the request (0.4–1.8 s), over
 * the 1 s budget for two common words.
 */
function broadTopOffPath({
  db,
  schema,
  table,
  match,
  build = (fn) => fn(),
  sizes: { inlineRows = INLINE_BUILD_ROWS, sliceRows = BUILD_SLICE_ROWS, maxQueued = MAX_QUEUED_BUILDS } = {},
  requester,
}: {
  db: Database.Database;
  schema: string;
  table: string;
  match: string;
  build?: <T>(fn: () => T) => T;
  sizes?: BuildSizes;
  requester?: object;
}): { top: (m: number) => Bm25Row[]; plan: Bm25Plan } | null {
  const plain = plainPhrases(match);
  if (!plain) return null;
  const file = fileOf(db, schema);
  if (!file) return null;
  const state = indexStateOf(db, schema, table);
  if (!state) return null;
  const keyOf = (phrase: string) => `${file}\u0000${table}\u0000${phrase}`;
  const memoKey = `${keyOf(match)}\u0000${plain.mode}`;
  const memo = memos.get(memoKey);
  if (memo && memo.state === state) return { top: memo.top, plan: memo.plan ?? { path: "phrase_scores", matches: memo.matches, built: 0, detail: planDetail(memo.matches, 0) } };

  const counter = preparedOnce(db, `select count(*) as n from (select 1 from ${schema}.${table} where ${table} match ? limit ?)`);
  const countUpTo = (m: string, limit: number) => (counter.get(m, limit) as { n: number }).n;
  if (countUpTo(match, BROAD_MATCH_ROWS + 1) <= BROAD_MATCH_ROWS) return null;
  // The table's word lists, when it has them: every matching row scored from stored counts (exact, a few milliseconds).
  const listed = wordListScores({ db, schema, table, match });
  if (listed) {
    const matches = listed.ids.length;
    let ranked: Bm25Row[] = [];
    const top = (m: number) => {
      if (ranked.length >= Math.min(m, matches)) return ranked.slice(0, m);
      ranked = bestOf(listed, Math.max(m, 2 * ranked.length));
      return ranked.slice(0, m);
    };
    const plan: Bm25Plan = { path: "word_lists", matches, built: 0, detail: `broad query (${matches} matches): exact bm25 from the table's word lists (each common word's rows and counts, kept through writes)` };
    memos.set(memoKey, { state, top, matches, plan });
    while (memos.size > MAX_MEMOS) memos.delete(memos.keys().next().value!);
    return { top, plan };
  }
  // Each phrase's row count under this index state (its idf; what scoring it costs), counted once.
  const rowsOf = (phrase: string) => {
    const key = `${keyOf(phrase)}\u0000rows`;
    const known = rowCounts.get(key);
    if (known && known.state === state) return known.n;
    const n = phraseRowCount({ db, schema, table, phrase }) ?? countUpTo(phrase, Number.MAX_SAFE_INTEGER);
    rowCounts.delete(key);
    rowCounts.set(key, { state, n });
    while (rowCounts.size > MAX_ROW_COUNTS) rowCounts.delete(rowCounts.keys().next().value!);
    return n;
  };

  const lists: (PhraseScores | null)[] = plain.phrases.map((p) => cached(keyOf(p), state));
  const missing = plain.phrases.filter((_, i) => !lists[i]);
  let building = false;
  if (missing.length > 0 && missing.length <= MAX_PHRASES_BUILT && cache.seen.get(memoKey) !== `${state}!`) {
    // Counted only up to what is built inline: a common word's full count is the background's work (or max-score's).
    const upTo = missing.map((p) => countUpTo(p, inlineRows + 1));
    const inline = upTo.reduce((a, b) => a + b, 0) <= inlineRows;
    // Scoring a phrase costs what ranking its own rows costs: worth it for `any` (its rows are the query's), and for `all`
    // of words whose rows mostly meet; a phrase far more common than the query's matches is left to the exhaustive query.
    const worth = (most: number) => plain.mode === "any" || countUpTo(match, Math.ceil(most / OFF_PATH_BUILD_RATIO) + 1) > most / OFF_PATH_BUILD_RATIO;
    const refuse = () => void cache.seen.set(memoKey, `${state}!`);
    if (inline && !worth(Math.max(...upTo))) {
      refuse();
    } else if (inline && missing.every((p) => cache.seen.get(keyOf(p)) === state)) {
      for (let i = 0; i < lists.length; i++) {
        if (lists[i]) continue;
        try {
          lists[i] = build(() => scorePhrase({ db, schema, table, phrase: plain.phrases[i] }));
        } catch {
          refuse();
          break;
        }
        remember(keyOf(plain.phrases[i]), { state, scores: lists[i]!, bytes: bytesOf(lists[i]!) });
        cache.seen.delete(keyOf(plain.phrases[i]));
      }
    } else if (!inline && !isRequestReader(db)) {
      // Whether it is worth it is decided by the first slice, off the request path, from the words' full counts: and a
      // list that could not stay in the cache beside others (over half of it) would be built only to be dropped.
      // The query's lists together: built one by one, each would evict the others and be queued again forever.
      const fits = () => plain.phrases.reduce((sum, p) => sum + rowsOf(p), 0) * BYTES_PER_CACHED_ROW <= PHRASE_CACHE_BYTES / 2;
      const worthBuilding = () => (fits() && worth(Math.max(...missing.map(rowsOf)))) || (refuse(), false);
      // Explain promises the scores only when every missing one is queued.
      building = missing.map((phrase) => scheduleBuild({ db, schema, table, phrase, key: keyOf(phrase), state, sliceRows, worthBuilding, requester }, maxQueued)).every(Boolean);
      helpBuild(requester);
      for (let i = 0; i < lists.length; i++) lists[i] ??= cached(keyOf(plain.phrases[i]), state);
    } else {
      for (const p of missing) cache.seen.set(keyOf(p), state);
      while (cache.seen.size > 10_000) cache.seen.delete(cache.seen.keys().next().value!);
    }
  }
  if (lists.every((l) => l !== null)) {
    const ready = lists as PhraseScores[];
    const matches = countCombined(ready, plain.mode);
    const built = missing.length;
    // The best rows by the threshold algorithm over the lists in score order; past its depth limit, the whole merge.
    let all: PhraseScores | null = null;
    let ranked: Bm25Row[] = [];
    const top = (m: number) => {
      if (ranked.length >= Math.min(m, matches)) return ranked.slice(0, m);
      const want = Math.max(m, 2 * ranked.length);
      // The threshold algorithm keeps its best rows sorted by insertion (quadratic in m): deep pages take the merge's heap.
      const fast = all || want > THRESHOLD_MAX_ASKED ? null : thresholdTop(ready, plain.mode, want);
      if (fast) ranked = fast;
      else ranked = bestOf((all ??= combine(ready, plain.mode)), want);
      return ranked.slice(0, m);
    };
    memos.set(memoKey, { state, top, matches });
    while (memos.size > MAX_MEMOS) memos.delete(memos.keys().next().value!);
    return { top, plan: { path: "phrase_scores", matches, built, detail: planDetail(matches, built) } };
  }
  if (plain.mode !== "any" || plain.phrases.length !== 2) return null;
  const totalRows = ftsRowCount(db, schema, table);
  if (!totalRows) return null;
  const [a, b] = plain.phrases;
  const top = maxScoreTopOfTwo({ db, schema, table, a, b, rowsOfA: rowsOf(a), rowsOfB: rowsOf(b), totalRows });
  return {
    top,
    plan: {
      path: "max_score",
      matches: null,
      built: 0,
      detail: `broad query (more than ${BROAD_MATCH_ROWS} matches): exact bm25 by max-score (the rows holding both words ranked first; the rows holding one word only when they could still reach the last score asked for)${building ? "; the words' scores are being built between requests for later queries" : ""}`,
    },
  };
}

/** A cached list's memory: rowids and scores, and the head of its score order (4 bytes a row) once made. */
const bytesOf = (list: PhraseScores) => list.ids.byteLength + list.scores.byteLength + 4 * Math.min(list.ids.length, ORDER_DEPTH);

/** Row counts of phrases per index state (rowsOf in broadTopOffPath). */
const MAX_ROW_COUNTS = 4096;
const rowCounts: Map<string, { state: string; n: number }> = ((globalThis as unknown as { __dualmindBroadRowCounts?: Map<string, { state: string; n: number }> }).__dualmindBroadRowCounts ??= new Map());

const MAX_STATE_MEMOS = 4096;
const stateMemos: Map<string, { state: string; value: unknown }> = ((globalThis as unknown as { __dualmindFtsStateMemos?: Map<string, { state: string; value: unknown }> }).__dualmindFtsStateMemos ??= new Map());

/**
 * `compute()` once per index state of schema.table (FTS5's structure record,
 * rewritten by every committed change from any connection): for values that
 * walk a doclist (a common word's row count, ~5–10 ms at 100k rows). Not kept
 * for in-memory databases (no file to key them by).
 */
export function memoByIndexState<T>({ db, schema, table, key, compute }: { db: Database.Database; schema: string; table: string; key: string; compute: () => T }): T {
  const file = fileOf(db, schema);
  const state = file ? indexStateOf(db, schema, table) : null;
  if (!state) return compute();
  const k = `${file}\u0000${schema}\u0000${table}\u0000${key}`;
  const known = stateMemos.get(k);
  if (known && known.state === state) return known.value as T;
  const value = compute();
  stateMemos.delete(k);
  stateMemos.set(k, { state, value });
  while (stateMemos.size > MAX_STATE_MEMOS) stateMemos.delete(stateMemos.keys().next().value!);
  return value;
}

/**
 * The rows a quoted one-token phrase matches, from the temp fts5vocab 'row'
 * table (its `doc`), once per index state: the same number as counting the
 * phrase's matches, about 3× faster for a common word (it walks the doclist
 * without FTS5's per-row cursor: 4.0 vs 12.1 ms for a word in 104k of 179k
 * chunks). Null when the phrase is not one token under the table's
 * tokenizer or the vocabulary table cannot be made (the caller counts).
 */
export function phraseRowCount({ db, schema, table, phrase }: { db: Database.Database; schema: string; table: string; phrase: string }): number | null {
  const token = phraseTokens(tableShape(db, schema, table).tokenize, [phrase])?.[0];
  if (token === undefined || token === null) return null;
  return tokenStats({ db, schema, table, token })?.rows ?? null;
}

/**
 * A token's rows and instances in schema.table (fts5vocab 'row': `doc`,
 * `cnt`), once per index state; null when the vocabulary table cannot be
 * made on this connection. The table is made only when the numbers are not
 * known yet (a request's own reader seldom needs it).
 */
export function tokenStats({ db, schema, table, token }: { db: Database.Database; schema: string; table: string; token: string }): { rows: number; instances: number } | null {
  try {
    return memoByIndexState({
      db,
      schema,
      table,
      key: `vocab-row\u0000${token}`,
      compute: () => {
        const vocab = vocabTables(db, schema, table);
        if (!vocab) throw NO_VOCABULARY;
        const r = preparedOnce(db, `select doc, cnt from ${vocab.row} where term = ?`).get(token) as { doc: number; cnt: number } | undefined;
        return { rows: r?.doc ?? 0, instances: r?.cnt ?? 0 };
      },
    });
  } catch (e) {
    if (e === NO_VOCABULARY) return null;
    throw e;
  }
}
const NO_VOCABULARY = Symbol("no fts5vocab table on this connection");

/** FTS5's structure record of schema.table (rowid 10 of its %_data table), rewritten by every committed change to the index; base64. */
export function indexStateOf(db: Database.Database, schema: string, table: string): string | null {
  const block = (preparedOnce(db, `select block from ${schema}.${table}_data where id = 10`).get() as { block: Buffer } | undefined)?.block;
  return block ? block.toString("base64") : null;
}

/** FTS5's row count (the first varint of its averages record, rowid 1 of %_data): the N of bm25's idf. */
function ftsRowCount(db: Database.Database, schema: string, table: string): number {
  const block = (preparedOnce(db, `select block from ${schema}.${table}_data where id = 1`).get() as { block: Buffer } | undefined)?.block;
  if (!block) return 0;
  let n = 0;
  for (let i = 0; i < Math.min(9, block.length); i++) {
    if (i === 8) return n * 256 + block[i];
    n = n * 128 + (block[i] & 0x7f);
    if ((block[i] & 0x80) === 0) break;
  }
  return n;
}

/** bm25's constants in FTS5 (fts5_aux.c). */
const K1 = 1.2;

/** FTS5's idf of a phrase found in `n` of `rows` rows (fts5_aux.c). */
function idfOf(rows: number, n: number): number {
  const x = Math.log((rows - n + 0.5) / (n + 0.5));
  return x <= 0 ? 1e-6 : x;
}

/**
 * The best m rows of `a OR b` by bm25, exactly as `order by bm25, rowid`
 * ranks them, without FTS5 scoring every row either word matches (MaxScore
 * over three disjoint FTS5 queries):
 * 1. `a b`: the rows holding both words, scored by FTS5 itself. Their score
 *    under `a OR b` is the same sum of the same two phrase scores.
 * 2. `a NOT b` and `b NOT a`: a row holding one word scores that word's part
 *    alone (the other adds 0), which is below idf × (k1 + 1). Each is ranked
 *    only when that bound reaches the m-th score so far, rarest word first;
 *    a common word (idf near 0) is almost never ranked — and that is the
 *    query's cost: "property OR export" at 100k chunks scores 48k rows
 *    instead of 122k.
 * The three row sets are disjoint and together are the query's rows, so the
 * merge by (score, rowid) is the exhaustive answer.
 */
export function maxScoreTopOfTwo({ db, schema, table, a, b, rowsOfA, rowsOfB, totalRows }: { db: Database.Database; schema: string; table: string; a: string; b: string; rowsOfA: number; rowsOfB: number; totalRows: number }): (m: number) => Bm25Row[] {
  const ranked = preparedOnce(db, `select rowid, bm25(${table}) as rank from ${schema}.${table} where ${table} match ? order by rank, rowid limit ?`);
  const byRank = (x: Bm25Row, y: Bm25Row) => x.rank - y.rank || x.rowid - y.rowid;
  const oneWord = [
    { match: `${a} NOT ${b}`, bound: idfOf(totalRows, rowsOfA) * (K1 + 1) },
    { match: `${b} NOT ${a}`, bound: idfOf(totalRows, rowsOfB) * (K1 + 1) },
  ].sort((x, y) => y.bound - x.bound);
  let best: Bm25Row[] = [];
  let asked = 0;
  return (m: number) => {
    // Asked before for as many or more, or fewer rows than asked for exist: the rows already ranked answer.
    if (m <= asked || best.length < asked) return best.slice(0, m);
    let rows = ranked.all(`${a} ${b}`, m) as Bm25Row[];
    for (const one of oneWord) {
      // Scores agree with FTS5's own to the last bit; the margin keeps a row at the bound from being decided by rounding.
      if (rows.length >= m && -rows[m - 1].rank > one.bound + 1e-9) continue;
      rows = [...rows, ...(ranked.all(one.match, m) as Bm25Row[])].sort(byRank).slice(0, m);
    }
    best = rows;
    asked = m;
    return rows.slice(0, m);
  };
}

type BuildJob = { db: Database.Database; schema: string; table: string; phrase: string; key: string; state: string; sliceRows: number; worthBuilding: () => boolean; requester?: object; ids: number[]; scores: number[] };
/** Phrases waiting to be scored off the request path, oldest first; one slice of the first per timer turn. */
const buildQueue: BuildJob[] = [];
const buildsQueued = new Set<string>();
let buildTimer: ReturnType<typeof setTimeout> | null = null;
let buildsSettled: (() => void)[] = [];
/** When the queue last moved on (a slice ran, or a build was queued into an empty queue): helpBuild's starvation clock. */
let lastBuildProgress = 0;

/** Score a phrase between requests: slices of BUILD_SLICE_ROWS rows by rowid, each its own FTS5 statement with the same scores as one over all rows. */
/** Queue a phrase's build; whether it is queued (now or already). */
function scheduleBuild(job: Omit<BuildJob, "ids" | "scores">, maxQueued: number): boolean {
  const id = `${job.key}\u0000${job.state}`;
  if (buildsQueued.has(id)) return true;
  // A build that failed under this index state (too costly even in slices) is not tried again until the index changes.
  if (cache.seen.get(job.key) === `${job.state}!` || buildQueue.length >= maxQueued) return false;
  buildsQueued.add(id);
  if (buildQueue.length === 0) lastBuildProgress = performance.now();
  buildQueue.push({ ...job, ids: [], scores: [] });
  buildNextSlice();
  return true;
}

function buildNextSlice(): void {
  if (buildTimer || buildQueue.length === 0) return;
  // A timer, not setImmediate: requests already waiting go first. Unreferenced unless someone awaits the builds, so it does not keep a CLI process alive.
  buildTimer = setTimeout(runBuildSlice, 0);
  if (buildsSettled.length === 0) buildTimer.unref?.();
}

function runBuildSlice(): void {
  buildTimer = null;
  // The queue was cleared (clearPhraseScoreCache) after this turn was scheduled.
  if (buildQueue.length === 0) return settleBuilds();
  sliceOnce();
  if (buildQueue.length > 0) return buildNextSlice();
  settleBuilds();
}

/**
 * A broad query whose scores are queued runs one slice of the queue itself before it answers (at most one slice:
 * ~20–50 ms at 100k rows, under its own SLICE_BUDGET_MS) when the queue is starved: no slice for HELP_AFTER_MS. On a
 * busy server the timer turns come once per event-loop iteration, after every request that iteration took, so builds
 * fed by timers alone fell behind the very queries waiting for them (the API bench's broad query: 9 req/s with 16
 * clients). On a quiet one the timer turns keep the queue moving, and a query does not pay for a slice; nor does the
 * request that queued the build (its first sight), however long it runs after.
 */
function helpBuild(requester: object | undefined): void {
  if (buildQueue.length === 0 || performance.now() - lastBuildProgress < HELP_AFTER_MS) return;
  if (requester && buildQueue[0].requester === requester) return;
  sliceOnce();
  if (buildQueue.length === 0) settleBuilds();
}

/**
 * How long the queue may go without a slice before queries run slices themselves (helpBuild). Short: timer turns on a
 * quiet server follow each other within a millisecond, while under load every call of every request should help (a
 * request makes several broad calls). API bench at 100k, pairs run back to back: helping always and a 5 ms gap both gave
 * Next 88 req/s on the broad query; a 20 ms gap gave the bare server 51 req/s against 97 for 5 ms.
 */
export const HELP_AFTER_MS = 5;

/** One slice of the oldest queued build (dropped once finished, stale or failed). */
function sliceOnce(): void {
  const job = buildQueue[0];
  lastBuildProgress = performance.now();
  let finished = true;
  try {
    // The index changed (or the connection closed): these scores would be stale. A later query schedules them again.
    if (job.db.open && indexStateOf(job.db, job.schema, job.table) === job.state && (job.ids.length > 0 || job.worthBuilding())) {
      const after = job.ids.length ? job.ids[job.ids.length - 1] : Number.MIN_SAFE_INTEGER;
      const slice = job.db.prepare(`select rowid, bm25(${job.table}) from ${job.schema}.${job.table} where ${job.table} match ? and rowid > ? order by rowid limit ?`).raw();
      const rows = runWithinBudget(job.db, startQueryBudget({ hint: "", budgetMs: SLICE_BUDGET_MS }), () => slice.all(job.phrase, after, job.sliceRows) as [number, number][]);
      // Another process may commit while the slice runs: kept only if the index is still the one it was scored under.
      if (indexStateOf(job.db, job.schema, job.table) === job.state) {
        for (const [rowid, rank] of rows) {
          job.ids.push(rowid);
          job.scores.push(-rank);
        }
        finished = rows.length < job.sliceRows;
        if (finished) {
          const scores = { ids: Float64Array.from(job.ids), scores: Float64Array.from(job.scores) };
          // Its score order too (thresholdTop), here rather than in the first request that reads it.
          scoreOrderOf(scores);
          remember(job.key, { state: job.state, scores, bytes: bytesOf(scores) });
        }
      }
    }
  } catch {
    // Too costly even in slices, or the store went away: the queries stay on their other paths, and this phrase is not queued again under this index state.
    cache.seen.set(job.key, `${job.state}!`);
  }
  if (finished) {
    buildQueue.shift();
    buildsQueued.delete(`${job.key}\u0000${job.state}`);
  }
  lastBuildProgress = performance.now();
}

function settleBuilds(): void {
  const waiting = buildsSettled;
  buildsSettled = [];
  for (const resolve of waiting) resolve();
}

/** Resolves once no phrase is waiting to be scored off the request path (tests and benches: "later queries"). */
export function phraseScoresSettled(): Promise<void> {
  if (buildQueue.length === 0) return Promise.resolve();
  buildTimer?.ref?.();
  return new Promise((resolve) => buildsSettled.push(resolve));
}

function planDetail(matches: number, built: number): string {
  return `broad query (${matches} matches): exact bm25 merged from per-phrase scores (${built ? `${built} phrase(s) scored now, kept for later queries` : "all cached"})`;
}

/**
 * Time for scoring one broad phrase once: work done for every later query
 * over that phrase, so it is not held to one request's budget; past it, the
 * query is answered exhaustively under its own budget.
 */
export const PHRASE_BUILD_BUDGET_MS = 10_000;
/** Most one background slice may hold the event loop (a slice is 16k rows: tens of ms at 100k; past this it is given up). */
const SLICE_BUDGET_MS = 500;

/** broadTopByBm25 under a request's query budget, phrase scoring under PHRASE_BUILD_BUDGET_MS. */
export function broadTopWithinBudget(args: { db: Database.Database; schema: string; table: string; match: string; budget: QueryBudget }): ReturnType<typeof broadTopByBm25> {
  const build = <T>(fn: () => T): T => runWithinBudget(args.db, startQueryBudget({ hint: args.budget.hint, budgetMs: PHRASE_BUILD_BUDGET_MS }), fn);
  return runWithinBudget(args.db, args.budget, () => broadTopByBm25({ ...args, build, requester: args.budget }));
}

/** Ranked answers of recent broad expressions, valid while their index state is. */
const MAX_MEMOS = 256;
type Memo = { state: string; top: (m: number) => Bm25Row[]; matches: number; plan?: Bm25Plan };
const memos: Map<string, Memo> = ((globalThis as unknown as { __dualmindBroadMemos?: Map<string, Memo> }).__dualmindBroadMemos ??= new Map<string, Memo>());

/**
 * snippet() of FTS5 for rows given by text: the same function over the same
 * tokens gives the same snippet, and FTS5 cannot look up a few rows of a
 * broad MATCH by rowid without walking the whole match. A private in-memory
 * FTS5 table per tokenizer holds the rows for the one statement.
 */
export function snippetsOf({ tokenize, match, rows, open, close, ellipsis, tokens }: { tokenize: string; match: string; rows: { id: number; text: string }[]; open: string; close: string; ellipsis: string; tokens: number }): Map<number, string> {
  if (rows.length === 0) return new Map();
  const db = (snippetDb ??= new DatabaseCtor(":memory:"));
  let table = snippetTables.get(tokenize);
  if (!table) {
    table = `snip_${snippetTables.size}`;
    db.exec(`create virtual table ${table} using fts5(text, tokenize=${sqlString(tokenize)})`);
    snippetTables.set(tokenize, table);
  }
  const insert = preparedOnce(db, `insert into ${table}(rowid, text) values (?, ?)`);
  const read = preparedOnce(db, `select rowid as id, snippet(${table}, 0, ?, ?, ?, ?) as s from ${table} where ${table} match ?`);
  try {
    db.transaction(() => {
      for (const r of rows) insert.run(r.id, r.text);
    })();
    return new Map((read.all(open, close, ellipsis, tokens, match) as { id: number; s: string }[]).map((r) => [r.id, r.s]));
  } finally {
    db.exec(`delete from ${table}`);
  }
}

let snippetDb: Database.Database | null = null;
const snippetTables = new Map<string, string>();
const sqlString = (s: string) => `'${s.replaceAll("'", "''")}'`;

