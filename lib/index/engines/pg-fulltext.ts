import { sql, type SQL } from "drizzle-orm";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../../db/pg-store";
import { log } from "../../log";
import { ftsIdf, K1, B } from "../../retrieval/fts5-bm25";
import { emptyScratch, phraseTokens, scratchTable } from "../../retrieval/fts-tokens";
import { matchExpression, plainPhrases } from "../../retrieval/match";
import { preparedOnce } from "../../db/statements";
import { CHUNK_FTS_TOKENIZER } from "../fts-rebuild";
import { withStoreQuotaPg } from "../store-quota";

/**
 * PostgreSQL's full-text top-k, ranked by FTS5's own bm25 to the last bit (bm25Part in phrase order, idf by SQLite's
 * `ln`), without scoring every match (docs/postgresql.md "Full-text on PostgreSQL ranks as SQLite does"). The
 * `english` tsvector is not FTS5's tokenizer, so FTS5 itself tokenizes each chunk at write time (lib/retrieval/
 * fts-tokens.ts) and the counts bm25 reads are stored in the ingest transaction, taken away by a delete trigger:
 * exact at every commit. A selective query scores every match; all of two or more words looks the others up by key
 * from the rarest's rows, or joins their postings on the chunk; a broad one reads impact-ordered heads of each token's
 * postings and answers once no unread row can reach the k-th score (impactBound).
 */

/** FTS5's tokenizer of the SQLite chunk index, whose tokens the statistics hold. */
export const PG_FTS_TOKENIZER = CHUNK_FTS_TOKENIZER;

/**
 * The average length the stored impacts assume (tokens). Any value keeps the
 * ranking exact; the closer to a store's real average, the fewer postings a
 * broad query reads (chunks are packed towards chunking.ts's targets).
 */
export const REF_AVGDL = 160;

/** A query whose candidate postings are at most this many is scored exhaustively (one statement). */
export const EXHAUSTIVE_POSTINGS = 20_000;

/**
 * An all-words query with more postings than EXHAUSTIVE_POSTINGS but at most JOIN_POSTINGS, its rarest word in at most
 * JOIN_RAREST rows, reads them all and joins them on the chunk, scoring only the rows holding every word. Words all
 * more common go by impact-ordered heads: many rows hold them all, and the best are met early in impact order.
 */
export const JOIN_POSTINGS = 200_000;
export const JOIN_RAREST = 40_000;

/** What looking a posting up by its key costs, in postings read in index order (all words: rarest-first lookups, or the join). */
export const LOOKUP_COST = 12;

/**
 * Postings of each token read first by a broad query (impact order): at least this many, or k thousandths of its
 * commonest token's (all words: or HEAD_OVERLAP's depth); deeper, twice as many a try, until the bound holds.
 */
export const HEADS = 2_000;

/** An all-words query's first heads are deep enough for this many times k rows met in every head, were its tokens independent. */
export const HEAD_OVERLAP = 5;

/** Partly met rows of a broad query scored by key at most; more deepen the heads instead. */
export const OPEN_ROWS = 4_000;

/**
 * All of two or more common words, at most JOIN_COMMON postings: the heads find the best rows early only when the words
 * go together at the head of their postings. Of each word's first TOGETHER_SAMPLE postings by impact, the share holding
 * every other word is looked up; when the least share is below TOGETHER, the postings are joined instead (the heads
 * would leave many rows partly met, each scored by key, or go deeper).
 */
export const JOIN_COMMON = 400_000;
export const TOGETHER_SAMPLE = 200;
export const TOGETHER = 0.36;

/**
 * The sample looks at the query's SAMPLE_WORDS rarest words only: each of their first postings is looked up in the
 * others of them by key, so a query of many words costs at most SAMPLE_WORDS × TOGETHER_SAMPLE × (SAMPLE_WORDS − 1)
 * lookups. The rarest words say most of where the rows holding every word are (the commonest are in most rows
 * whichever way); and the share only chooses between two exact paths: a wrong guess costs time, never answers.
 */
export const SAMPLE_WORDS = 3;

/** Chunks tokenized per backfill transaction. */
export const BACKFILL_BATCH = 1000;

export type ChunkTerms = { len: number; tf: Map<string, number> };

/** Each text's length in tokens and count of each token, as FTS5 indexes it in chunks_fts. */
export const chunkTermsOf = (texts: string[]): ChunkTerms[] => rowTermsOf({ tokenize: PG_FTS_TOKENIZER, columns: 1, rows: texts.map((t) => [t]) });

