import fs from "node:fs";
import path from "node:path";
import { AppError } from "../errors";
import { PRIVATE_FILE_MODE } from "../private-fs";

/**
 * Reading a bundle or backup that someone else may still be changing. A
 * check by path followed by a read by path can be raced: the file swapped
 * for a link, or a FIFO that holds the reader while something else is
 * swapped. So every file is opened once, without following a link and
 * without blocking, the opened descriptor is checked (a regular file, at the
 * place it was asked for, within its size limit) and the bytes are read from
 * that same descriptor.
 */

const O_NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = fs.constants.O_NONBLOCK ?? 0;
const COPY_CHUNK = 1 << 20;

function refuse(label: string, why: string): never {
  throw new AppError("unprocessable", `${label} ${why}; bundles and backups must be plain files and folders`, [{ path: label, message: why }]);
}

/** Where an open descriptor really is, where the system can say (Linux /proc); null elsewhere. */
function fdPath(fd: number): string | null {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
}

/**
 * Open `root/rel` for reading: refused (422) when it is a link, not a regular
 * file (a FIFO, a device, a folder), reached through a linked folder, or
 * larger than `maxBytes`. `root` is a real path (no link in it).
 */
export function openCheckedFile({ root, rel, maxBytes, limitName }: { root: string; rel: string; maxBytes: number; limitName: string }): { fd: number; size: number } {
  const file = path.join(root, rel);
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ELOOP") refuse(rel, "is a symbolic link");
    if (code === "ENOENT") throw new AppError("not_found", `${file} does not exist`);
    throw e;
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) refuse(rel, stat.isFIFO() ? "is a FIFO, not a regular file" : "is not a regular file");
    const real = fdPath(fd);
    if (real !== null && real !== file) refuse(rel, `was reached through a symbolic link (it is ${real})`);
    if (stat.size > maxBytes) throw new AppError("unprocessable", `${rel} is ${stat.size} bytes, over its limit ${limitName} (${maxBytes} bytes)`, [{ path: rel, message: `over ${limitName}`, limit: maxBytes }]);
    return { fd, size: stat.size };
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

/** Read a checked file whole (small files: manifests). */
export function readCheckedFile(args: { root: string; rel: string; maxBytes: number; limitName: string }): Buffer {
  const { fd, size } = openCheckedFile(args);
  try {
    const buf = Buffer.alloc(size);
    let read = 0;
    while (read < size) {
      const n = fs.readSync(fd, buf, read, size - read, null);
      if (n === 0) break;
      read += n;
    }
    return buf.subarray(0, read);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Copy a checked file to `dest` (created 0600, never over an existing file),
 * from the descriptor that was checked, reading no more than the size it had
 * when checked (a file still growing is refused).
 */
export function copyCheckedFile(args: { root: string; rel: string; dest: string; maxBytes: number; limitName: string }): number {
  const { fd, size } = openCheckedFile(args);
  let out: number | null = null;
  try {
    out = fs.openSync(args.dest, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, PRIVATE_FILE_MODE);
    const buf = Buffer.alloc(Math.min(COPY_CHUNK, Math.max(size, 1)));
    let copied = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      copied += n;
      if (copied > size) refuse(args.rel, "changed while it was copied");
      fs.writeSync(out, buf, 0, n);
    }
    fs.fsyncSync(out);
    return copied;
  } catch (e) {
    if (out !== null) {
      fs.closeSync(out);
      out = null;
      fs.rmSync(args.dest, { force: true });
    }
    throw e;
  } finally {
    if (out !== null) fs.closeSync(out);
    fs.closeSync(fd);
  }
}

/**
 * Copy a checked folder tree of plain files (memory/): folders are walked
 * without following links, every file goes through copyCheckedFile. Hidden
 * entries (a writer's temp files) are skipped. Returns the number of files.
 */
export function copyCheckedTree({ root, rel, dest, maxFileBytes, limitName }: { root: string; rel: string; dest: string; maxFileBytes: number; limitName: string }): number {
  const dir = path.join(root, rel);
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw e;
  }
  if (stat.isSymbolicLink()) refuse(rel, "is a symbolic link");
  if (!stat.isDirectory()) refuse(rel, "is not a folder");
  fs.mkdirSync(dest, { recursive: true, mode: 0o700 });
  let files = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".")) continue;
    const childRel = path.join(rel, entry.name);
    if (entry.isDirectory()) files += copyCheckedTree({ root, rel: childRel, dest: path.join(dest, entry.name), maxFileBytes, limitName });
    else {
      copyCheckedFile({ root, rel: childRel, dest: path.join(dest, entry.name), maxBytes: maxFileBytes, limitName });
      files++;
    }
  }
  return files;
}
