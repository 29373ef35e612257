import type { StoreHandle } from "../db/connection";
import { embedQueryText } from "../embed/query";
import type { Fingerprint } from "../embed/providers";
import { getEmbedBacklog } from "../embed/queue";
import { checkVectorReadiness } from "../embed/status";
import type { Fallback } from "./reasons";

/**
 * Can vectors answer this query, and with which vector? Readiness of the
 * store (backlog over the watermark, model mismatch, provider) and the query
 * embedding (cache, timeout, dimension check: lib/embed/query.ts) in one
 * step. Every "no" is a Fallback in the retrieval vocabulary, so the caller
 * answers lexically and says why.
 */
export type QueryVectorPlan =
  | { ok: true; fingerprint: Fingerprint; vector: Float32Array; cacheHit: boolean; ms: number }
  | { ok: false; fallback: Fallback; ms: number };

export type VectorReadinessPlan = { ok: true; fingerprint: Fingerprint } | { ok: false; fallback: Fallback };

/** The store's readiness for vector retrieval, in the retrieval vocabulary (backlog carries its count). */
export async function vectorReadiness({ handle }: { handle: StoreHandle }): Promise<VectorReadinessPlan> {
  const ready = await checkVectorReadiness({ handle });
  if (ready.usable) return { ok: true, fingerprint: ready.fingerprint };
  switch (ready.reason) {
    case "degraded":
      return { ok: false, fallback: { reason: "backlog", message: ready.message, count: getEmbedBacklog({ handle }).pending } };
    case "drifted":
      return { ok: false, fallback: { reason: "model_mismatch", message: ready.message } };
    case "vectors_index_unavailable":
      return { ok: false, fallback: { reason: "vectors_unavailable", message: ready.message } };
    default:
      return { ok: false, fallback: { reason: "provider_error", message: ready.message } };
  }
}

/** Readiness, then the query's vector: the one way search, recall and remember get one. */
export async function planQueryVector({ handle, text, fingerprint }: { handle: StoreHandle; text: string; fingerprint?: Fingerprint }): Promise<QueryVectorPlan> {
  const started = performance.now();
  const ms = () => Math.round((performance.now() - started) * 100) / 100;
  let fp = fingerprint;
  if (!fp) {
    const ready = await vectorReadiness({ handle });
    if (!ready.ok) return { ok: false, fallback: ready.fallback, ms: ms() };
    fp = ready.fingerprint;
  }
  const q = await embedQueryText({ fingerprint: fp, text });
  if (!q.ok) return { ok: false, fallback: { reason: "provider_error", message: q.message }, ms: ms() };
  return { ok: true, fingerprint: fp, vector: q.vector, cacheHit: q.cacheHit, ms: ms() };
}