/**
 * Each row's length in tokens (all its columns) and count of each token (summed over its columns), as an FTS5 table
 * of `columns` columns with that tokenizer indexes it: the numbers its bm25 reads (a column weight of 1 each).
 */
export function rowTermsOf({ tokenize, columns, rows }: { tokenize: string; columns: number; rows: (string | null)[][] }): ChunkTerms[] {
  const { db, table, vocab } = scratchTable({ tokenize, columns });
  const cols = Array.from({ length: columns }, (_, i) => `c${i}`);
  const insert = preparedOnce({ sqlite: db, sql: `insert into ${table}(rowid, ${cols.join(", ")}) values (?, ${cols.map(() => "?").join(", ")})` });
  try {
    db.transaction(() => rows.forEach((values, i) => insert.run(i + 1, ...values)))();
    const out: ChunkTerms[] = rows.map(() => ({ len: 0, tf: new Map() }));
    for (const [doc, term, n] of preparedOnce({ sqlite: db, sql: `select doc, term, count(*) from ${vocab} group by doc, term`, mode: "raw" }).all() as [number, string, number][]) {
      const row = out[doc - 1];
      row.tf.set(term, n);
      row.len += n;
    }
    return out;
  } finally {
    emptyScratch({ db, table });
  }
}

/** A posting's impact key (see the file comment): its bm25 part over (k1 + 1) at the reference average length. */
export const impactOf = (tf: number, len: number) => tf / (tf + K1 * (1 - B + (B * len) / REF_AVGDL));

/**
 * The most a token of weight `idf` adds to the score of a row whose stored
 * impact is at most `imp`, at the current average length `avgdl`:
 * with key = k1(1−b)/tf + k1·b·len/(avgdl·tf) (part = (k1+1) / (1 + key)),
 * key ≥ min(1, REF_AVGDL/avgdl) × key at REF_AVGDL, and key at REF_AVGDL = 1/imp − 1.
 * The stored impact is a float4: widened by its rounding.
 */
export function impactBound(idf: number, imp: number, avgdl: number): number {
  if (imp <= 0) return 0;
  const widened = Math.min(1, imp * (1 + 2 ** -20));
  const key = Math.min(1, REF_AVGDL / avgdl) * (1 / widened - 1);
  return (idf * (K1 + 1)) / (1 + key);
}

/** A PostgreSQL array literal (one bound parameter) of numbers or strings. */
export function arrayLiteral(values: (string | number)[]): string {
  return `{${values.map((v) => (typeof v === "number" ? String(v) : `"${v.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`)).join(",")}}`;
}

/**
 * Store the tokens of chunks just written (ids with their texts' chunkTermsOf),
 * in the writer's transaction: their lengths (unless the insert set them), postings, row counts and totals.
 */
export async function writeChunkTermsPg({ tx, chunks, setLengths = false }: { tx: PgStoreTx; chunks: { id: number; terms: ChunkTerms }[]; setLengths?: boolean }): Promise<void> {
  if (chunks.length === 0) return;
  const ids: number[] = [];
  const terms: string[] = [];
  const tfs: number[] = [];
  const lens: number[] = [];
  const imps: number[] = [];
  let tokens = 0;
  for (const c of chunks) {
    tokens += c.terms.len;
    for (const [term, tf] of c.terms.tf) {
      ids.push(c.id);
      terms.push(term);
      tfs.push(tf);
      lens.push(c.terms.len);
      imps.push(impactOf(tf, c.terms.len));
    }
  }
  // The store's usage row, then the totals row, then token rows: every writer of the statistics (this, the delete
  // trigger, the backfill) takes them in this order (a row's own write takes the usage row first, by its trigger), so
  // writers queue instead of locking shared rows in different orders (a deadlock).
  await tx.execute(sql`select 1 from store_usage where id = 1 for update`);
  await tx.execute(sql`update fts_totals set rows = rows + ${chunks.length}, tokens = tokens + ${tokens} where id = 1`);
  if (setLengths) {
    await tx.execute(
      sql`update chunks c set fts_len = v.len from unnest(${arrayLiteral(chunks.map((c) => c.id))}::bigint[], ${arrayLiteral(chunks.map((c) => c.terms.len))}::int[]) as v(id, len) where c.id = v.id`,
    );
  }
  // Large batches go in slices: each slice is a few bound array parameters.
  const SLICE = 50_000;
  for (let i = 0; i < ids.length; i += SLICE) {
    const at = (a: (string | number)[]) => arrayLiteral(a.slice(i, i + SLICE));
    await tx.execute(
      sql`insert into fts_postings (chunk_id, term, tf, len, imp) select * from unnest(${at(ids)}::bigint[], ${at(terms)}::text[], ${at(tfs)}::int[], ${at(lens)}::int[], ${at(imps)}::real[])`,
    );
  }
  const counts = new Map<string, number>();
  for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1);
  const sorted = [...counts.keys()].sort();
  for (let i = 0; i < sorted.length; i += SLICE) {
    const slice = sorted.slice(i, i + SLICE);
    // In token order, so two writers lock the rows they share in the same order.
    await tx.execute(
      sql`insert into fts_terms (term, rows) select term, n from unnest(${arrayLiteral(slice)}::text[], ${arrayLiteral(slice.map((t) => counts.get(t)!))}::int[]) as v(term, n) order by term collate "C"
        on conflict (term) do update set rows = fts_terms.rows + excluded.rows`,
    );
  }
}

