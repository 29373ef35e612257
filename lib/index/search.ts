import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { runWithinBudget, startQueryBudget, type QueryBudget } from "../db/query-budget";
import { embedQueryText } from "../embed/query";
import type { Fingerprint } from "../embed/providers";
import { getEmbedBacklog } from "../embed/queue";
import { checkVectorReadiness } from "../embed/status";
import { logVectorQuery } from "../embed/compare";
import { knnSearch, type VectorHit } from "../embed/vector-index";
import { AppError, isAppError } from "../errors";
import { CHUNK_KIND } from "./chunk-embeddings";
import { chunkFilterSql, ftsMatchFor, hasExplicitFilters, openSearchReader, runFts, SEARCH_BUDGET_HINT, searchFullText, splitSnippet, type FullTextHit } from "./fulltext";
import { boolParam, csvParam, dateParam } from "./query-params";

/**
 * Search a store in any mode: `fts` (bm25, see fulltext.ts), `vector`
 * (cosine over chunk vectors) or `hybrid` (both, fused). The one search
 * entry point for the API, MCP, the dashboard and the CLI.
 */

/** Set by measurement: see bench/search-quality.bench.ts and the issue note. */
export const DEFAULT_SEARCH_MODE = "hybrid" as "fts" | "vector" | "hybrid";

/** One schema for GET query strings and POST JSON bodies (strings are coerced). */
export const searchInputSchema = z
  .object({
    q: z.string().max(2000).default(""),
    /** Default chosen by measurement (bench/search-quality): see DEFAULT_SEARCH_MODE. */
    mode: z.enum(["fts", "vector", "hybrid"]).default(DEFAULT_SEARCH_MODE),
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
    syntax: z.enum(["plain", "fts5"]).default("plain"),
    /** `all` terms or `any` term. Default: `all` for mode=fts, `any` for the lexical leg of hybrid (measured better there). */
    match: z.enum(["all", "any"]).optional(),
    prefix: z.string().max(512).optional(),
    kind: csvParam.pipe(z.array(z.enum(["memory", "markdown", "code", "text"]))).optional(),
    tags: csvParam.pipe(z.array(z.string().max(64)).max(32)).optional(),
    updated_after: dateParam.optional(),
    updated_before: dateParam.optional(),
    /** Merge core's results (read-only); the entry point resolves core's handle once (openCoreFor). */
    include_core: boolParam.default(false),
    include_expired: boolParam.default(false),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    offset: z.coerce.number().int().min(0).max(10_000).default(0),
  })
  .strict();

export type SearchInput = z.output<typeof searchInputSchema>;

/**
 * Reciprocal rank fusion weights per provider, set by measurement on a
 * labelled known-item set (bench/search-quality.bench.ts), not by habit.
 *
 * The builtin hashed embedder is weaker than bm25 there (MRR@10 0.29 vs
 * 0.55) and equal weights rank below bm25 alone (0.46). Small weights win by
 * a hair on one corpus (0.02: 0.554) and lose by a hair on another (0.634 vs
 * 0.641), so builtin gets 0.004: its largest contribution, 0.004/61, is below
 * the smallest gap between two bm25 ranks in the pool (1/(110·111)), so it
 * can never reorder bm25's hits. It only breaks exact ties and appends what
 * bm25 cannot find (misspellings): hybrid ≥ bm25 by construction (0.553).
 * Neural providers (not measurable offline here) start at equal weights;
 * override per request with w_fts / w_vec.
 */
export const FUSION_WEIGHTS: Record<Fingerprint["provider"], { fts: number; vec: number }> = {
  builtin: { fts: 1, vec: 0.004 },
  openai: { fts: 1, vec: 1 },
  transformers: { fts: 1, vec: 1 },
};
export const RRF_K = 60;
/**
 * Vector neighbours at or below this cosine are unrelated text (hashed
 * vectors of unrelated texts scatter around 0): they are not hits.
 */
export const MIN_VECTOR_SIMILARITY = 0.05;
/** Ranked candidates taken from each signal before fusion. */
const POOL = 50;
/** Above this many filtered chunks, filter after an approximate KNN instead of scanning them exactly. */
const EXACT_FILTER_LIMIT = 20_000;
/**
 * Deepest result (offset + limit) vector and hybrid search serve. A KNN asks
 * sqlite-vec for about twice that many neighbours and vec0 allows k ≤ 4096,
 * so offset ≥ ~2000 failed with a 500; past a thousand, nearest-neighbour
 * order means little anyway. Full-text search pages to 10,000.
 */
