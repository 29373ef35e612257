import fs from "node:fs";
import path from "node:path";
import { AppError } from "../errors";

/**
 * File operations that cannot be led out of their root by a symbolic link.
 * A memory folder is plain files and folders: a link
 * in it (from a git checkout, a sync tool, a careless `ln -s`) could point at
 * ~/.ssh or /etc, and reading, writing or deleting "a memory" through it
 * would reach that file. The root itself may be a link (an operator may keep
 * memory/ on another disk); nothing below it is followed.
 */

const O_NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0;

function isInside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

function errnoCode(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

/** Where a link leads, for the message: "outside the folder", "inside the folder", or nowhere. */
function linkTarget(root: string, link: string): string {
  try {
    return isInside(root, fs.realpathSync(link)) ? "to another place inside it" : "outside it";
  } catch {
    return "nowhere (a broken or looping link)";
  }
}

function refused(what: string, shown: string, where: string): never {
  throw new AppError("unprocessable", `${what} goes through a symbolic link (${shown}) that leads ${where}; links in a memory folder are never followed`, [
    { path: "path", message: "symbolic link in the way", link: shown },
  ]);
}

/**
 * The absolute path of `segments` under `root`, checked on disk first: no
 * existing component below the root may be a symbolic link, and the real
 * path of the deepest existing one must lie inside the root's real path.
 * A 422 names the link otherwise. `what` names the thing for the message.
 * Segments are assumed already validated (no `..`, no separators).
 */
export function resolveInside({ root, segments, what }: { root: string; segments: string[]; what: string }): string {
  let realRoot: string;
  try {
    realRoot = fs.realpathSync(root);
  } catch (e) {
    // No root yet: nothing below it exists, so nothing can be a link. The caller's write creates it.
    if (errnoCode(e) === "ENOENT") return path.join(root, ...segments);
    throw e;
  }
  let deepest = realRoot;
  for (let i = 0; i < segments.length; i++) {
    const next = path.join(deepest, segments[i]);
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(next);
    } catch (e) {
      const code = errnoCode(e);
      if (code === "ENOENT" || code === "ENOTDIR") break;
      throw e;
    }
    if (stat.isSymbolicLink()) refused(what, segments.slice(0, i + 1).join("/"), linkTarget(realRoot, next));
    deepest = next;
  }
  // Belt and braces against a folder swapped for a link between the checks above and here.
  if (!isInside(realRoot, fs.realpathSync(deepest))) refused(what, path.relative(realRoot, deepest) || ".", "outside it");
  return path.join(realRoot, ...segments);
}

/** Read a file, refusing (ELOOP, reported as a 422) if the file itself is a symbolic link. */
export function readFileNoFollow({ file, what }: { file: string; what: string }): { bytes: Buffer; mtimeMs: number } {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | O_NOFOLLOW);
  } catch (e) {
    if (errnoCode(e) === "ELOOP") refused(what, path.basename(file), "to a file that is not its own");
    throw e;
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: "EISDIR" });
    return { bytes: fs.readFileSync(fd), mtimeMs: stat.mtimeMs };
  } finally {
    fs.closeSync(fd);
  }
}

/** Whether anything (a file, a folder, a link, even a broken one) is at `file`, without following a link. */
export function existsNoFollow(file: string): boolean {
  try {
    fs.lstatSync(file);
    return true;
  } catch (e) {
    const code = errnoCode(e);
    if (code === "ENOENT" || code === "ENOTDIR") return false;
    throw e;
  }
}

/**
 * Every symbolic link in a folder tree (the root itself included), as paths
 * relative to the tree's parent; links are listed, never followed. Used to
 * refuse a bundle or backup that holds any before copying a byte of it.
 */
export function findSymlinks({ dir, label, limit = 20 }: { dir: string; label: string; limit?: number }): string[] {
  const found: string[] = [];
  const visit = (abs: string, rel: string) => {
    if (found.length >= limit) return;
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(abs);
    } catch (e) {
      if (errnoCode(e) === "ENOENT") return;
      throw e;
    }
    if (stat.isSymbolicLink()) found.push(rel);
    else if (stat.isDirectory()) for (const name of fs.readdirSync(abs).sort()) visit(path.join(abs, name), `${rel}/${name}`);
  };
  visit(dir, label);
  return found;
}
