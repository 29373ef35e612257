import { getConfig } from "../config";
import { log } from "../log";
import { getEmbedder } from "./model";
import { isProviderDownError, providerErrorKind, recordProviderOutcome } from "./provider-state";
import type { Fingerprint } from "./providers";

/**
 * The query vector for search, recall and remember: one cache, one timeout,
 * and a provider failure of any kind (down, slower than the timeout, an
 * answer of the wrong dimension) reported as `provider_error` so the caller
 * answers lexically and says why, never with a 500.
 */
export type QueryVector =
  | { ok: true; vector: Float32Array; cacheHit: boolean }
  | { ok: false; reason: "provider_error"; message: string };

/** A person or agent is waiting: a query waits at most this long for its vector, whatever the batch timeout. */
export const QUERY_EMBED_TIMEOUT_MS = 5_000;
// Agents ask the same thing often; per model and exact text.
const QUERY_CACHE_MAX = 2000;
const g = globalThis as unknown as { __dualmindQueryVectorCache?: Map<string, Float32Array> };

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the embedding provider did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export async function embedQueryText({ fingerprint, text }: { fingerprint: Fingerprint; text: string }): Promise<QueryVector> {
  const cache = (g.__dualmindQueryVectorCache ??= new Map());
  const key = `${fingerprint.id}\0${text}`;
  const cached = cache.get(key);
  if (cached) {
    // Refresh its place: the Map's insertion order is the LRU order.
    cache.delete(key);
    cache.set(key, cached);
    return { ok: true, vector: cached, cacheHit: true };
  }
  let vector: Float32Array | undefined;
  try {
    const timeoutMs = Math.min(getConfig().embed.timeoutMs, QUERY_EMBED_TIMEOUT_MS);
    [vector] = await withTimeout(getEmbedder().provider.embed([text], "query"), timeoutMs);
    void recordProviderOutcome({ ok: true });
  } catch (e) {
    if (isProviderDownError(e)) void recordProviderOutcome({ ok: false, error: e instanceof Error ? e.message : String(e) });
    // Logged with its stack: a fault that is ours, not the provider's, must not hide behind the lexical answer.
    log("warn", "query embedding failed; answering lexically", { error: e instanceof Error ? e.stack : String(e) });
    // Answers carry the kind of failure only: the provider's own text (its URL, its reply) is in the log and, for
    // admin tokens, in store health.
    return { ok: false, reason: "provider_error", message: `could not embed the query: ${providerErrorKind(e instanceof Error ? e.message : String(e))}` };
  }
  if (!vector || vector.length !== fingerprint.dimension) {
    return { ok: false, reason: "provider_error", message: `could not embed the query: the provider answered ${vector?.length ?? 0} dimensions, the store's model has ${fingerprint.dimension}` };
  }
  cache.set(key, vector);
  if (cache.size > QUERY_CACHE_MAX) cache.delete(cache.keys().next().value!);
  return { ok: true, vector, cacheHit: false };
}

export function clearQueryVectorCache(): void {
  g.__dualmindQueryVectorCache?.clear();
}
