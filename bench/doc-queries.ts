/**
 * A document-level known-item set over real markdown (no lib/ imports, so it
 * is a plain function of its input): for each target document one prose
 * sentence is cut out of the text that gets indexed, a third of its words
 * are dropped (seeded), and the rest is the query whose answer is that
 * document. The searched text never contains the sentence, so a hit comes
 * from the document's other words, as when someone half-remembers a page.
 */
import crypto from "node:crypto";
import { seededRandom as seededFromNumber } from "./corpus";
import fs from "node:fs";
import path from "node:path";

export type CorpusDoc = { path: string; text: string };
export type DocQuery = { q: string; target: string; sentence: string };
export type DocQuerySet = { docs: CorpusDoc[]; queries: DocQuery[] };

const MIN_BYTES = 1024;
const MAX_BYTES = 64 * 1024;
/** Boilerplate repeated across packages with small edits (near-duplicates a content hash cannot catch). */
const BOILERPLATE = /^(changelog|changes|history|license|licence|notice|code_of_conduct|security|contributing|funding|authors)\b/i;
const MIN_CONTENT_WORDS = 8;
const MAX_SENTENCE_WORDS = 40;

/** Common English words: not content words (and what a stopword-free query leaves out). */
export const STOPWORDS = new Set(
  (
    "a about above after again against all also am an and any are as at be because been before being below between both but by can could did do does doing done down during each few for from further had has have having he her here hers him his how however i if in into is it its itself just like may me might more most must my no nor not now of off on once only or other our out over own same shall she should so some such than that the their them then there these they this those through to too under until up upon us use used uses using very via was we were what when where which while who whom why will with within without would yet you your"
  ).split(" "),
);

const sha256 = (s: string) => crypto.createHash("sha256").update(s).digest("hex");

/** mulberry32 seeded from a string, so each document's choices are its own (adding a document changes no other query). */
export function seededRandom(key: string): () => number {
  return seededFromNumber(Number.parseInt(sha256(key).slice(0, 8), 16));
}

/** Words as every engine here sees them: runs of letters, digits and marks. */
export function wordsOf(text: string): string[] {
  return text.normalize("NFKC").match(/[\p{L}\p{N}\p{M}]+/gu) ?? [];
}

function contentWordCount(words: string[]): number {
  return words.filter((w) => /^\p{L}{3,}$/u.test(w) && !STOPWORDS.has(w.toLowerCase())).length;
}

/**
 * Markdown files under `root` (sorted walk, hidden entries and links
 * skipped), 1–64 KB, boilerplate names skipped, deduplicated by content hash,
 * then the first `limit` in content-hash order: a stable pseudo-random
 * sample, not the alphabetically first packages.
 */
export function loadMarkdownCorpus({ root, limit }: { root: string; limit: number }): CorpusDoc[] {
  const found: CorpusDoc[] = [];
  const walk = (dir: string, rel: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (e.name.startsWith(".")) continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(dir, e.name), r);
      else if (e.isFile() && /\.md$/i.test(e.name) && !BOILERPLATE.test(e.name)) {
        const abs = path.join(dir, e.name);
        const size = fs.statSync(abs).size;
        if (size >= MIN_BYTES && size <= MAX_BYTES) found.push({ path: r, text: fs.readFileSync(abs, "utf8") });
      }
    }
  };
  walk(root, "");
  const byHash = new Map<string, CorpusDoc>();
  for (const d of found) {
    const h = sha256(d.text);
    if (!byHash.has(h)) byHash.set(h, d);
  }
  return [...byHash.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .slice(0, limit)
    .map(([, d]) => d);
}

type Span = { start: number; end: number };

/**
 * Prose sentences of a markdown document as [start, end) offsets into it:
 * outside fenced code and front matter, not headings, tables, HTML, indented
 * code or images; a list item starts a new block so items never merge.
 */
