#!/usr/bin/env node
/**
 * Compile native/query_budget.c (the SQLite query-budget extension, see the
 * file's header) into native/build/query_budget.so with the machine's C
 * compiler, against the sqlite3ext.h that better-sqlite3 ships: no download.
 * Runs as `postinstall` and as `npm run build:native`.
 *
 * Never fails the install: without a compiler the app still starts, logs a
 * warning, and bounds queries by their structural limits only.
 * Up to date (newer than its source) → nothing to do; `--force` rebuilds.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SOURCE = path.join(ROOT, "native", "query_budget.c");
const OUTPUT = path.join(ROOT, "native", "build", "query_budget.so");

function warn(message) {
  process.stderr.write(`dualmind: could not build the query-budget extension (${message}).\n` + "dualmind: the app still runs; long searches are then bounded by their structural limits only. Install a C compiler and run `npm run build:native`.\n");
}

function sqliteHeaders() {
  try {
    const pkg = createRequire(path.join(ROOT, "package.json")).resolve("better-sqlite3/package.json");
    const dir = path.join(path.dirname(pkg), "deps", "sqlite3");
    return fs.existsSync(path.join(dir, "sqlite3ext.h")) ? dir : null;
  } catch {
    return null;
  }
}

function main() {
  const force = process.argv.includes("--force");
  if (!force && fs.existsSync(OUTPUT) && fs.statSync(OUTPUT).mtimeMs >= fs.statSync(SOURCE).mtimeMs) return;
  const include = sqliteHeaders();
  if (!include) return warn("better-sqlite3's sqlite3ext.h was not found");
  fs.mkdirSync(path.dirname(OUTPUT), { recursive: true });
  // Build beside the target, then rename: a running server never loads a half-written file.
  const tmp = `${OUTPUT}.${process.pid}.tmp`;
  const args = ["-O2", "-fPIC", "-shared", "-I", include, SOURCE, "-o", tmp, "-lpthread"];
  const tried = [];
  for (const cc of [...new Set([process.env.CC, "cc", "gcc", "clang"].filter(Boolean))]) {
    const r = spawnSync(cc, args, { encoding: "utf8" });
    if (r.status === 0) {
      fs.renameSync(tmp, OUTPUT);
      process.stderr.write(`dualmind: built ${path.relative(ROOT, OUTPUT)} with ${cc}\n`);
      return;
    }
    tried.push(`${cc}: ${r.error ? r.error.code : (r.stderr || "").trim().split("\n")[0] || `exit ${r.status}`}`);
  }
  fs.rmSync(tmp, { force: true });
  warn(tried.join("; "));
}

try {
  main();
} catch (e) {
  warn(e instanceof Error ? e.message : String(e));
}
