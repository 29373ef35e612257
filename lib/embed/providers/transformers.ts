import fs from "node:fs";
import path from "node:path";
import { EmbeddingError, l2Normalize, providerInfo, type EmbeddingProvider, type EmbedTask, type ProviderInfo } from "../types";

export type TransformersProviderOptions = {
  /** A local model directory, or a hub model id (used only when allowRemote). */
  model: string;
  dimension?: number;
  allowRemote: boolean;
  documentPrefix?: string;
  queryPrefix?: string;
};

type Extractor = (texts: string[], opts: { pooling: "mean"; normalize: boolean }) => Promise<{ dims: number[]; data: Float32Array }>;

/**
 * @huggingface/transformers feature-extraction (mean pooling + normalize).
 * The package is optional and loaded lazily on first use, so the app starts
 * fast without it; a missing package or model is a clear EmbeddingError.
 */
export class TransformersProvider implements EmbeddingProvider {
  readonly info: ProviderInfo;
  private extractor: Promise<Extractor> | undefined;

  constructor(private readonly opts: TransformersProviderOptions) {
    this.info = providerInfo({ ...opts, provider: "transformers" });
  }

  private load(): Promise<Extractor> {
    this.extractor ??= (async () => {
      const isPath = this.opts.model.startsWith("/") || this.opts.model.startsWith(".");
      if (isPath && !fs.existsSync(path.resolve(this.opts.model))) {
        throw new EmbeddingError("unavailable", `transformers model directory not found: ${path.resolve(this.opts.model)}`);
      }
      if (!isPath && !this.opts.allowRemote) {
        throw new EmbeddingError(
          "unavailable",
          `transformers model "${this.opts.model}" is not a local directory and remote loading is off (set DUALMIND_TRANSFORMERS_ALLOW_REMOTE=true to allow a download)`,
        );
      }
      let mod: { pipeline: (task: string, model: string, opts: object) => Promise<Extractor>; env: Record<string, unknown> };
      try {
        // A variable specifier keeps bundlers from resolving this optional package at build time.
        const specifier = "@huggingface/transformers";
        mod = (await import(/* webpackIgnore: true */ specifier)) as typeof mod;
      } catch {
        throw new EmbeddingError("unavailable", "the transformers provider needs the optional package @huggingface/transformers (npm install @huggingface/transformers)");
      }
      mod.env.allowRemoteModels = this.opts.allowRemote;
      if (isPath) {
        mod.env.localModelPath = path.dirname(path.resolve(this.opts.model));
        mod.env.allowLocalModels = true;
      }
      try {
        return await mod.pipeline("feature-extraction", isPath ? path.basename(this.opts.model) : this.opts.model, { local_files_only: !this.opts.allowRemote });
      } catch (e) {
        throw new EmbeddingError("unavailable", `cannot load transformers model ${this.opts.model}: ${(e as Error).message}`);
      }
    })();
    // A failed load is not cached: the next call tries again (e.g. after the model is copied in).
    this.extractor.catch(() => (this.extractor = undefined));
    return this.extractor;
  }

  /** Load the model now; the worker calls this at start so a bad setup is reported at once. */
  async ready(): Promise<void> {
    await this.load();
  }

  async embed(texts: string[], task: EmbedTask): Promise<Float32Array[]> {
    const extractor = await this.load();
    const prefix = task === "query" ? this.info.query_prefix : this.info.document_prefix;
    const out = await extractor(texts.map((t) => prefix + t), { pooling: "mean", normalize: true });
    const [n, dim] = out.dims;
    if (n !== texts.length) throw new EmbeddingError("bad_response", `model returned ${n} vectors for ${texts.length} texts`);
    if (this.opts.dimension && dim !== this.opts.dimension) {
      throw new EmbeddingError("dimension_mismatch", `model returned ${dim}-d vectors; expected ${this.opts.dimension}`);
    }
    this.info.dimension = dim;
    return Array.from({ length: n }, (_, i) => l2Normalize(out.data.slice(i * dim, (i + 1) * dim)));
  }
}