export const MAX_VECTOR_DEPTH = 1000;

export type HitSignals = {
  fts: { rank: number; score: number } | null;
  vector: { rank: number; distance: number; similarity: number } | null;
  fused: number;
  decay: number | null;
};

export type SearchHit = FullTextHit & { signals?: HitSignals };

export type SearchResult = {
  mode: SearchInput["mode"];
  /** What actually answered: differs from `mode` only on a fallback, which is then explained. */
  effectiveMode: SearchInput["mode"];
  query: string;
  match: string | null;
  results: SearchHit[];
  hasMore: boolean;
  stores: string[];
  degraded: boolean;
  fallback: { reason: string; message: string } | null;
  vectors: {
    model: { id: string; provider: string; model: string; dimension: number };
    method: string;
    indexAvailable: boolean;
    indexReason: string | null;
    pendingEmbeddings: number;
  } | null;
  fusion: { wFts: number; wVec: number; k: number; recencyTauDays: number | null } | null;
  /** Things the caller should know about this answer (e.g. vectors_index_unavailable, embeddings_pending). */
  warnings: { code: string; message: string }[];
};

type Ranked = { key: string; store: string; id: number; score: number };

type ChunkDetail = { id: number; chunkId: string; path: string; kind: string; chunkIndex: number; updatedAt: number; text: string };
type ChunkIdRow = { id: number };

function detailsFor({ handle, ids }: { handle: StoreHandle; ids: number[] }): Map<number, ChunkDetail> {
  const rows = handle.sqlite
    .prepare(
      `select c.id, c.chunk_id as chunkId, d.path, d.kind, c.chunk_index as chunkIndex, d.mtime as updatedAt, substr(c.text, 1, 240) as text
       from chunks c join documents d on d.doc_id = c.doc_id where c.id in (select value from json_each(?))`,
    )
    .all(JSON.stringify(ids)) as ChunkDetail[];
  return new Map(rows.map((r) => [r.id, r]));
}

/** KNN over one store's chunk vectors, with the same filters as full-text search. */
function vectorCandidates({ handle, ...args }: { handle: StoreHandle; fingerprintId: string; query: Float32Array; input: SearchInput; take: number; now: number; budget: QueryBudget }): { hits: VectorHit[]; method: string } {
  const { sqlite } = handle;
  const within = <T>(fn: () => T) => runWithinBudget(sqlite, args.budget, fn);
  const filters = chunkFilterSql({ schema: "main", input: args.input, now: args.now });
  const filterSql = filters.where.length ? `where ${filters.where.join(" and ")}` : "";
  if (hasExplicitFilters(args.input)) {
    const filtered = sqlite.prepare(`select c.id from chunks c join documents d on d.doc_id = c.doc_id ${filterSql} limit ?`);
    const ids = within(() => filtered.all(...filters.args, EXACT_FILTER_LIMIT + 1) as ChunkIdRow[]).map((r) => r.id);
    if (ids.length <= EXACT_FILTER_LIMIT) {
      return within(() => knnSearch({ handle, kind: CHUNK_KIND, fingerprintId: args.fingerprintId, query: args.query, k: args.take, allowedRefIds: ids }));
    }
  }
  // Oversample, then drop what the filters exclude (by default: expired memories).
  const r = within(() => knnSearch({ handle, kind: CHUNK_KIND, fingerprintId: args.fingerprintId, query: args.query, k: args.take + 20, exact: args.input.exact }));
  const kept = sqlite.prepare(`select c.id from chunks c join documents d on d.doc_id = c.doc_id where c.id in (select value from json_each(?))${filters.where.length ? " and " + filters.where.join(" and ") : ""}`);
  const allowed = new Set((within(() => kept.all(JSON.stringify(r.hits.map((h) => h.refId)), ...filters.args)) as ChunkIdRow[]).map((x) => x.id));
  return { hits: r.hits.filter((h) => allowed.has(h.refId)).slice(0, args.take), method: r.method };
}

function decayFactor(updatedAt: number, now: number, tauDays: number | undefined): number | null {
  if (!tauDays) return null;
  return Math.exp(-Math.max(0, now - updatedAt) / (tauDays * 86_400_000));
}

