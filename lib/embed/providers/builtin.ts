import { l2Normalize, providerInfo, type EmbeddingProvider, type EmbedTask, type ProviderInfo } from "../types";

/**
 * The built-in, offline, deterministic embedder. It is lexical-semantic, not
 * a neural model: signed feature hashing of word unigrams, word bigrams and
 * character 3- to 5-grams (stopwords dropped; each word's n-grams share one weight) (which catch shared stems and typos: "authentication"
 * ~ "auth"), L2-normalized. Same text → same vector on any machine.
 */
const WORD_WEIGHT = 1.0;
const BIGRAM_WEIGHT = 0.5;
/** L2 weight of all character n-grams of one word together (each word's n-grams share it). */
const CHAR_BLOCK_WEIGHT = 0.6;

// Function words carry no topic; as features they only add noise between unrelated texts.
const STOPWORDS = new Set(
  "a an and are as at be by for from has have if in into is it its of on or that the their then there these this to was were when which while with after before over under not no do does did can will would should could than also".split(" "),
);

// FNV-1a over UTF-16 code units, then murmur3's finalizer: FNV alone has weak
// low bits (its last bit is just the parity of the input), which would skew
// both the bucket and the sign.
function hash32(s: string, seed: number): number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
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
    this.info = providerInfo({ ...opts, provider: "builtin", model: opts.model ?? "dualmind-hash-v1", dimension: opts.dimension ?? 384 });
  }

  embedOne(text: string): Float32Array {
    const dim = this.info.dimension;
    const v = new Float32Array(dim);
    const add = (feature: string, weight: number) => {
      const h = hash32(feature, 0);
      // An independent bit picks the sign, so collisions cancel instead of piling up.
      const sign = hash32(feature, 0x9e3779b9) >>> 31 ? 1 : -1;
      v[h % dim] += sign * weight;
    };
    const all = tokenizeForEmbedding(text);
    const content = all.filter((w) => !STOPWORDS.has(w));
    const words = content.length > 0 ? content : all;
    // Collect features first: a repeated feature counts 1 + ln(count) times its
    // weight (sublinear, as in bm25), so long texts are not dominated by repeats.
    const feats = new Map<string, { weight: number; count: number }>();
    const bump = (feature: string, weight: number) => {
      const f = feats.get(feature);
      if (f) f.count++;
      else feats.set(feature, { weight, count: 1 });
    };
    if (words.length === 0) bump("\u0000empty", 1);
    for (let i = 0; i < words.length; i++) {
      const w = words[i];
      bump("w:" + w, WORD_WEIGHT);
      if (i + 1 < words.length) bump("b:" + w + " " + words[i + 1], BIGRAM_WEIGHT);
      const padded = `<${w}>`;
      const grams: string[] = [];
      for (let n = 3; n <= 5; n++) for (let j = 0; j + n <= padded.length; j++) grams.push(padded.slice(j, j + n));
      const each = CHAR_BLOCK_WEIGHT / Math.sqrt(grams.length || 1);
      for (const g of grams) bump("c:" + g, each);
    }
    for (const [feature, f] of feats) add(feature, f.weight * (1 + Math.log(f.count)));
    return l2Normalize(v);
  }

  async embed(texts: string[], task: EmbedTask): Promise<Float32Array[]> {
    const prefix = task === "query" ? this.info.query_prefix : this.info.document_prefix;
    return texts.map((t) => this.embedOne(prefix + t));
  }
}
