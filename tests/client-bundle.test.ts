import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Client components ship to the browser: what they import, transitively,
 * is bundled. lib/config.ts (the server's environment, validated with zod)
 * must never be among it: zod probes `Function("")`, which the dashboard's
 * Content-Security-Policy reports as an eval, and the config has no business
 * in a browser. Type-only imports are erased and do not count.
 */
const ROOT = process.cwd();
const FORBIDDEN = ["lib/config.ts", "lib/db/connection.ts"];

function resolve(from: string, spec: string): string | null {
  let base: string;
  if (spec.startsWith("@/")) base = path.join(ROOT, spec.slice(2));
  else if (spec.startsWith(".")) base = path.resolve(path.dirname(from), spec);
  else return null;
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, path.join(base, "index.ts")]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
  }
  return null;
}

function valueImports(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  const specs: string[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(?!type\s)([^;]*?)\s+from\s+"([^"]+)"/gms)) {
    const clause = m[2];
    // `import { type A, type B } from` is type-only too.
    if (/^\{[^}]*\}$/s.test(clause.trim()) && clause.replace(/[{}\s]/g, "").split(",").filter(Boolean).every((n) => n.startsWith("type"))) continue;
    specs.push(m[3]);
  }
  for (const m of text.matchAll(/^\s*import\s+"([^"]+)"/gm)) specs.push(m[1]);
  return specs.map((s) => resolve(file, s)).filter((f): f is string => f !== null);
}

function clientFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.tsx?$/.test(e.name) && /^\s*["']use client["']/.test(fs.readFileSync(p, "utf8"))) out.push(p);
    }
  };
  walk(path.join(ROOT, "components"));
  walk(path.join(ROOT, "app"));
  return out;
}

describe("the browser bundle", () => {
  it("never includes the server's configuration: no client component reaches lib/config.ts", () => {
    const reached: string[] = [];
    const clients = clientFiles();
    expect(clients.length).toBeGreaterThan(10);
    for (const start of clients) {
      const seen = new Set<string>([start]);
      const queue = [{ file: start, via: [path.relative(ROOT, start)] }];
      while (queue.length) {
        const { file, via } = queue.shift()!;
        for (const next of valueImports(file)) {
          if (seen.has(next)) continue;
          seen.add(next);
          const rel = path.relative(ROOT, next);
          if (FORBIDDEN.includes(rel)) reached.push([...via, rel].join(" → "));
          else queue.push({ file: next, via: [...via, rel] });
        }
      }
    }
    expect(reached).toEqual([]);
  });
});
