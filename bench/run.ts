/**
 * `npm run bench`: runs every bench/*.bench.ts (or those named on the command
 * line) in one process, one after the other. Each prints its own tables.
 * A full run (no names) also writes everything it printed, under a
 * description of the machine, to bench/results/latest.md.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { registerEmbeddableKinds } from "../lib/embeddable-kinds";

const RESULTS = path.join(__dirname, "results", "latest.md");

function sqliteVersion(): string {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only for its version string
    const Database = require("better-sqlite3") as typeof import("better-sqlite3");
    const db = new Database(":memory:");
    const v = (db.prepare("select sqlite_version() as v").get() as { v: string }).v;
    db.close();
    return v;
  } catch {
    return "unknown";
  }
}

function gitCommit(): string {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: __dirname, encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}

/** The BENCH_* variables this run was started with (sizes and caps; see the README). */
function benchOptions(): string {
  return Object.entries(process.env)
    .filter(([k]) => k.startsWith("BENCH_"))
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join(", ");
}

/** What the numbers were measured on; they mean little without it. */
export function describeMachine(): string {
  const cpus = os.cpus();
  return [
    `- date: ${new Date().toISOString()}`,
    `- commit: ${gitCommit()}`,
    `- CPU: ${cpus[0]?.model ?? "unknown"} × ${cpus.length}`,
    `- memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- OS: ${os.type()} ${os.release()} (${os.arch()})`,
    `- Node ${process.versions.node}, SQLite ${sqliteVersion()}`,
    `- disk: the temp directory ${os.tmpdir()}`,
    `- options: ${benchOptions() || "none (defaults)"}`,
  ].join("\n");
}

async function main() {
  // The bench runner is an entry point like the server and the CLI.
  registerEmbeddableKinds();
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
  // Tee stdout so the file holds exactly what the terminal showed.
  const captured: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    captured.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString());
    return write(chunk, ...rest);
  }) as typeof process.stdout.write;

  const failed: string[] = [];
  const started = Date.now();
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
      process.stdout.write(`\n${f} failed: ${e instanceof Error ? e.message : String(e)}\n`);
    }
  }
  process.stdout.write = write;
  if (wanted.length === 0) {
    const header = `# dualmind benchmarks: latest full run\n\nWritten by \`npm run bench\` (${((Date.now() - started) / 60_000).toFixed(1)} min). Every table compares side by side in the same run.\n\n## Machine\n\n${describeMachine()}\n`;
    fs.mkdirSync(path.dirname(RESULTS), { recursive: true });
    fs.writeFileSync(RESULTS, header + captured.join(""));
    process.stderr.write(`results written to ${path.relative(process.cwd(), RESULTS)}\n`);
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
