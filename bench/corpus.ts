import fs from "node:fs";
import path from "node:path";

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
