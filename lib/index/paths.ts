import { AppError } from "../errors";
import type { ChunkKind } from "./chunking";

// Real file names (`@scope`, `+page.svelte`, spaces) are allowed; separators, control characters and a leading dot are not.
const SEGMENT_RE = /^[^./\\\x00-\x1f\x7f][^/\\\x00-\x1f\x7f]{0,254}$/;
const MAX_PATH = 512;

/** Prefixes owned by reindex (files on disk); the documents API may not write under them. */
export const FILE_PREFIXES = ["memory/", "source/"] as const;

function bad(message: string, value: string): never {
  throw new AppError("invalid_request", message, [{ path: "path", message, value: value.slice(0, 200) }]);
}

/**
 * A relative path, normalized to `/`, that can never climb out of its root:
 * no `..`, no absolute or drive paths, no NUL, no hidden segments, bounded.
 */
export function normalizeRelativePath(raw: string): string {
  if (raw.includes("\0")) bad("path must not contain NUL", raw);
  const p = raw.replaceAll("\\", "/");
  if (p.length === 0 || p.length > MAX_PATH) bad(`path must be 1-${MAX_PATH} characters`, raw);
  if (p.startsWith("/") || /^[A-Za-z]:/.test(p)) bad("path must be relative", raw);
  const segments = p.split("/");
  for (const s of segments) {
    if (s === "" || s === "." || s === "..") bad("path must not contain empty, '.' or '..' segments", raw);
    if (s.includes("..")) bad("path segments must not contain '..'", raw);
    if (!SEGMENT_RE.test(s)) bad("path segments must not start with '.' (no hidden files) or contain control characters", raw);
  }
  return segments.join("/");
}

export function kindForPath(path: string): ChunkKind {
  if (path.startsWith("memory/")) return "memory";
  const ext = path.slice(path.lastIndexOf(".") + 1).toLowerCase();
  if (ext === "md" || ext === "markdown" || ext === "mdx") return "markdown";
  if (CODE_EXTENSIONS.has(ext)) return "code";
  return "text";
}

const CODE_EXTENSIONS = new Set([
  "ts", "tsx", "js", "jsx", "mjs", "cjs", "py", "rb", "go", "rs", "java", "kt", "c", "h", "cc", "cpp", "hpp", "cs", "swift", "php",
  "sh", "bash", "zsh", "sql", "json", "yaml", "yml", "toml", "ini", "css", "scss", "html", "xml", "lua", "pl", "r", "scala", "ex", "exs",
]);

/** Compile a glob (`**`, `*`, `?`) to a RegExp over `/`-separated relative paths. */
export function globToRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*" && glob[i + 1] === "*") {
      // `**/` matches zero or more whole directories; a trailing `**` matches the rest.
      if (glob[i + 2] === "/") {
        re += "(?:.*/)?";
        i += 2;
      } else {
        re += ".*";
        i += 1;
      }
    } else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

export function makePathFilter({ include, exclude }: { include: string[]; exclude: string[] }): (rel: string) => boolean {
  const inc = include.map(globToRegExp);
  const exc = exclude.map(globToRegExp);
  return (rel) => inc.some((r) => r.test(rel)) && !exc.some((r) => r.test(rel));
}
