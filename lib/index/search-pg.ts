import { sql, type SQL } from "drizzle-orm";
import type { Fingerprint } from "../embed/providers";
import { AppError, isAppError } from "../errors";
import { ExplainRecorder, fusionPolicyFor, MARK_CLOSE, MARK_OPEN, matchTerms, similarityFloorFor, type Fallback } from "../retrieval";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { DOCUMENT_POOL, finishSearch, POOL, refuseTooDeep, weighWrittenForms, WRITTEN_FORMS, CONTEXT_ROWS_READ, mergeContext, type ChunkDetail, type LexicalRanking, type SearchInput, type SearchResult } from "./search";
import { documentContextGains, documentContextSeeds, DOCUMENT_CONTEXT, nearestInFolder } from "../retrieval/context";
import { EXACT_SCAN_LIMIT, vectorNeighboursPg } from "./vectors-pg";
import { runWithinBudgetPg, startQueryBudget, type QueryBudget } from "../db/query-budget";
import { inCallerTx } from "../db/port";
import { hiddenMemoryDocumentSql, hiddenRowsFilterOp, itemViewOf, type HiddenRowsFilter } from "./item-state";
import { SEARCH_BUDGET_HINT } from "./fulltext";
import { backlogFallbackPg } from "./embed-queue-pg";
import { logVectorQueryPg } from "./reembed-pg";
import { log } from "../log";
import { arrayLiteral, bm25TopPg, startChunkTermsBackfillPg, type Bm25Hit } from "./engines/pg-fulltext";
import { DOCUMENT_WORDS, rowsBm25Pg, startDocumentTermsBackfillPg } from "./engines/pg-words";

/**
 * Search's legs on PostgreSQL (fusion, grouping, the page and the answer are ./search.ts finishSearch): full-text
 * ranked by FTS5's own bm25 from statistics kept at write time (engines/pg-fulltext.ts, engines/pg-words.ts), or
 * while they are built by an idf-weighted ts_rank (docs/postgresql.md). User words are bound parameters, one
 * plainto_tsquery each, never tsquery syntax. The statements run within the query budget as their statement_timeout.
 */

/**
 * What the caller's vector step decided (the query embedded, or why vectors cannot answer): planQueryVectorPg's
 * plan, whose time and cache hit explain's readiness stage reports (a caller that made the vector itself may omit them).
 */
export type PgQueryVector = { ok: true; fingerprint: Fingerprint; vector: ArrayLike<number>; cacheHit?: boolean; ms?: number } | { ok: false; fallback: Fallback; ms?: number };

/** How this backend's lexical leg scores, as explain names it: FTS5's bm25 from the stored statistics, or (while they are built) the idf-weighted ts_rank. */
const RANKING_FALLBACK: LexicalRanking = "idf-weighted ts_rank";

/** ts_headline options: the same marks as FTS5's snippet(), about 24 words around the best match. */
const HEADLINE_OPTIONS = `StartSel=${MARK_OPEN}, StopSel=${MARK_CLOSE}, MaxWords=24, MinWords=12, ShortWord=2, MaxFragments=1, FragmentDelimiter=" … "`;

/** The tsquery of a plain query: one plainto_tsquery per word (a bound parameter), joined by && or ||. */
export function tsqueryFor({ terms, match }: { terms: string[]; match: "all" | "any" }): SQL | null {
  if (terms.length === 0) return null;
  return sql.join(
    terms.map((t) => sql`plainto_tsquery('english', ${t})`),
    match === "all" ? sql` && ` : sql` || `,
  );
}

/** Filters of a search (prefix, kind, tags, updated range, expired memories) over c = chunks, d = documents. */
export function chunkFiltersPg({ input, now, hidden = null }: { input: SearchInput; now: number; /** The view's hidden memories (lib/index/item-state.ts), left out here. */ hidden?: HiddenRowsFilter }): SQL[] {
  const where: SQL[] = [];
  // substr comparison, not LIKE, so `%` and `_` in the prefix are literal.
  if (input.prefix) where.push(sql`substr(d.path, 1, length(${input.prefix})) = ${input.prefix}`);
  if (input.kind?.length) where.push(sql`d.kind in ${input.kind}`);
  if (input.updated_after !== undefined) where.push(sql`d.mtime >= ${input.updated_after}`);
  if (input.updated_before !== undefined) where.push(sql`d.mtime < ${input.updated_before}`);
  // A memory document's row in `memories` is at path minus 'memory/' and '.md'. greatest(…, 0): SQL does not promise to
  // test d.kind first, and substr refuses a negative length (any document path under 10 characters failed every search).
  const memoryOf = sql`memories m where d.kind = 'memory' and m.path = substr(d.path, 8, greatest(length(d.path) - 10, 0))`;
  if (input.tags?.length) {
    where.push(sql`exists (select 1 from ${memoryOf} and m.tags && array[${sql.join(input.tags.map((t) => sql`${t}`), sql`, `)}]::text[])`);
  }
  if (!input.include_expired) where.push(sql`not exists (select 1 from ${memoryOf} and m.expires_at is not null and m.expires_at <= ${now})`);
  if (hidden) where.push(sql.raw(hiddenMemoryDocumentSql({ filter: hidden })));
  return where;
}

