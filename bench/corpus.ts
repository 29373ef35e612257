import fs from "node:fs";
import path from "node:path";
import { seededRandom } from "../lib/eval/probes";

/**
 * Real text nobody here wrote: every markdown and .d.ts file under
 * node_modules, cut into overlapping 4-line windows, deduplicated, in a
 * stable order (sorted paths) so runs are comparable.
 */
export function loadTextWindows(limit: number, root = path.join(process.cwd(), "node_modules")): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && (e.name.endsWith(".md") || e.name.endsWith(".d.ts"))) files.push(p);
    }
  };
  walk(root);
  const seen = new Set<string>();
  const out: string[] = [];
  for (const f of files) {
    const lines = fs.readFileSync(f, "utf8").split("\n").filter((l) => l.trim().length > 20);
    for (let i = 0; i + 4 <= lines.length; i += 2) {
      const w = lines.slice(i, i + 4).join("\n").slice(0, 800);
      if (seen.has(w)) continue;
      seen.add(w);
      out.push(w);
      if (out.length >= limit) return out;
    }
  }
  return out;
}

/** A synthesized markdown note: real text, assembled. */
export type Note = { id: number; path: string; text: string };

/** mulberry32: a tiny seeded PRNG, so note i is the same on every machine and run (the one self-recall's probes are drawn with). */
export { seededRandom };

/**
 * Note i of a synthesized corpus: 4–10 real text windows picked by a PRNG
 * seeded with i (about 1–3 KB), under a heading made of the first window's
 * first words, at a stable path (`notes/0123/d0123456.md`, a folder per
 * thousand so 1M files never share one directory). Built on demand, so a
 * million notes never have to sit in memory at once. There are only ~175k
 * distinct windows under node_modules: past ~25k notes windows recur in new
 * combinations, so big corpora have flatter term statistics than real ones.
 */
export function noteAt({ windows, index }: { windows: string[]; index: number }): Note {
  const random = seededRandom(index + 1);
  const picked = Array.from({ length: 4 + Math.floor(random() * 7) }, () => windows[Math.floor(random() * windows.length)]);
  const heading = (picked[0].match(/[A-Za-z][A-Za-z0-9_-]*/g) ?? ["note"]).slice(0, 8).join(" ");
  const id = String(index).padStart(7, "0");
  return { id: index, path: `notes/${id.slice(0, 4)}/d${id}.md`, text: `# ${heading}\n\n${picked.join("\n\n")}\n` };
}

/** Notes [from, to) of the synthesized corpus. */
export function notesBetween({ windows, from, to }: { windows: string[]; from: number; to: number }): Note[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, k) => noteAt({ windows, index: from + k }));
}
