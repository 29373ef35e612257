import { l2Normalize, type EmbeddingProvider, type EmbedTask, type ProviderInfo } from "../types";

/**
 * The built-in, offline, deterministic embedder. It is lexical-semantic, not
 * a neural model: signed feature hashing of word unigrams, word bigrams and
 * character 3- to 5-grams (which catch shared stems and typos: "authentication"
 * ~ "auth"), L2-normalized. Same text → same vector on any machine.
 */
const WORD_WEIGHT = 1.0;
const BIGRAM_WEIGHT = 0.6;
const CHAR_WEIGHT = 0.35;

// FNV-1a over UTF-16 code units: fast, stable, no dependencies.
function fnv1a(s: string, seed: number): number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function tokenizeForEmbedding(text: string): string[] {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t.length > 0 && t.length <= 64);
}

export class BuiltinProvider implements EmbeddingProvider {
  readonly info: ProviderInfo;

  constructor(opts: { model?: string; dimension?: number; documentPrefix?: string; queryPrefix?: string } = {}) {
    this.info = {
      provider: "builtin",
      model: opts.model ?? "dualmind-hash-v1",
      dimension: opts.dimension ?? 384,
      metric: "cosine",
      documentPrefix: opts.documentPrefix ?? "",
      queryPrefix: opts.queryPrefix ?? "",
    };
  }

  embedOne(text: string): Float32Array {
    const dim = this.info.dimension;
    const v = new Float32Array(dim);
    const add = (feature: string, weight: number) => {
      const h = fnv1a(feature, 0);
      // A second hash picks the sign, so collisions cancel instead of piling up.
      const sign = fnv1a(feature, 0x9e3779b9) & 1 ? 1 : -1;
      v[h % dim] += sign * weight;
    };
    const words = tokenizeForEmbedding(text);
    if (words.length === 0) add("\u0000empty", 1);
    for (let i = 0; i < words.length; i++) {
      const w = words[i];
      add("w:" + w, WORD_WEIGHT);
      if (i + 1 < words.length) add("b:" + w + " " + words[i + 1], BIGRAM_WEIGHT);
      const padded = `<${w}>`;
      for (let n = 3; n <= 5; n++) {
        for (let j = 0; j + n <= padded.length; j++) add("c:" + padded.slice(j, j + n), CHAR_WEIGHT);
      }
    }
    return l2Normalize(v);
  }

  async embed(texts: string[], task: EmbedTask): Promise<Float32Array[]> {
    const prefix = task === "query" ? this.info.queryPrefix : this.info.documentPrefix;
    return texts.map((t) => this.embedOne(prefix + t));
  }
}