/** The query's words as a text[] of bound parameters. */
const wordArray = (terms: string[]): SQL => sql`array[${sql.join(terms.map((t) => sql`${t}`), sql`, `)}]::text[]`;
/** The query's tsquery as text ('' → null) and each word's own tsquery text, in word order: columns `tsq` and `perWord`. */
const queryTextColumns = (terms: string[], query: SQL): SQL =>
  sql`(select nullif((${query})::text, '')) as tsq, (select array(select plainto_tsquery('english', w)::text from unnest(${wordArray(terms)}) with ordinality as u(w, i) order by i)) as "perWord"`;

/** A chunk's details as every statement here selects them (c = chunks, d = documents), after its id; times come back as text. */
const DETAIL_COLUMNS = sql`c.chunk_id as "chunkId", d.path, d.kind, c.chunk_index as "chunkIndex", d.mtime as "updatedAt", substr(c.text, 1, 240) as text`;
type DetailRow = Omit<ChunkDetail, "id" | "updatedAt"> & { updatedAt: string | number };
const detailOf = (id: number | string, r: DetailRow): ChunkDetail => ({ id: Number(id), chunkId: r.chunkId, path: r.path, kind: r.kind, chunkIndex: r.chunkIndex, updatedAt: Number(r.updatedAt), text: r.text });

type LexicalRow = {
  id: number;
  score: number;
  detail: ChunkDetail;
  /** ts_headline, when it was asked for this row. */
  snip: string | null;
  /** The whole chunk, for the rows the exact-form and proximity factors weigh (the best WRITTEN_FORMS.maxCandidates). */
  fullText: string | null;
  exactForms: number | null;
  nearPairs: number | null;
  /** Score from a neighbouring short document (lib/retrieval/context.ts), included in `score`; `matched` false: context alone. */
  context?: number;
  matched?: boolean;
};

/** One query word's lexeme(s): its tsquery text and how many rows of the table contain it. */
type TermStat = { q: string; df: number };
export type QueryStats = { /** The whole query's tsquery text (what `match` reports); null when no word is left (all stopwords, say). */ tsq: string | null; terms: TermStat[]; rows: number };

/**
 * The ts_rank fallback's statistics, in one statement: the query's tsquery as text, and each distinct lexeme of the
 * words (in word order) with its row count in `table` (GIN counts) for the idf weights; search's and remember's.
 */
export async function queryStatsPg({ tx, table = sql`chunks`, terms, query }: { tx: PgStoreTx; table?: SQL; terms: string[]; query: SQL }): Promise<QueryStats> {
  const rows = await rowsOf<{ tsq: string; q: string | null; df: number | null; n: number }>({
    tx,
    query: sql`with t as (select plainto_tsquery('english', w) as q, i from unnest(${wordArray(terms)}) with ordinality as u(w, i)),
      kept as (select q::text as q, min(i) as i from t where numnode(q) > 0 group by q::text)
      select (${query})::text as tsq, kept.q, (select count(*) from ${table} x where x.tsv @@ kept.q::tsquery)::int as df, (select count(*) from ${table})::int as n
      from (select 1) one left join kept on true order by kept.i`,
  });
  const tsq = rows[0]?.tsq ?? "";
  return { tsq: tsq === "" ? null : tsq, terms: rows.flatMap((r) => (r.q === null ? [] : [{ q: r.q, df: r.df ?? 0 }])), rows: rows[0]?.n ?? 0 };
}

/**
 * A row's fallback score: Σ over the query's lexemes of idf × ts_rank(tsv, lexeme, 1) (saturating tf, length-normalised
 * like bm25); idf is bm25's, Math.log being enough for a ranking that is not FTS5's anyway.
 */
export function tsRankExpressionPg({ stats, tsv = sql`c.tsv` }: { stats: Pick<QueryStats, "terms" | "rows">; tsv?: SQL }): SQL {
  const idf = (df: number) => Math.log(1 + (stats.rows - df + 0.5) / (df + 0.5));
  return sql.join(
    stats.terms.map((t) => sql`${idf(t.df)}::float8 * ts_rank(${tsv}, ${t.q}::tsquery, 1)`),
    sql` + `,
  );
}

