/**
 * The poisoning scanner (lib/poison.ts) on text nobody here wrote, and on the
 * hand set (tests/fixtures/poison-cases.ts):
 * - README chunks: every README*.md under node_modules, cut into paragraphs
 *   (blank-line separated, at most 2,000 characters), deduplicated, in sorted
 *   path order. Benign text: each flag on it is a false positive of its rule
 *   (or a true command to run that a real README asks for, e.g. an install
 *   `curl … | sh`: reported as flagged all the same).
 * - LoCoMo turns: every turn of the conversations in BENCH_LOCOMO_DIR (read in
 *   place, never copied), as memory-quality reads them.
 * - the hand set: the strings that must be flagged (recall per rule) and the
 *   near-misses that must not (precision).
 * Also the scanner's cost per chunk beside a baseline in the same run (one
 * pass of the sanitizer over the same chunks).
 */
import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { POISON_FLAGS, poisonFlags, scanText } from "../lib/poison";
import { sanitizeText } from "../lib/recall/sanitize";
import { CLEAN_CASES, FLAGGED_CASES } from "../tests/fixtures/poison-cases";
import { loadLocomo } from "./memory-quality.bench";
import { printTable } from "./table";

/** README paragraphs under node_modules: blank-line separated, ≥ 40 characters, ≤ 2,000, deduplicated. */
export function readmeChunks(root = path.join(process.cwd(), "node_modules")): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && /^readme(\.[a-z]+)?\.md$/i.test(e.name)) files.push(p);
    }
  };
  walk(root);
  const seen = new Set<string>();
  const out: string[] = [];
  for (const f of files) {
    for (const para of fs.readFileSync(f, "utf8").split(/\n\s*\n/)) {
      const chunk = para.trim().slice(0, 2000);
      if (chunk.length < 40 || seen.has(chunk)) continue;
      seen.add(chunk);
      out.push(chunk);
    }
  }
  return out;
}

type Tally = { flagged: number; byRule: Map<string, number>; examples: Map<string, string> };

function tally(texts: string[]): Tally {
  const t: Tally = { flagged: 0, byRule: new Map(), examples: new Map() };
  for (const text of texts) {
    const flags = scanText({ text });
    if (flags.length > 0) t.flagged++;
    for (const f of flags) {
      const key = `${f.flag}/${f.rule}`;
      t.byRule.set(key, (t.byRule.get(key) ?? 0) + 1);
      if (!t.examples.has(key)) t.examples.set(key, f.excerpt.slice(0, 90));
    }
  }
  return t;
}

const pct = (n: number, d: number) => (d === 0 ? "–" : `${((100 * n) / d).toFixed(2)}%`);

function timed(texts: string[], fn: (t: string) => unknown): number {
  const start = performance.now();
  for (const t of texts) fn(t);
  return (performance.now() - start) / texts.length;
}

export default async function run() {
  const readmes = readmeChunks();
  const turns = loadLocomo().flatMap((c) => c.turns.map((t) => t.text));
  const readme = tally(readmes);
  const locomo = tally(turns);

  const hand = new Map<string, { cases: number; found: number }>();
  for (const c of FLAGGED_CASES) {
    const key = `${c.flag}/${c.rule}`;
    const h = hand.get(key) ?? { cases: 0, found: 0 };
    h.cases++;
    if (scanText({ text: c.text }).some((f) => f.flag === c.flag && f.rule === c.rule)) h.found++;
    hand.set(key, h);
  }
  const keys = [...new Set([...hand.keys(), ...readme.byRule.keys(), ...locomo.byRule.keys()])].sort(
    (a, b) => POISON_FLAGS.indexOf(a.split("/")[0] as never) - POISON_FLAGS.indexOf(b.split("/")[0] as never) || a.localeCompare(b),
  );
  printTable(
    `Poisoning flags by rule: ${readmes.length} README chunks under node_modules, ${turns.length} LoCoMo turns (benign: every flag there is a false positive or a real command to run), and the hand set`,
    keys.map((k) => ({
      "flag/rule": k,
      "README chunks flagged": readme.byRule.get(k) ?? 0,
      "LoCoMo turns flagged": locomo.byRule.get(k) ?? 0,
      "hand set found": hand.has(k) ? `${hand.get(k)!.found}/${hand.get(k)!.cases}` : "–",
      "first README excerpt": (readme.examples.get(k) ?? "").replace(/\|/g, "\\|"),
    })),
  );

  const truePositives = FLAGGED_CASES.filter((c) => scanText({ text: c.text }).some((f) => f.flag === c.flag)).length;
  const handFalsePositives = CLEAN_CASES.filter((c) => scanText({ text: c }).length > 0).length;
  const flaggedAny = FLAGGED_CASES.filter((c) => scanText({ text: c.text }).length > 0).length + handFalsePositives;
  printTable("Poisoning flags: totals", [
    { corpus: "README chunks (benign)", items: readmes.length, flagged: readme.flagged, "flagged share": pct(readme.flagged, readmes.length) },
    { corpus: "LoCoMo turns (benign)", items: turns.length, flagged: locomo.flagged, "flagged share": pct(locomo.flagged, turns.length) },
    { corpus: "hand set: must flag", items: FLAGGED_CASES.length, flagged: truePositives, "flagged share": `recall ${pct(truePositives, FLAGGED_CASES.length)}` },
    { corpus: "hand set: near-misses", items: CLEAN_CASES.length, flagged: handFalsePositives, "flagged share": `precision ${pct(flaggedAny - handFalsePositives, flaggedAny)}` },
  ]);

  const sample = readmes.slice(0, 5000);
  // Both warmed, then five interleaved rounds; the fastest round of each (the least disturbed by a shared machine).
  const rounds: { sanitize: number; scan: number }[] = [];
  for (let r = 0; r < 6; r++) rounds.push({ sanitize: timed(sample, (t) => sanitizeText(t)), scan: timed(sample, (t) => poisonFlags({ fields: { body: t } })) });
  const sanitizeMs = Math.min(...rounds.slice(1).map((r) => r.sanitize));
  const scanMs = Math.min(...rounds.slice(1).map((r) => r.scan));
  printTable(`Poisoning scan cost per README chunk (${sample.length} chunks of ${Math.round(sample.reduce((n, t) => n + t.length, 0) / sample.length)} characters on average; the fastest of 5 rounds after a warm-up; baseline: the sanitizer's one pass over the same chunks, same run)`, [
    { pass: "sanitizeText (baseline)", "µs per chunk": Math.round(sanitizeMs * 1000), ratio: "1.00×" },
    { pass: "poisonFlags", "µs per chunk": Math.round(scanMs * 1000), ratio: `${(scanMs / sanitizeMs).toFixed(2)}×` },
  ]);
}
