import { sha256Hex } from "../../common";
import type { EmbedConfig } from "../../config";
import type { EmbeddingProvider, ProviderInfo } from "../types";
import { BuiltinProvider } from "./builtin";
import { OpenAICompatibleProvider } from "./openai";
import { TransformersProvider } from "./transformers";

export function createProvider(config: EmbedConfig): EmbeddingProvider {
  const prefixes = { documentPrefix: config.documentPrefix, queryPrefix: config.queryPrefix };
  switch (config.provider) {
    case "builtin":
      return new BuiltinProvider({ model: config.model, dimension: config.dimension, ...prefixes });
    case "openai":
      return new OpenAICompatibleProvider({
        baseUrl: config.baseUrl,
        model: config.model,
        apiKey: config.apiKey,
        dimension: config.dimension,
        timeoutMs: config.timeoutMs,
        batchSize: config.batchSize,
        ...prefixes,
      });
    case "transformers":
      return new TransformersProvider({ model: config.model, dimension: config.dimension, allowRemote: config.allowRemoteModels, ...prefixes });
  }
}

/** Fixed text whose vector is hashed into the fingerprint: a renamed alias or a swapped model behind the same name changes it. */
export const FINGERPRINT_PROBE = "dualmind fingerprint probe: the quick brown fox checks vector identity";

export type Fingerprint = ProviderInfo & {
  /** sha256 of the probe vector, rounded to 1e-4 so float noise across runs does not flip it. */
  probe_hash: string;
  /** Short stable id: sha256 of everything above. */
  id: string;
};

export async function computeFingerprint(provider: EmbeddingProvider): Promise<Fingerprint> {
  const [probe] = await provider.embed([FINGERPRINT_PROBE], "document");
  const rounded = Array.from(probe, (x) => Math.round(x * 1e4) / 1e4);
  const probeHash = sha256Hex(JSON.stringify(rounded));
  const info = { ...provider.info, dimension: probe.length };
  const id = sha256Hex(JSON.stringify([info.provider, info.model, info.dimension, info.metric, info.document_prefix, info.query_prefix, probeHash])).slice(0, 16);
  return { ...info, probe_hash: probeHash, id };
}

type Renamed = "document_prefix" | "query_prefix" | "probe_hash";

/** A fingerprint as stored (embedding_models.info); rows written before the snake_case spelling say documentPrefix, queryPrefix and probeHash. */
export function fingerprintFromJson(json: string): Fingerprint {
  type Stored = Omit<Fingerprint, Renamed> & Partial<Pick<Fingerprint, Renamed>> & { documentPrefix?: string; queryPrefix?: string; probeHash?: string };
  const { documentPrefix, queryPrefix, probeHash, ...stored } = JSON.parse(json) as Stored;
  return {
    ...stored,
    document_prefix: stored.document_prefix ?? documentPrefix ?? "",
    query_prefix: stored.query_prefix ?? queryPrefix ?? "",
    probe_hash: stored.probe_hash ?? probeHash ?? "",
  };
}
