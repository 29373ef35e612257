/**
 * `npm run bench`: runs every bench/*.bench.ts (or those named on the command
 * line) in one process, one after the other. Each prints its own tables.
 */
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

async function main() {
  const wanted = process.argv.slice(2);
  const files = fs
    .readdirSync(__dirname)
    .filter((f) => f.endsWith(".bench.ts"))
    .filter((f) => wanted.length === 0 || wanted.some((w) => f.startsWith(w)))
    .sort();
  if (files.length === 0) {
    process.stderr.write("no benchmarks matched\n");
    process.exit(2);
  }
  const failed: string[] = [];
  for (const f of files) {
    process.stdout.write(`\n## ${f}\n\n`);
    try {
      const mod = (await import(pathToFileURL(path.join(__dirname, f)).href)) as { default?: () => Promise<void> };
      if (typeof mod.default !== "function") throw new Error(`${f} must export a default async function`);
      await mod.default();
    } catch (e) {
      // One broken benchmark must not hide the others' tables.
      failed.push(f);
      process.stderr.write(`${f} failed: ${e instanceof Error ? e.message : String(e)}\n`);
    }
  }
  if (failed.length) {
    process.stderr.write(`\nfailed: ${failed.join(", ")}\n`);
    process.exit(1);
  }
}

main().catch((e) => {
  process.stderr.write(String(e instanceof Error ? e.stack : e) + "\n");
  process.exit(1);
});
