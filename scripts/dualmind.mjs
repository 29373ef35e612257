#!/usr/bin/env node
// `npx dualmind …`: run the TypeScript CLI through tsx from this package.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const tsx = require.resolve("tsx/cli");
const res = spawnSync(process.execPath, [tsx, path.join(here, "cli.ts"), ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(res.status ?? 1);
