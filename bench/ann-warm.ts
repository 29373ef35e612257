import type { StoreHandle } from "../lib/db/connection";
import { buildAnnIndex } from "../lib/embed/ann-index";
import { getEmbedder } from "../lib/embed/model";

/**
 * Build the approximate (HNSW) index of each listed kind whose set is past
 * DUALMIND_ANN_MIN_VECTORS, as a running server's background ticks build it
 * after a bulk load, so latency tables time queries against a ready index;
 * the build time is reported beside them. Returns the vectors indexed.
 */
export async function buildAnnIndexes({ handle, kinds }: { handle: StoreHandle; kinds: string[] }): Promise<number> {
  const fp = await getEmbedder().fingerprint;
  let n = 0;
  for (const kind of kinds) n += buildAnnIndex({ source: { db: handle.sqlite, schema: "main" }, fingerprintId: fp.id, kind, dim: fp.dimension });
  return n;
}