/** The best `take` chunks by tsRankExpressionPg that pass the filters, with details and the page's headlines, in one statement. */
async function lexicalLeg({ tx, stats, where, take, headlines }: { tx: PgStoreTx; stats: QueryStats & { tsq: string }; where: SQL[]; take: number; headlines: { from: number; to: number } }): Promise<LexicalRow[]> {
  // `tsq` and each term's `q` are PostgreSQL's own text forms of the query built from bound words, passed back as parameters.
  const rows = await rowsOf<DetailRow & { id: string; score: number; snip: string | null; fullText: string | null }>({
    tx,
    query: sql`with q as (select ${stats.tsq}::tsquery as query),
      ranked as (
        select c.id, ${tsRankExpressionPg({ stats })} as score from q, chunks c join documents d on d.doc_id = c.doc_id
        where c.tsv @@ q.query${sql.join(where.map((w) => sql` and ${w}`))}
        order by score desc, c.id limit ${take}),
      numbered as (select ranked.*, row_number() over (order by score desc, id) as rn from ranked)
      select r.id, r.score, ${DETAIL_COLUMNS},
        case when r.rn between ${headlines.from} and ${headlines.to} then ts_headline('english', c.text, q.query, ${HEADLINE_OPTIONS}) end as snip,
        case when r.rn <= ${WRITTEN_FORMS.maxCandidates} then c.text end as "fullText"
      from numbered r join chunks c on c.id = r.id join documents d on d.doc_id = c.doc_id, q
      order by r.rn`,
  });
  return rows.map((r) => ({ id: Number(r.id), score: Number(r.score), snip: r.snip, fullText: r.fullText, exactForms: null, nearPairs: null, detail: detailOf(r.id, r) }));
}

/**
 * What the lexical leg needs of each chunk the bm25 engine ranks (engines/pg-fulltext.ts: bm25TopPg's `columns`, over
 * c = chunks, d = documents and r.rn, the chunk's rank), sent back in the statement that ranks them: its details,
 * headlines for ranks [headlines.from, headlines.to], its whole text for the written-form factors, and once per
 * statement (an init plan) the query's tsquery (headlines) and each word's own (the whole-document leg's fallback).
 */
function lexicalColumns({ terms, query, headlines }: { terms: string[]; query: SQL; headlines: { from: number; to: number } }): SQL {
  return sql`${queryTextColumns(terms, query)},
    ${DETAIL_COLUMNS},
    case when r.rn between ${headlines.from} and ${headlines.to} and numnode(${query}) > 0 then ts_headline('english', c.text, ${query}, ${HEADLINE_OPTIONS}) end as snip,
    case when r.rn <= ${WRITTEN_FORMS.maxCandidates} then c.text end as "fullText"`;
}

type LexicalColumns = DetailRow & { tsq: string | null; perWord: string[]; snip: string | null; fullText: string | null };

/** The ranked chunks as lexical rows, from the columns lexicalColumns asked for; `first`: the statement's first row. */
function lexicalRowsOf({ hits, first }: { hits: Bm25Hit[]; first: Record<string, unknown> }): { rows: LexicalRow[]; tsq: string | null; perWord: string[] } {
  const head = first as LexicalColumns;
  return {
    tsq: head.tsq,
    perWord: head.perWord,
    rows: hits.map((h) => {
      const r = h.row as LexicalColumns;
      return { id: h.id, score: h.score, snip: r.snip, fullText: r.fullText, exactForms: null, nearPairs: null, detail: detailOf(h.id, r) };
    }),
  };
}

/** The query's tsquery and each word's own, for an answer no statement ranked (no chunk holds the query's tokens). */
async function queryTexts({ tx, terms, query }: { tx: PgStoreTx; terms: string[]; query: SQL }): Promise<{ tsq: string | null; perWord: string[] }> {
  const [row] = await rowsOf<{ tsq: string | null; perWord: string[] }>({ tx, query: sql`select ${queryTextColumns(terms, query)}` });
  return row;
}

/**
 * The exact-form and proximity factors of the SQLite path (search.ts weighWrittenForms, EXACT_FORM_BOOST, PROXIMITY),
 * read from the whole text of the best WRITTEN_FORMS.maxCandidates rows; the leg is re-sorted by the weighed score.
 */
function weighLexical(rows: LexicalRow[], terms: string[]): void {
  const weighed = rows.slice(0, WRITTEN_FORMS.maxCandidates).map((r) => ({ r, score: r.score, exactForms: null, nearPairs: null, row: { text: r.fullText ?? r.detail.text } }));
  weighWrittenForms({ ranked: weighed, terms, boost: WRITTEN_FORMS.boost, proximity: WRITTEN_FORMS.proximity });
  for (const w of weighed) Object.assign(w.r, { score: w.score, exactForms: w.exactForms, nearPairs: w.nearPairs, fullText: null });
  rows.sort((a, b) => b.score - a.score || a.id - b.id);
}

/**
 * Context from neighbouring short documents, as on SQLite (search.ts addDocumentContext, lib/retrieval/context.ts):
 * the first chunks of the documents just before and after each seed in time that the filters keep, one statement.
 */
