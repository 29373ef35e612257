import { sql } from "drizzle-orm";
import { getEmbedder } from "../embed/model";
import type { Fingerprint } from "../embed/providers";
import { log } from "../log";
import { stores } from "../stores/backend";
import { storeReader } from "./content";
import { activeFingerprintOf } from "./evaluate";

/**
 * At start-up: a store whose vectors are another model's than the
 * configured one serves vector search by full text (model_mismatch) until it
 * is re-embedded. Say so once per store, naming both models, their
 * dimensions and what to do — and when only the dimension differs, say that.
 */
export type ModelMismatch = {
  store: string;
  active: { fingerprintId: string; model: string | null; dimension: number | null };
  configured: { fingerprintId: string; model: string; dimension: number };
  message: string;
};

async function activeModelOf(store: string): Promise<ModelMismatch["active"] | null> {
  const reader = await storeReader(store);
  const id = await activeFingerprintOf(reader);
  if (!id) return null;
  if (reader.dialect === "sqlite") {
    const [row] = await reader.rows<{ info: string }>(sql`select info from embedding_models where fingerprint_id = ${id}`);
    const info = row ? (JSON.parse(row.info) as Partial<Fingerprint>) : null;
    return { fingerprintId: id, model: info ? `${info.provider}:${info.model}` : null, dimension: info?.dimension ?? null };
  }
  const [row] = await reader.rows<{ dimension: number }>(
    sql`select dimension from chunk_embeddings where fingerprint_id = ${id} union all select dimension from embeddings where fingerprint_id = ${id} limit 1`,
  );
  return { fingerprintId: id, model: null, dimension: row ? Number(row.dimension) : null };
}

export function describeMismatch({ store, active, configured }: Omit<ModelMismatch, "message">): string {
  const activeName = active.model ?? `the model with fingerprint ${active.fingerprintId}`;
  const dims = (d: number | null) => (d === null ? "unknown dimensions" : `${d} dimensions`);
  const what =
    active.model === configured.model
      ? `the same model ${configured.model}, but its dimension changed: ${dims(active.dimension)} in the store, ${dims(configured.dimension)} configured`
      : `store ${store} holds vectors of ${activeName} (${dims(active.dimension)}); the configured model is ${configured.model} (${dims(configured.dimension)})`;
  return `${what}. Vector search in ${store} answers by full text (model_mismatch) until you re-embed it (Admin → Re-embed, or \`dualmind reembed ${store}\`; "switch later" evaluates the new model on the store's own probes first), or set DUALMIND_EMBED_PROVIDER, DUALMIND_EMBED_MODEL and DUALMIND_EMBED_DIM back to the store's model.`;
}

/** Each store whose active model is not the configured one, logged once (a warning each). */
export async function reportModelMismatches(): Promise<ModelMismatch[]> {
  let fp: Fingerprint;
  try {
    fp = await getEmbedder().fingerprint;
  } catch (e) {
    log("warn", "could not compare the stores' models with the configured one: the embedding provider did not answer", { error: (e as Error).message });
    return [];
  }
  const configured = { fingerprintId: fp.id, model: `${fp.provider}:${fp.model}`, dimension: fp.dimension };
  const out: ModelMismatch[] = [];
  for (const store of await stores().listStoreNames()) {
    const active = await activeModelOf(store).catch(() => null);
    if (!active || active.fingerprintId === configured.fingerprintId) continue;
    const mismatch = { store, active, configured, message: describeMismatch({ store, active, configured }) };
    log("warn", `configured embedding model differs from store ${store}'s: ${mismatch.message}`, { store, active, configured });
    out.push(mismatch);
  }
  return out;
}
