/** Is the production bundle in .next older than the sources? Shared by `npm start` and the reliability suite. */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export const ROOT = path.resolve(__dirname, "..");
/** What the production build is made from (its freshness is theirs). */
export const SOURCES = ["app", "components", "lib", "public", "drizzle", "instrumentation.ts", "proxy.ts", "next.config.mjs", "postcss.config.mjs", "package.json", "package-lock.json", "tsconfig.json"];

function newestMtime(p: string): number {
  if (!fs.existsSync(p)) return 0;
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const e of fs.readdirSync(p, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) newest = Math.max(newest, fs.statSync(path.join(e.parentPath, e.name)).mtimeMs);
  }
  return newest;
}

export function buildIsStale(): boolean {
  const buildId = path.join(ROOT, ".next", "BUILD_ID");
  if (!fs.existsSync(buildId)) return true;
  const built = fs.statSync(buildId).mtimeMs;
  return SOURCES.some((s) => newestMtime(path.join(ROOT, s)) > built);
}

export const NEXT_BIN = path.join(ROOT, "node_modules", "next", "dist", "bin", "next");

/**
 * `next start`'s arguments for a server on host:port. Idle keep-alive connections are held longer than clients and
 * proxies keep theirs (undici's 4 s, load balancers' 60 s): the client then always closes an idle connection first,
 * and never sends a request on one the server is closing ("other side closed", a failed POST nobody retries).
 */
export const nextStartArgs = ({ host, port }: { host: string; port: number }): string[] => [NEXT_BIN, "start", "-H", host, "-p", String(port), "--keepAliveTimeout", "65000"];

/**
 * Build the production bundle and the prebuilt CLI when they are stale (the reliability suite's servers, the e2e
 * run, `npm test`'s build step): one build serves every suite of a run, and every CLI the tests start.
 */
export function ensureProductionBuild(): void {
  // scripts/cli-bundle.mjs decides itself whether the CLI's bundle is stale.
  const cli = spawnSync(process.execPath, [path.join(ROOT, "scripts", "cli-bundle.mjs")], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  if (cli.status !== 0) throw new Error(`the CLI's bundle failed to build (exit ${cli.status})`);
  if (!buildIsStale()) return;
  const build = spawnSync(process.execPath, [NEXT_BIN, "build"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" } });
  if (build.status !== 0) throw new Error(`next build failed (exit ${build.status})`);
}