async function addDocumentContextPg({ tx, store, rows, lengths, where }: { tx: PgStoreTx; store: string; rows: LexicalRow[]; lengths: Map<number, number | undefined>; where: SQL[] }): Promise<void> {
  const key = (id: number) => `${store}:${id}`;
  const ranked = rows.map((r) => ({ key: key(r.id), store, score: r.score, row: { ...r.detail, length: lengths.get(r.id) } }));
  const seeds = documentContextSeeds({ ranked });
  if (seeds.length === 0) return;
  const filters = sql.join(where.map((w) => sql` and ${w}`));
  const side = (cmp: SQL, order: SQL) =>
    sql`(select c.id, ${DETAIL_COLUMNS}
      from documents d join chunks c on c.doc_id = d.doc_id and c.chunk_index = 0 where ${cmp}${filters} order by d.mtime ${order} limit ${CONTEXT_ROWS_READ})`;
  const times = sql`array[${sql.join(seeds.map((s) => sql`${s.time}`), sql`, `)}]::bigint[]`;
  const found = await rowsOf<DetailRow & { seed: string; id: string }>({
    tx,
    query: sql`select s.i as seed, x.* from unnest(${times}) with ordinality as s(t, i), lateral (
      ${side(sql`d.mtime >= s.t - ${DOCUMENT_CONTEXT.windowMs} and d.mtime < s.t`, sql`desc`)} union all ${side(sql`d.mtime > s.t and d.mtime <= s.t + ${DOCUMENT_CONTEXT.windowMs}`, sql`asc`)}) x`,
  });
  const details = new Map<string, ChunkDetail>();
  const neighbours = seeds.map((seed, i) => {
    const near = nearestInFolder({ seed, rows: found.filter((r) => Number(r.seed) === i + 1).map((r) => ({ ...detailOf(r.id, r), key: key(Number(r.id)), time: Number(r.updatedAt) })) });
    for (const r of [near.before, near.after]) if (r) details.set(r.key, detailOf(r.id, r));
    return { hit: seed.key, before: near.before?.key ?? null, after: near.after?.key ?? null };
  });
  const gains = documentContextGains({ ranked, neighbours });
  mergeContext({ ranked: rows, gains, keyOf: (r) => key(r.id), make: (k, gain) => ({ id: details.get(k)!.id, score: gain, detail: details.get(k)!, snip: null, fullText: null, exactForms: null, nearPairs: null, context: gain, matched: false }) });
  rows.sort((a, b) => b.score - a.score || a.id - b.id);
}

/**
 * The whole-document leg of group=document (SQLite: documents_fts bm25 of the candidates' documents): each
 * candidate document's chunks joined in order and scored as one text, with the chunk leg's weights (tsRankExpressionPg).
 * No document index: the tsvector is made per query, for the candidates only (DOCUMENT_POOL-bounded), within the budget.
 */
async function wholeDocumentScores(tx: PgStoreTx, stats: QueryStats & { tsq: string }, paths: string[]): Promise<Map<string, number>> {
  if (paths.length === 0 || stats.terms.length === 0) return new Map();
  const rows = await rowsOf<{ path: string; score: number }>({
    tx,
    query: sql`select x.path, ${tsRankExpressionPg({ stats, tsv: sql`x.tsv` })} as score from (
        select d.path, to_tsvector('english', string_agg(c.text, ' ' order by c.chunk_index)) as tsv
        from documents d join chunks c on c.doc_id = d.doc_id where d.path in ${paths} group by d.path) x
      where x.tsv @@ ${stats.tsq}::tsquery`,
  });
  return new Map(rows.map((r) => [r.path, Number(r.score)]));
}

async function chunkDetails(tx: PgStoreTx, ids: number[]): Promise<Map<number, ChunkDetail>> {
  if (ids.length === 0) return new Map();
  const rows = await rowsOf<DetailRow & { id: string }>({ tx, query: sql`select c.id, ${DETAIL_COLUMNS} from chunks c join documents d on d.doc_id = c.doc_id where c.id in ${ids}` });
  return new Map(rows.map((r) => [Number(r.id), detailOf(r.id, r)]));
}

/** Highlighted snippets (ts_headline) of the chunks on the page only: headlines re-parse the text, so never for a whole pool. */
async function headlines(tx: PgStoreTx, tsq: string, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const rows = await rowsOf<{ id: string; snip: string }>({ tx, query: sql`select c.id, ts_headline('english', c.text, ${tsq}::tsquery, ${HEADLINE_OPTIONS}) as snip from chunks c where c.id in ${ids}` });
  return new Map(rows.map((r) => [Number(r.id), r.snip]));
}

async function pendingEmbeddings(tx: PgStoreTx, fingerprintId: string): Promise<number> {
  const [row] = await rowsOf<{ n: number }>({ tx, query: sql`select count(*)::int as n from chunks c where not exists (select 1 from chunk_embeddings e where e.chunk_row_id = c.id and e.fingerprint_id = ${fingerprintId})` });
  return row.n;
}

async function hasChunks(tx: PgStoreTx): Promise<boolean> {
  return (await rowsOf({ tx, query: sql`select 1 from chunks limit 1` })).length > 0;
}

