import { INSTALL_ROOT } from "./install-root";
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";

let cached: { app: string; node: string; sqlite: string } | undefined;

export function versions() {
  if (cached) return cached;
  const pkg = JSON.parse(fs.readFileSync(path.join(INSTALL_ROOT, "package.json"), "utf8")) as { version: string };
  const mem = new Database(":memory:");
  const sqlite = (mem.prepare("select sqlite_version() as v").get() as { v: string }).v;
  mem.close();
  cached = { app: pkg.version, node: process.versions.node, sqlite };
  return cached;
}
