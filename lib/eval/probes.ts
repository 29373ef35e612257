import { z } from "zod";
import { sha256Hex } from "../common";

/**
 * Self-recall probes (docs/self-recall.md, "Probes"): questions a store asks
 * of itself, each with the one answer it must find. A plain function of the
 * content and a seed (no clock, no Math.random), so the same content and seed
 * give the same set on every machine; a change to how probes are drawn is a
 * new version, and every store's probe set is drawn again.
 */
export const PROBE_GENERATOR_VERSION = 1;
export const PROBE_KINDS = ["document", "memory", "trace", "learning", "thought"] as const;
export type ProbeKind = (typeof PROBE_KINDS)[number];

/** Default and largest number of probes per kind (a run asks each probe once per mode). */
export const DEFAULT_PROBES_PER_KIND = 100;
export const MAX_PROBES_PER_KIND = 500;
export const DEFAULT_PROBE_SEED = 2026;

export const probeSchema = z.object({
  kind: z.enum(PROBE_KINDS),
  q: z.string(),
  /** The answer: a document path, or a trace/learning/thought id. */
  target: z.string(),
  /** The target's content hash when drawn: a probe whose target changed since is left out of a run. */
  targetHash: z.string(),
});
export type Probe = z.infer<typeof probeSchema>;

/** One item a probe can be drawn from: its answer key, its content hash, and its texts (a document's chunks; one text otherwise). */
export type ProbeSource = { kind: ProbeKind; key: string; hash: string; texts: string[] };

const MIN_WORDS = 8;
const MAX_WORDS = 40;

