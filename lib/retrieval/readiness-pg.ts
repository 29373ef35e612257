import { sql } from "drizzle-orm";
import { getConfig } from "../config";
import { rowsOf, withStoreTx, type PgStoreHandle } from "../db/pg-store";
import { getEmbedder } from "../embed/model";
import { embedQueryText } from "../embed/query";
import type { Fingerprint } from "../embed/providers";
import type { QueryVectorPlan } from "./readiness";

/**
 * The query-embedding step of the one retrieval pipeline on a PostgreSQL
 * store (the SQLite twin is planQueryVector in ./readiness.ts): the
 * configured provider's fingerprint, the store's readiness for it, then the
 * query's vector (the same cache and timeout). Every "no" is a Fallback in
 * the retrieval vocabulary, so the search answers lexically and says why:
 * - provider_error: the provider is down, slow or answers the wrong dimension;
 * - backlog: more chunks wait for a vector of this model than the watermark,
 *   or none has one yet (a vector-only answer would be empty, not "no match");
 * - model_mismatch: the store's vectors are all of another model (re-embed).
 */
export async function planQueryVectorPg({ handle, text }: { handle: PgStoreHandle; text: string }): Promise<QueryVectorPlan> {
  const started = performance.now();
  const ms = () => Math.round((performance.now() - started) * 100) / 100;
  let fp: Fingerprint;
  try {
    fp = await getEmbedder().fingerprint;
  } catch (e) {
    return { ok: false, fallback: { reason: "provider_error", message: `embedding provider unavailable: ${(e as Error).message}` }, ms: ms() };
  }
  const [counts] = await withStoreTx({ handle, readOnly: true }, (tx) =>
    rowsOf<{ pending: number; embedded: number; other: number }>(
      tx,
      sql`select
        (select count(*)::int from chunks c where not exists (select 1 from chunk_embeddings e where e.chunk_row_id = c.id and e.fingerprint_id = ${fp.id})) as pending,
        (select count(*)::int from chunk_embeddings e where e.fingerprint_id = ${fp.id}) as embedded,
        (select count(*)::int from chunk_embeddings e where e.fingerprint_id <> ${fp.id}) as other`,
    ),
  );
  const watermark = getConfig().embed.backlogWatermark;
  if (counts.embedded === 0 && counts.other > 0) {
    return { ok: false, fallback: { reason: "model_mismatch", message: `the configured model (${fp.model}, ${fp.id}) differs from the store's vectors; re-embed the store` }, ms: ms() };
  }
  if (counts.pending > watermark) {
    return { ok: false, fallback: { reason: "backlog", message: `embed backlog ${counts.pending} is above the watermark ${watermark}`, count: counts.pending }, ms: ms() };
  }
  if (counts.embedded === 0 && counts.pending > 0) {
    return { ok: false, fallback: { reason: "backlog", message: `none of this store's ${counts.pending} chunk(s) has a vector of ${fp.model} yet`, count: counts.pending }, ms: ms() };
  }
  const q = await embedQueryText({ fingerprint: fp, text });
  if (!q.ok) return { ok: false, fallback: { reason: "provider_error", message: q.message }, ms: ms() };
  return { ok: true, fingerprint: fp, vector: q.vector, cacheHit: q.cacheHit, ms: ms() };
}
