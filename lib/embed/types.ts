export type EmbedTask = "document" | "query";

/** What identifies a vector space: two vectors are comparable only if these match. */
export type ProviderInfo = {
  provider: "builtin" | "transformers" | "openai";
  model: string;
  dimension: number;
  metric: "cosine";
  document_prefix: string;
  query_prefix: string;
};

/** A provider's ProviderInfo from its options (cosine always; a dimension of 0 is learned from the first answer). */
export function providerInfo({ provider, model, dimension = 0, documentPrefix = "", queryPrefix = "" }: { provider: ProviderInfo["provider"]; model: string; dimension?: number; documentPrefix?: string; queryPrefix?: string }): ProviderInfo {
  return { provider, model, dimension, metric: "cosine", document_prefix: documentPrefix, query_prefix: queryPrefix };
}

/** Per call: the worker waits longer than a query (timeoutMs) and cancels an in-flight request when it stops (signal). */
export type EmbedCallOptions = { timeoutMs?: number; signal?: AbortSignal };

export interface EmbeddingProvider {
  readonly info: ProviderInfo;
  /** One L2-normalized vector per text, in order. */
  embed(texts: string[], task: EmbedTask, opts?: EmbedCallOptions): Promise<Float32Array[]>;
}

export type EmbeddingErrorKind = "rate_limited" | "server" | "timeout" | "network" | "auth" | "bad_request" | "bad_response" | "dimension_mismatch" | "unavailable";

/** A provider failure, classified so the worker knows whether a retry can help. */
export class EmbeddingError extends Error {
  constructor(
    readonly kind: EmbeddingErrorKind,
    message: string,
    /** Seconds the provider asked us to wait (429 Retry-After). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = "EmbeddingError";
  }

  get retryable(): boolean {
    return this.kind === "rate_limited" || this.kind === "server" || this.kind === "timeout" || this.kind === "network";
  }
}

export function l2Normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] /= norm;
  return v;
}
