/**
 * The prebuilt CLI: scripts/cli.ts and the lib/ it imports, bundled by esbuild
 * into one CommonJS file (dist/cli.cjs) with the packages they use, so a command
 * starts without compiling TypeScript (tsx does that at every start) or
 * resolving hundreds of package files. Native packages, and the ones that load
 * native code, stay in node_modules.
 *
 * Fresh = every source file esbuild read (its metafile), and the files that
 * decide how it reads them (the packages it read: by the lockfiles, as npm
 * stamps every package file with one old date), are exactly as the build found
 * them: the same size, inode, modification and change times (a change time no
 * tool can set back, so a release unpacked with its old times, or a clock that
 * was ahead, still counts as a change), each older than the build's start (a
 * file saved while esbuild read it is a change too).
 * The launcher (scripts/dualmind.mjs) never runs a stale bundle: it rebuilds,
 * or runs the TypeScript with tsx. Built by `npm run build` and by the test runs' build
 * step (scripts/build-freshness.ts).
 * `node scripts/cli-bundle.mjs` builds it when stale; `--force` always.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const CLI_BUNDLE = path.join(ROOT, "dist", "cli.cjs");
/** What the bundle was built from: `{ startedAt, inputs }`, inputs relative to ROOT. */
const MANIFEST = path.join(ROOT, "dist", "cli.inputs.json");
/**
 * Not among the sources, yet they change the output: the build's options, the path aliases, the packages
 * (npm rewrites node_modules/.package-lock.json whenever it changes node_modules). Absent ones change nothing.
 */
const BUILD_INPUTS = ["scripts/cli-bundle.mjs", "tsconfig.json", "package.json", "package-lock.json", "node_modules/.package-lock.json"];
const NATIVE = ["better-sqlite3", "sqlite-vec", "usearch", "pg", "@huggingface/transformers"];
/** A file's time may trail the clock (filesystems that keep coarse times): one written just as a build starts counts as newer. */
const CLOCK_SLACK_MS = 1000;

/** A file as the build found it: size, inode, modification and change times; null when absent. */
const signature = (file) => {
  try {
    const st = fs.statSync(path.join(ROOT, file));
    return [st.size, st.ino, st.mtimeMs, st.ctimeMs];
  } catch {
    return null;
  }
};

export function cliBundleIsFresh() {
  let manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(MANIFEST, "utf8"));
  } catch {
    return false;
  }
  const { startedAt, inputs } = manifest;
  // A manifest from the future (a clock that was ahead, or a hand-made one) proves nothing.
  if (!fs.existsSync(CLI_BUNDLE) || typeof startedAt !== "number" || startedAt > Date.now() || !inputs || typeof inputs !== "object" || Object.keys(inputs).length <= BUILD_INPUTS.length) return false;
  return Object.entries(inputs).every(([file, was]) => {
    const now = signature(file);
    // A source gone, or come, since the build is a change too; one saved while the build read it as well.
    if (now === null || was === null) return now === was;
    return Array.isArray(was) && now.every((v, i) => v === was[i]) && was[2] < startedAt && was[3] < startedAt;
  });
}

/**
 * Bundle the CLI. Throws when esbuild is missing, dist/ is not writable or the sources do not build.
 * Each file is written beside its target and renamed into place, the manifest last:
 * a CLI started meanwhile runs a whole bundle, and never trusts a manifest older than it.
 */
export function buildCliBundle() {
  const startedAt = Date.now() - CLOCK_SLACK_MS;
  const esbuild = createRequire(path.join(ROOT, "package.json"))("esbuild");
  fs.mkdirSync(path.dirname(CLI_BUNDLE), { recursive: true });
  const result = esbuild.buildSync({
    absWorkingDir: ROOT,
    entryPoints: ["scripts/cli.ts"],
    outfile: CLI_BUNDLE,
    write: false,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: NATIVE,
    // Class and function names as in the sources (error names, stack frames).
    keepNames: true,
    // Stack traces name the .ts files and lines, as under tsx (the launcher turns source maps on).
    sourcemap: "linked",
    sourcesContent: false,
    metafile: true,
    logLevel: "silent",
  });
  // The map before the bundle that names it; the manifest last.
  const files = [...result.outputFiles.sort((a, b) => Number(b.path.endsWith(".map")) - Number(a.path.endsWith(".map"))), { path: MANIFEST, text: JSON.stringify({ startedAt, inputs: Object.fromEntries([...Object.keys(result.metafile.inputs).filter((file) => !file.startsWith("node_modules/")), ...BUILD_INPUTS].map((file) => [file, signature(file)])) }) }];
  for (const file of files) {
    const tmp = `${file.path}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, file.text);
    fs.renameSync(tmp, file.path);
  }
}

/** Build unless fresh; false when it could not be built (the caller runs the TypeScript instead). */
export function ensureCliBundle() {
  if (cliBundleIsFresh()) return true;
  try {
    buildCliBundle();
    return true;
  } catch {
    return false;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && (process.argv.includes("--force") || !cliBundleIsFresh())) {
  try {
    buildCliBundle();
  } catch (e) {
    process.stderr.write(`the CLI's bundle was not built: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
}
