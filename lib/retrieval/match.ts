/**
 * The one full-text match builder for search, recall, remember and the graph
 * listings. User text never reaches MATCH as written: every word becomes a
 * double-quoted FTS5 string, so operators, `*`, `NEAR(`, column filters and
 * stray quotes are only ever words. It works with either chunk tokenizer
 * (`unicode61`, or `porter unicode61` after the stemming migration): a
 * quoted string goes through the table's own tokenizer, stems included.
 */

/** Words kept from one query: more only costs time (each is a doclist merge). */
export const MAX_MATCH_TERMS = 32;

/**
 * Common English words that carry no topic. Measured on the document
 * known-item set (bench/search-docs.bench.ts): with any-word matching they
 * only add noise and cost (a stopword's doclist is nearly every chunk).
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a about above after again against all also am an and any are as at be because been before being below between both but by can could did do does doing done down during each few for from further had has have having he her here hers him his how however i if in into is it its itself just like may me might more most must my no nor not now of off on once only or other our out over own same shall she should so some such than that the their them then there these they this those through to too under until up upon us was we were what when where which while who whom why will with within without would yet you your"
  ).split(" "),
);

/**
 * The query's words as FTS5's unicode61 tokenizer splits them (letters,
 * digits and marks), NFKC-normalized, lowercased, first occurrence kept.
 */
export function queryWords(text: string, max = MAX_MATCH_TERMS): string[] {
  const tokens = text.normalize("NFKC").match(/[\p{L}\p{N}\p{M}]+/gu) ?? [];
  return [...new Set(tokens.map((t) => t.toLowerCase()))].slice(0, max);
}

/**
 * A natural-language query (three words or more) drops its stopwords, as
 * long as a content word is left: "how do I configure the proxy" searches
 * `configure proxy`, while "to be or not to be" and "the who" stay as written.
 */
export function contentWords(words: string[], extraIgnored?: ReadonlySet<string>): string[] {
  const kept = words.filter((w) => !STOPWORDS.has(w) && !extraIgnored?.has(w));
  return words.length >= 3 && kept.length > 0 ? kept : extraIgnored ? words.filter((w) => !extraIgnored.has(w)) : words;
}

export type MatchOptions = {
  /** `all` words (implicit AND) or `any` word (OR). */
  match: "all" | "any";
  /** Drop stopwords from natural-language queries (see contentWords). Default true. */
  stopwords?: "drop" | "keep";
  /** Words to ignore besides stopwords (e.g. recall's descriptor labels). */
  ignore?: ReadonlySet<string>;
  maxTerms?: number;
};

/** Quote one word for MATCH (FTS5 doubles a quote inside a string). */
const quote = (w: string) => `"${w.replaceAll('"', '""')}"`;

/** The words a MATCH built from `text` would search for (after stopwords). */
export function matchTerms(text: string, opts: Omit<MatchOptions, "match"> = {}): string[] {
  const words = queryWords(text, Number.MAX_SAFE_INTEGER);
  const kept = opts.stopwords === "keep" ? words.filter((w) => !opts.ignore?.has(w)) : contentWords(words, opts.ignore);
  return kept.slice(0, opts.maxTerms ?? MAX_MATCH_TERMS);
}

/** A MATCH expression meaning "these words", or null when no word is left. */
export function buildFtsMatch(text: string, opts: MatchOptions): string | null {
  return matchExpression(matchTerms(text, opts), opts.match);
}

/** The MATCH expression of words already taken from a query by matchTerms/queryWords (each quoted). */
export function matchExpression(terms: string[], match: "all" | "any"): string | null {
  if (terms.length === 0) return null;
  return terms.map(quote).join(match === "any" ? " OR " : " ");
}

const ASCII = /^[\x00-\x7f]*$/;

/** A word as the unicode61 tokenizer (remove_diacritics 2) folds it: NFKC, lowercased, accents removed. */
export function foldWord(word: string): string {
  // ASCII is its own NFKC, NFD and NFC and has no marks: lower-casing is the whole fold.
  if (ASCII.test(word)) return word.toLowerCase();
  return word.normalize("NFKC").toLowerCase().normalize("NFD").replace(/\p{M}/gu, "").normalize("NFC");
}

/**
 * The share of `terms` (folded, see foldWord) that `text` contains in their
 * exact written form, not only through a shared stem: with the stemmed chunk
 * index, "configuration" also matches "configured" and "configures", and this
 * is what tells the chunk that says "configuration" apart (lib/index/search.ts
 * EXACT_FORM_BOOST).
 */
export function exactFormShare(terms: readonly string[], text: string): number {
  if (terms.length === 0) return 0;
  // Fold the whole text once (not per word). ASCII text — most chunks — only needs lower-casing, which skips
  // the four Unicode normalization passes; then each term is found with indexOf and a word-boundary check
  // rather than by splitting the whole text into words.
  const folded = /^[\x00-\x7f]*$/.test(text) ? text.toLowerCase() : foldWord(text);
  let found = 0;
  for (const t of terms) if (containsWord(folded, t)) found++;
  return found / terms.length;
}