/** mulberry32: a tiny seeded PRNG, the same on every machine (the benches draw with it too). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle<T>(xs: readonly T[], random: () => number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** Words as a person would type them: letters and digits, punctuation and markup gone. */
export function wordsOf(text: string): string[] {
  return text.match(/[\p{L}\p{N}][\p{L}\p{N}'_-]*/gu) ?? [];
}

/**
 * The prose sentences of a markdown text: code fences, tables, headings,
 * links' targets and HTML left out; a list item counts as a sentence.
 */
export function proseSentences(text: string): string[] {
  const prose = text
    .replace(/```[\s\S]*?```/g, "\n")
    .replace(/<[^>]+>/g, " ")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/`[^`]*`/g, " ")
    .split("\n")
    // Headings, tables, quotes, rules, HTML, images and indented code are not prose.
    .filter((line) => !/^\s{0,3}(#|\||>|<|!\[|\[!\[|[-=*_]{3,}\s*$)/.test(line) && !/^( {4}|\t)/.test(line) && !line.includes("|"))
    .map((line) => line.replace(/^\s*([-*+]|\d+\.)\s+/, ""))
    .join("\n");
  return prose
    .split(/(?<=[.!?])\s+|\n\s*\n|\n(?=\s*[-*+]\s)/)
    .map((s) => s.replace(/\s+/g, " ").trim())
    .filter((s) => {
      const words = wordsOf(s);
      // Prose, not code or a list of links: words make up most of its characters (as bench/known-items.ts asks).
      return words.length >= MIN_WORDS && words.length <= MAX_WORDS && words.join("").length >= 0.7 * s.replace(/\s/g, "").length;
    });
}

/** The words of `text` with a seeded third dropped, in their order: a known item half remembered. */
export function dropAThird(text: string, random: () => number): string {
  const words = wordsOf(text);
  const drop = new Set(shuffle(words.map((_, i) => i), random).slice(0, Math.floor(words.length / 3)));
  return words.filter((_, i) => !drop.has(i)).join(" ");
}

/** A rewording: a third of the words dropped and the rest put in a seeded order. */
export function reword(text: string, random: () => number): string {
  return shuffle(dropAThird(text, random).split(" "), random).join(" ");
}

/** Is this sentence also in another document (so the probe would have two right answers)? */
export type SharedSentenceCheck = (sentence: string, key: string) => Promise<boolean>;

async function probeFor(source: ProbeSource, random: () => number, shared?: SharedSentenceCheck): Promise<Probe | null> {
  if (source.kind === "document" || source.kind === "memory") {
    const sentences = [...new Set(source.texts.flatMap(proseSentences))];
    while (sentences.length > 0) {
      const [sentence] = sentences.splice(Math.floor(random() * sentences.length), 1);
      if (shared && (await shared(sentence, source.key))) continue;
      return { kind: source.kind, q: dropAThird(sentence, random), target: source.key, targetHash: source.hash };
    }
    return null;
  }
  const text = source.texts.join(" ");
  if (wordsOf(text).length < 3) return null;
  return { kind: source.kind, q: reword(text, random), target: source.key, targetHash: source.hash };
}

/**
 * Draw up to `perKind` probes of each kind from `candidates` (every item's
 * key and hash, in any order) with a shuffle seeded by `seed`; `read`
 * fetches the texts of only the items the shuffle picks (a store's text is
 * never read whole). An item without a usable sentence is skipped for the next.
 */
export async function drawProbes({
  candidates,
  read,
  seed,
  perKind,
  shared,
}: {
  candidates: Record<ProbeKind, { key: string; hash: string }[]>;
  read: (kind: ProbeKind, keys: string[]) => Promise<ProbeSource[]>;
  seed: number;
  perKind: number;
  /** Documents' sentences found in another document are passed over (none are without it). */
  shared?: SharedSentenceCheck;
}): Promise<Probe[]> {
  const probes: Probe[] = [];
  for (const kind of PROBE_KINDS) {
    const random = seededRandom(seed ^ hashSeed(kind));
    const order = shuffle(
      [...candidates[kind]].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
      random,
    );
    const taken: Probe[] = [];
    const seen = new Set<string>();
    // Read in small batches until enough probes are drawn: most items yield one.
    for (let at = 0; at < order.length && taken.length < perKind; ) {
      const batch = order.slice(at, at + Math.max(8, perKind - taken.length));
      at += batch.length;
      const sources = new Map((await read(kind, batch.map((c) => c.key))).map((s) => [s.key, s]));
      for (const c of batch) {
        const source = sources.get(c.key);
        const probe = source ? await probeFor(source, random, shared) : null;
        if (!probe || seen.has(probe.q) || taken.length >= perKind) continue;
        seen.add(probe.q);
        taken.push(probe);
      }
    }
    probes.push(...taken);
  }
  return probes;
}

function hashSeed(text: string): number {
  return parseInt(sha256Hex(text).slice(0, 8), 16);
}

/** What a probe set was drawn from: per kind, how many items and a hash of their keys and content hashes. */
export type ContentFingerprint = Record<ProbeKind, { count: number; hash: string }>;

export function contentFingerprint(candidates: Record<ProbeKind, { key: string; hash: string }[]>): ContentFingerprint {
  const out = {} as ContentFingerprint;
  for (const kind of PROBE_KINDS) {
    const lines = [...candidates[kind]].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map((c) => `${c.key}\u0000${c.hash}\n`);
    out[kind] = { count: candidates[kind].length, hash: sha256Hex(lines.join("")).slice(0, 16) };
  }
  return out;
}

/** A probe set is drawn again when a kind's item count moved by more than this share, or this share of its probes' targets changed. */
export const CONTENT_CHANGE_LIMIT = 0.2;

/**
 * Why a stored probe set no longer fits the content (null: it still does):
 * another generator version or seed, a kind whose item count moved by more
 * than CONTENT_CHANGE_LIMIT (or that appeared), or more than that share of
 * the probes whose target is gone or changed.
 */
export function probeSetStaleReason({
  set,
  now,
  currentHashes,
  seed,
}: {
  set: { generatorVersion: number; seed: number; content: ContentFingerprint; probes: Probe[] };
  now: ContentFingerprint;
  currentHashes: (probe: Probe) => string | undefined;
  seed: number;
}): string | null {
  if (set.generatorVersion !== PROBE_GENERATOR_VERSION) return `the probe generator changed (version ${set.generatorVersion} → ${PROBE_GENERATOR_VERSION})`;
  if (set.seed !== seed) return `another seed was asked for (${set.seed} → ${seed})`;
  for (const kind of PROBE_KINDS) {
    const before = set.content[kind]?.count ?? 0;
    const after = now[kind].count;
    if (before === 0 ? after > 0 : Math.abs(after - before) / before > CONTENT_CHANGE_LIMIT) return `the ${kind} count moved from ${before} to ${after}`;
  }
  const changed = set.probes.filter((p) => currentHashes(p) !== p.targetHash).length;
  if (set.probes.length > 0 && changed / set.probes.length > CONTENT_CHANGE_LIMIT) return `${changed} of ${set.probes.length} probe targets changed or are gone`;
  return null;
}
