import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { runWithinBudget, startQueryBudget, type QueryBudget } from "../db/query-budget";
import { preparedOnce } from "../db/statements";
import { logVectorQuery } from "../embed/compare";
import { getEmbedBacklog } from "../embed/queue";
import { knnSourceOf } from "../embed/vector-index";
import type { Fingerprint } from "../embed/providers";
import { AppError, isAppError } from "../errors";
import {
  adjacentPairShare,
  answerReason,
  backlogDegrades,
  bm25OfRows,
  broadTopWithinBudget,
  wordListScoresOf,
  exactFormShare,
  ExplainRecorder,
  bandHits,
  foldWord,
  fusionPolicyFor,
  matchTerms,
  planQueryVector,
  recencyDecay,
  rankedByBm25,
  RRF_K,
  rrfTerm,
  similarityFloorFor,
  snippetFor,
  snippetsOf,
  vectorNeighbours,
  type ConfidenceBand,
  type Explain,
  type FusionPolicy,
  type Fallback,
  type RetrievalReason,
  type VectorSource,
} from "../retrieval";
import { documentContextGains, documentContextSeeds, DOCUMENT_CONTEXT, nearestInFolder, type ContextNeighbours, type DocumentContextOptions } from "../retrieval/context";
import { CHUNK_KIND } from "./chunk-embeddings";
import { documentFtsReady, documentFtsValues } from "./document-fts";
import { ftsRebuildState, type FtsRebuildState } from "./fts-rebuild";
import { chunkFilterSql, chunkTokenizerOf, ftsMatchFor, hasExplicitFilters, openSearchReader, runFts, SEARCH_BUDGET_HINT, type FullTextHit, type SearchReader } from "./fulltext";
import { boolParam, csvParam, dateParam, tagsParam } from "./query-params";
import { hiddenRowsFilterOp, itemViewOf, itemViewQuerySchema, visibleSearchCandidates, type HiddenRowsFilter, type Marked, type RunOn } from "./item-state";
import { withFactLeg } from "./fact-match";
import { read, type AnyStoreHandle } from "../db/port";

/** Search a store in any mode over chunks or grouped by document: the one entry point (docs/search-and-retrieval.md). */

/** Set by measurement: see bench/search-quality.bench.ts and the issue note. */
export const DEFAULT_SEARCH_MODE = "hybrid" as "fts" | "vector" | "hybrid";
/** Set by measurement: bench/search-docs.bench.ts (see DOCUMENT_SCORING). */
export const DEFAULT_GROUP = "document" as "chunk" | "document";

/** The search input's bounds and choices, for the schema and the common query shape's parse alike. */
const SEARCH_BOUNDS = { maxQueryChars: 2000, maxLimit: 100, defaultLimit: 20, maxOffset: 10_000 } as const;
const SEARCH_CHOICES = { mode: ["fts", "vector", "hybrid"], match: ["all", "any"], group: ["chunk", "document"], syntax: ["plain", "fts5"] } as const;

/** One schema for GET query strings and POST JSON bodies (strings are coerced). */
export const searchInputSchema = z
  .object({
    /** What to search for; browsing without a query has its own routes (documents, memories, categories). */
    q: z
      .string()
      .max(SEARCH_BOUNDS.maxQueryChars)
      .refine((q) => q.trim().length > 0, { message: "q must not be empty: give the words to search for (list documents or memories to browse)" }),
    /** Default chosen by measurement (bench/search-quality): see DEFAULT_SEARCH_MODE. */
    mode: z.enum(SEARCH_CHOICES.mode).default(DEFAULT_SEARCH_MODE),
    /** Vector modes: scan every vector instead of the SimHash prefilter. */
    exact: boolParam.default(false),
    /** Add per-signal ranks, scores, fusion and model details to every hit. */
    explain: boolParam.default(false),
    /** Hybrid: weights of the two signals in reciprocal rank fusion (defaults per provider). */
    w_fts: z.coerce.number().min(0).max(10).optional(),
    w_vec: z.coerce.number().min(0).max(10).optional(),
    /** Hybrid/vector: multiply by exp(-age/τ) with τ in days (off when absent). */
    recency_tau_days: z.coerce.number().positive().max(36500).optional(),
    /** `fts5` passes the query to MATCH as written (advanced syntax) within FTS5_LIMITS; errors become 400. */
    syntax: z.enum(SEARCH_CHOICES.syntax).default("plain"),
    /** `all` terms or `any` term. Default: `all` for mode=fts, `any` for the lexical leg of hybrid (measured better there). */
    match: z.enum(SEARCH_CHOICES.match).optional(),
    prefix: z.string().max(512).optional(),
    // Each distinct, and bounded: the filter's shape picks a cached statement, so repeats must not make new shapes.
    kind: csvParam.transform((v) => [...new Set(v)]).pipe(z.array(z.enum(["memory", "markdown", "code", "text"])).max(4)).optional(),
    tags: tagsParam.optional(),
    updated_after: dateParam.optional(),
    updated_before: dateParam.optional(),
    /** Merge core's results (read-only); the entry point resolves core's handle once (openCoreFor). */
    include_core: boolParam.default(false),
    include_expired: boolParam.default(false),
    /** Governed memory (lib/index/item-state.ts): what was visible at this time (epoch ms), or retired memories too, marked. */
    ...itemViewQuerySchema,
    /**
     * `chunk`: every matching passage is a hit. `document`: each document once, ranked by
     * the evidence of all its matching chunks, with its best passages (default: see DEFAULT_GROUP).
     */
    group: z.enum(SEARCH_CHOICES.group).default(DEFAULT_GROUP),
    limit: z.coerce.number().int().min(1).max(SEARCH_BOUNDS.maxLimit).default(SEARCH_BOUNDS.defaultLimit),
    offset: z.coerce.number().int().min(0).max(SEARCH_BOUNDS.maxOffset).default(0),
  })
  .strict();

export type SearchInput = z.output<typeof searchInputSchema>;

/** The values each key of the common query shape may take as written (the schema's choices; the rest are q, limit and offset). */
const COMMON_SEARCH_ENUMS: Record<string, readonly string[]> = SEARCH_CHOICES;
const SMALL_INT = /^(0|[1-9][0-9]{0,4})$/;

/**
 * searchInputSchema's answer for the common query shape (q with any of mode, match, group, syntax, limit and offset,
 * each once and plainly valid), without zod; null for anything else, which the schema parses (and refuses with its
 * 4xx). The same object, key for key and in the schema's order (tests/search-query.test.ts holds the two equal).
 */
export function commonSearchQuery(raw: Record<string, string | string[]>): SearchInput | null {
  const q = raw.q;
  if (typeof q !== "string" || q.length > SEARCH_BOUNDS.maxQueryChars || q.trim().length === 0) return null;
  for (const key in raw) {
    const v = raw[key];
    if (typeof v !== "string") return null;
    if (key === "q") continue;
    if (key === "limit" || key === "offset") {
      if (!SMALL_INT.test(v)) return null;
      const n = Number(v);
      if (key === "limit" ? n < 1 || n > SEARCH_BOUNDS.maxLimit : n > SEARCH_BOUNDS.maxOffset) return null;
    } else if (!Object.hasOwn(COMMON_SEARCH_ENUMS, key) || !COMMON_SEARCH_ENUMS[key].includes(v)) return null;
  }
  const out = { q, mode: (raw.mode ?? DEFAULT_SEARCH_MODE) as SearchInput["mode"], exact: false, explain: false, syntax: (raw.syntax ?? "plain") as SearchInput["syntax"] } as SearchInput;
  if (raw.match !== undefined) out.match = raw.match as SearchInput["match"];
  out.include_core = false;
  out.include_expired = false;
  out.group = (raw.group ?? DEFAULT_GROUP) as SearchInput["group"];
  out.limit = raw.limit === undefined ? SEARCH_BOUNDS.defaultLimit : Number(raw.limit);
  out.offset = raw.offset === undefined ? 0 : Number(raw.offset);
  return out;
}

