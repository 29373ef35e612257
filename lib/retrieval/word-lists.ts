import type Database from "better-sqlite3";
import { preparedOnce } from "../db/statements";
import { bm25OfRows } from "./bm25-rows";
import { bm25Part, docsizeLength, ftsIdf, ftsTotals, indexStateOf } from "./fts5-bm25";
import { databaseFileOf, ftsColumnsOf, phraseTokens, scratchCounts, tableShape, tokenStats, vocabTables } from "./fts-tokens";
import { BoundedMemo } from "./bounded-memo";
import { plainPhrases } from "./match";

/**
 * Word lists (docs/search-and-retrieval.md): every row of each common word with its count of that word, and every
 * row's length, kept in index.db beside the FTS5 table they derive from, so a broad query is ranked without FTS5
 * scoring every row its words match. Stored as varint lists (rowid delta and count, one blob per word per 4096
 * rowids); the scores are FTS5's to the last bit (fts5_aux.c's operations in its order, idf by SQLite's `ln`).
 *
 * A word gets a list when it is in more than `min_rows` rows at build time (rarer words come from FTS5's instances).
 * The lists are derived: built a bounded step at a time from the rows' text through the table's tokenizer, and kept
 * through writes by the `fts_changes` log (triggers) that `wordListsStep` folds in. Until a change is folded in, a
 * query scores the changed rows from their current text (bm25OfRows), so answers are exact at every moment; with more
 * than MAX_PENDING_ROWS unfolded changes, or while building, the caller's other paths answer. Every step is one
 * IMMEDIATE transaction: a crash leaves the last committed step (resumed from `built_through` / `applied_seq`).
 */

/** Rowids per stored blob (a word's rows, the rows' lengths): 2^12. */
export const SEGMENT_BITS = 12;
const SEGMENT = 2 ** SEGMENT_BITS;
/** A rowid's segment (division, not a shift: rowids may pass 2^31). */
const segmentOf = (id: number) => Math.floor(id / SEGMENT);
/** Rowids a build step reads at most (a step appends to its segment's blobs; each is one short write transaction). */
export const BUILD_STEP_ROWS = 1024;
/** A word in more rows than this when the lists are built gets a list (the broad planner's threshold). */
export const WORD_LIST_MIN_ROWS = 2000;
/** Lists are built for a table of at least this many rows: below it FTS5 ranks a broad query in a few milliseconds. */
export const WORD_LISTS_MIN_TABLE_ROWS = 20_000;
/** Unfolded changes a query scores from text; past this the caller's other paths answer until the fold catches up. */
export const MAX_PENDING_ROWS = 2000;
/** Changes folded per step (one transaction). */
const FOLD_BATCH = 1000;

/** Rows with their scores, rowids ascending. */
export type RowScores = { ids: Float64Array; scores: Float64Array };

type Meta = { status: "building" | "ready"; min_rows: number; built_through: number; applied_seq: number; rows_at_build: number; built_at: number };

function metaOf(db: Database.Database, schema: string, table: string): Meta | null {
  try {
    return (preparedOnce({ sqlite: db, sql: `select status, min_rows, built_through, applied_seq, rows_at_build, built_at from ${schema}.fts_word_lists_meta where tbl = ?` }).get(table) as Meta | undefined) ?? null;
  } catch (e) {
    // A store whose migrations predate the lists (an attached older core, say): no lists. Anything else is raised.
    if (e instanceof Error && /no such table/.test(e.message)) return null;
    throw e;
  }
}

function pushVarint(out: number[], v: number): void {
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
}

/** (rowid, value) pairs of one segment, rowids ascending: each as the varint of its distance from the previous (the segment's base first), then the value's. */
function encodePairs(base: number, pairs: [number, number][]): Buffer {
  const out: number[] = [];
  let prev = base;
  for (const [id, v] of pairs) {
    pushVarint(out, id - prev);
    pushVarint(out, v);
    prev = id;
  }
  return Buffer.from(out);
}

