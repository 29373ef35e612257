import type { Fingerprint } from "../embed/providers";
import { foldWord } from "./match";
import type { RetrievalReason } from "./reasons";

/**
 * How well a hit answers the query, in three bands an agent and a person can read (a fused score of 0.0165 means
 * nothing to either): high, most of the query's content words (≥ 2/3, by stem) or a neural cosine well above
 * unrelated text; medium, ≥ 1/3 or a cosine clearly above the floor; low, a word or two or a vector neighbour only
 * (an answer whose best hit is low says weak_match). The builtin hashed vectors never raise a band: unrelated text
 * often shares letters with the query (lib/retrieval/floor.ts), so their cosine says little.
 */
export const CONFIDENCE_BANDS = ["high", "medium", "low"] as const;
export type ConfidenceBand = (typeof CONFIDENCE_BANDS)[number];

export const COVERAGE_HIGH = 2 / 3;
export const COVERAGE_MEDIUM = 1 / 3;
/** A neural model's cosine above the similarity floor by this much counts as medium / high. */
const VECTOR_MARGIN = { medium: 0.25, high: 0.45 } as const;

/** A light stand-in for the index's stems: common English endings off ("renewals" ~ "renewal", "reloaded" ~ "reload"). */
const stemOf = (w: string) => w.replace(/(ations?|ments?|ings?|ers?|ed|es|ly|s|e)$/u, "").slice(0, 12) || w;

/** The distinct stems of one query's terms, kept per terms array (a query's hits are all banded with the same array). */
const stemsOfTerms = new WeakMap<readonly string[], string[]>();
function wantedStems(terms: readonly string[]): string[] {
  let stems = stemsOfTerms.get(terms);
  if (!stems) stemsOfTerms.set(terms, (stems = [...new Set(terms.map((t) => stemOf(foldWord(t))))]));
  return stems;
}

const LETTER_OR_DIGIT_BEFORE = /[\p{L}\p{N}]$/u;
const LETTERS_AND_DIGITS = /[\p{L}\p{N}]*/uy;

/**
 * Whether a word of `folded` (a run of letters and digits) has the stem `stem`. A stem is a prefix of its word, so
 * only the words starting with it are stemmed, found by indexOf, not every word of the text.
 */
function hasWordWithStem(folded: string, stem: string): boolean {
  if (stem === "") return false;
  for (let i = folded.indexOf(stem); i !== -1; ) {
    LETTERS_AND_DIGITS.lastIndex = i;
    const word = LETTERS_AND_DIGITS.exec(folded)![0];
    // Two code units before cover a letter outside the BMP (a surrogate pair).
    if (!LETTER_OR_DIGIT_BEFORE.test(folded.slice(Math.max(0, i - 2), i)) && stemOf(word) === stem) return true;
    i = folded.indexOf(stem, i + Math.max(1, word.length));
  }
  return false;
}

/** The share of the query's content words (`terms`, as matchTerms gives them) that `text` holds, compared by stem. */
export function termCoverage({ terms, text }: { terms: readonly string[]; text: string }): number {
  if (terms.length === 0) return 0;
  // ASCII text (most rows) folds to its lower case: the four Unicode normalization passes change nothing there.
  const folded = /^[\x00-\x7f]*$/.test(text) ? text.toLowerCase() : foldWord(text);
  const wanted = wantedStems(terms);
  let found = 0;
  for (const stem of wanted) if (hasWordWithStem(folded, stem)) found++;
  return found / wanted.length;
}

/** The band of one hit from its word coverage and (neural models only) its cosine. */
export function confidenceBand({ coverage, cosine, provider, floor }: { coverage: number; cosine: number | null | undefined; provider: Fingerprint["provider"] | null; floor: number }): ConfidenceBand {
  const byWords: ConfidenceBand = coverage >= COVERAGE_HIGH ? "high" : coverage >= COVERAGE_MEDIUM ? "medium" : "low";
  if (provider === null || provider === "builtin" || cosine === null || cosine === undefined) return byWords;
  const byVector: ConfidenceBand = cosine >= floor + VECTOR_MARGIN.high ? "high" : cosine >= floor + VECTOR_MARGIN.medium ? "medium" : "low";
  return CONFIDENCE_BANDS[Math.min(CONFIDENCE_BANDS.indexOf(byWords), CONFIDENCE_BANDS.indexOf(byVector))];
}

/**
 * weak_match when an answer has hits and the best of them is low: an unrelated question over a full store still
 * returns its nearest rows, and the answer must say they are guesses. Null when the best hit is medium or better.
 */
export function weakAnswerReason({ bands, terms }: { bands: ConfidenceBand[]; terms: readonly string[] }): RetrievalReason | null {
  if (bands.length === 0 || bands.some((b) => b !== "low")) return null;
  return {
    code: "weak_match",
    message: `no hit holds even a third of the query's words${terms.length ? ` (${terms.slice(0, 8).join(", ")})` : ""}; the ${bands.length} hit(s) are the nearest there is, not answers`,
  };
}

/**
 * Give each hit its band from its own text and cosine (search's chunks and documents, both backends), and the
 * weak_match reason the answer carries when the best of them is low.
 */
export function bandHits<H extends { confidence?: ConfidenceBand }>({ hits, evidenceOf, terms, provider, floor }: { hits: H[]; evidenceOf: (hit: H) => { text: string; cosine: number | null }; terms: readonly string[]; provider: Fingerprint["provider"] | null; floor: number }): RetrievalReason | null {
  for (const h of hits) {
    const e = evidenceOf(h);
    h.confidence = confidenceBand({ coverage: termCoverage({ terms, text: e.text }), cosine: e.cosine, provider, floor });
  }
  return weakAnswerReason({ bands: hits.map((h) => h.confidence!), terms });
}