/**
 * How a document's evidence makes its score (group=document): the best chunk's bm25 (or a damped sum), × a boost for
 * the query's words in the path or title, fused with the whole-document bm25; a query shorter than minTerms content
 * words weighs its passages more (`shortQuery`). Every weight was chosen by measurement on pinned samples of the
 * known-item sets, with held-out seeds beside them (bench/search-quality.bench.ts, bench/results/latest.md).
 */
export type DocumentScoring = {
  combine: "max" | "damped_sum";
  damping: number;
  fieldBoost: number;
  /** Weight of the whole-document bm25 beside the chunk evidence (0: chunks alone). */
  wholeDocument: number;
  /** How the two fuse: their scores each divided by the best candidate's, or their ranks (RRF). */
  wholeDocumentFusion: "rank" | "score";
  /** Queries of fewer content words than this (keywords rather than a sentence) use `shortQuery`'s weights instead. */
  minTerms: number;
  shortQuery: { fieldBoost: number; wholeDocument: number };
};
export const DOCUMENT_SCORING: DocumentScoring = { combine: "max", damping: 0.3, fieldBoost: 1, wholeDocument: 1, wholeDocumentFusion: "score", minTerms: 6, shortQuery: { fieldBoost: 0, wholeDocument: 0.5 } };

/**
 * How the whole-document leg reads documents_fts: `candidates` scores the candidate documents alone (bm25OfRows),
 * falling back to `index_top` (the index's best WHOLE_DOCUMENT_DEPTH documents) only when bm25OfRows steps aside.
 * `index_top` always is kept for the bench's side-by-side rows.
 */
export type WholeDocumentLeg = "candidates" | "index_top";

/** Knobs the benches turn to decide the defaults; the API uses the defaults. */
export type SearchTuning = {
  document?: Partial<DocumentScoring>;
  wholeDocumentLeg?: WholeDocumentLeg;
  stopwords?: "drop" | "keep";
  exactFormBoost?: number;
  proximity?: Proximity;
  /** builtin's vector weight in hybrid, to sweep it (requests use w_vec). */
  vec?: number;
  /** Context from neighbouring short documents (lib/retrieval/context.ts DOCUMENT_CONTEXT). */
  context?: Partial<DocumentContextOptions>;
};

/**
 * Exact-form evidence over the stemmed index: a chunk's bm25 × (1 + EXACT_FORM_BOOST × the share of the query's
 * content words it contains as written), so an exact match outranks a stem-only one ("configuration" vs
 * "configured") while stemming still finds inflected forms. Chosen by measurement (bench/results/latest.md); a second,
 * unstemmed index scored a little higher but doubles the index and its write and query cost.
 */
export const EXACT_FORM_BOOST = 0.5;

/** Proximity evidence: a chunk's score × (1 + weight × the share of the query's adjacent word pairs it has in order within `window` words). */
export type Proximity = { weight: number; window: number };
/**
 * Proximity evidence over the chunk leg (plain queries): a candidate's score × (1 + weight × adjacentPairShare), read
 * from its text like the exact-form factor (no second MATCH). Chosen by measurement (bench/results/latest.md):
 * the best weight and window not worse on any held-out seed; unordered pairs and stem pairs did no better.
 */
export const PROXIMITY: Proximity = { weight: 0.75, window: 5 };
/**
 * The exact-form and proximity factors read each weighed candidate's text: only the best this many by bm25 (a deep
 * page would read ten thousand chunks). Past it scores stay plain bm25, only in pages no one reads in order.
 */
const EXACT_FORM_MAX_CANDIDATES = 1_000;

/** Ranked candidates taken from each signal before fusion. */
export const POOL = 50;
/** Chunks gathered per page of documents (group=document): several chunks per document, then grouped. */
export const DOCUMENT_POOL = 100;
/** Documents read from the whole-document index per query (group=document): at least this many, or four per candidate. */
const WHOLE_DOCUMENT_DEPTH = 500;
/** Best passages returned with each document hit. */
const PASSAGES = 3;
/** Above this many filtered chunks, filter after an approximate KNN instead of scanning them exactly. */
const EXACT_FILTER_LIMIT = 20_000;
/** Widest KNN a filter too broad to list (filtered afterwards) widens to while too few neighbours pass it. */
const MAX_POST_FILTER_K = 2_000;
/**
 * Deepest result (offset + limit) vector, hybrid and document-grouped search serve: a KNN asks sqlite-vec for about
 * twice that many neighbours and vec0 allows k ≤ 4096. Chunk full-text search pages to 10,000.
 */
export const MAX_VECTOR_DEPTH = 1000;

/** Refuses (400) a vector, hybrid or document-grouped page deeper than MAX_VECTOR_DEPTH, saying how to page further. */
export function refuseTooDeep(input: Pick<SearchInput, "mode" | "group" | "offset" | "limit">): void {
  const grouped = input.group === "document";
  if ((input.mode === "fts" && !grouped) || input.offset + input.limit <= MAX_VECTOR_DEPTH) return;
  const what = grouped ? "group=document" : `mode=${input.mode}`;
  const message = `offset + limit is ${input.offset + input.limit}; ${what} serves results up to ${MAX_VECTOR_DEPTH} deep`;
  throw new AppError("invalid_request", `${message}. Narrow the query with filters, or page further with mode=fts and group=chunk`, [{ path: "offset", message, max: MAX_VECTOR_DEPTH }]);
}

export type HitSignals = {
  fts: { rank: number; score: number } | null;
  vector: { rank: number; distance: number; similarity: number } | null;
  fused: number;
  decay: number | null;
  /** group=document: how the document's chunks made its score. */
  document?: { chunks: number; best_chunk: number; combined: number; field_boost: number } | null;
  /** Why this hit ranked where it did, in a sentence. */
  why?: string;
};

/** One of a document hit's best passages (group=document). */
export type SearchPassage = { id: number; chunk_id: string; chunk_index: number; score: number; snippet: string; highlights: [number, number][] };

export type SearchHit = FullTextHit & { signals?: HitSignals; passages?: SearchPassage[]; matched_chunks?: number; /** How well the hit answers the query (lib/retrieval/confidence.ts). */ confidence?: ConfidenceBand };

/**
 * Each shown hit's confidence band from its chunk's text and path and its cosine (both backends), and the weak_match
 * reason when the best of them is low.
 */
export function bandSearchHits({ results, candidates, q, provider, floor }: { results: SearchHit[]; candidates: { key: string; detail: { path: string; text: string }; vector: { similarity: number } | null }[]; q: string; provider: Fingerprint["provider"] | null; floor: number }): RetrievalReason | null {
  const byKey = new Map(candidates.map((c) => [c.key, c]));
  return bandHits({
    hits: results,
    terms: matchTerms(q),
    provider,
    floor,
    evidenceOf: (h) => {
      const c = byKey.get(`${h.store}:${h.id}`);
      return { text: c ? `${c.detail.path} ${c.detail.text}` : `${h.path} ${h.snippet}`, cosine: c?.vector?.similarity ?? null };
    },
  });
}

