/**
 * A second document-level known-item set (issue 16, item 3), built apart from
 * bench/doc-queries.ts so the two can disagree. Both cut a sentence out of
 * the document that gets indexed and query with two thirds of its words;
 * this one differs where a set can quietly favour one engine:
 * - the corpus is drawn from the SORTED PATH list of node_modules markdown,
 *   2–256 KB, so it holds long documents of many chunks, where document
 *   ranking matters: by a seeded shuffle, one sample per seed
 *   (KNOWN_ITEM_SEEDS), pinned by a checked-in manifest of paths, packages
 *   and hashes so a dependency change cannot silently move the set (the
 *   bench says how many pinned files are gone or changed);
 * - near-duplicates are dropped too (the same opening under another path:
 *   one README vendored twice), not only byte-identical files;
 * - targets are drawn by one seeded shuffle over the whole corpus, and the
 *   sentence is any prose sentence of 8–40 words (list items included) whose
 *   text is in no other document.
 * No lib/ imports but the seeded PRNG (lib/eval/probes.ts, by way of
 * ./corpus): the set is a plain function of the files and the seed.
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
  const docs = knownItemPool({ root });
  if (docs.length <= limit) return docs;
  return Array.from({ length: limit }, (_, k) => docs[Math.floor((k * docs.length) / limit)]);
}

/** Every markdown file under `root` the sets may draw from, in sorted path order (see loadKnownItemCorpus). */
export function knownItemPool({ root }: { root: string }): CorpusDoc[] {
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
    const keys = [sha256(text), `opening:${text.replace(/\s+/g, " ").trim().slice(0, OPENING_CHARS)}`];
    if (keys.some((k) => seen.has(k))) continue;
    keys.forEach((k) => seen.add(k));
    docs.push({ path: rel, text });
  }
  return docs;
}

const sha256 = (text: string) => crypto.createHash("sha256").update(text).digest("hex");

/* ---------- Pinned samples: several seeded draws, their paths and hashes checked in ---------- */

/** The seeds of the document-level samples (one corpus and one query set per seed); figures are reported per seed and as their mean. */
export const KNOWN_ITEM_SEEDS = [2026, 2027, 2028] as const;

/** `limit` documents of `pool` drawn by a shuffle seeded with `seed`, returned in sorted path order. */
export function sampleKnownItemCorpus({ pool, limit, seed }: { pool: CorpusDoc[]; limit: number; seed: number }): CorpusDoc[] {
  const random = seededRandom(seed);
  const order = pool.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order
    .slice(0, limit)
    .sort((a, b) => a - b)
    .map((i) => pool[i]);
}

/** One pinned document: its path under the corpus root, the package it ships in (name@version) and the sha256 of its text. */
export type PinnedDoc = { seed: number; path: string; pkg: string; sha256: string };

/** The name@version of the package a file under node_modules ships in (nearest package.json with a name), or "-". */
function packageOf({ root, rel }: { root: string; rel: string }): string {
  const parts = rel.split("/");
  for (let n = parts.length - 1; n > 0; n--) {
    const file = path.join(root, ...parts.slice(0, n), "package.json");
    if (!fs.existsSync(file)) continue;
    try {
      const pkg = JSON.parse(fs.readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (pkg.name) return `${pkg.name}@${pkg.version ?? "?"}`;
    } catch {
      // not a package manifest worth reading: keep looking up
    }
  }
  return "-";
}

const MANIFEST_HEADER = [
  "# The documents of the pinned document-level known-item samples (bench/known-items.ts, bench/search-quality.bench.ts).",
  "# One line per document: seed, path under node_modules, package name@version, sha256 of the file's text.",
  "# Paths and hashes only: the text stays in node_modules. Regenerate with BENCH_KNOWN_ITEMS_RESAMPLE=1.",
];

/** Draw the samples of `seeds` from the pool under `root` and describe them as manifest lines. */
export function drawPinnedSamples({ root, limit, seeds = KNOWN_ITEM_SEEDS }: { root: string; limit: number; seeds?: readonly number[] }): PinnedDoc[] {
  const pool = knownItemPool({ root });
  return seeds.flatMap((seed) => sampleKnownItemCorpus({ pool, limit, seed }).map((d) => ({ seed, path: d.path, pkg: packageOf({ root, rel: d.path }), sha256: sha256(d.text) })));
}

export function formatManifest(docs: PinnedDoc[]): string {
  return [...MANIFEST_HEADER, ...docs.map((d) => [d.seed, d.path, d.pkg, d.sha256].join("\t"))].join("\n") + "\n";
}

export function parseManifest(text: string): PinnedDoc[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith("#"))
    .map((line) => {
      const [seed, rel, pkg, hash] = line.split("\t");
      if (!hash) throw new Error(`malformed manifest line: ${line}`);
      return { seed: Number(seed), path: rel, pkg, sha256: hash };
    });
}

/**
 * The documents of one pinned sample as they are under `root` now: those
 * whose text still has the recorded hash, and the paths that are gone or
 * changed (a dependency moved), which the caller must report.
 */
export function loadPinnedSample({ root, manifest, seed }: { root: string; manifest: PinnedDoc[]; seed: number }): { docs: CorpusDoc[]; missing: string[]; changed: string[] } {
  const docs: CorpusDoc[] = [];
  const missing: string[] = [];
  const changed: string[] = [];
  for (const pinned of manifest.filter((d) => d.seed === seed)) {
    const abs = path.join(root, ...pinned.path.split("/"));
    if (!fs.existsSync(abs)) {
      missing.push(pinned.path);
      continue;
    }
    const text = fs.readFileSync(abs, "utf8");
    if (sha256(text) !== pinned.sha256) changed.push(pinned.path);
    else docs.push({ path: pinned.path, text });
  }
  return { docs, missing, changed };
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
