#!/usr/bin/env node
// `npx dualmind …`: run the TypeScript CLI with tsx's loader, in one node process beside this one.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
// tsx's loader (what `tsx` itself passes to the node it starts), without tsx's CLI process in between.
const tsxLoader = pathToFileURL(require.resolve("tsx")).href;
// The CLI may be started from any folder (an MCP client's, a cron job's): it finds its migrations here.
const env = { ...process.env, DUALMIND_INSTALL_ROOT: process.env.DUALMIND_INSTALL_ROOT || path.resolve(here, "..") };
const res = spawnSync(process.execPath, ["--import", tsxLoader, path.join(here, "cli.ts"), ...process.argv.slice(2)], { stdio: "inherit", env });
process.exit(res.status ?? 1);
