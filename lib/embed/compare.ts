import { and, count, desc, eq, lte } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { embeddings, searchLog } from "../db/schema/embed";
import { AppError } from "../errors";
import { getActiveFingerprintId, getEmbedder } from "./model";
import type { Fingerprint } from "./providers";
import { getReembedProgress, type ReembedProgress } from "./reembed";
import { knnSearch } from "./vector-index";

const LOG_KEEP = 1000;

/** Remember a vector query and what the active model answered (kept: the last 1000). */
export function logVectorQuery({ handle, q, mode, fingerprintId, resultIds }: { handle: StoreHandle; q: string; mode: string; fingerprintId: string; resultIds: number[] }): void {
  const { id } = handle.db
    .insert(searchLog)
    .values({ ts: Date.now(), q: q.slice(0, 2000), mode, fingerprintId, resultIds: JSON.stringify(resultIds) })
    .returning({ id: searchLog.id })
    .get();
  if (id % 100 === 0) handle.db.delete(searchLog).where(lte(searchLog.id, id - LOG_KEEP)).run();
}

export type ModelComparison = {
  active_fingerprint_id: string;
  candidate_fingerprint_id: string;
  k: number;
  queries: number;
  /** Mean |top-k(active) ∩ top-k(candidate)| / k over the replayed queries. */
  mean_overlap: number | null;
  /** Share of artifacts the candidate has vectors for (a partial re-embed compares on what exists). */
  candidate_coverage_pct: number | null;
  per_query: { q: string; overlap: number; active: number[]; candidate: number[] }[];
};

/**
 * Before switching models: replay the last `n` logged queries against the
 * candidate (the configured model, whose vectors a re-embed is building
 * beside the active ones) and measure overlap@k with what the active model
 * answered. Read-only.
 */
export async function compareCandidateModel({ handle, n = 50, k = 10 }: { handle: StoreHandle; n?: number; k?: number }): Promise<ModelComparison> {
  return compareWith({
    k,
    read: async (candidate) => {
      const active = getActiveFingerprintId({ handle, configured: candidate });
      const have = (handle.db.select({ n: count() }).from(embeddings).where(and(eq(embeddings.fingerprintId, candidate.id), eq(embeddings.kind, "chunk"))).get()?.n ?? 0) > 0;
      const logs = handle.db.select({ q: searchLog.q, ids: searchLog.resultIds }).from(searchLog).where(eq(searchLog.fingerprintId, active)).orderBy(desc(searchLog.id)).limit(n).all();
      return { active, have, logs: logs.map((l) => ({ q: l.q, ids: JSON.parse(l.ids) as number[] })) };
    },
    knn: async (candidate, query) => knnSearch({ handle, kind: "chunk", fingerprintId: candidate.id, query, k }).hits.map((h) => h.refId),
    progress: async () => getReembedProgress({ handle }),
  });
}

/** The comparison's rules on either engine: `read` gives the active model, whether the candidate has vectors, and the logged queries. */
export async function compareWith({ k, read, knn, progress }: {
  k: number;
  read: (candidate: Fingerprint) => Promise<{ active: string; have: boolean; logs: { q: string; ids: number[] }[] }>;
  knn: (candidate: Fingerprint, query: Float32Array) => Promise<number[]>;
  progress: () => Promise<ReembedProgress | null>;
}): Promise<ModelComparison> {
  const { provider, fingerprint } = getEmbedder();
  const candidate = await fingerprint;
  const { active, have, logs } = await read(candidate);
  if (active === candidate.id) {
    throw new AppError("conflict", "the configured model is already the active one: configure the candidate model and start a re-embed (hold_switch) first");
  }
  if (!have) throw new AppError("conflict", "the candidate model has no vectors yet: start a re-embed and let it run");
  const perQuery: ModelComparison["per_query"] = [];
  for (const log of logs) {
    const activeIds = log.ids.map(Number).slice(0, k);
    if (activeIds.length === 0) continue;
    const [query] = await provider.embed([log.q], "query");
    const candidateIds = await knn(candidate, query);
    const overlap = candidateIds.filter((id) => activeIds.includes(id)).length / Math.min(k, activeIds.length);
    perQuery.push({ q: log.q, overlap, active: activeIds, candidate: candidateIds });
  }
  const p = await progress();
  return {
    active_fingerprint_id: active,
    candidate_fingerprint_id: candidate.id,
    k,
    queries: perQuery.length,
    mean_overlap: perQuery.length ? perQuery.reduce((sum, x) => sum + x.overlap, 0) / perQuery.length : null,
    // How much of the re-embed the candidate's vectors cover.
    candidate_coverage_pct: p && p.total ? (100 * p.done) / p.total : null,
    per_query: perQuery,
  };
}
