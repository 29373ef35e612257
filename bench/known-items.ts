/**
 * A second document-level known-item set (issue 16, item 3), built apart from
 * bench/doc-queries.ts so the two can disagree. Both cut a sentence out of
 * the document that gets indexed and query with two thirds of its words;
 * this one differs where a set can quietly favour one engine:
 * - the corpus is a stride sample over the SORTED PATH list (every package
 *   range of node_modules, not the first N by content hash), 2–256 KB, so it
 *   holds long documents of many chunks, where document ranking matters;
 * - near-duplicates are dropped too (the same opening under another path:
 *   one README vendored twice), not only byte-identical files;
 * - targets are drawn by one seeded shuffle over the whole corpus, and the
 *   sentence is any prose sentence of 8–40 words (list items included) whose
 *   text is in no other document.
 * No lib/ imports: the set is a plain function of the files and the seed.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { seededRandom } from "./corpus";
import { proseSentences, wordsOf, type CorpusDoc } from "./doc-queries";

export type KnownItemQuery = { q: string; target: string; sentence: string };
export type KnownItemSet = { docs: CorpusDoc[]; queries: KnownItemQuery[] };

const MIN_BYTES = 2 * 1024;
const MAX_BYTES = 256 * 1024;
/** Files that are boilerplate rather than a document someone would look for. */
const SKIP_NAME = /^(changelog|changes|history|license|licence|notice|code_of_conduct|security|contributing|funding|authors|releases?|upgrading|migrat\w*)\b/i;
/** Two files opening with the same this-many characters are one document vendored twice. */
const OPENING_CHARS = 300;
const MIN_WORDS = 8;
const MAX_WORDS = 40;

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Markdown files under `root` in sorted path order (hidden entries and links
 * skipped), 2–256 KB, boilerplate names skipped, without exact or opening
 * duplicates (the first path wins), then `limit` of them evenly spaced along that order.
 */
export function loadKnownItemCorpus({ root, limit }: { root: string; limit: number }): CorpusDoc[] {
  const files: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => byCodePoint(a.name, b.name))) {
      if (e.name.startsWith(".")) continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(dir, e.name), r);
      else if (e.isFile() && /\.md$/i.test(e.name) && !SKIP_NAME.test(e.name)) files.push(r);
    }
  };
  walk(root, "");
  const seen = new Set<string>();
  const docs: CorpusDoc[] = [];
  for (const rel of files) {
    const abs = path.join(root, ...rel.split("/"));
    const size = fs.statSync(abs).size;
    if (size < MIN_BYTES || size > MAX_BYTES) continue;
    const text = fs.readFileSync(abs, "utf8");
    const keys = [crypto.createHash("sha256").update(text).digest("hex"), `opening:${text.replace(/\s+/g, " ").trim().slice(0, OPENING_CHARS)}`];
    if (keys.some((k) => seen.has(k))) continue;
    keys.forEach((k) => seen.add(k));
    docs.push({ path: rel, text });
  }
  if (docs.length <= limit) return docs;
  return Array.from({ length: limit }, (_, k) => docs[Math.floor((k * docs.length) / limit)]);
}

/**
 * Up to `count` queries: targets in one seeded shuffle of `docs`; for each,
 * a seeded prose sentence (8–40 words, mostly words, once in its document and
 * in no other) is cut from the text that gets indexed, and the query is the
 * sentence minus a seeded third of its words, in their order. Returns the
 * documents as they are to be indexed, and the queries.
 */
export function buildKnownItemSet({ docs, count, seed = 2026 }: { docs: CorpusDoc[]; count: number; seed?: number }): KnownItemSet {
  const random = seededRandom(seed);
  const indexed = docs.map((d) => ({ ...d }));
  const order = indexed.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const queries: KnownItemQuery[] = [];
  for (const at of order) {
    if (queries.length >= count) break;
    const doc = indexed[at];
    const candidates = proseSentences(doc.text)
      .map((s) => doc.text.slice(s.start, s.end))
      .filter((sentence) => {
        const words = wordsOf(sentence);
        return words.length >= MIN_WORDS && words.length <= MAX_WORDS && words.join("").length >= 0.7 * sentence.replace(/\s/g, "").length;
      });
    let sentence: string | undefined;
    while (sentence === undefined && candidates.length > 0) {
      const [s] = candidates.splice(Math.floor(random() * candidates.length), 1);
      // Checked against the original texts too: a sentence shared with another document has two right answers.
      const once = doc.text.indexOf(s) === doc.text.lastIndexOf(s) && !docs.some((o, i) => i !== at && o.text.includes(s));
      if (once) sentence = s;
    }
    if (sentence === undefined) continue;
    const words = wordsOf(sentence);
    const drop = new Set<number>();
    while (drop.size < Math.floor(words.length / 3)) drop.add(Math.floor(random() * words.length));
    queries.push({ q: words.filter((_, i) => !drop.has(i)).join(" "), target: doc.path, sentence });
    const cut = doc.text.indexOf(sentence);
    doc.text = doc.text.slice(0, cut) + doc.text.slice(cut + sentence.length);
  }
  return { docs: indexed, queries };
}
