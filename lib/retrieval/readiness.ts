import { getConfig } from "../config";
import type { StoreHandle } from "../db/connection";
import { preparedOnce } from "../db/statements";
import { readLiveCounts } from "../embed/counters";
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
    default:
      return { ok: false, fallback: { reason: "provider_error", message: ready.message } };
  }
}

/**
 * Vectors can answer only once some of what is searched has one. When none
 * of the searched kinds has a vector of the configured model yet and some
 * wait for theirs (a fresh store, a fresh import), vectors could answer
 * nothing: the answer is lexical, with reason `backlog` and how many wait —
 * a vector answer would be empty and its "no_match" untrue. Once the first
 * vectors exist, items still waiting are the answer's `embeddings_pending`
 * warning instead. Search (chunks), recall (traces, learnings) and remember
 * (thoughts, nodes) on both backends decide it here (planQueryVector,
 * planQueryVectorPg `kinds`); the store is not degraded (backlogDegrades): its
 * health says the items are queued.
 */
export function awaitingFirstVectors({ embedded, pending, kinds, model }: { embedded: boolean; pending: number; kinds: string[]; model: string }): Fallback | null {
  if (embedded || pending === 0) return null;
  return { reason: "backlog", message: `none of this store's ${pending} queued ${kinds.length === 1 ? kinds[0] : "item"}(s) has a vector of ${model} yet`, count: pending };
}

/** Whether a fallback means the store is degraded (its queue above DUALMIND_EMBED_BACKLOG_WATERMARK), as its health says: awaitingFirstVectors' backlog is not. */
export function backlogDegrades(fallback: Fallback | null): boolean {
  return fallback?.reason === "backlog" && (fallback.count ?? 0) > getConfig().embed.backlogWatermark;
}

/**
 * Readiness, then the query's vector: the one way search, recall and remember get one, on either engine (`ready`
 * names the model, or why vectors cannot answer); `ms` is the whole step's time.
 */
export async function planWith({ text, ready }: { text: string; ready: () => Promise<VectorReadinessPlan> }): Promise<QueryVectorPlan> {
  const started = performance.now();
  const ms = () => Math.round((performance.now() - started) * 100) / 100;
  const r = await ready();
  if (!r.ok) return { ok: false, fallback: r.fallback, ms: ms() };
  const q = await embedQueryText({ fingerprint: r.fingerprint, text });
  if (!q.ok) return { ok: false, fallback: { reason: "provider_error", message: q.message }, ms: ms() };
  return { ok: true, fingerprint: r.fingerprint, vector: q.vector, cacheHit: q.cacheHit, ms: ms() };
}

/** planWith on a SQLite store. `kinds`: the kinds the caller's vectors are searched in, for awaitingFirstVectors (search: chunks). */
export function planQueryVector({ handle, text, fingerprint, kinds }: { handle: StoreHandle; text: string; fingerprint?: Fingerprint; kinds?: string[] }): Promise<QueryVectorPlan> {
  return planWith({
    text,
    ready: async () => {
      const ready: VectorReadinessPlan = fingerprint ? { ok: true, fingerprint } : await vectorReadiness({ handle });
      if (!ready.ok || !kinds?.length) return ready;
      const fp = ready.fingerprint;
      // One probe of embeddings_fp_idx, and the live counters: the cost does not grow with the store.
      const embedded = !!preparedOnce({ sqlite: handle.sqlite, sql: `select 1 from embeddings where fingerprint_id = ? and kind in (select value from json_each(?)) limit 1` }).get(fp.id, JSON.stringify(kinds));
      const counts = readLiveCounts({ handle }).byKind;
      const pending = kinds.reduce((n, k) => n + (counts[k]?.pending ?? 0), 0);
      const waiting = awaitingFirstVectors({ embedded, pending, kinds, model: fp.model });
      return waiting ? { ok: false, fallback: waiting } : ready;
    },
  });
}
