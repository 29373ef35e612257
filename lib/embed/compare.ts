import type { StoreHandle } from "../db/connection";
import { AppError } from "../errors";
import { getActiveFingerprintId, getEmbedder } from "./model";
import { getReembedProgress } from "./reembed";
import { knnSearch } from "./vector-index";

const LOG_KEEP = 1000;

/** Remember a vector query and what the active model answered (kept: the last 1000). */
export function logVectorQuery(handle: StoreHandle, entry: { q: string; mode: string; fingerprintId: string; resultIds: number[] }): void {
  const { sqlite } = handle;
  const { id } = sqlite
    .prepare("insert into search_log(ts, q, mode, fingerprint_id, result_ids) values (?, ?, ?, ?, ?) returning id")
    .get(Date.now(), entry.q.slice(0, 2000), entry.mode, entry.fingerprintId, JSON.stringify(entry.resultIds)) as { id: number };
  if (id % 100 === 0) sqlite.prepare("delete from search_log where id <= ?").run(id - LOG_KEEP);
}

export type ModelComparison = {
  activeFingerprintId: string;
  candidateFingerprintId: string;
  k: number;
  queries: number;
  /** Mean |top-k(active) ∩ top-k(candidate)| / k over the replayed queries. */
  meanOverlap: number | null;
  /** Share of artifacts the candidate has vectors for (a partial re-embed compares on what exists). */
  candidateCoveragePct: number | null;
  perQuery: { q: string; overlap: number; active: number[]; candidate: number[] }[];
};

/**
 * Before switching models: replay the last `n` logged queries against the
 * candidate (the configured model, whose vectors a re-embed is building
 * beside the active ones) and measure overlap@k with what the active model
 * answered. Read-only.
 */
export async function compareCandidateModel(handle: StoreHandle, { n = 50, k = 10 }: { n?: number; k?: number }): Promise<ModelComparison> {
  const { provider, fingerprint } = getEmbedder();
  const candidate = await fingerprint;
  const active = getActiveFingerprintId(handle, candidate);
  if (active === candidate.id) {
    throw new AppError("conflict", "the configured model is already the active one: configure the candidate model and start a re-embed (hold_switch) first");
  }
  const have = (handle.sqlite.prepare("select count(*) as n from embeddings where fingerprint_id = ? and kind = 'chunk'").get(candidate.id) as { n: number }).n;
  if (have === 0) throw new AppError("conflict", "the candidate model has no vectors yet: start a re-embed and let it run");
  const logs = handle.sqlite
    .prepare("select q, result_ids as ids from search_log where fingerprint_id = ? order by id desc limit ?")
    .all(active, n) as { q: string; ids: string }[];
  const perQuery: ModelComparison["perQuery"] = [];
  for (const log of logs) {
    const activeIds = (JSON.parse(log.ids) as number[]).slice(0, k);
    if (activeIds.length === 0) continue;
    const [query] = await provider.embed([log.q], "query");
    const candidateIds = knnSearch(handle, { kind: "chunk", fingerprintId: candidate.id, query, k }).hits.map((h) => h.refId);
    const overlap = candidateIds.filter((id) => activeIds.includes(id)).length / Math.min(k, activeIds.length);
    perQuery.push({ q: log.q, overlap, active: activeIds, candidate: candidateIds });
  }
  const progress = getReembedProgress(handle);
  return {
    activeFingerprintId: active,
    candidateFingerprintId: candidate.id,
    k,
    queries: perQuery.length,
    meanOverlap: perQuery.length ? perQuery.reduce((s, x) => s + x.overlap, 0) / perQuery.length : null,
    candidateCoveragePct: progress && progress.total ? (100 * progress.done) / progress.total : null,
    perQuery,
  };
}
