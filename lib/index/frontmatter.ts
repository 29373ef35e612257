/**
 * The small YAML subset memory files use: `key: scalar` and string lists
 * (`[a, b]` or `- item` lines). Written as JSON-quoted strings, which are
 * valid YAML, so any YAML tool reads our files and we read theirs back.
 */
export type FrontmatterValue = string | string[];

const FRONTMATTER_RE = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/** Where the body starts: the length of the frontmatter block (0 when there is none). */
export function frontmatterLength(text: string): number {
  return FRONTMATTER_RE.exec(text)?.[0].length ?? 0;
}

/**
 * A memory's text as its chunks hold it: the frontmatter's bytes as newlines
 * (a document rebuilt from its chunks reads the same), then the body.
 */
export function blankFrontmatter(text: string): string {
  const n = frontmatterLength(text);
  return n === 0 ? text : "\n".repeat(Buffer.byteLength(text.slice(0, n), "utf8")) + text.slice(n);
}

/**
 * Why a memory file cannot be indexed as written, or null: a frontmatter
 * block that is opened and never closed (its fields would be read as body
 * and its tags lost), or merge-conflict markers left by git (two versions in
 * one file). Either is listed with this reason rather than indexed.
 */
export function memoryTextProblem(text: string): string | null {
  if (/^(<{7}|>{7})(?: |$)/m.test(text) && /^={7}$/m.test(text)) return "merge-conflict markers (<<<<<<< ======= >>>>>>>): resolve the conflict";
  if (/^\uFEFF?---[ \t]*\r?\n/.test(text) && !FRONTMATTER_RE.test(text)) return "frontmatter opened with --- but never closed";
  return null;
}

export function parseFrontmatter(text: string): { data: Record<string, FrontmatterValue>; body: string } {
  const m = FRONTMATTER_RE.exec(text);
  if (!m) return { data: {}, body: text };
  const data: Record<string, FrontmatterValue> = {};
  let listKey: string | null = null;
  for (const line of m[1].split(/\r?\n/)) {
    if (/^\s*(#.*)?$/.test(line)) continue;
    const item = /^\s+-\s*(.*)$/.exec(line) ?? /^-\s+(.*)$/.exec(line);
    if (item && listKey) {
      (data[listKey] as string[]).push(unquote(item[1]));
      continue;
    }
    const kv = /^([A-Za-z_][\w-]*)\s*:\s*(.*)$/.exec(line);
    if (!kv) continue;
    const [, key, rawValue] = kv;
    const value = rawValue.trim();
    listKey = null;
    if (value === "") {
      data[key] = [];
      listKey = key;
    } else if (value.startsWith("[") && value.endsWith("]")) {
      data[key] = splitFlowList(value.slice(1, -1)).map(unquote).filter((v) => v !== "");
    } else data[key] = unquote(value);
  }
  return { data, body: text.slice(m[0].length) };
}

function splitFlowList(s: string): string[] {
  const out: string[] = [];
  let cur = "";
  let quote: string | null = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      cur += c;
      if (c === "\\" && quote === '"') cur += s[++i] ?? "";
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      quote = c;
      cur += c;
    } else if (c === ",") {
      out.push(cur.trim());
      cur = "";
    } else cur += c;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

function unquote(v: string): string {
  const s = v.trim();
  if (s.startsWith('"') && s.endsWith('"') && s.length >= 2) {
    try {
      return String(JSON.parse(s));
    } catch {
      return s.slice(1, -1);
    }
  }
  if (s.startsWith("'") && s.endsWith("'") && s.length >= 2) return s.slice(1, -1).replaceAll("''", "'");
  return s;
}

export function stringifyFrontmatter({ data, body }: { data: Record<string, FrontmatterValue | undefined | null>; body: string }): string {
  const lines = ["---"];
  for (const [key, value] of Object.entries(data)) {
    if (value === undefined || value === null) continue;
    lines.push(Array.isArray(value) ? `${key}: [${value.map((v) => JSON.stringify(v)).join(", ")}]` : `${key}: ${JSON.stringify(value)}`);
  }
  lines.push("---", "");
  return lines.join("\n") + body;
}
