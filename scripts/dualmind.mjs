#!/usr/bin/env node
// `npx dualmind …` and `npm run cli -- …`: run the prebuilt CLI (scripts/cli-bundle.mjs) in this process, rebuilt
// first when its sources changed; when it cannot be built, the TypeScript with tsx's loader, in a node beside this one.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CLI_BUNDLE, ensureCliBundle } from "./cli-bundle.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
// The CLI may be started from any folder (an MCP client's, a cron job's): it finds its migrations here.
process.env.DUALMIND_INSTALL_ROOT ||= path.resolve(here, "..");

if (ensureCliBundle()) {
  // Stack traces name the TypeScript files, as under tsx. The bundle reads its arguments from process.argv.slice(2), as here.
  process.setSourceMapsEnabled(true);
  require(CLI_BUNDLE);
} else {
  // tsx's loader (what `tsx` itself passes to the node it starts), without tsx's CLI process in between.
  const tsxLoader = pathToFileURL(require.resolve("tsx")).href;
  const res = spawnSync(process.execPath, ["--import", tsxLoader, path.join(here, "cli.ts"), ...process.argv.slice(2)], { stdio: "inherit" });
  process.exit(res.status ?? 1);
}