function decodePairs(buf: Uint8Array, base: number, each: (id: number, v: number) => void): void {
  let i = 0;
  let prev = base;
  while (i < buf.length) {
    let d = 0;
    let shift = 1;
    let byte: number;
    do {
      byte = buf[i++];
      d += (byte & 0x7f) * shift;
      shift *= 128;
    } while (byte & 0x80);
    let v = 0;
    shift = 1;
    do {
      byte = buf[i++];
      v += (byte & 0x7f) * shift;
      shift *= 128;
    } while (byte & 0x80);
    prev += d;
    each(prev, v);
  }
}

/**
 * The listed rows' column values as FTS5 indexed them (table column order),
 * or null to decline (too large to read at once). A contentless table's
 * caller gives its own (documents_fts: rebuilt from the chunks).
 */
export type RowTexts = (rowids: number[]) => Map<number, (string | null)[]> | null;

/** The listed rows' values as FTS5 indexed them: read through the FTS5 table itself (its content table). */
function textsOf(db: Database.Database, schema: string, table: string, columns: string[], rowids: number[]): Map<number, (string | null)[]> {
  const rows = preparedOnce({ sqlite: db, sql: `select rowid, ${columns.map((c) => `"${c.replaceAll('"', '""')}"`).join(", ")} from ${schema}.${table} where rowid in (select value from json_each(?))`, mode: "raw" }).all(JSON.stringify(rowids)) as [number, ...(string | null)[]][];
  return new Map(rows.map(([id, ...values]) => [id, values]));
}

function lengthsOf(db: Database.Database, table: string, lo: number, hi: number, columns: number): Map<number, number> {
  const rows = preparedOnce({ sqlite: db, sql: `select id, sz from main.${table}_docsize where id >= ? and id < ?`, mode: "raw" }).all(lo, hi) as [number, Buffer][];
  return new Map(rows.map(([id, sz]) => [id, docsizeLength(sz, columns)]));
}

/**
 * One bounded step of keeping `main.table`'s word lists: start them (at least `minTableRows` rows), build the next
 * rows, or fold up to FOLD_BATCH logged changes in; "more" when another step has work. Each step is one IMMEDIATE
 * transaction that reads the lists' state again inside it, so a step racing another process writes nothing stale.
 */
export function wordListsStep({ db, table, texts, minRows = WORD_LIST_MIN_ROWS, minTableRows = WORD_LISTS_MIN_TABLE_ROWS }: { db: Database.Database; table: string; texts?: RowTexts; minRows?: number; minTableRows?: number }): "idle" | "more" {
  const { tokenize, columns: ncols } = tableShape({ db, schema: "main", table });
  // Made outside any transaction: a rolled-back one would take the temp tables with it.
  const vocab = vocabTables({ db, schema: "main", table });
  const columns = ftsColumnsOf({ db, schema: "main", table });
  const read: RowTexts = texts ?? ((ids) => textsOf(db, "main", table, columns, ids));
  // The longest head of `ids` whose texts read at once (a row that cannot be read alone gets no text: a misfit).
  const readHead = (ids: number[]): { ids: number[]; texts: Map<number, (string | null)[]> } => {
    for (let n = ids.length; ; n = Math.ceil(n / 2)) {
      const got = read(ids.slice(0, n));
      if (got) return { ids: ids.slice(0, n), texts: got };
      if (n === 1) return { ids: ids.slice(0, 1), texts: new Map() };
    }
  };
  return db
    .transaction((): "idle" | "more" => {
      const totals = ftsTotals({ db, schema: "main", table, columns: ncols });
      const meta = metaOf(db, "main", table);
      if (!meta) {
        if (!totals || totals.rows < minTableRows || !vocab) return "idle";
        // Whatever a step racing an earlier drop left behind goes first. The log starts with the meta row (ingest logs
        // only while it exists): every later write is either read by the build (its rows not built yet) or folded in.
        dropRows(db, table);
        const seq = (db.prepare("select coalesce(max(seq), 0) from fts_changes").pluck().get() as number) ?? 0;
        db.prepare("insert into fts_word_lists_meta(tbl, status, min_rows, built_through, applied_seq, rows_at_build, built_at) values (?, 'building', ?, 0, ?, ?, ?)").run(table, minRows, seq, totals.rows, Date.now());
        db.prepare(`insert into fts_word_list_tokens(tbl, token) select ?, term from ${vocab.row} where doc > ?`).run(table, minRows);
        return "more";
      }
      const tokens = preparedOnce({ sqlite: db, sql: "select token from fts_word_list_tokens where tbl = ?", mode: "pluck" }).all(table) as string[];
      if (meta.status === "building") {
        // The next row at or past the mark (empty ranges of rowids are skipped), up to BUILD_STEP_ROWS rowids within its segment.
        const first = preparedOnce({ sqlite: db, sql: `select min(id) from main.${table}_docsize where id >= ?`, mode: "pluck" }).get(meta.built_through) as number | null;
        if (first === null) {
          db.prepare("update fts_word_lists_meta set status = 'ready', rows_at_build = ? where tbl = ?").run(totals?.rows ?? 0, table);
          return "more";
        }
        const segment = segmentOf(first);
        const ids = preparedOnce({ sqlite: db, sql: `select id from main.${table}_docsize where id >= ? and id < ?`, mode: "pluck" }).all(first, Math.min((segment + 1) * SEGMENT, first + BUILD_STEP_ROWS)) as number[];
        const head = readHead(ids);
        writeSegmentRows({ db, table, tokenize, ncols, tokens, segment, rowids: head.ids, texts: head.texts });
        db.prepare("update fts_word_lists_meta set built_through = ? where tbl = ?").run(head.ids[head.ids.length - 1] + 1, table);
        return "more";
      }
      // Ready. A table grown past twice its size at build has new common words without lists, and a log longer than
      // half the table (written while no server kept it) costs more to fold than to build: start again.
      const waiting = preparedOnce({ sqlite: db, sql: "select count(*) from fts_changes where tbl = ? and seq > ?", mode: "pluck" }).get(table, meta.applied_seq) as number;
      if ((totals && totals.rows > 2 * Math.max(meta.rows_at_build, minTableRows)) || waiting > Math.max(meta.rows_at_build, minTableRows) / 2) {
        dropRows(db, table);
        return "more";
      }
      const batch = preparedOnce({ sqlite: db, sql: "select seq, rid from fts_changes where tbl = ? and seq > ? order by seq limit ?", mode: "raw" }).all(table, meta.applied_seq, FOLD_BATCH) as [number, number][];
      if (batch.length === 0) return "idle";
      // The batch's head whose rows' texts read at once; its last entry's position is what is folded in.
      const rids = [...new Set(batch.map(([, rid]) => rid))];
      const head = readHead(rids);
      const done = new Set(head.ids);
      let upTo = meta.applied_seq;
      for (const [seq, rid] of batch) {
        if (!done.has(rid)) break;
        upTo = seq;
      }
      const bySegment = new Map<number, number[]>();
      for (const rid of head.ids) {
        const s = segmentOf(rid);
        if (!bySegment.has(s)) bySegment.set(s, []);
        bySegment.get(s)!.push(rid);
      }
      for (const [segment, ids] of bySegment) writeSegmentRows({ db, table, tokenize, ncols, tokens, segment, rowids: ids, texts: head.texts });
      db.prepare("update fts_word_lists_meta set applied_seq = ? where tbl = ?").run(upTo, table);
      db.prepare("delete from fts_changes where tbl = ? and seq <= ?").run(table, upTo);
      return waiting > done.size || batch.length === FOLD_BATCH ? "more" : "idle";
    })
    .immediate();
}

/**
 * The rows `rowids` (at least one) of one segment, as they are now, into every listed word's blob and the segment's
 * lengths blob (a row gone from the table is removed). A row whose text does not give the length FTS5 indexed is a
 * misfit: it has no entries, and queries score it from its text until a later write to it fits.
 */
function writeSegmentRows({ db, table, tokenize, ncols, tokens, segment, rowids, texts }: { db: Database.Database; table: string; tokenize: string; ncols: number; tokens: string[]; segment: number; rowids: number[]; texts: Map<number, (string | null)[]> }): void {
  const base = segment * SEGMENT;
  const mine = rowids.filter((id) => texts.has(id));
  const counted = scratchCounts({ tokenize, columns: ncols, rows: mine.map((rowid) => ({ rowid, values: texts.get(rowid)! })), tokens });
  const indexed = lengthsOf(db, table, Math.min(...rowids), Math.max(...rowids) + 1, ncols);
  const present = new Set<number>();
  const misfit = preparedOnce({ sqlite: db, sql: "insert or ignore into fts_word_list_misfits(tbl, rid) values (?, ?)" });
  const fits = preparedOnce({ sqlite: db, sql: "delete from fts_word_list_misfits where tbl = ? and rid = ?" });
  for (const id of rowids) {
    if (!indexed.has(id)) fits.run(table, id);
    else if (counted.length.get(id) !== indexed.get(id)) misfit.run(table, id);
    else {
      fits.run(table, id);
      present.add(id);
    }
  }
  const touched = new Set(rowids);
  const readBlob = preparedOnce({ sqlite: db, sql: "select entries from fts_word_lists where tbl = ? and token = ? and segment = ?", mode: "pluck" });
  const writeBlob = preparedOnce({ sqlite: db, sql: "insert or replace into fts_word_lists(tbl, token, segment, entries) values (?, ?, ?, ?)" });
  const dropBlob = preparedOnce({ sqlite: db, sql: "delete from fts_word_lists where tbl = ? and token = ? and segment = ?" });
  let removed = 0;
  // The blob with these rows replaced by `fresh` (sorted by rowid): null when it holds none of them and none is fresh
  // (nothing to write), an empty blob when nothing is left. Fresh rows all past the blob's last (a build's next rows, new
  // rows folded in) are appended to its bytes without decoding it into entries.
  const merged = (old: Buffer | undefined, fresh: [number, number][]): Buffer | null => {
    removed = 0;
    let last = base;
    if (old) decodePairs(old, base, (id) => void ((last = id), touched.has(id) && removed++));
    if (removed === 0 && fresh.length === 0) return null;
    if (old && removed === 0 && fresh[0][0] > last) return Buffer.concat([old, encodePairs(last, fresh)]);
    const pairs: [number, number][] = [];
    if (old) decodePairs(old, base, (id, v) => void (touched.has(id) || pairs.push([id, v])));
    pairs.push(...fresh);
    return encodePairs(base, pairs.sort((x, y) => x[0] - y[0]));
  };
  const countRows = preparedOnce({ sqlite: db, sql: "update fts_word_list_tokens set rows = rows + ? where tbl = ? and token = ?" });
  const write = (token: string, blob: Buffer) => (blob.length ? writeBlob.run(table, token, segment, blob) : dropBlob.run(table, token, segment));
  // Each listed word's fresh entries, from the rows' own counts (a pass over their instances, not words × rows).
  const freshOf = new Map<string, [number, number][]>();
  for (const id of [...present].sort((x, y) => x - y)) {
    for (const [token, n] of counted.tf.get(id) ?? []) {
      let list = freshOf.get(token);
      if (!list) freshOf.set(token, (list = []));
      list.push([id, n]);
    }
  }
  for (const token of tokens) {
    const fresh = freshOf.get(token) ?? [];
    const old = readBlob.get(table, token, segment) as Buffer | undefined;
    if (!old && fresh.length === 0) continue;
    const blob = merged(old, fresh);
    if (!blob) continue;
    write(token, blob);
    if (fresh.length !== removed) countRows.run(fresh.length - removed, table, token);
  }
  const oldLengths = preparedOnce({ sqlite: db, sql: "select lengths from fts_row_lengths where tbl = ? and segment = ?", mode: "pluck" }).get(table, segment) as Buffer | undefined;
  const lengths = merged(oldLengths, [...present].sort((x, y) => x - y).map((id) => [id, indexed.get(id)!]));
  if (!lengths) return;
  if (lengths.length) preparedOnce({ sqlite: db, sql: "insert or replace into fts_row_lengths(tbl, segment, lengths) values (?, ?, ?)" }).run(table, segment, lengths);
  else preparedOnce({ sqlite: db, sql: "delete from fts_row_lengths where tbl = ? and segment = ?" }).run(table, segment);
}

/** Forget `main.table`'s lists and log (the next step starts them again). */
export function dropWordLists({ db, table }: { db: Database.Database; table: string }): void {
  db.transaction(() => dropRows(db, table))();
}
function dropRows(db: Database.Database, table: string): void {
  for (const t of ["fts_word_lists_meta", "fts_word_list_tokens", "fts_word_lists", "fts_row_lengths", "fts_word_list_misfits", "fts_changes"]) db.prepare(`delete from ${t} where tbl = ?`).run(table);
}

/** Build and fold until nothing is left (a CLI, a bench, a test); steps until idle, at most `maxSteps`. */
export function buildWordLists(args: Parameters<typeof wordListsStep>[0] & { maxSteps?: number }): number {
  let steps = 0;
  while (steps < (args.maxSteps ?? Number.MAX_SAFE_INTEGER) && wordListsStep(args) === "more") steps++;
  return steps;
}

/** What the lists say about a table, for health and explain: null when it has none. */
export function wordListsStatus({ db, schema = "main", table }: { db: Database.Database; schema?: string; table: string }): { status: "building" | "ready"; words: number; builtThrough: number; pending: number } | null {
  const meta = metaOf(db, schema, table);
  if (!meta) return null;
  const words = preparedOnce({ sqlite: db, sql: `select count(*) from ${schema}.fts_word_list_tokens where tbl = ?`, mode: "pluck" }).get(table) as number;
  const pending = preparedOnce({ sqlite: db, sql: `select count(*) from ${schema}.fts_changes where tbl = ? and seq > ?`, mode: "pluck" }).get(table, meta.applied_seq) as number;
  return { status: meta.status, words, builtThrough: meta.built_through, pending };
}

/** Every row's length (tokens, all columns), per segment by offset in it (-1 for none), so memory follows the rows, not the largest rowid. */
type SegmentArrays<T> = Map<number, T>;
/** One table's lengths under its latest stamp (build and fold position), for the 16 tables asked last. */
const lengthMemos = new BoundedMemo<SegmentArrays<Int32Array>>({ entries: 16, bytes: Infinity });
function allLengths(db: Database.Database, schema: string, table: string, stamp: string): SegmentArrays<Int32Array> {
  const key = `${databaseFileOf({ db, schema })}\u0000${table}`;
  const known = lengthMemos.get(key, stamp);
  if (known) return known;
  const blobs = preparedOnce({ sqlite: db, sql: `select segment, lengths from ${schema}.fts_row_lengths where tbl = ? order by segment`, mode: "raw" }).all(table) as [number, Buffer][];
  const out: SegmentArrays<Int32Array> = new Map();
  for (const [segment, blob] of blobs) {
    const lengths = new Int32Array(SEGMENT).fill(-1);
    const base = segment * SEGMENT;
    decodePairs(blob, base, (id, len) => void (lengths[id - base] = len));
    out.set(segment, lengths);
  }
  if (key.startsWith("\u0000")) return out; // in-memory database: nothing to key it by
  lengthMemos.set({ key, state: stamp, value: out, valueBytes: 0 });
  return out;
}

/**
 * Every row a plain expression (one-token phrases, all AND or all OR) matches, with FTS5's bm25 (positive), from the
 * word lists; null when they cannot answer exactly (no ready lists, a multi-token phrase, a common word without a
 * list, too many unfolded changes, a changed row not scorable from its text): the caller ranks its own way then.
 */
/** One segment's running scores and phrases found, by offset in the segment. */
type Accumulated = { base: number; score: Float64Array; found: Uint8Array };
function accumulatedOf(acc: SegmentArrays<Accumulated>, segment: number): Accumulated {
  let seg = acc.get(segment);
  if (!seg) {
    seg = accumulatedPool.pop() ?? { base: 0, score: new Float64Array(SEGMENT), found: new Uint8Array(SEGMENT) };
    seg.base = segment * SEGMENT;
    acc.set(segment, seg);
  }
  return seg;
}
/**
 * Segment arrays zeroed and kept for the next query (up to 512 segments): a query over two common words touches
 * dozens per table, and allocating them afresh each time kept the garbage collector busy.
 */
const accumulatedPool: Accumulated[] = [];
function releaseAccumulated(acc: SegmentArrays<Accumulated>): void {
  for (const seg of acc.values()) {
    if (accumulatedPool.length >= 512) break;
    seg.score.fill(0);
    seg.found.fill(0);
    accumulatedPool.push(seg);
  }
  acc.clear();
}

/** One row's part of one phrase, added as FTS5 adds it (phrase by phrase in expression order); false when its length is unknown. */
function scoreRow(w: number, avgdl: number, at: number, f: number, lengths: Int32Array | undefined, into: Accumulated, skipped: boolean): boolean {
  if (skipped) return true;
  const len = lengths ? lengths[at] : -1;
  if (len < 0) return false; // a row the lengths do not know: the lists are not this index's
  into.found[at]++;
  into.score[at] += bm25Part(w, f, len, avgdl);
  return true;
}

/** One stored segment of a word's list into the running scores (decodePairs's format decoded inline: the hot loop); false when a row has no known length. */
function scoreSegment(buf: Uint8Array, w: number, avgdl: number, lengths: Int32Array | undefined, into: Accumulated, skip: Set<number>): boolean {
  if (!lengths) return buf.length === 0;
  const { score, found, base } = into;
  let i = 0;
  let at = 0;
  while (i < buf.length) {
    let byte = buf[i++];
    let d = byte & 0x7f;
    for (let shift = 128; byte & 0x80; shift *= 128) d += ((byte = buf[i++]) & 0x7f) * shift;
    byte = buf[i++];
    let f = byte & 0x7f;
    for (let shift = 128; byte & 0x80; shift *= 128) f += ((byte = buf[i++]) & 0x7f) * shift;
    at += d;
    if (skip.size > 0 && skip.has(base + at)) continue;
    const len = lengths[at];
    if (len === undefined || len < 0) return false;
    found[at]++;
    score[at] += bm25Part(w, f, len, avgdl);
  }
  return true;
}

/** The listed rows among those found for at least `need` phrases, rowids ascending, with their scores (no pass over every row). */
function rowsOf(acc: SegmentArrays<Accumulated>, only: number[], need: number): RowScores {
  const ids: number[] = [];
  const scores: number[] = [];
  for (const id of [...new Set(only)].sort((x, y) => x - y)) {
    const seg = acc.get(segmentOf(id));
    if (!seg || seg.found[id - seg.base] < need) continue;
    ids.push(id);
    scores.push(seg.score[id - seg.base]);
  }
  return { ids: Float64Array.from(ids), scores: Float64Array.from(scores) };
}

/** Position of `id` in sorted rowids, or -1. */
function indexOfRow(ids: Float64Array, id: number): number {
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

/** The listed rows of a whole answer (rowids ascending). */
function pickScores(all: RowScores, only: number[]): RowScores {
  const ids: number[] = [];
  const scores: number[] = [];
  for (const id of [...new Set(only)].sort((x, y) => x - y)) {
    const at = indexOfRow(all.ids, id);
    if (at < 0) continue;
    ids.push(id);
    scores.push(all.scores[at]);
  }
  return { ids: Float64Array.from(ids), scores: Float64Array.from(scores) };
}

/**
 * The rows found for at least `need` phrases, rowids ascending (as every RowScores is), with their scores: one pass
 * into scratch arrays (kept, grown to the largest answer so far), then copied out at their size.
 */
function rowsFound(acc: SegmentArrays<Accumulated>, need: number): RowScores {
  const segments = [...acc.keys()].sort((a, b) => a - b);
  const cap = segments.length * SEGMENT;
  if (readOut.ids.length < cap) readOut = { ids: new Float64Array(cap), scores: new Float64Array(cap) };
  const { ids, scores } = readOut;
  let n = 0;
  for (const s of segments) {
    const { found, score, base } = acc.get(s)!;
    for (let at = 0; at < SEGMENT; at++) {
      if (found[at] < need) continue;
      ids[n] = base + at;
      scores[n++] = score[at];
    }
  }
  return { ids: ids.slice(0, n), scores: scores.slice(0, n) };
}
let readOut: RowScores = { ids: new Float64Array(0), scores: new Float64Array(0) };

/**
 * Scores computed per expression, kept while the index and the lists stay as they were (LRU), bounded by
 * SCORE_MEMO_ENTRIES expressions (keys are request text) and SCORE_MEMO_BYTES; an answer over a quarter of that is not kept.
 */
export const SCORE_MEMO_BYTES = 32 * 2 ** 20;
export const SCORE_MEMO_ENTRIES = 512;
const scoreMemos = ((globalThis as unknown as { __dualmindWordListScoreMemos?: BoundedMemo<RowScores> }).__dualmindWordListScoreMemos ??= new BoundedMemo({ entries: SCORE_MEMO_ENTRIES, bytes: SCORE_MEMO_BYTES }));
/** Forget the computed scores (a bench's or a test's "first sight"). */
export function clearWordListMemos(): void {
  scoreMemos.clear();
}
/** What the memo holds now (tests: its bounds). */
export function wordListMemoSize(): { entries: number; bytes: number } {
  return scoreMemos.size();
}

/**
 * What an answer from the lists depends on, as one string: the FTS5 structure record (rewritten by every committed
 * change) and the lists' build and fold position. Null when the table has no ready lists, inside a transaction (FTS5's
 * uncommitted writes are not in the record yet), or for a database without a file.
 */
export function wordListAnswerState({ db, schema, table }: { db: Database.Database; schema: string; table: string }): string | null {
  if (db.inTransaction || !databaseFileOf({ db, schema })) return null;
  const meta = metaOf(db, schema, table);
  return meta?.status === "ready" ? `${indexStateOf({ db, schema, table })}\u0000${meta.built_at}:${meta.applied_seq}` : null;
}

/** Whether schema.table has word lists ready to be read (a cheap check before anything is counted). */
export function hasReadyWordLists({ db, schema, table }: { db: Database.Database; schema: string; table: string }): boolean {
  return metaOf(db, schema, table)?.status === "ready";
}

export function wordListScores({ db, schema, table, match, texts, only }: { db: Database.Database; schema: string; table: string; match: string; texts?: RowTexts; only?: number[] }): RowScores | null {
  const meta = metaOf(db, schema, table);
  if (!meta || meta.status !== "ready") return null;
  const plain = plainPhrases(match);
  if (!plain) return null;
  // One read transaction: the lists, the log and FTS5's own numbers from one snapshot of the database.
  const run = () => {
    const fresh = metaOf(db, schema, table);
    if (!fresh || fresh.status !== "ready") return null;
    if (schema === "main" || schema === "core") {
      // While a store's FTS5 indexes are being rebuilt (store meta), they are missing rows the lists have.
      const rebuilding = preparedOnce({ sqlite: db, sql: `select 1 from ${schema}.meta where key in ('fts_rebuild_target', 'docs_fts_rebuild_target')`, mode: "pluck" }).get();
      if (rebuilding) return null;
    }
    // The same expression under the same index and lists: the scores computed before (a repeated query, or the
    // whole-document leg asked again for other candidates).
    const file = databaseFileOf({ db, schema });
    const state = file ? `${indexStateOf({ db, schema, table })}\u0000${fresh.built_at}:${fresh.applied_seq}` : null;
    const memoKey = `${file}\u0000${table}\u0000${match}`;
    const known = state ? scoreMemos.get(memoKey, state) : undefined;
    if (known) return only ? pickScores(known, only) : known;
    // The lists are decoded whole either way: the whole answer is kept, so the same expression asked again (the
    // whole-document leg for other candidates, or a repeated query) is read from memory.
    if (!state) return compute(fresh, false);
    const scores = compute(fresh, true);
    if (!scores) return null;
    scoreMemos.set({ key: memoKey, state, value: scores, valueBytes: scores.ids.byteLength + scores.scores.byteLength });
    return only ? pickScores(scores, only) : scores;
  };
  /** `whole`: every matching row, whatever `only` asks for. */
  const compute = (fresh: Meta, whole: boolean): RowScores | null => {
    const { tokenize, columns: ncols } = tableShape({ db, schema, table });
    const tokens = phraseTokens({ tokenize, phrases: plain.phrases });
    if (!tokens) return null;
    const totals = ftsTotals({ db, schema, table, columns: ncols });
    if (!totals) return null;
    // Logged rows not folded in yet, and misfits (rows the lists could not take): scored from their text.
    const pending = preparedOnce({ sqlite: db, sql: `select rid from ${schema}.fts_changes where tbl = ? and seq > ? union select rid from ${schema}.fts_word_list_misfits where tbl = ? limit ?`, mode: "pluck" }).all(table, fresh.applied_seq, table, MAX_PENDING_ROWS + 1) as number[];
    if (pending.length > MAX_PENDING_ROWS) return null;
    const lengths = allLengths(db, schema, table, `${fresh.built_at}:${fresh.applied_seq}`);
    const listed = preparedOnce({ sqlite: db, sql: `select rows from ${schema}.fts_word_list_tokens where tbl = ? and token = ?`, mode: "pluck" });
    const segments = preparedOnce({ sqlite: db, sql: `select segment, entries from ${schema}.fts_word_lists where tbl = ? and token = ? order by segment`, mode: "raw" });
    // Each distinct token's rows and counts, rowids ascending: its list, or a rare word's instances in FTS5 itself.
    const avgdl = totals.tokens / totals.rows;
    // Each word's row count for its idf: its list's, when every change is folded in (no walk of FTS5's doclist on a
    // word's first sight); else FTS5's own (fts5vocab), which counts the logged rows as they are now.
    const idf: number[] = [];
    for (const t of tokens) {
      const inList = listed.get(table, t) as number | undefined;
      const rows = inList !== undefined && pending.length === 0 ? inList : tokenStats({ db, schema, table, token: t })?.rows;
      if (rows === undefined) return null;
      idf.push(ftsIdf(db, totals.rows, rows));
    }
    // Per segment of rowids: the lengths cover every row folded in; logged rows are scored apart and skipped in the lists.
    const acc: SegmentArrays<Accumulated> = new Map();
    try {
      const skip = new Set(pending);
      let unknownRow = false;
      // One row's part of one phrase (a rare word's, from its instances), added as scoreSegment adds a listed word's.
      const add = (w: number, id: number, f: number) => {
        const seg = accumulatedOf(acc, segmentOf(id));
        if (!scoreRow(w, avgdl, id - seg.base, f, lengths.get(segmentOf(id)), seg, skip.has(id))) unknownRow = true;
      };
      for (let p = 0; p < tokens.length; p++) {
        const token = tokens[p];
        const w = idf[p];
        if (listed.get(table, token) !== undefined) {
          for (const [segment, blob] of segments.all(table, token) as [number, Buffer][]) if (!scoreSegment(blob, w, avgdl, lengths.get(segment), accumulatedOf(acc, segment), skip)) return null;
        } else {
          // A word rarer than the lists keep: its rows and counts from FTS5's own instances (at most min_rows rows).
          const stats = tokenStats({ db, schema, table, token });
          if (!stats || stats.rows > fresh.min_rows) return null;
          const vocab = vocabTables({ db, schema, table });
          if (!vocab) return null;
          for (const [doc, f] of preparedOnce({ sqlite: db, sql: `select doc, count(*) from ${vocab.instance} where term = ? group by doc`, mode: "raw" }).all(token) as [number, number][]) add(w, doc, f);
        }
        if (unknownRow) return null;
      }
      if (pending.length) {
        const columns = ftsColumnsOf({ db, schema, table });
        const scored = bm25OfRows({ db, schema, table, match, rowids: pending, maxInstances: 0, texts: texts ?? ((ids) => textsOf(db, schema, table, columns, ids)) });
        if (!scored) return null;
        for (const [id, s] of scored) {
          const seg = accumulatedOf(acc, segmentOf(id));
          seg.score[id - seg.base] = s;
          seg.found[id - seg.base] = tokens.length;
        }
      }
      const need = plain.mode === "all" ? tokens.length : 1;
      return only && !whole ? rowsOf(acc, only, need) : rowsFound(acc, need);
    } finally {
      releaseAccumulated(acc);
    }
  };
  // Inside a caller's transaction the lists step aside: FTS5 keeps its uncommitted writes in memory until commit, so
  // the totals, counts and structure record read here would be the committed ones while MATCH sees the new rows.
  if (db.inTransaction) return null;
  // The temp vocabulary tables are made outside the read transaction: one rolled back (a budget interrupt) would take them along.
  vocabTables({ db, schema, table });
  return db.transaction(run)();
}

/** FTS5's bm25 (positive) of the listed rows the expression matches, from the word lists (bm25OfRows's answer without reading text); null when wordListScores is. */
export function wordListScoresOf(args: { db: Database.Database; schema: string; table: string; match: string; rowids: number[]; texts?: RowTexts }): Map<number, number> | null {
  const picked = wordListScores({ ...args, only: args.rowids });
  return picked ? new Map(Array.from(picked.ids, (id, i) => [id, picked.scores[i]])) : null;
}