/**
 * Search in any mode. `fts` is plain bm25. `vector` ranks by cosine to the
 * query embedding. `hybrid` fuses both by weighted reciprocal rank. When
 * vectors cannot answer (degraded, drifted, provider down), the answer comes
 * from full-text search and says why: never a silent empty result.
 *
 * `core` is core's handle when the caller asked to include it (openCoreFor),
 * resolved once by the entry point; null otherwise.
 */
export async function searchStore({ handle, core, input, now = Date.now() }: { handle: StoreHandle; core: StoreHandle | null; input: SearchInput; now?: number }): Promise<SearchResult> {
  const base = { mode: input.mode, query: input.q, vectors: null, fusion: null, degraded: false, fallback: null, warnings: [] };
  // Bad input is refused before any work, whichever signal would have used it.
  if (input.mode !== "fts" && input.offset + input.limit > MAX_VECTOR_DEPTH) {
    const message = `offset + limit is ${input.offset + input.limit}; mode=${input.mode} serves results up to ${MAX_VECTOR_DEPTH} deep`;
    throw new AppError("invalid_request", `${message}. Narrow the query with filters, or page further with mode=fts`, [{ path: "offset", message, max: MAX_VECTOR_DEPTH }]);
  }
  const hybridMatch = ftsMatchFor(input, input.match ?? "any");
  const budget = startQueryBudget({ hint: SEARCH_BUDGET_HINT });
  if (input.mode === "fts") return { ...base, ...searchFullText({ handle, core, input, now, budget }), mode: "fts", effectiveMode: "fts" };

  const ready = await checkVectorReadiness({ handle });
  const embedded = ready.usable ? await embedQueryText({ fingerprint: ready.fingerprint, text: input.q }) : null;
  if (!ready.usable || !embedded?.ok) {
    // No vectors can answer (degraded, drifted, the provider down or wrong): full-text answers, and says why.
    const why = !ready.usable ? ready : embedded && !embedded.ok ? embedded : { reason: "provider_error", message: "no query vector" };
    const fts = searchFullText({ handle, core, input: { ...input, match: input.match ?? "any" }, now, budget });
    return { ...base, ...fts, mode: input.mode, effectiveMode: "fts", degraded: !ready.usable && ready.reason === "degraded", fallback: { reason: why.reason, message: `${why.message}; answered with full-text search` } };
  }
  const fp = ready.fingerprint;
  const query = embedded.vector;
  const handles = core ? [handle, core] : [handle];
  const stores = handles.map((h) => h.store);
  // Vector mode needs only the page; hybrid fuses two deeper pools.
  const take = input.mode === "hybrid" ? Math.max(POOL, input.offset + input.limit + 1) : input.offset + input.limit + 1;

  // Vector signal, per store (core only when its vectors are from the same model).
  const vectorRanked: (Ranked & { distance: number })[] = [];
  let method = "";
  for (const h of handles) {
    if (h === core && !(await checkVectorReadiness({ handle: core })).usable) continue;
    const r = vectorCandidates({ handle: h, fingerprintId: fp.id, query, input, take, now, budget });
    method ||= r.method;
    for (const hit of r.hits.filter((x) => 1 - x.distance > MIN_VECTOR_SIMILARITY)) vectorRanked.push({ key: `${h.store}:${hit.refId}`, store: h.store, id: hit.refId, score: 1 - hit.distance, distance: hit.distance });
  }
  vectorRanked.sort((a, b) => a.distance - b.distance || a.key.localeCompare(b.key));
  if (input.q.trim()) {
    logVectorQuery({ handle, q: input.q, mode: input.mode, fingerprintId: fp.id, resultIds: vectorRanked.filter((r) => r.store === handle.store).slice(0, 10).map((r) => r.id) });
  }

  // Lexical signal (hybrid only), through the read-only reader when core is included.
  const ftsRanked: (Ranked & { snippet: string; highlights: [number, number][] })[] = [];
  const match = hybridMatch;
  let lexicalOverBudget: string | null = null;
  if (input.mode === "hybrid" && match) {
    const reader = openSearchReader({ handle, core });
    try {
      for (const [schema, name] of reader.schemas) {
        for (const r of runFts({ reader, schema, match, input, take, now, budget })) {
          ftsRanked.push({ key: `${name}:${r.id}`, store: name, id: r.id, score: -r.rank, ...splitSnippet(r.snip) });
        }
      }
    } catch (e) {
      // The lexical leg is the one that grows with common words (~1–1.7 s for a few OR-ed stopwords over 100k chunks):
      // past the budget, hybrid answers from its vectors and says so, rather than failing the whole search.
      if (!(isAppError(e) && e.code === "query_too_expensive")) throw e;
      ftsRanked.length = 0;
      lexicalOverBudget = e.message;
    } finally {
      reader.release();
    }
    ftsRanked.sort((a, b) => b.score - a.score || a.key.localeCompare(b.key));
  }

  const weights = { ...FUSION_WEIGHTS[fp.provider], ...(input.w_fts !== undefined ? { fts: input.w_fts } : {}), ...(input.w_vec !== undefined ? { vec: input.w_vec } : {}) };
  const ftsPos = new Map(ftsRanked.map((r, i) => [r.key, { rank: i + 1, r }]));
  const vecPos = new Map(vectorRanked.map((r, i) => [r.key, { rank: i + 1, r }]));
  const keys = [...new Set([...vectorRanked.map((r) => r.key), ...ftsRanked.map((r) => r.key)])];

  // Chunk details per store.
  const details = new Map<string, ChunkDetail>();
  for (const h of handles) {
    const ids = keys.filter((k) => k.startsWith(h.store + ":")).map((k) => Number(k.slice(h.store.length + 1)));
    for (const [id, d] of detailsFor({ handle: h, ids })) details.set(`${h.store}:${id}`, d);
  }

  const scored = keys.flatMap((key) => {
    const d = details.get(key);
    if (!d) return []; // deleted since it was indexed
    const f = ftsPos.get(key);
    const v = vecPos.get(key);
    const decay = decayFactor(d.updatedAt, now, input.recency_tau_days);
    const raw = input.mode === "hybrid" ? (f ? weights.fts / (RRF_K + f.rank) : 0) + (v ? weights.vec / (RRF_K + v.rank) : 0) : (v?.r.score ?? 0);
    const fused = raw * (decay ?? 1);
    const hit: SearchHit = {
      store: key.slice(0, key.indexOf(":")),
      id: d.id,
      chunkId: d.chunkId,
      path: d.path,
      kind: d.kind,
      chunkIndex: d.chunkIndex,
      score: fused,
      updatedAt: d.updatedAt,
      ...(f ? { snippet: f.r.snippet, highlights: f.r.highlights } : { snippet: d.text.replace(/\s+/g, " ").trim(), highlights: [] }),
    };
    if (input.explain) {
      hit.signals = {
        fts: f ? { rank: f.rank, score: f.r.score } : null,
        vector: v ? { rank: v.rank, distance: v.r.distance, similarity: v.r.score } : null,
        fused,
        decay,
      };
    }
    return [hit];
  });
  scored.sort((a, b) => b.score - a.score || (a.store === b.store ? a.id - b.id : a.store < b.store ? -1 : 1));
  const page = scored.slice(input.offset, input.offset + input.limit);
  const pending = getEmbedBacklog({ handle }).pending;
  const warnings: SearchResult["warnings"] = [];
  if (!handle.vectors.available) {
    warnings.push({ code: "vectors_index_unavailable", message: `sqlite-vec is not loaded (${handle.vectors.reason}); vectors were scanned exactly, which is slower` });
  }
  if (pending > 0) warnings.push({ code: "embeddings_pending", message: `${pending} item(s) are waiting for vectors; until then only full-text search can find them` });
  return {
    ...base,
    mode: input.mode,
    effectiveMode: lexicalOverBudget ? "vector" : input.mode,
    fallback: lexicalOverBudget ? { reason: "query_budget", message: `full-text part skipped: ${lexicalOverBudget}; answered from vectors alone` } : null,
    match,
    results: page,
    hasMore: scored.length > input.offset + input.limit,
    stores,
    vectors: {
      model: { id: fp.id, provider: fp.provider, model: fp.model, dimension: fp.dimension },
      method: method || "none",
      indexAvailable: handle.vectors.available,
      indexReason: handle.vectors.available ? null : handle.vectors.reason,
      pendingEmbeddings: pending,
    },
    warnings,
    fusion: input.mode === "hybrid" ? { wFts: weights.fts, wVec: weights.vec, k: RRF_K, recencyTauDays: input.recency_tau_days ?? null } : null,
  };
}