type StoreLegs = { /** What ranked the lexical leg: the bm25 engine (its plan's detail) or the fallback ts_rank (why). */ engine: { bm25: boolean; detail: string } | null; store: string; /** The lexical leg's query statistics, for the whole-document leg. */ stats: (QueryStats & { tsq: string }) | null; lexical: LexicalRow[]; vector: { id: number; similarity: number }[]; belowFloor: number; /** How the vector leg answered (pgvector HNSW or the exact scan). */ method: "hnsw" | "exact" | null; vectorFallback: Fallback | null; pending: number; tsq: string | null; details: Map<number, ChunkDetail>; searchable: boolean };

/**
 * Search a store (and core, read-only, when given) in any mode. `vector` is the caller's vector step for mode
 * vector/hybrid; without it those modes answer lexically with reason vectors_unavailable.
 */
export async function searchStorePg(args: {
  handle: PgStoreHandle;
  core: PgStoreHandle | null;
  input: SearchInput;
  vector?: PgQueryVector;
  now?: number;
  /** The full-text statements' time budget (default DUALMIND_QUERY_BUDGET_MS, as on SQLite). */
  budgetMs?: number;
}): Promise<SearchResult> {
  const budget = startQueryBudget({ hint: SEARCH_BUDGET_HINT, budgetMs: args.budgetMs });
  // Full-text over one store: every statement in one read transaction under one budget set-up (one snapshot, as
  // one SQLite read; the fewest round trips). Otherwise each store's legs, then the whole-document leg and headlines.
  if (!args.core && args.input.mode === "fts") {
    // The store's schema and the budget in one statement; nothing runs after the search in this transaction.
    return args.handle.db.transaction(
      (tx) => runWithinBudgetPg({ tx, budget, schema: args.handle.schema, restore: false, fn: () => searchStoresPg({ ...args, budget, shared: tx }) }),
      { accessMode: "read only", isolationLevel: "repeatable read" },
    );
  }
  return searchStoresPg({ ...args, budget, shared: null });
}

