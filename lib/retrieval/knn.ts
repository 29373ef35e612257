import { preparedOnce } from "../db/statements";
import { blobToVector, knnSearch, type KnnMethod, type KnnSource } from "../embed/vector-index";

/**
 * Vector candidates over the store and, when the caller may read it, core:
 * the one KNN (lib/embed/vector-index.ts knnSearch) run per source, merged
 * closest first, with neighbours below the similarity floor (floor.ts) left
 * out and counted, so an empty answer can say `below_similarity_floor`.
 */
export type VectorSource = { store: string; source: KnnSource; fingerprintId: string; /** Only these refs (filters applied first). */ allowed?: number[] };
export type VectorCandidate = { store: string; key: string; refId: number; embeddingId: number; similarity: number; distance: number };

export function vectorNeighbours({ sources, kind, query, k, floor, exact }: { sources: VectorSource[]; kind: string; query: Float32Array; k: number; floor: number; exact?: boolean }): { hits: VectorCandidate[]; belowFloor: number; method: KnnMethod | "none" } {
  const hits: VectorCandidate[] = [];
  let belowFloor = 0;
  let method: KnnMethod | "none" = "none";
  for (const s of sources) {
    const r = knnSearch({ source: s.source, kind, fingerprintId: s.fingerprintId, query, k, exact, allowedRefIds: s.allowed });
    if (method === "none") method = r.method;
    for (const h of r.hits) {
      const similarity = 1 - h.distance;
      if (similarity < floor) belowFloor++;
      else hits.push({ store: s.store, key: `${s.store}:${h.refId}`, refId: h.refId, embeddingId: h.embeddingId, similarity, distance: h.distance });
    }
  }
  hits.sort((a, b) => a.distance - b.distance || a.key.localeCompare(b.key));
  return { hits, belowFloor, method };
}

/** Cosine of each listed artifact's vector with the query (for rescoring candidates found another way). */
export function similaritiesOf({ source, kind, fingerprintId, refIds, query }: { source: KnnSource; kind: string; fingerprintId: string; refIds: number[]; query: Float32Array }): Map<number, { similarity: number; inputHash: string }> {
  const out = new Map<number, { similarity: number; inputHash: string }>();
  if (refIds.length === 0) return out;
  const rows = preparedOnce({ sqlite: source.db, sql: `select ref_id as refId, input_hash as hash, vector from ${source.schema}.embeddings where fingerprint_id = ? and kind = ? and ref_id in (select value from json_each(?))` }).all(fingerprintId, kind, JSON.stringify(refIds)) as { refId: number; hash: string; vector: Buffer }[];
  for (const r of rows) {
    const v = blobToVector(r.vector);
    let s = 0;
    for (let i = 0; i < v.length; i++) s += v[i] * query[i];
    out.set(r.refId, { similarity: s, inputHash: r.hash });
  }
  return out;
}
