/**
 * Context evidence for short rows written in sequence (conversation turns, a chain of thoughts, a trace's steps): the
 * row that answers a question is often next to the row that holds its words ("What did you paint?" — "A sunset over
 * the lake."). So a row inherits weight × Σ max(0, a neighbouring hit's lexical score − its own) from the rows just
 * before and after it (relative to the best hit): it never rises above the hit it takes context from, and a row that
 * holds the words itself stays above its neighbours. Neighbours are the nearest rows in time of the same chain (or
 * both unchained) within `windowMs`. Weight 0.5 sits in the flat part of the measured curves rather than on a peak
 * (bench/memory-quality.bench.ts, docs/memory-quality.md).
 */
export const CONTEXT_EVIDENCE = { weight: 0.5, windowMs: 30 * 60_000, seeds: 10 } as const;

/** For each hit (its seq, or a search hit's key), the rows just before and after it in its chain (null when there is none). */
export type ContextNeighbours<K = number> = { hit: K; before: K | null; after: K | null };

/**
 * Each neighbour's context score: weight × Σ max(0, the neighbouring hit's lexical score − its own). `hits` are all
 * the lexical hits (a neighbour's own score is read there, 0 when it is not one); `neighbours` those of the seeds.
 */
export function contextScores<K = number>({ hits, neighbours, weight = CONTEXT_EVIDENCE.weight }: { hits: { seq: K; lexical: number }[]; neighbours: ContextNeighbours<K>[]; weight?: number }): Map<K, number> {
  const lexical = new Map(hits.map((h) => [h.seq, h.lexical]));
  const out = new Map<K, number>();
  for (const n of neighbours) {
    const l = lexical.get(n.hit) ?? 0;
    for (const seq of [n.before, n.after]) {
      const gain = seq === null ? 0 : weight * (l - (lexical.get(seq) ?? 0));
      if (gain > 0) out.set(seq!, (out.get(seq!) ?? 0) + gain);
    }
  }
  return out;
}

/**
 * The same evidence for search over documents (one turn per file, notes taken in sequence): a document's neighbours
 * are the documents of its folder written just before and after it (by mtime, within `windowMs`; the same mtime is not
 * a sequence, so a bulk import has none). Only short first chunks (`maxChars`) are seeds: a long document holds its
 * own answer.
 */
export const DOCUMENT_CONTEXT = { weight: CONTEXT_EVIDENCE.weight, windowMs: CONTEXT_EVIDENCE.windowMs, seeds: CONTEXT_EVIDENCE.seeds, maxChars: 600 } as const;
export type DocumentContextOptions = { weight: number; windowMs: number; seeds: number; maxChars: number };

/** A lexical hit as the document context reads it: its key, store, bm25-like score (higher is better) and chunk. */
export type ContextHit = { key: string; store: string; score: number; row: { path: string; chunkIndex: number; updatedAt: number; text: string; /** The whole chunk's length when `text` is cut. */ length?: number } };
/** A seed: one of the best short hits, with its folder and time, for the backend's neighbour lookup. */
export type ContextSeed = { key: string; store: string; path: string; folder: string; time: number };

/** A path's folder ("" at the top). */
export function folderOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}

/** The hits whose neighbours are read: of the best `seeds` lexical hits (sorted best first), those that are a short first chunk. */
export function documentContextSeeds({ ranked, opts = DOCUMENT_CONTEXT }: { ranked: readonly ContextHit[]; opts?: DocumentContextOptions }): ContextSeed[] {
  if (opts.weight <= 0) return [];
  return ranked
    .slice(0, opts.seeds)
    .filter((h) => h.row.chunkIndex === 0 && (h.row.length ?? h.row.text.length) <= opts.maxChars)
    .map((h) => ({ key: h.key, store: h.store, path: h.row.path, folder: folderOf(h.row.path), time: h.row.updatedAt }));
}

/**
 * Of the rows a backend read around a seed (documents of any folder in the time window, nearest first on each side),
 * the seed's neighbour on each side: the nearest of its own folder, strictly before or after it.
 */
export function nearestInFolder<R extends { key: string; path: string; time: number }>({ seed, rows }: { seed: ContextSeed; rows: readonly R[] }): { before: R | null; after: R | null } {
  let before: R | null = null;
  let after: R | null = null;
  for (const r of rows) {
    if (r.key === seed.key || folderOf(r.path) !== seed.folder) continue;
    if (r.time < seed.time && (!before || r.time > before.time)) before = r;
    if (r.time > seed.time && (!after || r.time < after.time)) after = r;
  }
  return { before, after };
}

/**
 * Each context gain in the hits' own score units (relative to the best hit, as remember's are, then scaled back):
 * weight × Σ max(0, a neighbouring seed's score − the row's own).
 */
export function documentContextGains({ ranked, neighbours, weight = DOCUMENT_CONTEXT.weight }: { ranked: readonly ContextHit[]; neighbours: ContextNeighbours<string>[]; weight?: number }): Map<string, number> {
  const best = ranked[0]?.score ?? 0;
  if (best <= 0) return new Map();
  const gains = contextScores<string>({ hits: ranked.map((h) => ({ seq: h.key, lexical: h.score / best })), neighbours, weight });
  for (const [k, g] of gains) gains.set(k, g * best);
  return gains;
}
