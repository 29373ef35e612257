import fs from "node:fs";
import path from "node:path";
import { sha256Hex } from "../common";
import { getConfig } from "../config";
import { storeDir } from "../db/connection";
import { log } from "../log";
import { CATEGORY_FILE, memoryPathSchema } from "./memories";
import { makePathFilter, normalizeRelativePath } from "./paths";

/** A file that reindex and verify consider: a memory or a file under a source root (mtime and ctime in whole ms; ino identifies the file itself: a replacement has another). */
export type IndexableFile = { docPath: string; abs: string; size: number; mtime: number; ctime: number; ino: number; memoryPath: string | null };

/** A file a user put where memories live that cannot be indexed as it is, and why. */
export type UnindexableFile = { path: string; reason: string };

export type FileListing = {
  files: IndexableFile[];
  /** `.md` files under memory/ skipped for their name or size, each with the reason (content problems are found by the readers). */
  unindexable: UnindexableFile[];
  /** `_category.md` files: category path → absolute file. */
  categoryFiles: Map<string, string>;
  /** Symbolic links are never followed (cycles, files outside the root); they are counted here. */
  skipped: { oversized: number; badName: number; symlink: number };
  /** The skipped links that lead outside their root (or nowhere), relative to it; at most 100. */
  linksOutsideRoot: string[];
};

type Walk = { realRoot: string; links: number; outside: string[] };

/** A link found by the scan: counted, and named when it leads out of the root (or nowhere). */
function noteLink(w: Walk, abs: string, rel: string): void {
  w.links++;
  let real: string | null = null;
  try {
    real = fs.realpathSync(abs);
  } catch {
    real = null;
  }
  const inside = real !== null && (real === w.realRoot || real.startsWith(w.realRoot + path.sep));
  if (!inside && w.outside.length < 100) w.outside.push(rel);
}

/** Walk a folder without following symlinks (a link could lead out of the root) and without hidden entries. */
function walk(w: Walk, dir: string, rel: string, visit: (abs: string, rel: string, stat: fs.Stats) => void): void {
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
    if (e.isSymbolicLink()) noteLink(w, abs, r);
    else if (e.isDirectory()) walk(w, abs, r, visit);
    else if (e.isFile()) {
      try {
        const stat = fs.lstatSync(abs);
        // Swapped for a link since readdir: skipped like any link.
        if (stat.isFile()) visit(abs, r, stat);
        else if (stat.isSymbolicLink()) noteLink(w, abs, r);
      } catch {
        // Vanished between readdir and stat: it is simply not there.
      }
    }
  }
}

/** Every regular `.md` file below `dir` (no hidden entries, no symbolic links), as `/`-separated relative paths, sorted. */
export function markdownFilesIn(dir: string): string[] {
  const out: string[] = [];
  walk({ realRoot: dir, links: 0, outside: [] }, dir, "", (_abs, rel) => void (rel.endsWith(".md") && out.push(rel)));
  return out.sort();
}

/**
 * The state of every file a reindex of the store would read (memories, category files, source roots: path, size,
 * change time, inode), or null when a file changed too recently to vouch for it (see storeFilesStamp). Equal stamps:
 * a reindex would find nothing to do. Read without opening the store's database (the memory scan's look).
 */
export function indexableFilesStamp({ store, now = Date.now() }: { store: string; now?: number }): string | null {
  const listing = listIndexableFiles({ store });
  const lines: string[] = [];
  for (const f of listing.files) {
    if (now - f.mtime < 2_000 || now - f.ctime < 2_000) return null;
    lines.push(`${f.docPath}\0${f.size}\0${f.mtime}\0${f.ctime}\0${f.ino}\n`);
  }
  for (const [category, abs] of [...listing.categoryFiles].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    let st: fs.Stats | null = null;
    try {
      st = fs.statSync(abs);
    } catch {
      st = null;
    }
    if (st && (now - st.mtimeMs < 2_000 || now - st.ctimeMs < 2_000)) return null;
    lines.push(`${category}\0${st ? `${st.size}\0${st.mtimeMs}\0${st.ctimeMs}\0${st.ino}` : "-"}\n`);
  }
  lines.push(JSON.stringify([listing.unindexable, listing.skipped, listing.linksOutsideRoot]));
  return sha256Hex(lines.join(""));
}

