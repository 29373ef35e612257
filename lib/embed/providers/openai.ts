import { z } from "zod";
import { EmbeddingError, l2Normalize, providerInfo, type EmbedCallOptions, type EmbeddingProvider, type EmbedTask, type ProviderInfo } from "../types";
import { readStreamAtMost } from "../../http/body";

export type OpenAIProviderOptions = {
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Expected dimension; a response of another size is an error, never stored. */
  dimension?: number;
  timeoutMs: number;
  batchSize: number;
  documentPrefix?: string;
  queryPrefix?: string;
};

const responseSchema = z.object({
  data: z.array(z.object({ index: z.number().int().nonnegative(), embedding: z.array(z.number()) })),
});

/**
 * Any OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, vLLM, LM
 * Studio). Errors are classified; retrying is the worker's job, not ours.
 */
export class OpenAICompatibleProvider implements EmbeddingProvider {
  readonly info: ProviderInfo;
  private dimension: number | undefined;

  constructor(private readonly opts: OpenAIProviderOptions) {
    this.dimension = opts.dimension;
    // The dimension is learned from the first response when not configured.
    this.info = providerInfo({ ...opts, provider: "openai" });
  }

  /** Texts sent to the provider by this process (what a paid API bills), for the worker's counters and tests. */
  sentTexts = 0;

  async embed(texts: string[], task: EmbedTask, opts: EmbedCallOptions = {}): Promise<Float32Array[]> {
    const prefix = task === "query" ? this.info.query_prefix : this.info.document_prefix;
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.opts.batchSize) {
      out.push(...(await this.request(texts.slice(i, i + this.opts.batchSize).map((t) => prefix + t), opts)));
    }
    return out;
  }

  /** A cancelled or timed-out request (its headers or its body) as the provider error it is. */
  private throwIfAborted({ error, signal, timeoutMs, texts }: { error: unknown; signal?: AbortSignal; timeoutMs: number; texts: number }): void {
    if (signal?.aborted) throw new EmbeddingError("unavailable", "embedding request cancelled: the worker is stopping");
    const name = (error as Error | undefined)?.name;
    if (name === "TimeoutError" || name === "AbortError") {
      this.sentTexts += texts;
      throw new EmbeddingError("timeout", `embedding request timed out after ${timeoutMs} ms`);
    }
  }

  private async request(input: string[], opts: EmbedCallOptions): Promise<Float32Array[]> {
    const timeoutMs = opts.timeoutMs ?? this.opts.timeoutMs;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    let res: Response;
    try {
      res = await fetch(`${this.opts.baseUrl}/embeddings`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: this.opts.model, input, encoding_format: "float" }),
        signal: opts.signal ? AbortSignal.any([opts.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
      });
      this.sentTexts += input.length;
    } catch (e) {
      this.throwIfAborted({ error: e, signal: opts.signal, timeoutMs, texts: input.length });
      throw new EmbeddingError("network", `cannot reach ${this.opts.baseUrl}: ${(e as Error).message}`);
    }
    if (!res.ok) {
      const text = (await readStreamAtMost({ body: res.body, most: ERROR_BODY_BYTES }).catch(() => ({ bytes: Buffer.alloc(0) }))).bytes.toString("utf8").slice(0, 300);
      if (res.status === 429) {
        const retryAfter = Number(res.headers.get("retry-after"));
        throw new EmbeddingError("rate_limited", `provider rate-limited the request (429) ${text}`, Number.isFinite(retryAfter) ? retryAfter : undefined);
      }
      if (res.status === 401 || res.status === 403) throw new EmbeddingError("auth", `provider refused the API key (${res.status}) ${text}`);
      if (res.status >= 500) throw new EmbeddingError("server", `provider failed (${res.status}) ${text}`);
      throw new EmbeddingError("bad_request", `provider rejected the request (${res.status}) ${text}`);
    }
    // A vector's floats as JSON, generously: a provider that answers more (a broken proxy, a huge error page) is refused, not held in memory.
    const most = 1024 * 1024 + input.length * (this.dimension ?? MAX_DIMENSION) * 32;
    let parsed: z.infer<typeof responseSchema>;
    try {
      const body = await readStreamAtMost({ body: res.body, most });
      if (body.cut) throw new EmbeddingError("bad_response", `provider answered more than ${most} bytes for ${input.length} texts`);
      parsed = responseSchema.parse(JSON.parse(body.bytes.toString("utf8")));
    } catch (e) {
      if (e instanceof EmbeddingError) throw e;
      // The time limit covers the whole answer: a body that trickles past it is a timeout, not a bad answer.
      this.throwIfAborted({ error: e, signal: opts.signal, timeoutMs, texts: 0 });
      throw new EmbeddingError("bad_response", `provider answered with an unexpected body: ${(e as Error).message.slice(0, 200)}`);
    }
    if (parsed.data.length !== input.length) {
      throw new EmbeddingError("bad_response", `provider returned ${parsed.data.length} vectors for ${input.length} texts`);
    }
    const sorted = [...parsed.data].sort((a, b) => a.index - b.index);
    return sorted.map((d) => {
      this.dimension ??= d.embedding.length;
      this.info.dimension = this.dimension;
      if (d.embedding.length !== this.dimension) {
        throw new EmbeddingError("dimension_mismatch", `provider returned a ${d.embedding.length}-d vector; expected ${this.dimension}`);
      }
      return l2Normalize(Float32Array.from(d.embedding));
    });
  }
}

/** What of a provider's error body is read (its first words say why; the rest is not kept). */
const ERROR_BODY_BYTES = 4096;
/** The widest vector assumed before the provider's first answer says its dimension. */
const MAX_DIMENSION = 8192;
