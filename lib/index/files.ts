import fs from "node:fs";
import path from "node:path";
import { getConfig } from "../config";
import type { StoreHandle } from "../db/connection";
import { CATEGORY_FILE, memoryDir, memoryPathSchema } from "./memories";
import { makePathFilter, normalizeRelativePath } from "./paths";

/** A file that reindex and verify consider: a memory or a file under a source root. */
export type IndexableFile = { docPath: string; abs: string; size: number; mtime: number; memoryPath: string | null };

export type FileListing = {
  files: IndexableFile[];
  /** `_category.md` files: category path → absolute file. */
  categoryFiles: Map<string, string>;
  skipped: { oversized: number; badName: number };
};

/** Walk a folder without following symlinks (a link could lead out of the root) and without hidden entries. */
function walk(dir: string, rel: string, visit: (abs: string, rel: string, stat: fs.Stats) => void): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  // Sorted so every machine visits files in the same order.
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (e.name.startsWith(".")) continue;
    const abs = path.join(dir, e.name);
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) walk(abs, r, visit);
    else if (e.isFile()) {
      try {
        visit(abs, r, fs.statSync(abs));
      } catch {
        // Vanished between readdir and stat: it is simply not there.
      }
    }
  }
}

/** Every file the store's index should mirror, in a stable order. */
export function listIndexableFiles({ handle }: { handle: StoreHandle }): FileListing {
  const config = getConfig();
  const listing: FileListing = { files: [], categoryFiles: new Map(), skipped: { oversized: 0, badName: 0 } };
  const add = (docPath: string, abs: string, stat: fs.Stats, memoryPath: string | null) => {
    if (stat.size > config.maxFileBytes) listing.skipped.oversized++;
    else listing.files.push({ docPath, abs, size: stat.size, mtime: Math.floor(stat.mtimeMs), memoryPath });
  };
  walk(memoryDir({ handle }), "", (abs, rel, stat) => {
    if (rel.endsWith("/" + CATEGORY_FILE)) {
      listing.categoryFiles.set(rel.slice(0, -CATEGORY_FILE.length - 1), abs);
      return;
    }
    const memoryPath = rel.endsWith(".md") ? rel.slice(0, -3) : null;
    if (!memoryPath || !memoryPathSchema.safeParse(memoryPath).success) listing.skipped.badName++;
    else add(`memory/${rel}`, abs, stat, memoryPath);
  });
  for (const root of config.sourceRoots.filter((r) => r.store === handle.store)) {
    const wanted = makePathFilter({ include: config.sourceInclude, exclude: config.sourceExclude });
    walk(root.dir, "", (abs, rel, stat) => {
      if (!wanted(rel)) return;
      try {
        add(normalizeRelativePath(`source/${root.name}/${rel}`), abs, stat, null);
      } catch {
        listing.skipped.badName++;
      }
    });
  }
  return listing;
}
