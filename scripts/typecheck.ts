/**
 * `npm test`'s type check, without waiting for the build: `tsc --noEmit` over the whole project (tests too) with
 * the route types of `next typegen` (the same files `next build` writes to .next/types) copied to
 * .next/cache/typecheck, which a build leaves alone (it cleans .next, except its cache, before writing the types
 * again): tsc reads whole files while a build runs beside it. scripts/test.ts makes the copy before any phase
 * starts; `tsx scripts/typecheck.ts` makes it and checks.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { NEXT_BIN, ROOT } from "./build-freshness";

const DIR = path.join(ROOT, ".next", "cache", "typecheck");
/** The type check's project: the repository's tsconfig.json with the copied route types instead of .next/types. */
export const TYPECHECK_TSCONFIG = path.relative(ROOT, path.join(DIR, "tsconfig.json"));

/** Generate the route types and copy them, with a next-env.d.ts and a tsconfig.json that read them, to .next/cache/typecheck. */
export function prepareTypecheck(): void {
  const typegen = spawnSync(process.execPath, [NEXT_BIN, "typegen"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" } });
  if (typegen.status !== 0) throw new Error(`next typegen failed (exit ${typegen.status})`);
  const up = path.relative(DIR, ROOT);
  fs.mkdirSync(path.join(DIR, "types"), { recursive: true });
  for (const file of fs.readdirSync(path.join(ROOT, ".next", "types"))) {
    // The validator imports each page and route as "../../app/…" from .next/types: from the copy, the same files.
    const text = fs.readFileSync(path.join(ROOT, ".next", "types", file), "utf8").replaceAll('import("../../', `import("${up}/../`);
    // Unchanged files keep their times: tsc's incremental state stays valid across runs.
    const target = path.join(DIR, "types", file);
    if (!fs.existsSync(target) || fs.readFileSync(target, "utf8") !== text) fs.writeFileSync(target, text);
  }
  const env = fs.readFileSync(path.join(ROOT, "next-env.d.ts"), "utf8").replaceAll("./.next/types/", "./types/");
  fs.writeFileSync(path.join(DIR, "next-env.d.ts"), env);
  const base = JSON.parse(fs.readFileSync(path.join(ROOT, "tsconfig.json"), "utf8")) as { include: string[]; exclude: string[] };
  const fromDir = (p: string) => path.join(up, p);
  const tsconfig = {
    extends: fromDir("tsconfig.json"),
    // The repository's files (a wildcard skips dot directories such as .next), this copy's types, and not the root's
    // next-env.d.ts, which reads .next/types.
    include: [...base.include.filter((p) => !p.startsWith(".next") && p !== "next-env.d.ts").map(fromDir), "next-env.d.ts", "types/**/*.ts"],
    exclude: [...base.exclude.map(fromDir), fromDir("next-env.d.ts")],
  };
  fs.writeFileSync(path.join(DIR, "tsconfig.json"), `${JSON.stringify(tsconfig, null, 2)}\n`);
}

if (require.main === module) {
  if (!process.argv.includes("--prepared")) prepareTypecheck();
  const tsc = spawnSync(process.execPath, [path.join(ROOT, "node_modules", "typescript", "bin", "tsc"), "--noEmit", "-p", TYPECHECK_TSCONFIG], { cwd: ROOT, stdio: "inherit" });
  process.exit(tsc.status ?? 1);
}