export function proseSentences(text: string): Span[] {
  const spans: Span[] = [];
  let block: Span | null = null;
  const flush = () => {
    if (block) spans.push(...sentencesIn(text, block));
    block = null;
  };
  let inFence = false;
  let inFrontMatter = text.startsWith("---\n");
  let pos = 0;
  let first = true;
  while (pos < text.length) {
    const nl = text.indexOf("\n", pos);
    const end = nl === -1 ? text.length : nl;
    const line = text.slice(pos, end);
    const lineStart = pos;
    pos = end + 1;
    if (inFrontMatter) {
      if (!first && /^---\s*$/.test(line)) inFrontMatter = false;
      first = false;
      continue;
    }
    first = false;
    if (/^\s{0,3}(```|~~~)/.test(line)) {
      inFence = !inFence;
      flush();
      continue;
    }
    if (inFence || line.trim() === "" || /^\s{0,3}(#|\||<|!\[|\[!\[|[-=*_]{3,}\s*$)/.test(line) || /^( {4}|\t)/.test(line) || line.includes("|")) {
      flush();
      continue;
    }
    const marker = /^\s*(?:[-*+]|\d+[.)])\s+/.exec(line);
    if (marker) flush();
    const from = lineStart + (marker ? marker[0].length : line.length - line.trimStart().length);
    if (block) block.end = end;
    else block = { start: from, end };
  }
  flush();
  return spans;
}

/** Split a block at `.`/`!`/`?` followed by space and a likely sentence start. */
function sentencesIn(text: string, block: Span): Span[] {
  const body = text.slice(block.start, block.end);
  const out: Span[] = [];
  let from = 0;
  const boundary = /[.!?]["')\]]?(\s+)(?=[A-Z`"'(*_[])/g;
  for (let m = boundary.exec(body); m; m = boundary.exec(body)) {
    const cut = m.index + m[0].length - m[1].length;
    out.push({ start: block.start + from, end: block.start + cut });
    from = m.index + m[0].length;
  }
  out.push({ start: block.start + from, end: block.end });
  return out.map((s) => {
    const raw = text.slice(s.start, s.end);
    const lead = raw.length - raw.trimStart().length;
    return { start: s.start + lead, end: s.start + raw.trimEnd().length };
  });
}

/** The words a query keeps from a sentence: link targets, URLs and markup are not words anyone would type. */
function sentenceWords(sentence: string): string[] {
  return wordsOf(sentence.replace(/\]\([^)]*\)/g, "]").replace(/https?:\/\/\S+/g, " "));
}

/**
 * For up to `count` targets (documents in the order given), cut one
 * qualifying sentence (≥ 8 content words, ≤ 40 words, mostly words, found
 * once in its document and in no other) out of the document, and make the
 * query from it minus a seeded third of its words. Returns every document
 * with the cut applied (what gets indexed) and the queries.
 */
export function buildDocQuerySet({ docs, count, seed = 16 }: { docs: CorpusDoc[]; count: number; seed?: number }): DocQuerySet {
  const indexed = docs.map((d) => ({ ...d }));
  const queries: DocQuery[] = [];
  for (const doc of indexed) {
    if (queries.length >= count) break;
    const random = seededRandom(`${seed}\0${doc.path}`);
    const candidates = proseSentences(doc.text).filter((s) => {
      const sentence = doc.text.slice(s.start, s.end);
      const words = sentenceWords(sentence);
      const letters = sentence.replace(/\s/g, "").length;
      return contentWordCount(words) >= MIN_CONTENT_WORDS && words.length <= MAX_SENTENCE_WORDS && words.join("").length >= 0.7 * letters;
    });
    // Seeded draws until one names its document alone (checked lazily: scanning every document is the slow part).
    let pick: Span | undefined;
    while (!pick && candidates.length > 0) {
      const [s] = candidates.splice(Math.floor(random() * candidates.length), 1);
      const sentence = doc.text.slice(s.start, s.end);
      const unique = doc.text.indexOf(sentence) === doc.text.lastIndexOf(sentence) && !docs.some((o) => o.path !== doc.path && o.text.includes(sentence));
      if (unique) pick = s;
    }
    if (!pick) continue;
    const sentence = doc.text.slice(pick.start, pick.end);
    const words = sentenceWords(sentence);
    const drop = new Set<number>();
    while (drop.size < Math.floor(words.length / 3)) drop.add(Math.floor(random() * words.length));
    queries.push({ q: words.filter((_, i) => !drop.has(i)).join(" "), target: doc.path, sentence });
    doc.text = doc.text.slice(0, pick.start) + doc.text.slice(pick.end);
  }
  return { docs: indexed, queries };
}