/** Tokenize up to `batch` chunks without statistics in one transaction (writers wait on the store's quota lock); answers how many. */
export async function backfillChunkTermsBatchPg({ handle, batch = BACKFILL_BATCH }: { handle: PgStoreHandle; batch?: number }): Promise<number> {
  return withStoreTx({ handle, work: (tx) =>
    withStoreQuotaPg({ tx, store: handle.store, write: async () => {
      const rows = await rowsOf<{ id: string; text: string }>({ tx, query: sql`select id, text from chunks where fts_len is null order by id limit ${batch} for update skip locked` });
      if (rows.length === 0) return 0;
      const terms = chunkTermsOf(rows.map((r) => r.text));
      await writeChunkTermsPg({ tx, chunks: rows.map((r, i) => ({ id: Number(r.id), terms: terms[i] })), setLengths: true });
      return rows.length;
    } }),
  });
}

/** Tokenize every chunk without statistics, a batch per transaction; answers how many. */
export async function backfillChunkTermsPg({ handle, batch = BACKFILL_BATCH }: { handle: PgStoreHandle; batch?: number }): Promise<number> {
  return drainBatches(() => backfillChunkTermsBatchPg({ handle, batch }));
}

/** Run a resumable backfill's batches (each answering how many it did) until one does none; answers the total. */
export async function drainBatches(batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await batch();
    total += n;
    if (n === 0) return total;
  }
}

const backfills = ((globalThis as unknown as { __dualmindPgFtsBackfills?: Map<string, Promise<unknown>> }).__dualmindPgFtsBackfills ??= new Map());

/**
 * Start a backfill of a store in the background, once per process at a time for each `what` (the statistics it
 * builds, as the log names them); its failure is logged, never thrown: the next search that needs it starts it again.
 */
export function startBackfillPg({ handle, what, run }: { handle: PgStoreHandle; what: string; run: () => Promise<number> }): void {
  const key = `${what}\u0000${handle.schema}`;
  if (handle.readOnly || backfills.has(key)) return;
  const started = run()
    .then((n) => log("info", `${what} backfilled`, { store: handle.store, rows: n }))
    .catch((e: Error) => log("warn", `${what} backfill stopped; the next search resumes it`, { store: handle.store, error: e.message }))
    .finally(() => backfills.delete(key));
  backfills.set(key, started);
}

/** Start the chunk statistics' backfill of a store in the background (startBackfillPg). */
export const startChunkTermsBackfillPg = (handle: PgStoreHandle): void => startBackfillPg({ handle, what: "full-text statistics", run: () => backfillChunkTermsPg({ handle }) });

/**
 * FTS5's bm25 of a row in SQL, for a statement that groups postings (term, tf, len) by row: `pivot` the row's count
 * of each distinct token (columns tf0, tf1, …, in first-seen order), `score` over them and `len` — bm25Part's
 * arithmetic on the same float8 numbers in the same order (per token position, in expression order, from 0:
 * s = ((0 + part₀) + part₁) + …), so the same bits as a sum here.
 */
export function bm25ScoreSql({ tokens, idf, avgdl }: { tokens: string[]; idf: number[]; avgdl: number }): { score: SQL; pivot: SQL } {
  const unique = [...new Set(tokens)];
  const f = (n: number) => sql`${n}::float8`;
  const tf = (t: string) => sql.raw(`tf${unique.indexOf(t)}`);
  const parts = tokens.map((t, p) => sql`(${f(idf[p])} * ((coalesce(${tf(t)}, 0) * ${f(K1 + 1.0)}) / (coalesce(${tf(t)}, 0) + ${f(K1)} * (${f(1 - B)} + (${f(B)} * len) / ${f(avgdl)}))))`);
  const score = parts.reduce((acc, part) => sql`(${acc} + ${part})`, sql`0::float8` as SQL);
  const pivot = sql.join(
    unique.map((t, i) => sql`max(tf) filter (where term = ${t}) as ${sql.raw(`tf${i}`)}`),
    sql`, `,
  );
  return { score, pivot };
}