export type SearchResult = {
  mode: SearchInput["mode"];
  /** What actually answered: differs from `mode` only on a fallback, which is then explained. */
  effective_mode: SearchInput["mode"];
  group: SearchInput["group"];
  query: string;
  match: string | null;
  results: SearchHit[];
  has_more: boolean;
  stores: string[];
  degraded: boolean;
  fallback: { reason: string; message: string; count?: number } | null;
  /** Why the answer is empty or weak (null when it has hits and every signal answered). */
  reason: RetrievalReason | null;
  vectors: {
    model: { id: string; provider: string; model: string; dimension: number };
    method: string;
    index_available: boolean;
    index_reason: string | null;
    pending_embeddings: number;
    similarity_floor: number;
    below_floor: number;
  } | null;
  fusion: { w_fts: number; w_vec: number; k: number; recency_tau_days: number | null; calibration: string; calibration_source: FusionPolicy["source"] } | null;
  /** Things the caller should know about this answer (e.g. vectors_index_unavailable, embeddings_pending). */
  warnings: { code: string; message: string }[];
  /**
   * Only while a searched store's full-text index is being rebuilt (lib/index/fts-rebuild.ts): full-text hits
   * then come from the `done` of `total` chunks indexed so far, so an answer is honest about what it could not see.
   */
  fts_rebuild?: ({ store: string } & FtsRebuildState)[];
  /** With explain=true: each stage's candidates and time. */
  explain?: Explain;
};

export type ChunkDetail = { id: number; chunkId: string; path: string; kind: string; chunkIndex: number; updatedAt: number; text: string };
type ChunkIdRow = { id: number };

function detailsFor({ handle, ids }: { handle: StoreHandle; ids: number[] }): Map<number, ChunkDetail> {
  if (ids.length === 0) return new Map();
  const rows = handle.sqlite
    .prepare(
      `select c.id, c.chunk_id as chunkId, d.path, d.kind, c.chunk_index as chunkIndex, d.mtime as updatedAt, substr(c.text, 1, 240) as text
       from chunks c join documents d on d.doc_id = c.doc_id where c.id in (select value from json_each(?))`,
    )
    .all(JSON.stringify(ids)) as ChunkDetail[];
  return new Map(rows.map((r) => [r.id, r]));
}

/** The chunk ids of a store the filters allow, when the caller narrowed the search and few enough match to rank exactly. */
function filteredChunkIds({ handle, input, now, budget, hidden }: { handle: StoreHandle; input: SearchInput; now: number; budget: QueryBudget; hidden: HiddenRowsFilter }): number[] | undefined {
  if (!hasExplicitFilters(input)) return undefined;
  const filters = chunkFilterSql({ schema: "main", input, now, hidden });
  const statement = handle.sqlite.prepare(`select c.id from chunks c join documents d on d.doc_id = c.doc_id where ${filters.where.join(" and ")} limit ?`);
  const ids = runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => statement.all(...filters.args, EXACT_FILTER_LIMIT + 1) as ChunkIdRow[] }).map((r) => r.id);
  return ids.length <= EXACT_FILTER_LIMIT ? ids : undefined;
}

/** Of these chunk ids, those the filters keep (by default: not expired memories). */
function keptByFilters({ handle, ids, input, now, budget, hidden }: { handle: StoreHandle; ids: number[]; input: SearchInput; now: number; budget: QueryBudget; hidden: HiddenRowsFilter }): Set<number> {
  const filters = chunkFilterSql({ schema: "main", input, now, hidden });
  const kept = handle.sqlite.prepare(`select c.id from chunks c join documents d on d.doc_id = c.doc_id where c.id in (select value from json_each(?))${filters.where.length ? " and " + filters.where.join(" and ") : ""}`);
  return new Set((runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => kept.all(JSON.stringify(ids), ...filters.args) }) as ChunkIdRow[]).map((x) => x.id));
}

function hasChunks(handle: StoreHandle): boolean {
  return !!preparedOnce({ sqlite: handle.sqlite, sql: "select 1 from chunks limit 1" }).get();
}