async function searchStoresPg({
  handle,
  core,
  input,
  vector,
  now = Date.now(),
  budget,
  shared,
}: {
  handle: PgStoreHandle;
  core: PgStoreHandle | null;
  input: SearchInput;
  vector?: PgQueryVector;
  now?: number;
  budget: QueryBudget;
  /** The one transaction the whole search runs in, within its budget (searchStorePg), or null. */
  shared: PgStoreTx | null;
}): Promise<SearchResult> {
  const rec = input.explain ? new ExplainRecorder() : null;
  /** Work in a store's read transaction (one snapshot), or in the shared one. */
  const inStore = <T>(h: PgStoreHandle, work: (tx: PgStoreTx) => Promise<T>): Promise<T> => (shared ? work(shared) : withStoreTx({ handle: h, readOnly: true, snapshot: true, work }));
  /** Work within the budget; the shared transaction already is. */
  const withinBudget = <T>(tx: PgStoreTx, fn: () => Promise<T>): Promise<T> => (shared ? fn() : runWithinBudgetPg({ tx, budget, fn }));
  if (input.syntax === "fts5") throw new AppError("invalid_request", "syntax=fts5 is the SQLite backend's advanced syntax; on PostgreSQL use syntax=plain", [{ path: "syntax", message: "fts5 syntax is not available on PostgreSQL" }]);
  const grouped = input.group === "document";
  refuseTooDeep(input);
  const handles = core ? [handle, core] : [handle];
  const page = input.offset + input.limit + 1;
  const take = grouped ? Math.max(DOCUMENT_POOL, page * 4) : input.mode === "hybrid" ? Math.max(POOL, page) : page;

  let vectorFallback: Fallback | null = null;
  let fp: Fingerprint | null = null;
  let queryVector: ArrayLike<number> | null = null;
  if (input.mode !== "fts") {
    if (!vector) vectorFallback = { reason: "vectors_unavailable", message: "no query vector was given for this search" };
    else if (!vector.ok) vectorFallback = vector.fallback;
    else {
      fp = vector.fingerprint;
      queryVector = vector.vector;
    }
    rec?.readiness(vector?.ok ? { ok: true, fingerprint: vector.fingerprint, cacheHit: vector.cacheHit ?? false, ms: vector.ms ?? 0 } : { ok: false, fallback: vectorFallback!, ms: vector?.ms ?? 0 });
  }
  const floor = fp ? similarityFloorFor(fp.provider) : 0;
  const policy = fusionPolicyFor({ fingerprint: fp, override: { fts: input.w_fts, vec: input.w_vec } });
  const weights = fp ? policy.ranks : { fts: 1, vec: 1 };
  const matchMode = input.match ?? (input.mode === "fts" ? "all" : "any");
  const terms = matchTerms(input.q);
  const query = tsqueryFor({ terms, match: matchMode });

  // Full-text answers (chunk hits, one store) have their page in each store's ranks offset+1…offset+limit, so their
  // headlines come with the ranking; with core, the top offset+limit of each; hybrid and grouped answers fetch them after fusion.
  const pageHeadlines =
    input.mode === "fts" && !grouped ? (core ? (input.offset + input.limit <= 100 ? { from: 1, to: input.offset + input.limit } : { from: 0, to: -1 }) : { from: input.offset + 1, to: input.offset + input.limit }) : { from: 0, to: -1 };
  const legs: StoreLegs[] = [];
  // Each leg's time over all searched stores, for explain (one transaction per store runs both of its legs).
  const legMs = { vector: 0, lexical: 0 };
  const timed = async <T>(leg: keyof typeof legMs, work: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await work();
    } finally {
      legMs[leg] += performance.now() - t0;
    }
  };
  let lexicalRan = false;
  /** Why the full-text part of a hybrid search was skipped (its budget ran out), when it was. */
  let lexicalOverBudget: string | null = null;
  for (const h of handles) {
    legs.push(
      // One snapshot: the full-text statistics, postings and rows read by several statements agree (as one SQLite read does).
      await inStore(h, async (tx): Promise<StoreLegs> => {
        const leg: StoreLegs = { engine: null, store: h.store, stats: null, lexical: [], vector: [], belowFloor: 0, method: null, vectorFallback: null, pending: 0, tsq: null, details: new Map(), searchable: true };
        // The store's hidden memories are left out inside each leg's statements (none in a store without item state).
        const where = chunkFiltersPg({ input, now, hidden: await inCallerTx(tx, hiddenRowsFilterOp({ view: itemViewOf(input) }), h) });
        // A store whose embed queue is over the watermark answers lexically and says so (backlog), as on SQLite.
        const backlog = queryVector && fp && h === handle ? await timed("vector", () => backlogFallbackPg({ tx })) : null;
        if (backlog) leg.vectorFallback = { ...backlog, message: `${h.store}: ${backlog.message}` };
        else if (queryVector && fp) {
          const knn = await timed("vector", () => vectorNeighboursPg({ tx, fingerprintId: fp!.id, query: queryVector!, k: take + 20, where }));
          if (!knn.ok) leg.vectorFallback = { reason: knn.reason, message: `${h.store}: ${knn.message}` };
          else {
            leg.method = knn.method;
            for (const hit of knn.hits) {
              if (hit.similarity < floor) leg.belowFloor++;
              else leg.vector.push(hit);
            }
            leg.vector.splice(take);
          }
          leg.pending = await timed("vector", () => pendingEmbeddings(tx, fp!.id));
        }
        const lexicalWanted = input.mode !== "vector" || vectorFallback !== null || leg.vectorFallback !== null;
        lexicalRan ||= lexicalWanted;
        // Hybrid whose store's vectors answered can answer from them alone when the full-text part overruns the budget (as on SQLite):
        // that part then runs in a savepoint, so the cancelled statement leaves the transaction usable.
        const vectorsCanAnswer = input.mode === "hybrid" && vectorFallback === null && (legs[0] ?? leg).method !== null && (legs[0] ?? leg).vectorFallback === null;
        if (query && lexicalWanted && lexicalOverBudget === null) {
          const lexicalPart = (ltx: PgStoreTx) =>
            withinBudget(ltx, async () => {
              // FTS5's bm25 from the store's statistics; while they are being built (a store from before them), the ts_rank ranking.
              const top = await bm25TopPg({ tx: ltx, words: terms, mode: matchMode, where, k: take, columns: lexicalColumns({ terms, query, headlines: pageHeadlines }) });
              if (top.kind === "ranked") {
                const texts = top.first ? lexicalRowsOf({ hits: top.hits, first: top.first }) : { rows: [], ...(await queryTexts({ tx: ltx, terms, query })) };
                leg.tsq = texts.tsq;
                leg.engine = { bm25: true, detail: top.plan.detail };
                // The whole-document leg's idf weights: each word's row count among the chunks, from the same statistics.
                const seen = new Set<string>();
                const weighted = texts.perWord.flatMap((q, i) => (q === "" || seen.has(q) ? [] : (seen.add(q), [{ q, df: top.stats.df[i] }])));
                if (texts.tsq !== null) leg.stats = { tsq: texts.tsq, terms: weighted, rows: top.stats.rows };
                leg.lexical = texts.rows;
              } else {
                leg.engine = { bm25: false, detail: top.reason };
                if (/being built/.test(top.reason)) startChunkTermsBackfillPg(h);
                const stats = await queryStatsPg({ tx: ltx, terms, query });
                leg.tsq = stats.tsq;
                if (stats.tsq !== null) leg.stats = { ...stats, tsq: stats.tsq };
                if (leg.stats) leg.lexical = await lexicalLeg({ tx: ltx, stats: leg.stats, where, take, headlines: pageHeadlines });
              }
              const lengths = new Map(leg.lexical.map((r) => [r.id, r.fullText?.length]));
              weighLexical(leg.lexical, terms);
              // As on SQLite: hybrid only, whose vectors answer (full-text alone answers with rows holding the words).
              if (vectorsCanAnswer) await addDocumentContextPg({ tx: ltx, store: h.store, rows: leg.lexical, lengths, where });
            });
          await timed("lexical", async () => {
            if (!vectorsCanAnswer) return lexicalPart(tx);
            try {
              await tx.transaction(lexicalPart);
            } catch (e) {
              // The lexical leg is the one that grows with common words: past the budget, hybrid answers from its vectors and says so.
              if (!(isAppError(e) && e.code === "query_too_expensive")) throw e;
              lexicalOverBudget = e.message;
            }
          });
        }
        for (const r of leg.lexical) leg.details.set(r.id, r.detail);
        const missing = leg.vector.map((r) => r.id).filter((id) => !leg.details.has(id));
        for (const [id, d] of await chunkDetails(tx, missing)) leg.details.set(id, d);
        // Whether there was anything to search only matters for an empty leg (store_empty vs no_match).
        if (leg.lexical.length === 0 && leg.vector.length === 0) leg.searchable = await hasChunks(tx);
        return leg;
      }),
    );
  }
  // The store's own vector leg decides: when it could not answer, the whole answer is lexical.
  vectorFallback ??= legs[0].vectorFallback;
  const vectorsAnswered = fp !== null && vectorFallback === null;
  if (lexicalOverBudget !== null) {
    for (const l of legs) {
      l.lexical = [];
      l.tsq = null;
    }
  }
  const answeredBy: SearchInput["mode"] = lexicalOverBudget !== null ? "vector" : vectorsAnswered ? input.mode : "fts";

  // One ranking per signal over every searched store, as on SQLite.
  const byScore = <T extends { key: string; score: number }>(list: T[]) => list.sort((a, b) => b.score - a.score || a.key.localeCompare(b.key));
  const lexical = byScore(legs.flatMap((l) => l.lexical.map((r) => ({ key: `${l.store}:${r.id}`, score: r.score, snip: r.snip, exactForms: r.exactForms, nearPairs: r.nearPairs, context: r.context, matched: r.matched }))));
  const vectorRanked = vectorsAnswered ? byScore(legs.flatMap((l) => l.vector.map((r) => ({ key: `${l.store}:${r.id}`, score: r.similarity })))).slice(0, take) : [];
  const snipOf = new Map(lexical.map((r) => [r.key, r.snip]));
  if (fp) {
    // The vector leg ran (the query was embedded): what it found, or why it could not answer.
    const belowFloorNow = legs.reduce((n, l) => n + l.belowFloor, 0);
    const ran = legs.filter((l) => l.method !== null);
    rec?.record("vector", legMs.vector, {
      candidates: vectorRanked.length,
      detail: vectorsAnswered
        ? `KNN (${ran.map((l) => `${l.store}: ${l.method === "hnsw" ? "pgvector HNSW" : "exact cosine scan"}`).join(", ")}); ${belowFloorNow} neighbour(s) below the similarity floor ${floor} left out${legs.slice(1).flatMap((l) => (l.vectorFallback ? [`; ${l.vectorFallback.message}`] : [])).join("")}`
        : `vectors could not answer: ${vectorFallback!.reason}: ${vectorFallback!.message}`,
      top: vectorRanked.map((r) => ({ key: r.key, score: r.score })),
    });
  }
  const RANKING: LexicalRanking = legs.some((l) => l.engine && !l.engine.bm25) ? RANKING_FALLBACK : "bm25";
  if (lexicalRan) {
    const tsqs = legs.filter((l) => l.tsq !== null).map((l) => `${l.store}: ${l.tsq}`);
    const plans = legs.flatMap((l) => (l.engine ? [`${l.store}: ${l.engine.bm25 ? l.engine.detail : `idf-weighted ts_rank over chunks.tsv (Σ idf × ts_rank per lexeme): ${l.engine.detail}`}`] : []));
    rec?.record("lexical", legMs.lexical, {
      candidates: lexical.length,
      detail: lexicalOverBudget !== null ? `skipped: ${lexicalOverBudget}` : query ? `${plans.join("; ")}; tsquery (headlines) ${tsqs.length ? tsqs.join("; ") : "empty (only stopwords)"}${WRITTEN_FORMS.note(WRITTEN_FORMS.boost, WRITTEN_FORMS.proximity)}` : "no word to match",
      top: lexical.map((r) => ({ key: r.key, score: r.score })),
    });
  }
  if (vectorsAnswered && fp && !handle.readOnly) {
    // What the active model answered, for comparing a re-embed's candidate model (as on SQLite); a failed log never fails the search.
    const own = legs[0].vector.slice(0, 10).map((r) => r.id);
    await withStoreTx({ handle, work: (tx) => logVectorQueryPg({ tx, q: input.q, mode: input.mode, fingerprintId: fp.id, resultIds: own }) }).catch((e: Error) =>
      log("warn", "search log write failed", { store: handle.store, error: e.message }),
    );
  }
  const detailOf = (key: string) => legs.find((l) => l.store === key.slice(0, key.indexOf(":")))?.details.get(Number(key.slice(key.indexOf(":") + 1)));
  const pending = vectorsAnswered ? legs[0].pending : 0;
  const belowFloor = legs.reduce((n, l) => n + l.belowFloor, 0);
  type OnStore = <T>(h: PgStoreHandle, work: (tx: PgStoreTx) => Promise<T>) => Promise<T>;
  const finish = (onStore: OnStore) =>
    finishSearch({
      input, rec, now, answeredBy, weights, policy, ranking: RANKING, lexical, vector: vectorRanked.map((r) => ({ key: r.key, similarity: r.score })), detailOf, terms,
      // No title evidence here: a document ranks by its chunks, its text as a whole and its path's words.
      handles: [],
      itemHandles: handles,
      itemRun: (h, op) => onStore(h as PgStoreHandle, (tx) => inCallerTx(tx, op, h as PgStoreHandle)),
      groupingNote: "by the chunks' evidence, each document's text as a whole (whole-document bm25) and the path's words",
      wholeDocument: async (candidates) => {
        if (lexicalOverBudget !== null) return null;
        const scored = new Map<string, number>();
        for (const h of handles) {
          const leg = legs.find((l) => l.store === h.store)!;
          const paths = [...new Set(candidates.filter((c) => c.store === h.store && c.fts?.matched !== false).map((c) => c.detail.path))];
          if (paths.length === 0) continue;
          const scores = await onStore(h, async (tx) => {
            // FTS5's bm25 of the candidate documents from the whole-document statistics (SQLite: documents_fts); while they
            // are being built (a store from before them), the ts_rank form over the candidates' text.
            const bm25 = await rowsBm25Pg({ tx, table: DOCUMENT_WORDS, words: terms, mode: matchMode, among: sql`select doc_id as rid, path as label from documents where path = any(${arrayLiteral(paths)}::text[])` });
            if (bm25.kind === "scored") return bm25.scores;
            if (/being built/.test(bm25.reason)) startDocumentTermsBackfillPg(h);
            return leg.stats ? wholeDocumentScores(tx, leg.stats, paths) : new Map<string, number>();
          });
          for (const [path, score] of scores) scored.set(`${h.store}:${path}`, score);
        }
        return scored;
      },
      // The page's headlines came with the ranking where it could ask for them; the others are made now, for what is shown only.
      lexicalSnippets: async (shown) => {
        const raws = new Map<string, string>();
        for (const c of shown) if (snipOf.get(c.key) != null) raws.set(c.key, snipOf.get(c.key)!);
        for (const h of handles) {
          const tsq = legs.find((l) => l.store === h.store)!.tsq;
          const ids = shown.filter((c) => c.store === h.store && !raws.has(c.key)).map((c) => c.detail.id);
          if (!tsq || ids.length === 0) continue;
          for (const [id, raw] of await onStore(h, (tx) => headlines(tx, tsq, ids))) raws.set(`${h.store}:${id}`, raw);
        }
        return raws;
      },
      answer: {
        match: legs[0].tsq,
        stores: handles.map((h) => h.store),
        vectorFallback,
        lexicalOverBudget,
        hasChunks: () => legs.some((l) => l.searchable),
        vectors:
          fp && vectorsAnswered
            ? { model: { id: fp.id, provider: fp.provider, model: fp.model, dimension: fp.dimension }, ...(legs[0].method === "hnsw" ? { method: "hnsw", index_available: true, index_reason: null } : { method: "exact", index_available: false, index_reason: `no pgvector HNSW index for ${fp.dimension} dimensions: exact cosine scan over real[] (up to ${EXACT_SCAN_LIMIT} vectors)` }), pending_embeddings: pending, similarity_floor: floor, below_floor: belowFloor }
            : null,
        warnings: [
          ...(pending > 0 ? [{ code: "embeddings_pending", message: `${pending} chunk(s) have no vector of this model yet; until then only full-text search can find them` }] : []),
          // The store's vectors answered but core's could not (over the exact-scan limit): core took part lexically only.
          ...(vectorsAnswered ? legs.slice(1).flatMap((l) => (l.vectorFallback ? [{ code: "core_vectors_unavailable", message: l.vectorFallback.message }] : [])) : []),
        ],
      },
    });
  const ownTx: OnStore = (h, work) => (shared ? work(shared) : withStoreTx({ handle: h, readOnly: true, work: (tx) => runWithinBudgetPg({ tx, budget, fn: () => work(tx) }) }));
  // One store, grouped: its whole-document leg and its headlines share one transaction (one budget set-up, one commit).
  if (handles.length === 1 && grouped && lexicalRan) return ownTx(handle, (tx) => finish((_h, work) => work(tx)));
  return finish(ownTx);
}