export type Bm25Hit = { id: number; score: number; /** The caller's columns (bm25TopPg's `columns`). */ row?: Record<string, unknown> };

export type Bm25TopPlan = {
  path: "exhaustive" | "joined" | "by-key" | "impact-ordered";
  /** Rows the expression matches (exhaustive), postings joined (joined), the rarest word's postings (by-key), or postings read in impact order. */
  postingsRead: number;
  rounds: number;
  detail: string;
};

export type Bm25TopAnswer =
  | {
      kind: "ranked";
      hits: Bm25Hit[];
      plan: Bm25TopPlan;
      /** Each query word's token row count and the index's rows (for other legs' idf). */
      stats: { df: number[]; rows: number };
      /** The answer's first row (the caller's columns, also when no chunk matched), when a statement ranked. */
      first?: Record<string, unknown>;
    }
  /** The statistics cannot answer: chunks still to tokenize, or a word that is not one token. */
  | { kind: "unavailable"; reason: string };

/** The best `k` chunks passing `where` for `words` joined by `mode`, by FTS5's bm25: exactly `select rowid, bm25(chunks_fts) … order by rank, rowid limit k` on the same content. */
export async function bm25TopPg({
  tx,
  words,
  mode,
  where,
  k,
  exhaustiveUpTo = EXHAUSTIVE_POSTINGS,
  joinUpTo = JOIN_POSTINGS,
  lookupCost = LOOKUP_COST,
  joinCommon = JOIN_COMMON,
  together = TOGETHER,
  firstHeads,
  columns,
}: {
  tx: PgStoreTx;
  words: string[];
  mode: "all" | "any";
  where: SQL[];
  k: number;
  /** Candidate postings scored exhaustively at most (tests lower it). */
  exhaustiveUpTo?: number;
  /** Postings of an all-words query joined at most (tests lower it). */
  joinUpTo?: number;
  /** What a lookup by key costs in postings read (tests set 0 to look up by key, or Infinity never to). */
  lookupCost?: number;
  /** Postings of common words joined at most when they seldom go together (tests set 0: never). */
  joinCommon?: number;
  /** The least share of each word's first postings holding the others for the heads to be read (tests set 2: never). */
  together?: number;
  /** Postings of each token read by a broad query's first try (tests lower it). */
  firstHeads?: number;
  /** Columns to send back with each best row, over c = chunks, d = documents and r.rn (its rank among the rows that pass). */
  columns?: SQL;
}): Promise<Bm25TopAnswer> {
  const expression = matchExpression(words, mode);
  const plain = expression ? plainPhrases(expression) : null;
  if (!plain) return { kind: "unavailable", reason: "no word to match" };
  const tokens = phraseTokens({ tokenize: PG_FTS_TOKENIZER, phrases: plain.phrases });
  if (!tokens) return { kind: "unavailable", reason: "a query word is not exactly one token" };
  const unique = [...new Set(tokens)];
  // One statement: whether any chunk still waits for its tokens, the totals, and each token's row count.
  const [totals] = await rowsOf<{ pending: boolean; rows: string; tokens: string; df: (number | null)[] }>({
    tx,
    query: sql`select exists (select 1 from chunks where fts_len is null) as pending, t.rows, t.tokens,
      array(select f.rows from unnest(${arrayLiteral(unique)}::text[]) with ordinality as u(term, i) left join fts_terms f on f.term = u.term order by u.i) as df
      from fts_totals t where t.id = 1`,
  });
  if (!totals || totals.pending) return { kind: "unavailable", reason: "the store's full-text statistics are being built" };
  const rows = Number(totals?.rows ?? 0);
  const dfOf = new Map(unique.map((t, i) => [t, totals?.df[i] ?? 0]));
  const stats = { df: tokens.map((t) => dfOf.get(t)!), rows };
  const plan = (path: Bm25TopPlan["path"], postingsRead: number, rounds: number, detail: string): Bm25TopPlan => ({ path, postingsRead, rounds, detail });
  if (rows === 0 || (mode === "all" && stats.df.some((n) => n === 0)) || stats.df.every((n) => n === 0)) return { kind: "ranked", hits: [], plan: plan("exhaustive", 0, 0, "no chunk holds the query's tokens"), stats };
  const avgdl = Number(totals.tokens) / rows;
  const { db } = scratchTable({ tokenize: PG_FTS_TOKENIZER, columns: 1 });
  const idf = tokens.map((t) => ftsIdf(db, rows, dfOf.get(t)!));
  const weight = new Map<string, number>();
  tokens.forEach((t, p) => weight.set(t, (weight.get(t) ?? 0) + idf[p]));
  const filterOf = where.length ? sql.join(where, sql` and `) : null;

  // The statement's end, either path: the best rows with whether they pass the filters, their rank among those that
  // pass (rn), and for the best k that pass the caller's columns (c = chunks, d = documents, r.rn); one row with a null
  // id when none. `after`: more statements over `ranked`; `gate`: when the caller's columns are wanted (else null).
  type Judged = { id: string | null; score: number | null; pass: boolean | null; rn: string | null } & Record<string, unknown>;
  const judgedBest = ({ ctes, head, from, after, gate }: { ctes: SQL; head: SQL; from: SQL; after?: SQL; gate?: SQL }) =>
    sql`with ${ctes},
      judged as (select b.id, b.score, ${filterOf ? sql`(${filterOf})` : sql`true`} as pass from best b join chunks c on c.id = b.id join documents d on d.doc_id = c.doc_id),
      ranked as (select j.*, case when j.pass then row_number() over (partition by j.pass order by j.score desc, j.id) end as rn from judged j)${after ? sql`, ${after}` : sql``}
      select ${head}, r.id, r.score, r.pass, r.rn${columns ? sql`, ${columns}` : sql``}
      from ${from} left join (ranked r left join lateral (select c.* from chunks c where r.rn <= ${k} and c.id = r.id${gate ? sql` and ${gate}` : sql``}) c on true left join documents d on d.doc_id = c.doc_id) on true order by r.score desc, r.id`;
  // Whether a row of judgedBest's is its first (its order by).
  const firstRow = sql`row_number() over (order by r.score desc, r.id) = 1`;
  const hitsOf = (got: Judged[]): Bm25Hit[] => got.flatMap((r) => (r.id !== null && r.pass ? [{ id: Number(r.id), score: Number(r.score), ...(columns ? { row: r } : {}) }] : []));
  const live = unique.filter((t) => dfOf.get(t)! > 0);
  const { score, pivot } = bm25ScoreSql({ tokens, idf, avgdl });
  const tfColumn = (t: string) => sql.raw(`tf${unique.indexOf(t)}`);
  const having = mode === "all" ? sql` having count(*) = ${live.length}` : sql``;
  const allPostings = live.reduce((n, t) => n + dfOf.get(t)!, 0);
  const rarest = live.reduce((a, b) => (dfOf.get(a)! <= dfOf.get(b)! ? a : b));
  const terms = arrayLiteral(live);

  // Every row among `postings` (chunk_id, term, tf, len) scored in the statement that reads its counts (bm25Part's
  // arithmetic on the same float8 numbers in the same order: the same bits as here), only the best `depth` sent back
  // with whether they pass the filters; deeper while the filters drop too many of the best.
  // `matched` instead of `postings`: the matching rows, one a row already (chunk_id, len and the pivot's columns).
  const scoreAll = async (from: { postings: SQL } | { matched: SQL }): Promise<{ hits: Bm25Hit[]; matched: number; first: Record<string, unknown> }> => {
    let depth = filterOf ? k + Math.max(16, k >> 2) : k;
    for (;;) {
      const got = await rowsOf<Judged & { n: number }>({
        tx,
        query: judgedBest({
          ctes: sql`${"matched" in from ? sql`m as (${from.matched})` : sql`p as (${from.postings}), m as (select chunk_id, len, ${pivot} from p group by chunk_id, len${having})`},
            s as (select chunk_id as id, ${score} as score from m), best as (select id, score from s order by score desc, id limit ${depth})`,
          head: sql`(select count(*)::int from s) as n`,
          from: sql`(select 1) one`,
        }),
      });
      const hits = hitsOf(got);
      const matched = got[0].n;
      if (hits.length >= k || depth >= matched) return { hits: hits.slice(0, k), matched, first: got[0] };
      depth *= 4;
    }
  };
  // All of two or more words, one rarer: its rows (index-only: the impact index holds their counts), each joined to
  // every other word's posting by key (the primary key holds the counts too), the most selective word first, so only
  // the chunks holding every word are scored; when those lookups cost less than reading every word's postings.
  const others = live.filter((t) => t !== rarest).sort((a, b) => dfOf.get(a)! - dfOf.get(b)!);
  const alias = (i: number) => sql.raw(`o${i}`);
  const selectMatched = sql`select r.chunk_id, r.len, r.tf as ${tfColumn(rarest)}${sql.join(others.map((t, i) => sql`, ${alias(i)}.tf as ${tfColumn(t)}`), sql``)}`;
  const byKey = mode === "all" && live.length > 1 && allPostings > exhaustiveUpTo && dfOf.get(rarest)! * others.length * lookupCost <= allPostings;
  if (byKey) {
    // `offset 0`: each stays a lookup by key for each row (a nested loop), never a read of the word's whole postings.
    const matched = sql`${selectMatched}
      from fts_postings r${sql.join(others.map((t, i) => sql` cross join lateral (select o.tf from fts_postings o where o.chunk_id = r.chunk_id and o.term = ${t} offset 0) ${alias(i)}`), sql``)}
      where r.term = ${rarest}`;
    const { hits, matched: n, first } = await scoreAll({ matched });
    return { kind: "ranked", hits, plan: plan("by-key", dfOf.get(rarest)!, 1, `exact bm25 of every chunk holding every word (${n}), the rarest word's postings (${dfOf.get(rarest)!}) joined to the others' by key`), stats, first };
  }
  // What the together sample found, when it ran (for the plan's detail).
  let sampledNote = "";
  // Every word's postings read (index-only) and joined on the chunk, so only the rows holding every word are scored.
  const joinAll = async (): Promise<Bm25TopAnswer> => {
    // `+ 0`: the commoner words' chunk is not an index key then, so the planner cannot look each of the rarest's rows
    // up in their postings by key (a nested loop, which it picks when it underestimates the rarest's rows).
    const matched = sql`${selectMatched}
      from fts_postings r${sql.join(others.map((t, i) => sql` join fts_postings ${alias(i)} on ${alias(i)}.term = ${t} and ${alias(i)}.chunk_id + 0 = r.chunk_id`), sql``)}
      where r.term = ${rarest}`;
    // Planned without JIT compilation (for the rest of the transaction): a join of many postings is costed high enough
    // to set it off, and its compilation (paid per statement) costs more than the statement's own work.
    await tx.execute(sql`select set_config('jit', 'off', true)`);
    const { hits, matched: n, first } = await scoreAll({ matched });
    return { kind: "ranked", hits, plan: plan("joined", allPostings, 1, `exact bm25 of every chunk holding every word (${n}), the words' postings (${allPostings}) joined${sampledNote}`), stats, first };
  };
  // All of two or more words, too many postings to group but not to read, the rarest not rare enough to look the
  // others up by key: joined.
  if (mode === "all" && live.length > 1 && allPostings > exhaustiveUpTo && allPostings <= joinUpTo && dfOf.get(rarest)! <= JOIN_RAREST) return joinAll();
  // Few postings: all of them (an index range each).
  if (allPostings <= exhaustiveUpTo) {
    const { hits, matched, first } = await scoreAll({ postings: sql`select chunk_id, term, tf, len from fts_postings where term = any(${terms}::text[])` });
    return { kind: "ranked", hits, plan: plan("exhaustive", matched, 1, `exact bm25 of every matching chunk (${matched}) from the stored token counts`), stats, first };
  }
  // All of two or more common words: joined, unless they go together at the head of their postings (one statement:
  // of each word's first postings by impact, the share holding every other word).
  if (mode === "all" && live.length > 1 && allPostings <= joinCommon) {
    // The rarest first (`others` goes from the rarest up): a row's lookups stop at the first word it lacks.
    const sampled = [rarest, ...others].slice(0, SAMPLE_WORDS);
    const holdsOthers = (t: string) => sql.join(sampled.filter((o) => o !== t).map((o) => sql`exists (select 1 from fts_postings o where o.chunk_id = s.chunk_id and o.term = ${o})`), sql` and `);
    const [sample] = await rowsOf<{ share: number[] }>({
      tx,
      query: sql`select array[${sql.join(sampled.map((t) => sql`(select coalesce(avg((${holdsOthers(t)})::int), 0)::float8 from (select chunk_id from fts_postings where term = ${t} order by imp desc, chunk_id desc limit ${TOGETHER_SAMPLE}) s)`), sql`, `)}] as share`,
    });
    const least = Math.min(...sample.share.map(Number));
    sampledNote = `, the ${sampled.length} rarest words' first ${TOGETHER_SAMPLE} postings ${least < together ? "seldom" : "often"} together (${least.toFixed(2)})`;
    if (least < together) return joinAll();
  }

  // Impact-ordered heads with a proven bound (no random access but for a few rows), one statement a try: the first
  // `heads` postings of each token by impact, with their counts and lengths (the impact index holds them). A row met
  // in every head (or whose unmet tokens' postings were all read: their count is 0) has its exact score; the best of
  // those, with whether they pass the filters, give the k-th score θ. A row met in some heads only can score at most
  // its met tokens' parts plus, for each unmet token, impactBound at that token's frontier (the last impact read); a
  // row met in none at most Σ impactBound. When that sum is below θ and few partly met rows can still reach θ, the
  // top k is exact once those few are scored by key (a second statement); else the heads go deeper. Each token's
  // frontier and count come from a second index-only read of its head: cheaper than aggregating the heads' rows,
  // which are then read once (by the grouping).
  const SLACK = 1 + 1e-9;
  const c = Math.min(1, REF_AVGDL / avgdl);
  const tfOf = tfColumn;
  const tfList = (of: SQL) => sql.join(live.map((t) => sql`${of}${tfOf(t)}`), sql`, `);
  const at = (t: string) => live.indexOf(t) + 1;
  const f8 = (n: number) => sql`${n}::float8`;
  // All words: deep enough that, were the tokens independent of each other, HEAD_OVERLAP × k rows would be met in every
  // head (h^n / rows^(n−1) of them), so that the first try finds θ; never past the commonest token's postings.
  const commonest = Math.max(...live.map((t) => dfOf.get(t)!));
  const overlap = mode === "all" && live.length > 1 ? Math.min(commonest, Math.ceil((HEAD_OVERLAP * k) ** (1 / live.length) * rows ** ((live.length - 1) / live.length))) : 0;
  let heads = firstHeads ?? Math.max(HEADS, 8 * k, Math.ceil((commonest * k) / 1000), overlap);
  let read = 0;
  let rounds = 0;
  let depth = filterOf ? k + Math.max(16, k >> 2) : k;
  for (;;) {
    rounds++;
    // Per token, once a statement (fb: one row): whether its postings were all read, and the most it adds to a row
    // that does not hold it in the heads (impactBound at its frontier; 0 when all were read).
    const allOf = (t: string) => sql.raw(`a${at(t)}`);
    const unmetOf = (t: string) => sql.raw(`u${at(t)}`);
    const perToken = sql.join(
      live.map((t) => {
        const frontier = sql`f.frontier[${at(t)}]`;
        return sql`f.took[${at(t)}] < ${heads} as ${allOf(t)},
          (case when f.took[${at(t)}] < ${heads} or ${frontier} <= 0 then 0 else ${f8(weight.get(t)! * SLACK * (K1 + 1))} / (1 + ${f8(c)} * (1 / least(1, ${frontier} * ${f8(1 + 2 ** -20)}) - 1)) end)::float8 as ${unmetOf(t)}`;
      }),
      sql`, `,
    );
    const readAll = (t: string) => sql`fb.${allOf(t)}`;
    const full = sql.join(
      live.map((t) => (mode === "all" ? sql`${tfOf(t)} is not null` : sql`(${tfOf(t)} is not null or ${readAll(t)})`)),
      sql` and `,
    );
    // All words: a row without a token whose postings were all read cannot match.
    const possible = mode === "all" ? sql.join(live.map((t) => sql`(${tfOf(t)} is not null or not ${readAll(t)})`), sql` and `) : sql`true`;
    const most = sql.join(
      live.map((t) => {
        const w = weight.get(t)! * SLACK;
        return sql`(case when ${tfOf(t)} is not null then ${f8(w)} * ((${tfOf(t)} * ${f8(K1 + 1)}) / (${tfOf(t)} + ${f8(K1)} * (${f8(1 - B)} + (${f8(B)} * len) / ${f8(avgdl)}))) else fb.${unmetOf(t)} end)`;
      }),
      sql` + `,
    );
    const got = await rowsOf<Judged & { frontier: number[]; took: number[]; n: number; open: (number | null)[][] | null; bestCounts: (number | null)[][] | null }>({
      tx,
      query: judgedBest({
        ctes: sql`t as (select term, i from unnest(${terms}::text[]) with ordinality as t(term, i)),
          h as (select t.term, x.chunk_id, x.tf, x.len from t cross join lateral (select chunk_id, tf, len from fts_postings p where p.term = t.term order by p.imp desc, p.chunk_id desc limit ${heads}) x),
          f as (select array_agg(coalesce(y.imp, 0)::float8 order by t.i) as frontier, array_agg(y.n order by t.i) as took from t cross join lateral (select min(imp) as imp, count(*)::int as n from (select imp from fts_postings p where p.term = t.term order by p.imp desc, p.chunk_id desc limit ${heads}) z) y),
          fb as (select ${perToken} from f),
          m as (select chunk_id, len, ${pivot} from h group by chunk_id, len),
          s as (select m.chunk_id as id, ${score} as score from m, fb where ${full}),
          o as (select m.chunk_id as id, m.len, ${sql.join(live.map((t) => tfOf(t)), sql`, `)}, ${most} as ub from m, fb where not (${full}) and ${possible}),
          best as (select id, score from s order by score desc, id limit ${depth})`,
        // The partly met rows that can still reach θ and, when there are any, the best k's counts (they are scored
        // again beside them); the caller's columns only when there are none (else the second statement sends them).
        after: sql`op as (select (select json_agg(json_build_array(x.id, x.len, ${tfList(sql`x.`)})) from (select o.* from o where o.ub >= (select q.score from ranked q where q.rn = ${k}) limit ${OPEN_ROWS + 1}) x) as open),
          bk as (select case when (select open from op) is not null then (select json_agg(json_build_array(m.chunk_id, m.len, ${tfList(sql`m.`)})) from ranked q join m on m.chunk_id = q.id where q.rn <= ${k}) end as best)`,
        // The two lists on the first row only (the statement's order): every row would carry them otherwise.
        head: sql`f.frontier, f.took, (select count(*)::int from s) as n, case when ${firstRow} then (select open from op) end as open, case when ${firstRow} then (select best from bk) end as "bestCounts"`,
        gate: sql`(select open from op) is null`,
        from: sql`f`,
      }),
    });
    const [{ frontier, took, n: scored }] = got;
    // Each partly met row, and each of the best k when there are any: [id, len, its count of each live token read in
    // the heads (null: not met, or for a best row none: its postings were all read)].
    const open = got[0].open ?? [];
    const bestCounts = got[0].bestCounts ?? [];
    read = took.reduce((a, b) => a + b, 0);
    const hits = hitsOf(got);
    const allRead = live.map((_, i) => took[i] < heads);
    const unseen = live.reduce((sum, t, i) => sum + (allRead[i] ? 0 : impactBound(weight.get(t)!, Number(frontier[i]), avgdl)), 0);
    const detail = (extra: string) => `exact bm25, top ${k} from impact-ordered postings with a proven bound (${read} postings read in ${rounds} round(s), ${scored} chunks scored${extra}${sampledNote})`;
    if (hits.length >= k ? unseen * SLACK < hits[k - 1].score && open.length <= OPEN_ROWS : depth >= scored && allRead.every(Boolean)) {
      if (open.length === 0) return { kind: "ranked", hits: hits.slice(0, k), plan: plan("impact-ordered", read, rounds, detail("")), stats, first: got[0] };
      // The few partly met rows that can still reach θ, scored by key beside the best k found.
      // Their postings met in the heads are sent back; only the others (and the best k's) are looked up by key.
      const met: { ids: number[]; terms: string[]; tfs: number[]; lens: number[] } = { ids: [], terms: [], tfs: [], lens: [] };
      const wanted: { ids: number[]; terms: string[] } = { ids: [], terms: [] };
      const want = (id: number, t: string) => {
        wanted.ids.push(id);
        wanted.terms.push(t);
      };
      for (const [id, len, ...tfs] of bestCounts) {
        live.forEach((t, i) => {
          if (tfs[i] === null) return;
          met.ids.push(id!);
          met.terms.push(t);
          met.tfs.push(tfs[i]!);
          met.lens.push(len!);
        });
      }
      for (const [id, len, ...tfs] of open) {
        live.forEach((t, i) => {
          if (tfs[i] === null) return want(id!, t);
          met.ids.push(id!);
          met.terms.push(t);
          met.tfs.push(tfs[i]!);
          met.lens.push(len!);
        });
      }
      const resolved = await scoreAll({
        postings: sql`select * from unnest(${arrayLiteral(met.ids)}::bigint[], ${arrayLiteral(met.terms)}::text[], ${arrayLiteral(met.tfs)}::int[], ${arrayLiteral(met.lens)}::int[]) as m(chunk_id, term, tf, len)
          union all select p.chunk_id, p.term, p.tf, p.len from unnest(${arrayLiteral(wanted.ids)}::bigint[], ${arrayLiteral(wanted.terms)}::text[]) as w(chunk_id, term)
            join fts_postings p on p.chunk_id = w.chunk_id and p.term = w.term`,
      });
      return { kind: "ranked", hits: resolved.hits, plan: plan("impact-ordered", read, rounds + 1, detail(`, ${open.length} more by key`)), stats, first: resolved.first };
    }
    // Too few of the scored passed the filters: more of them; else deeper heads (at worst every posting).
    if (hits.length < k && depth < scored) depth *= 4;
    else heads *= 2;
  }
}