/** The title heading of each listed document (its first `#` line, or its first line), for field evidence. */
function titlesOf({ handle, paths }: { handle: StoreHandle; paths: string[] }): Map<string, string> {
  if (paths.length === 0) return new Map();
  const rows = handle.sqlite
    .prepare(
      `select d.path, substr(c.text, 1, 300) as text from documents d join chunks c on c.doc_id = d.doc_id and c.chunk_index = 0
       where d.path in (select value from json_each(?))`,
    )
    .all(JSON.stringify(paths)) as { path: string; text: string }[];
  return new Map(rows.map((r) => [r.path, (r.text.match(/^\s*#{1,6}\s+(.+)$/m)?.[1] ?? r.text.split("\n", 1)[0]).slice(0, 200)]));
}

/** One chunk found by the lexical leg: its bm25 (times its exact-form and proximity factors) and snippet. */
type LexicalHit = {
  key: string;
  store: string;
  id: number;
  score: number;
  /** Share of the query's words found as written (null: not weighed). */
  exactForms: number | null;
  /** Share of the query's adjacent word pairs found near each other in order (null: not weighed). */
  nearPairs: number | null;
  /** Score inherited from a neighbouring short document (lib/retrieval/context.ts), included in `score`. */
  context?: number;
  /** False for a neighbour found by context alone (it holds none of the words: no lexical snippet). */
  matched?: boolean;
  /** `text` is the whole chunk. */
  row: ChunkDetail;
};

/** What weighWrittenForms reads (the whole chunk's text) and writes: a lexical hit's score and its two shares. */
export type WeighedHit = Pick<LexicalHit, "score" | "exactForms" | "nearPairs"> & { row: { text: string } };

/**
 * Both backends' lexical legs (SQLite's bm25, PostgreSQL's idf-weighted ts_rank) weigh their
 * best EXACT_FORM_MAX_CANDIDATES candidates this way; `note` is explain's wording of it.
 */
export const WRITTEN_FORMS = {
  maxCandidates: EXACT_FORM_MAX_CANDIDATES,
  boost: EXACT_FORM_BOOST,
  proximity: PROXIMITY,
  note: (boost: number, proximity: Proximity) =>
    `${boost > 0 ? `; each × (1 + ${boost} × share of the words found as written)` : ""}${proximity.weight > 0 ? `; each × (1 + ${proximity.weight} × share of adjacent word pairs within ${proximity.window} words in order)` : ""}`,
};

/**
 * Multiply each hit's bm25 by 1 + boost × the share of `terms` its chunk contains as written (EXACT_FORM_BOOST)
 * and by 1 + proximity.weight × the share of the query's adjacent word pairs it has near each other (PROXIMITY).
 */
export function weighWrittenForms({ ranked, terms, boost, proximity }: { ranked: WeighedHit[]; terms: string[]; boost: number; proximity: Proximity }): void {
  const folded = [...new Set(terms.map(foldWord))];
  if (ranked.length === 0 || folded.length === 0) return;
  for (const r of ranked) {
    if (boost > 0) {
      r.exactForms = exactFormShare(folded, r.row.text);
      r.score *= 1 + boost * r.exactForms;
    }
    if (proximity.weight > 0 && folded.length > 1) {
      r.nearPairs = adjacentPairShare(folded, r.row.text, proximity.window);
      r.score *= 1 + proximity.weight * r.nearPairs;
    }
  }
}

export type Candidate = {
  key: string;
  store: string;
  detail: ChunkDetail;
  fts: { rank: number; score: number; exactForms: number | null; nearPairs?: number | null; context?: number; matched?: boolean; snippet: string; highlights: [number, number][] } | null;
  vector: { rank: number; distance: number; similarity: number } | null;
  decay: number | null;
  score: number;
};

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** The lexical leg's scoring, as explain names it: FTS5's bm25 (SQLite), or the idf-weighted ts_rank of search-pg.ts (PostgreSQL). */
export type LexicalRanking = "bm25" | "idf-weighted ts_rank";

/**
 * Fusion, one rule for both backends: a candidate per chunk key of either leg (each ranked best first), scored by
 * what answered (weighted reciprocal rank, cosine or the lexical score) × recency, best first.
 */
export function fuseCandidates({ lexical, vector, detailOf, answeredBy, weights, now, tauDays }: {
  lexical: Pick<LexicalHit, "key" | "score" | "exactForms" | "nearPairs" | "context" | "matched">[];
  vector: { key: string; similarity: number; distance?: number }[];
  detailOf: (key: string) => ChunkDetail | undefined;
  answeredBy: SearchInput["mode"];
  weights: { fts: number; vec: number };
  now: number;
  tauDays: number | undefined;
}): Candidate[] {
  const ftsPos = new Map(lexical.map((r, i) => [r.key, { rank: i + 1, r }]));
  const vecPos = new Map(vector.map((r, i) => [r.key, { rank: i + 1, r }]));
  const candidates = [...new Set([...lexical.map((r) => r.key), ...vector.map((r) => r.key)])].flatMap((key): Candidate[] => {
    const detail = detailOf(key);
    if (!detail) return []; // deleted since it was indexed
    const f = ftsPos.get(key);
    const v = vecPos.get(key);
    if (answeredBy === "vector" && !v) return [];
    const decay = answeredBy === "fts" ? null : recencyDecay(detail.updatedAt, now, tauDays);
    const raw = answeredBy === "hybrid" ? rrfTerm(weights.fts, f?.rank) + rrfTerm(weights.vec, v?.rank) : answeredBy === "vector" ? (v?.r.similarity ?? 0) : (f?.r.score ?? 0);
    const fts = f && { rank: f.rank, score: f.r.score, exactForms: f.r.exactForms, nearPairs: f.r.nearPairs, ...(f.r.context ? { context: f.r.context, matched: f.r.matched !== false } : {}), snippet: "", highlights: [] };
    const vec = v && { rank: v.rank, distance: v.r.distance ?? 1 - v.r.similarity, similarity: v.r.similarity };
    return [{ key, store: key.slice(0, key.indexOf(":")), detail, fts: fts ?? null, vector: vec ?? null, decay, score: raw * (decay ?? 1) }];
  });
  return candidates.sort((a, b) => b.score - a.score || (a.store === b.store ? a.detail.id - b.detail.id : a.store < b.store ? -1 : 1));
}

function whyChunk({ chunk: c, mode, weights, ranking = "bm25" }: { chunk: Candidate; mode: SearchInput["mode"]; weights: { fts: number; vec: number }; ranking?: LexicalRanking }): string {
  const parts: string[] = [];
  if (c.fts) {
    const exact = `${c.fts.exactForms === null ? "" : `, ${Math.round(c.fts.exactForms * 100)}% of the words as written`}${c.fts.nearPairs == null ? "" : `, ${Math.round(c.fts.nearPairs * 100)}% of adjacent word pairs near each other`}`;
    const context = c.fts.context ? `, ${c.fts.matched === false ? "only " : ""}${round6(c.fts.context)} from a neighbouring document's words` : "";
    parts.push(`${ranking} rank ${c.fts.rank} (score ${round6(c.fts.score)}${exact}${context})${mode === "hybrid" ? ` → ${round6(rrfTerm(weights.fts, c.fts.rank))}` : ""}`);
  }
  if (c.vector) parts.push(`vector rank ${c.vector.rank} (similarity ${round6(c.vector.similarity)})${mode === "hybrid" ? ` → ${round6(rrfTerm(weights.vec, c.vector.rank))}` : ""}`);
  if (c.decay !== null) parts.push(`recency ×${round6(c.decay)}`);
  return `${parts.join("; ")} = ${round6(c.score)}`;
}

/**
 * Search in any mode (docs/search-and-retrieval.md): when vectors cannot answer, full-text does and says why; an
 * empty answer always says why (`reason`). `core` is core's handle when the caller asked to include it, else null.
 */
export async function searchStore({ handle, core, input, now = Date.now(), tuning = {} }: { handle: StoreHandle; core: StoreHandle | null; input: SearchInput; now?: number; tuning?: SearchTuning }): Promise<SearchResult> {
  const rec = input.explain ? new ExplainRecorder() : null;
  const grouped = input.group === "document";
  // Bad input is refused before any work, whichever signal would have used it.
  refuseTooDeep(input);
  const budget = startQueryBudget({ hint: SEARCH_BUDGET_HINT });
  const handles = core ? [handle, core] : [handle];
  const stores = handles.map((h) => h.store);
  const page = input.offset + input.limit + 1;
  // Vector and full-text need only the page; hybrid fuses two deeper pools; documents gather several chunks each.
  const take = grouped ? Math.max(DOCUMENT_POOL, page * 4) : input.mode === "hybrid" ? Math.max(POOL, page) : page;
  // Each store's hidden memories are left out inside each leg's statements (null: a store without item state).
  const hiddenOf = new Map<string, HiddenRowsFilter>();
  for (const h of handles) hiddenOf.set(h.store, await read(h, hiddenRowsFilterOp({ view: itemViewOf(input) })));

  // Vector leg: readiness and the query's vector first; any "no" is a fallback to full-text that says why.
  let vectorFallback: Fallback | null = null;
  let vectors: SearchResult["vectors"] = null;
  let weights = { fts: 1, vec: 1 };
  let policy: FusionPolicy = fusionPolicyFor({ fingerprint: null });
  const vectorRanked: { key: string; store: string; id: number; distance: number; similarity: number }[] = [];
  if (input.mode !== "fts") {
    const plan = await planQueryVector({ handle, text: input.q, kinds: [CHUNK_KIND] });
    rec?.readiness(plan);
    if (!plan.ok) vectorFallback = plan.fallback;
    else {
      const fp = plan.fingerprint;
      const floor = similarityFloorFor(fp.provider);
      policy = fusionPolicyFor({ fingerprint: fp, override: { fts: input.w_fts, vec: input.w_vec ?? tuning.vec } });
      weights = policy.ranks;
      const t0 = performance.now();
      const sources: VectorSource[] = [];
      for (const h of handles) {
        // Core only when its vectors are from the same model.
        if (h === core) {
          const coreReady = await planQueryVector({ handle: core, text: input.q });
          if (!coreReady.ok || coreReady.fingerprint.id !== fp.id) continue;
        }
        sources.push({ store: h.store, source: knnSourceOf(h), fingerprintId: fp.id, allowed: filteredChunkIds({ handle: h, input, now, budget, hidden: hiddenOf.get(h.store)! }) });
      }
      // Oversample when filtering afterwards (by default: expired memories are dropped). A filter that keeps
      // too many rows to list (> EXACT_FILTER_LIMIT), or the view's hidden memories, filter afterwards too: the KNN
      // widens until enough survive.
      const byStore = new Map(handles.map((h) => [h.store, h]));
      const postFiltered = sources.some((s) => !s.allowed && (hasExplicitFilters(input) || hiddenOf.get(s.store) !== null));
      let knn: ReturnType<typeof vectorNeighbours>;
      const kept = new Map<string, Set<number>>();
      for (let k = take + 20; ; k = Math.min(MAX_POST_FILTER_K, k * 4)) {
        knn = runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => vectorNeighbours({ sources, kind: CHUNK_KIND, query: plan.vector, k, floor, exact: input.exact }) });
        kept.clear();
        for (const s of sources) {
          if (s.allowed) continue;
          kept.set(s.store, keptByFilters({ handle: byStore.get(s.store)!, ids: knn.hits.filter((x) => x.store === s.store).map((x) => x.refId), input, now, budget, hidden: hiddenOf.get(s.store)! }));
        }
        const survivors = knn.hits.filter((x) => !kept.has(x.store) || kept.get(x.store)!.has(x.refId)).length;
        // Done: enough survive, the store ran out of neighbours (or they fell below the floor), or the widest search was made.
        if (!postFiltered || survivors >= take || knn.hits.length + knn.belowFloor < k * sources.length || k >= MAX_POST_FILTER_K) break;
      }
      for (const hit of knn.hits) {
        if (kept.has(hit.store) && !kept.get(hit.store)!.has(hit.refId)) continue;
        vectorRanked.push({ key: hit.key, store: hit.store, id: hit.refId, distance: hit.distance, similarity: hit.similarity });
      }
      vectorRanked.splice(take);
      rec?.record("vector", performance.now() - t0, {
        candidates: vectorRanked.length,
        detail: `KNN (${knn.method}) over ${sources.map((s) => s.store).join(" + ")}; ${knn.belowFloor} neighbour(s) below the similarity floor ${floor} left out`,
        top: vectorRanked.map((r) => ({ key: r.key, score: r.similarity })),
      });
      logVectorQuery({ handle, q: input.q, mode: input.mode, fingerprintId: fp.id, resultIds: vectorRanked.filter((r) => r.store === handle.store).slice(0, 10).map((r) => r.id) });
      const pending = getEmbedBacklog({ handle }).pending;
      vectors = {
        model: { id: fp.id, provider: fp.provider, model: fp.model, dimension: fp.dimension },
        method: knn.method,
        index_available: handle.vectors.available,
        index_reason: handle.vectors.available ? null : handle.vectors.reason,
        pending_embeddings: pending,
        similarity_floor: floor,
        below_floor: knn.belowFloor,
      };
    }
  }
  const effectiveLegs = { lexical: input.mode !== "vector" || vectorFallback !== null, vector: vectors !== null };

  // Lexical leg: `all` words for mode=fts, `any` word when it is one signal of several or stands in for vectors.
  const matchMode = input.match ?? (input.mode === "fts" ? "all" : "any");
  const match = effectiveLegs.lexical || input.mode === "vector" ? ftsMatchFor({ input, match: matchMode, stopwords: tuning.stopwords }) : null;
  const ftsRanked: LexicalHit[] = [];
  // The query's content words, read once: the written-forms factor and the document scoring weigh by them.
  const terms = matchTerms(input.q, { stopwords: tuning.stopwords });
  /** Each store's chunks_fts tokenizer: the shown lexical hits get their snippets at the end (withShownSnippets). */
  const snippetTokenizers = new Map<string, string>();
  let lexicalOverBudget: string | null = null;
  const lexicalPlans: string[] = [];
  const boost = tuning.exactFormBoost ?? EXACT_FORM_BOOST;
  const proximity = tuning.proximity ?? PROXIMITY;
  if (effectiveLegs.lexical && match) {
    const t0 = performance.now();
    const reader: SearchReader = openSearchReader({ handle, core });
    try {
      for (const [schema, name] of reader.schemas) {
        snippetTokenizers.set(name, chunkTokenizerOf({ reader, schema }));
        for (const r of runFts({ reader, schema, match, input, take, now, budget, hidden: hiddenOf.get(name)!, onPlan: (p) => lexicalPlans.push(`${name}: ${p.detail}`) })) {
          ftsRanked.push({ key: `${name}:${r.id}`, store: name, id: r.id, score: -r.rank, exactForms: null, nearPairs: null, row: { id: r.id, chunkId: r.chunkId, path: r.path, kind: r.kind, chunkIndex: r.chunkIndex, updatedAt: r.updatedAt, text: r.text } });
        }
        if ((boost > 0 || proximity.weight > 0) && input.syntax === "plain") {
          weighWrittenForms({ ranked: ftsRanked.filter((r) => r.store === name).slice(0, EXACT_FORM_MAX_CANDIDATES), terms, boost, proximity });
        }
      }
    } catch (e) {
      // The lexical leg is the one that grows with common words (a few OR-ed stopwords over a large store):
      // past the budget, hybrid answers from its vectors and says so, rather than failing the whole search.
      if (!(input.mode === "hybrid" && vectors && isAppError(e) && e.code === "query_too_expensive")) throw e;
      ftsRanked.length = 0;
      lexicalOverBudget = e.message;
    } finally {
      reader.release();
    }
    // Context (plain hybrid queries, as vector neighbours are: full-text alone answers with rows holding the words):
    // per store, like each store's bm25, from its own best hits.
    const contextOpts = { ...DOCUMENT_CONTEXT, ...tuning.context };
    if (!lexicalOverBudget && input.syntax === "plain" && input.mode === "hybrid" && vectors) {
      const merged: LexicalHit[] = [];
      for (const h of handles) {
        const own = ftsRanked.filter((r) => r.store === h.store).sort(byScoreThenKey);
        const n = addDocumentContext({ handle: h, ranked: own, input, now, budget, opts: contextOpts, hidden: hiddenOf.get(h.store)! });
        if (n) lexicalPlans.push(`${h.store}: ${n} row(s) gained context (${contextOpts.weight} × a neighbouring short document's lead)`);
        merged.push(...own);
      }
      ftsRanked.splice(0, ftsRanked.length, ...merged);
    }
    ftsRanked.sort(byScoreThenKey);
    rec?.record("lexical", performance.now() - t0, { candidates: ftsRanked.length, detail: lexicalOverBudget ? `skipped: ${lexicalOverBudget}` : `bm25 over chunks_fts, MATCH ${match}${lexicalPlans.length ? `; ${lexicalPlans.join("; ")}` : ""}${input.syntax === "plain" ? WRITTEN_FORMS.note(boost, proximity) : ""}`, top: ftsRanked.map((r) => ({ key: r.key, score: r.score })) });
  } else if (effectiveLegs.lexical) {
    rec?.record("lexical", 0, { candidates: 0, detail: "no word to match" });
  }

  const answeredBy: SearchInput["mode"] = lexicalOverBudget ? "vector" : vectors ? input.mode : "fts";
  const details = new Map<string, ChunkDetail>(ftsRanked.map((r) => [r.key, r.row]));
  for (const h of handles) {
    const ids = vectorRanked.filter((r) => r.store === h.store && !details.has(r.key)).map((r) => r.id);
    for (const [id, d] of detailsFor({ handle: h, ids })) details.set(`${h.store}:${id}`, d);
  }
  const warnings: SearchResult["warnings"] = [];
  if (vectors) {
    if (!handle.vectors.available) warnings.push({ code: "vectors_index_unavailable", message: `sqlite-vec is not loaded (${handle.vectors.reason}); vectors were scanned exactly, which is slower` });
    if (vectors.pending_embeddings > 0) warnings.push({ code: "embeddings_pending", message: `${vectors.pending_embeddings} item(s) are waiting for vectors; until then only full-text search can find them` });
  }
  const rebuilding = effectiveLegs.lexical ? handles.map((h) => ({ store: h.store, ...ftsRebuildState(h) })).filter((r) => r.pending) : [];
  for (const r of rebuilding) warnings.push({ code: "fts_rebuilding", message: `the full-text index of ${r.store} is being rebuilt (${r.done} of ${r.total} chunks indexed): full-text hits cover only those so far` });
  return finishSearch({
    input, rec, now, answeredBy, weights, policy, handles, itemHandles: handles, ranking: "bm25", lexical: ftsRanked, vector: vectorRanked, detailOf: (key) => details.get(key),
    terms, scoring: tuning.document,
    // Plain queries only: an advanced expression may name chunk columns the document index does not have.
    wholeDocument: (candidates) => (match && input.syntax === "plain" ? wholeDocumentBm25({ handles, candidates, match, budget, leg: tuning.wholeDocumentLeg ?? "candidates" }) : null),
    lexicalSnippets: (shown) => {
      const raws = new Map<string, string>();
      for (const [store, tokenize] of snippetTokenizers) {
        const rows = shown.filter((c) => c.store === store).map((c) => c.detail);
        if (match && rows.length) for (const [id, raw] of snippetsOf({ tokenize, match, rows })) raws.set(`${store}:${id}`, raw);
      }
      return raws;
    },
    answer: { match, stores, vectors, vectorFallback, lexicalOverBudget, warnings, hasChunks: () => handles.some(hasChunks), ...(rebuilding.length ? { fts_rebuild: rebuilding } : {}) },
  });
}

/**
 * Everything after the legs, one rule for both backends: fusion, grouping (with the engine's whole-document leg),
 * the page, its snippets (the engine's, for the shown hits that hold the query's words) and the answer.
 */
export async function finishSearch({ input, rec, now, answeredBy, weights, policy, ranking, lexical, vector, detailOf, terms, scoring: tuned, handles, itemHandles, itemRun, wholeDocument: wholeDocumentOf, lexicalSnippets, groupingNote, answer }: {
  input: SearchInput;
  rec: ExplainRecorder | null;
  now: number;
  answeredBy: SearchInput["mode"];
  weights: { fts: number; vec: number };
  policy: FusionPolicy;
  ranking: LexicalRanking;
  /** Each leg ranked best first over every searched store. */
  lexical: Pick<LexicalHit, "key" | "score" | "exactForms" | "nearPairs" | "context" | "matched">[];
  vector: { key: string; similarity: number; distance?: number }[];
  detailOf: (key: string) => ChunkDetail | undefined;
  terms: string[];
  scoring?: Partial<DocumentScoring>;
  /** The stores whose titles weigh a document (group=document). */
  handles: StoreHandle[];
  /** The searched stores, whose item state hides retired memories (lib/index/item-state.ts). */
  itemHandles: readonly AnyStoreHandle[];
  /** Where that lookup runs (default: its own read; PostgreSQL: the search's transaction). */
  itemRun?: RunOn;
  /** The whole-document bm25 of the candidates' documents by `store:path`, or null. */
  wholeDocument: (candidates: Candidate[]) => Map<string, number> | null | Promise<Map<string, number> | null>;
  /** The raw marked snippets of the shown candidates that hold the query's words, by key. */
  lexicalSnippets: (shown: Candidate[]) => Map<string, string> | Promise<Map<string, string>>;
  groupingNote?: string;
  answer: Pick<SearchResult, "match" | "stores" | "vectors" | "warnings" | "fts_rebuild"> & { vectorFallback: Fallback | null; lexicalOverBudget: string | null; hasChunks: () => boolean };
}): Promise<SearchResult> {
  const t0 = performance.now();
  const candidates = await visibleSearchCandidates({ handles: itemHandles, candidates: fuseCandidates({ lexical, vector, detailOf, answeredBy, weights, now, tauDays: input.recency_tau_days }), view: itemViewOf(input), run: itemRun });
  rec?.record("fusion", performance.now() - t0, {
    candidates: candidates.length,
    detail: answeredBy === "hybrid" ? `weighted reciprocal rank fusion: w_fts ${weights.fts} / (${RRF_K} + rank) + w_vec ${weights.vec} / (${RRF_K} + rank); ${policy.detail}` : answeredBy === "vector" ? "cosine similarity" : ranking,
    top: candidates.map((c) => ({ key: c.key, score: c.score })),
  });
  // Each leg filters inside its own statement, so this stage takes no time of its own.
  rec?.record("filters", 0, { candidates: candidates.length, detail: hasExplicitFilters(input) || !input.include_expired ? "applied inside each leg (prefix, kind, tags, updated range, expired memories, memories the view hides)" : "none" });
  const why = (c: Candidate) => whyChunk({ chunk: c, mode: answeredBy, weights, ranking });
  // A candidate as a chunk hit; its snippet is made once it is shown (below).
  const toHit = (c: Candidate): SearchHit => ({
    ...{ store: c.store, id: c.detail.id, chunk_id: c.detail.chunkId, path: c.detail.path, kind: c.detail.kind, chunk_index: c.detail.chunkIndex, score: c.score, updated_at: c.detail.updatedAt, snippet: "", highlights: [] },
    ...((c as Marked<Candidate>).item_status ? { item_status: (c as Marked<Candidate>).item_status } : {}),
    ...(input.explain ? { signals: { fts: c.fts && { rank: c.fts.rank, score: c.fts.score }, vector: c.vector, fused: c.score, decay: c.decay, why: why(c) } } : {}),
  });
  let hits: SearchHit[];
  if (input.group === "chunk") hits = candidates.map(toHit);
  else {
    const t1 = performance.now();
    const scoring = { ...DOCUMENT_SCORING, ...tuned };
    if (terms.length < scoring.minTerms) Object.assign(scoring, scoring.shortQuery);
    const wholeDocument = scoring.wholeDocument > 0 && answeredBy !== "vector" ? await wholeDocumentOf(candidates) : null;
    hits = groupByDocument({ candidates, handles, terms, scoring, wholeDocument, mode: answeredBy, weights, toHit, explain: input.explain, why, ranking });
    rec?.record("grouping", performance.now() - t1, { candidates: hits.length, detail: `chunks grouped by document (${scoring.combine})${groupingNote ? `; ${groupingNote}` : ""}`, top: hits.map((h) => ({ key: `${h.store}:${h.path}`, score: h.score })) });
  }
  // The writer's subject and property: a memory whose fact key the query names ranks as if first in a leg of its own (lib/index/fact-match.ts).
  if (answeredBy === "hybrid") hits = await withFactLeg({ hits, handles: itemHandles, query: input.q, view: itemViewOf(input), weight: weights.fts, run: itemRun });
  const results = hits.slice(input.offset, input.offset + input.limit);
  // A document's best chunk is also its first passage: one snippet each.
  const byKey = new Map(candidates.map((c) => [c.key, c]));
  const shown = results.flatMap((h) => [{ key: `${h.store}:${h.id}`, into: h as { snippet: string; highlights: [number, number][] } }, ...(h.passages ?? []).map((p) => ({ key: `${h.store}:${p.id}`, into: p }))]);
  const raws = await lexicalSnippets([...new Set(shown.map((s) => s.key))].flatMap((key) => (holdsWords(byKey.get(key)) ? [byKey.get(key)!] : [])));
  for (const s of shown) {
    const c = byKey.get(s.key);
    if (c) Object.assign(s.into, snippetFor({ raw: holdsWords(c) ? (raws.get(s.key) ?? "") : c.detail.text, where: c.detail }));
  }

  const { vectors, vectorFallback, lexicalOverBudget } = answer;
  // Whether the stores hold anything matters only to an empty answer (answerReason): no read when there are hits.
  const searchable = hits.length > 0 || answer.hasChunks() ? 1 : 0;
  const weak = bandSearchHits({ results, candidates, q: input.q, provider: (vectors?.model.provider ?? null) as Fingerprint["provider"] | null, floor: vectors?.similarity_floor ?? 1 });
  return {
    mode: input.mode,
    effective_mode: answeredBy,
    group: input.group,
    query: input.q,
    match: answer.match,
    results,
    has_more: hits.length > input.offset + input.limit,
    stores: answer.stores,
    // Degraded is the store's state (a queue over the watermark), as its health says.
    degraded: backlogDegrades(vectorFallback),
    fallback: lexicalOverBudget ? { reason: "query_budget", message: `full-text part skipped: ${lexicalOverBudget}; answered from vectors alone` } : vectorFallback ? { ...vectorFallback, message: `${vectorFallback.message}; answered with full-text search` } : null,
    reason: answerReason({ found: hits.length, searchable, fallback: vectorFallback, belowFloor: vectors?.below_floor ?? 0, weak }),
    vectors,
    fusion: answeredBy === "hybrid" ? { w_fts: weights.fts, w_vec: weights.vec, k: RRF_K, recency_tau_days: input.recency_tau_days ?? null, calibration: policy.key, calibration_source: policy.source } : null,
    warnings: answer.warnings,
    ...(answer.fts_rebuild ? { fts_rebuild: answer.fts_rebuild } : {}),
    ...(rec ? { explain: rec.result() } : {}),
  };
}

/** Whether a candidate holds the query's words (a lexical snippet), not only a neighbour's context or a vector. */
const holdsWords = (c: Candidate | undefined): boolean => !!c?.fts && c.fts.matched !== false;

const byScoreThenKey = (a: { score: number; store: string; id: number }, b: { score: number; store: string; id: number }) => b.score - a.score || (a.store === b.store ? a.id - b.id : a.store < b.store ? -1 : 1);

/** Context from neighbouring short documents (lib/retrieval/context.ts) over one store's lexical hits; returns how many rows gained. */
function addDocumentContext({ handle, ranked, input, now, budget, opts, hidden }: { handle: StoreHandle; ranked: LexicalHit[]; input: SearchInput; now: number; budget: QueryBudget; opts: DocumentContextOptions; hidden: HiddenRowsFilter }): number {
  const seeds = documentContextSeeds({ ranked, opts });
  if (seeds.length === 0) return 0;
  const filters = chunkFilterSql({ schema: "main", input, now, hidden });
  const and = filters.where.map((w) => ` and ${w}`).join("");
  // The first chunk of the documents nearest in time on each side (any folder: nearestInFolder picks), via documents_mtime_idx.
  const side = (cmp: string, order: "desc" | "asc") =>
    `select * from (select c.id, c.chunk_id as chunkId, d.path, d.kind, c.chunk_index as chunkIndex, d.mtime as updatedAt, c.text
       from documents d join chunks c on c.doc_id = d.doc_id and c.chunk_index = 0 where ${cmp}${and} order by d.mtime ${order} limit ${CONTEXT_ROWS_READ})`;
  const around = preparedOnce({ sqlite: handle.sqlite, sql: `${side("d.mtime >= ? and d.mtime < ?", "desc")} union all ${side("d.mtime > ? and d.mtime <= ?", "asc")}` });
  const neighbours: ContextNeighbours<string>[] = [];
  const found = new Map<string, ChunkDetail>();
  for (const seed of seeds) {
    const rows = runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => around.all(seed.time - opts.windowMs, seed.time, ...filters.args, seed.time, seed.time + opts.windowMs, ...filters.args) as ChunkDetail[] });
    const near = nearestInFolder({ seed, rows: rows.map((r) => ({ ...r, key: `${handle.store}:${r.id}`, time: r.updatedAt })) });
    for (const r of [near.before, near.after]) if (r) found.set(r.key, r);
    neighbours.push({ hit: seed.key, before: near.before?.key ?? null, after: near.after?.key ?? null });
  }
  const gains = documentContextGains({ ranked, neighbours, weight: opts.weight });
  return mergeContext({ ranked, gains, keyOf: (r) => r.key, make: (key, gain) => ({ key, store: handle.store, id: found.get(key)!.id, score: gain, exactForms: null, nearPairs: null, context: gain, matched: false, row: found.get(key)! }) });
}

/** Adds each context gain to its hit's score, or appends the neighbour (`make`) as a context-only hit (both backends). */
export function mergeContext<H extends { score: number; context?: number }>({ ranked, gains, keyOf, make }: { ranked: H[]; gains: Map<string, number>; keyOf: (h: H) => string; make: (key: string, gain: number) => H }): number {
  const byKey = new Map(ranked.map((r) => [keyOf(r), r]));
  for (const [key, gain] of gains) {
    const hit = byKey.get(key);
    if (hit) {
      hit.score += gain;
      hit.context = gain;
    } else ranked.push(make(key, gain));
  }
  return gains.size;
}

/** Documents read on each side of a context seed's time to find the nearest of its folder. */
export const CONTEXT_ROWS_READ = 8;

/**
 * Whole-document bm25 (documents_fts) of the documents the chunk legs found, keyed `store:path` (higher is better),
 * so a document whose words are spread over many chunks gets its due. Scored for the candidates alone (bm25OfRows,
 * from the word lists or the index's numbers, or for a broad query from their own text): asking FTS5 for them by
 * rowid costs a full MATCH per rowid. Leg `index_top`, or candidates too large to tokenize: the index's best
 * WHOLE_DOCUMENT_DEPTH documents are read and the candidates among them keep their score. A store whose document
 * index is still being filled gives none: its documents rank by their chunks alone.
 */
function wholeDocumentBm25({ handles, candidates, match, budget, leg }: { handles: StoreHandle[]; candidates: Candidate[]; match: string; budget: QueryBudget; leg: WholeDocumentLeg }): Map<string, number> {
  const out = new Map<string, number>();
  for (const h of handles) {
    // A neighbour found by context alone holds none of the words: nothing to score.
    const wanted = new Set(candidates.filter((c) => c.store === h.store && c.fts?.matched !== false).map((c) => c.detail.path));
    if (wanted.size === 0 || !documentFtsReady(h)) continue;
    // The candidates' documents (documents_fts rowid = doc_id), looked up by path.
    const ids = preparedOnce({ sqlite: h.sqlite, sql: "select doc_id as id, path from documents where path in (select value from json_each(?))" }).all(JSON.stringify([...wanted])) as { id: number; path: string }[];
    const pathOf = new Map(ids.map((r) => [r.id, r.path]));
    // The candidates alone, from the index's numbers (cost follows the query words' occurrences, not their matches).
    // From the index's word lists when it has them (no text read, no common word's instances walked), else the same numbers computed.
    const scoreOf = (score: typeof bm25OfRows) => score({ db: h.sqlite, schema: "main", table: "documents_fts", match, rowids: [...pathOf.keys()], texts: (docIds) => documentFtsValues({ sqlite: h.sqlite, docIds }) });
    const scored = leg === "candidates" ? runWithinBudget({ sqlite: h.sqlite, budget, fn: () => scoreOf(wordListScoresOf) ?? scoreOf(bm25OfRows) }) : null;
    if (scored) {
      for (const [id, score] of scored) out.set(`${h.store}:${pathOf.get(id)}`, score);
      continue;
    }
    const depth = Math.max(WHOLE_DOCUMENT_DEPTH, 4 * wanted.size);
    const broad = broadTopWithinBudget({ db: h.sqlite, schema: "main", table: "documents_fts", match, budget });
    const top = broad
      ? broad.top(depth)
      : runWithinBudget({ sqlite: h.sqlite, budget, fn: () => rankedByBm25({ db: h.sqlite, schema: "main", table: "documents_fts", match, m: depth }) });
    for (const r of top) {
      const path = pathOf.get(r.rowid);
      if (path !== undefined) out.set(`${h.store}:${path}`, -r.rank);
    }
  }
  return out;
}

/**
 * group=document: each document once, its best chunk as the hit and its best passages listed. Scored per signal
 * (DocumentScoring; the closest chunk's similarity), then hybrid fuses the two document rankings by weighted
 * reciprocal rank — not by summing chunks' rank scores, which rewarded long documents (bench/results/latest.md).
 */
export function groupByDocument({
  candidates,
  handles,
  terms,
  scoring,
  wholeDocument,
  mode,
  weights,
  toHit,
  explain,
  why,
  ranking = "bm25",
}: {
  candidates: Candidate[];
  handles: StoreHandle[];
  terms: string[];
  scoring: DocumentScoring;
  /** Whole-document bm25 by `store:path` (wholeDocumentBm25), or null when not used. */
  wholeDocument: Map<string, number> | null;
  mode: SearchInput["mode"];
  weights: { fts: number; vec: number };
  toHit: (c: Candidate) => SearchHit;
  explain: boolean;
  why: (c: Candidate) => string;
  /** How the lexical leg scored chunks, as the explanation names it. */
  ranking?: LexicalRanking;
}): SearchHit[] {
  const docs = new Map<string, Candidate[]>();
  for (const c of candidates) {
    const key = `${c.store}:${c.detail.path}`;
    const list = docs.get(key);
    if (list) list.push(c);
    else docs.set(key, [c]);
  }
  const titles = new Map<string, string>();
  if (scoring.fieldBoost > 0 && terms.length > 0) {
    for (const h of handles) {
      const paths = [...docs.values()].filter((l) => l[0].store === h.store).map((l) => l[0].detail.path);
      for (const [path, title] of titlesOf({ handle: h, paths })) titles.set(`${h.store}:${path}`, title);
    }
  }
  const termSet = new Set(terms);
  type Doc = { key: string; chunks: Candidate[]; lexical: number; vector: number; fieldBoost: number; score: number };
  const scored: Doc[] = [...docs].map(([key, chunks]) => {
    // Lexical evidence: the best chunk's bm25, plus each further matching chunk's times damping^i.
    const lexicalScores = chunks.flatMap((c) => (c.fts ? [c.fts.score * (c.decay ?? 1)] : [])).sort((a, b) => b - a);
    const lexical = lexicalScores.reduce((sum, x, i) => sum + (i === 0 || scoring.combine === "damped_sum" ? x * scoring.damping ** i : 0), 0);
    const vector = Math.max(0, ...chunks.flatMap((c) => (c.vector ? [c.vector.similarity * (c.decay ?? 1)] : [])));
    let fieldBoost = 1;
    if (scoring.fieldBoost > 0 && termSet.size > 0) {
      const fieldWords = new Set(`${chunks[0].detail.path} ${titles.get(key) ?? ""}`.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}\p{M}]+/gu) ?? []);
      let shared = 0;
      for (const t of termSet) if (fieldWords.has(t)) shared++;
      fieldBoost = 1 + (scoring.fieldBoost * shared) / termSet.size;
    }
    return { key, chunks, lexical: lexical * fieldBoost, vector, fieldBoost, score: 0 };
  });
  const rankBy = (value: (d: Doc) => number) => new Map([...scored].filter((d) => value(d) > 0).sort((a, b) => value(b) - value(a) || a.key.localeCompare(b.key)).map((d, i) => [d.key, i + 1]));
  const chunkRank = rankBy((d) => d.lexical);
  // With the whole-document index: the lexical evidence is the reciprocal-rank fusion of the chunk ranking and the whole-document ranking.
  const documentRank = wholeDocument ? rankBy((d) => wholeDocument.get(d.key) ?? 0) : null;
  const bestLexical = Math.max(0, ...scored.map((d) => d.lexical));
  const bestDocument = Math.max(0, ...(wholeDocument?.values() ?? []));
  const lexicalFused = (d: Doc) =>
    !documentRank
      ? d.lexical
      : scoring.wholeDocumentFusion === "score"
        ? (bestLexical > 0 ? d.lexical / bestLexical : 0) + (bestDocument > 0 ? (scoring.wholeDocument * (wholeDocument!.get(d.key) ?? 0)) / bestDocument : 0)
        : rrfTerm(1, chunkRank.get(d.key)) + rrfTerm(scoring.wholeDocument, documentRank.get(d.key));
  const lexicalRank = documentRank ? rankBy(lexicalFused) : chunkRank;
  const vectorRank = rankBy((d) => d.vector);
  for (const d of scored) d.score = mode === "hybrid" ? rrfTerm(weights.fts, lexicalRank.get(d.key)) + rrfTerm(weights.vec, vectorRank.get(d.key)) : mode === "vector" ? d.vector : lexicalFused(d);

  const out: SearchHit[] = scored.map((d) => {
    // Candidates are sorted best first, so each document's list is too.
    const best = d.chunks[0];
    const hit = toHit(best);
    hit.score = d.score;
    hit.matched_chunks = d.chunks.length;
    hit.passages = d.chunks.slice(0, PASSAGES).map((c) => {
      const p = toHit(c);
      return { id: p.id, chunk_id: p.chunk_id, chunk_index: p.chunk_index, score: p.score, snippet: p.snippet, highlights: p.highlights };
    });
    if (explain && hit.signals) {
      hit.signals.fused = d.score;
      hit.signals.document = { chunks: d.chunks.length, best_chunk: best.score, combined: d.score, field_boost: d.fieldBoost };
      const chunkEvidence = chunkRank.has(d.key) ? `rank ${chunkRank.get(d.key)} by chunks (${ranking} ${scoring.combine === "damped_sum" ? `best + further chunks × ${scoring.damping}^i` : "of the best chunk"} = ${round6(d.lexical)})` : null;
      const documentEvidence = documentRank?.has(d.key) ? `rank ${documentRank.get(d.key)} by whole-document ${ranking} (${round6(wholeDocument!.get(d.key)!)}, weight ${scoring.wholeDocument})` : null;
      const legs = [
        lexicalRank.has(d.key) ? `lexical document rank ${lexicalRank.get(d.key)}: ${[chunkEvidence, documentEvidence].filter(Boolean).join(" + ")}` : null,
        vectorRank.has(d.key) ? `vector document rank ${vectorRank.get(d.key)} (closest chunk ${round6(d.vector)})` : null,
      ].filter(Boolean);
      hit.signals.why = `best of ${d.chunks.length} matching chunk(s): ${why(best)}; ${legs.join("; ")}${d.fieldBoost !== 1 ? `; path/title share the query's words ×${round6(d.fieldBoost)}` : ""} → ${round6(d.score)}`;
    }
    return hit;
  });
  out.sort((a, b) => b.score - a.score || (a.store === b.store ? a.id - b.id : a.store < b.store ? -1 : 1));
  return out;
}
