import { sql } from "drizzle-orm";
import { rowsOf, withStoreTx, type PgStoreHandle } from "../db/pg-store";
import { getEmbedder } from "../embed/model";
import { CHUNK_KIND } from "./chunk-embeddings";
import { backlogFallbackPg } from "./embed-queue-pg";
import { providerErrorKind } from "../embed/provider-state";
import type { Fingerprint } from "../embed/providers";
import { awaitingFirstVectors, planWith, type QueryVectorPlan } from "../retrieval/readiness";
import type { Fallback } from "../retrieval/reasons";
import { readActiveFingerprintPg } from "./reembed-pg";

/**
 * The query-embedding step of the retrieval pipeline on a PostgreSQL store
 * (the SQLite twin is planQueryVector in lib/retrieval/readiness.ts): every
 * "no" is a Fallback (provider_error, backlog, model_mismatch), so the search
 * answers lexically and says why. A re-embed building the configured model's
 * vectors beside the active ones never makes a search answer from a partial
 * set. The vectors asked about are the chunks', or with `kinds` those kinds'.
 */
export function planQueryVectorPg({ handle, text, kinds }: { handle: PgStoreHandle; text: string; kinds?: string[] }): Promise<QueryVectorPlan> {
  return planWith({ text, ready: async () => {
    let fp: Fingerprint;
    try {
      fp = await getEmbedder().fingerprint;
    } catch (e) {
      return { ok: false, fallback: { reason: "provider_error", message: `embedding provider unavailable: ${providerErrorKind((e as Error).message)}` } };
    }
    // Index probes and a count bounded by the watermark: the cost of asking does not grow with the store.
    const fallback = await withStoreTx({ handle, readOnly: true, work: async (tx): Promise<Fallback | null> => {
      const active = await readActiveFingerprintPg(tx);
      if (active !== null && active !== fp.id) return { reason: "model_mismatch", message: `the configured model (${fp.model}, ${fp.id}) differs from the store's active model (${active}); re-embed the store` };
      const [table, ofKinds] = kinds ? [sql`embeddings`, sql` and kind in ${kinds}`] : [sql`chunk_embeddings`, sql``];
      const [row] = await rowsOf<{ embedded: boolean; other: boolean }>({
        tx,
        query: sql`select
          exists (select 1 from ${table} where fingerprint_id = ${fp.id}${ofKinds}) as embedded,
          (exists (select 1 from ${table} where fingerprint_id < ${fp.id}${ofKinds}) or exists (select 1 from ${table} where fingerprint_id > ${fp.id}${ofKinds})) as other`,
      });
      if (!row.embedded && row.other) return { reason: "model_mismatch", message: `the configured model (${fp.model}, ${fp.id}) differs from the store's vectors; re-embed the store` };
      const over = await backlogFallbackPg({ tx });
      if (over || row.embedded) return over;
      const searched = kinds ?? [CHUNK_KIND];
      const [{ pending }] = await rowsOf<{ pending: number }>({ tx, query: sql`select count(*)::int as pending from embed_queue where parked_at is null and kind in ${searched}` });
      return awaitingFirstVectors({ embedded: false, pending, kinds: searched, model: fp.model });
    } });
    return fallback ? { ok: false, fallback } : { ok: true, fingerprint: fp };
  } });
}