/**
 * Proximity evidence: the share of the query's adjacent word pairs (`terms` folded, in query order) that `text` has
 * in that order within `window` words (1: side by side), as written — what bm25 and the exact-form share cannot tell
 * apart ("connection pool size" vs the three words in three sentences). Counted over the unicode61 words, stopwords
 * included. One pass over the text.
 */
export function adjacentPairShare(terms: readonly string[], text: string, window: number): number {
  if (terms.length < 2) return 0;
  const folded = /^[\x00-\x7f]*$/.test(text) ? text.toLowerCase() : foldWord(text);
  let near = 0;
  // Per pair, only the first word's occurrences are visited (indexOf), each followed by at most `window` words:
  // the cost follows how often the query's words occur, not the text's length in words.
  for (let i = 0; i + 1 < terms.length; i++) {
    const [a, b] = [terms[i], terms[i + 1]];
    if (a === "" || a.length > MAX_TERM_LENGTH || !folded.includes(b)) continue;
    for (let from = folded.indexOf(a); from !== -1; from = folded.indexOf(a, from + 1)) {
      if (!isWordAt(folded, from, a.length)) continue;
      if (wordWithin(folded, from + a.length, b, window)) {
        near++;
        break;
      }
    }
  }
  return near / (terms.length - 1);
}

/** From a position at a word's end: the separators and the next word (sticky). */
const NEXT_WORD = /[^\p{L}\p{N}\p{M}]+([\p{L}\p{N}\p{M}]+)/uy;

/** Whether `word` is one of the `window` words of `hay` after position `from`. */
function wordWithin(hay: string, from: number, word: string, window: number): boolean {
  NEXT_WORD.lastIndex = from;
  for (let k = 0; k < window; k++) {
    const m = NEXT_WORD.exec(hay);
    if (!m) return false;
    if (m[1] === word) return true;
  }
  return false;
}

/** Whether `hay` has a whole word of `length` code units at `i` (no letter, digit or mark on either side). */
function isWordAt(hay: string, i: number, length: number): boolean {
  const end = i + length;
  return !WORD_CHAR_BEFORE.test(hay.slice(Math.max(0, i - 2), i)) && !WORD_CHAR_AFTER.test(hay.slice(end, end + 2));
}

const WORD_CHAR_BEFORE = /[\p{L}\p{N}\p{M}]$/u;
const WORD_CHAR_AFTER = /^[\p{L}\p{N}\p{M}]/u;
const WORD_RUN = /[\p{L}\p{N}\p{M}]*/uy;
/** Longer "words" are never a written form worth weighing (and would make each probe cost more). */
const MAX_TERM_LENGTH = 64;

/**
 * Whether `word` occurs in `hay` as a whole word (no letter, digit or mark on
 * either side). Linear in `hay`: after an occurrence inside a longer word, the
 * search resumes where that word ends, not one character later.
 */
function containsWord(hay: string, word: string): boolean {
  if (word === "" || word.length > MAX_TERM_LENGTH) return false;
  let from = 0;
  for (;;) {
    const i = hay.indexOf(word, from);
    if (i === -1) return false;
    const end = i + word.length;
    // Two code units on each side cover a letter outside the BMP (a surrogate pair).
    if (!WORD_CHAR_BEFORE.test(hay.slice(Math.max(0, i - 2), i)) && !WORD_CHAR_AFTER.test(hay.slice(end, end + 2))) return true;
    WORD_RUN.lastIndex = i;
    from = Math.max(i + 1, i + (WORD_RUN.exec(hay)?.[0].length ?? 0));
  }
}

/** A plain expression: quoted phrases joined all by spaces (AND) or all by OR, as matchExpression builds them; null for anything else. */
export function plainPhrases(match: string): { phrases: string[]; mode: "all" | "any" } | null {
  const phrases: string[] = [];
  const seps: string[] = [];
  let i = 0;
  while (i < match.length) {
    if (phrases.length > 0) {
      if (match.startsWith(" OR ", i)) {
        seps.push("OR");
        i += 4;
      } else if (match[i] === " ") {
        seps.push("AND");
        i += 1;
      } else return null;
    }
    if (match[i] !== '"') return null;
    let j = i + 1;
    for (; j < match.length; j++) {
      if (match[j] === '"') {
        if (match[j + 1] === '"') j++;
        else break;
      }
    }
    if (j >= match.length) return null;
    phrases.push(match.slice(i, j + 1));
    i = j + 1;
  }
  if (phrases.length === 0 || new Set(seps).size > 1) return null;
  return { phrases, mode: seps[0] === "OR" ? "any" : "all" };
}
