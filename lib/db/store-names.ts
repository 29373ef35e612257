import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { getConfig } from "../config";
import { STORE_NAME_RE, storeDir, storeIndexPath } from "./connection";

/** The shared store: identity and preferences, readable alongside any other store. */
export const CORE_STORE = "core";

/** The store a fresh data dir starts with beside core, and the one the README and the MCP snippet use. */
export const DEFAULT_STORE = "default";

export const storeNameSchema = z
  .string()
  .regex(STORE_NAME_RE, "store names are 1-63 chars of a-z, 0-9, _ and -, starting with a letter or digit");

/** A store exists when its index or its memory folder is on disk. */
export function storeExists(name: string): boolean {
  return STORE_NAME_RE.test(name) && (fs.existsSync(storeIndexPath(name)) || fs.existsSync(path.join(storeDir(name), "memory")));
}

/** Names of every store on disk, sorted, core first. Directories with invalid names are ignored. */
export function listStoreNames(): string[] {
  const root = path.join(getConfig().dataDir, "stores");
  if (!fs.existsSync(root)) return [];
  const names = fs
    .readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && STORE_NAME_RE.test(d.name))
    .map((d) => d.name)
    .sort();
  return [...names.filter((n) => n === CORE_STORE), ...names.filter((n) => n !== CORE_STORE)];
}
