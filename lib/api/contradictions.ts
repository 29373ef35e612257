import { z } from "zod";
import { currentEngine } from "../db/engine";
import { FACT_LIMITS, listContradictions, type Contradiction } from "../index/facts";
import { storeEngineOf } from "../stores/backend";

/** The query of a contradictions listing: how many (at most FACT_LIMITS.maxListed, named when past it). */
export const contradictionsQuerySchema = z
  .object({ limit: z.coerce.number().int().min(1).max(FACT_LIMITS.maxListed, { message: `limit: at most ${FACT_LIMITS.maxListed} (maxListed)` }).default(50) })
  .strict();

/**
 * A store's unresolved contradictions (lib/index/facts.ts), newest first, for every surface (REST, MCP, CLI): each
 * pair once, both items still active. Resolving one is retiring either item (invalidate, or a write that supersedes).
 */
export async function listContradictionsIn({ store, limit }: { store: string; limit: number }): Promise<{ store: string; contradictions: Contradiction[] }> {
  const handle = await storeEngineOf(currentEngine()).open(store);
  return { store, contradictions: await listContradictions({ handle, limit }) };
}