/** Every file the store's index should mirror, in a stable order. */
export function listIndexableFiles({ store }: { store: string }): FileListing {
  const config = getConfig();
  const listing: FileListing = { files: [], unindexable: [], categoryFiles: new Map(), skipped: { oversized: 0, badName: 0, symlink: 0 }, linksOutsideRoot: [] };
  const walkRoot = (root: string, label: string, visit: (abs: string, rel: string, stat: fs.Stats) => void) => {
    let realRoot: string;
    try {
      realRoot = fs.realpathSync(root);
    } catch {
      return; // No folder, nothing to index.
    }
    const w: Walk = { realRoot, links: 0, outside: [] };
    walk(w, realRoot, "", visit);
    listing.skipped.symlink += w.links;
    listing.linksOutsideRoot.push(...w.outside.map((r) => `${label}/${r}`));
    if (w.outside.length > 0) {
      log("warn", "skipped symbolic links that lead outside their folder; links are never followed", { store, folder: label, links: w.outside.slice(0, 20), count: w.outside.length });
    }
  };
  const add = (docPath: string, abs: string, stat: fs.Stats, memoryPath: string | null) => {
    if (stat.size > config.maxFileBytes) listing.skipped.oversized++;
    else listing.files.push({ docPath, abs, size: stat.size, mtime: Math.floor(stat.mtimeMs), ctime: Math.floor(stat.ctimeMs), ino: stat.ino, memoryPath });
  };
  const nameProblem = (docPath: string, memoryPath: string) => {
    listing.skipped.badName++;
    const issue = memoryPathSchema.safeParse(memoryPath).error?.issues[0]?.message ?? "not a valid memory path";
    listing.unindexable.push({ path: docPath, reason: `name: ${issue}` });
  };
  walkRoot(path.join(storeDir(store), "memory"), "memory", (abs, rel, stat) => {
    if (rel.endsWith("/" + CATEGORY_FILE)) {
      listing.categoryFiles.set(rel.slice(0, -CATEGORY_FILE.length - 1), abs);
      return;
    }
    if (!rel.endsWith(".md")) {
      listing.skipped.badName++; // Not a memory (an image, a .txt): never indexed from memory/.
      return;
    }
    const docPath = `memory/${rel}`;
    if (rel === CATEGORY_FILE) {
      listing.skipped.badName++;
      listing.unindexable.push({ path: docPath, reason: "a category description belongs in a category folder (<category>/_category.md)" });
      return;
    }
    const memoryPath = rel.slice(0, -3);
    if (stat.size > config.maxFileBytes) {
      listing.skipped.oversized++;
      listing.unindexable.push({ path: docPath, reason: `larger than DUALMIND_MAX_FILE_BYTES (${config.maxFileBytes} bytes)` });
      return;
    }
    // A file at the top of memory/ (a README) has no category: indexed and searchable as a document, not listed as a memory.
    if (!memoryPath.includes("/")) {
      if (memoryPathSchema.safeParse(`top/${memoryPath}`).success) add(docPath, abs, stat, null);
      else nameProblem(docPath, `top/${memoryPath}`);
      return;
    }
    if (memoryPathSchema.safeParse(memoryPath).success) add(docPath, abs, stat, memoryPath);
    else nameProblem(docPath, memoryPath);
  });
  for (const root of config.sourceRoots.filter((r) => r.store === store)) {
    const wanted = makePathFilter({ include: config.sourceInclude, exclude: config.sourceExclude });
    walkRoot(root.dir, `source/${root.name}`, (abs, rel, stat) => {
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
