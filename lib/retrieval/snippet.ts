import DatabaseCtor from "better-sqlite3";
import type Database from "better-sqlite3";
import { stripTableSyntax } from "./snippet-tables";

/**
 * Snippets are text, never markup: an HTML document's tags, comments and
 * entities, and markdown's link/image syntax, emphasis markers and heading
 * hashes are dropped, keeping the words; so is table syntax (snippet-tables.ts). Highlight marks (two private-use
 * characters, see MARK_OPEN/MARK_CLOSE) survive, so offsets are computed on
 * the cleaned text.
 */
export const MARK_OPEN = "\uE000";
export const MARK_CLOSE = "\uE001";

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " ", "#39": "'" };

export function stripMarkup(text: string): string {
  // Each step below changes only text holding its own trigger character; a snippet of plain words skips them all.
  if (!MARKUP_TRIGGERS.test(text)) return text.replace(/\s+/g, " ").trim();
  return (
    stripTableSyntax(text)
      // Whole elements whose content is not prose.
      .replace(/<(script|style)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, " ")
      .replace(/<!--[\s\S]*?(-->|$)/g, " ")
      // Tags, including a tag cut at either end of the snippet window.
      .replace(/<\/?[A-Za-z][^<>]*>/g, " ")
      .replace(/^[^<>]*>/, (m) => (/[="']/.test(m) ? " " : m))
      .replace(/<\/?[A-Za-z][^<>]*$/, " ")
      .replace(/&(#\d+|#x[0-9a-f]+|[a-z]+\d*);/gi, (m, name: string) => {
        const lower = name.toLowerCase();
        if (ENTITIES[lower] !== undefined) return ENTITIES[lower];
        const code = lower.startsWith("#x") ? Number.parseInt(lower.slice(2), 16) : lower.startsWith("#") ? Number(lower.slice(1)) : NaN;
        return Number.isFinite(code) && code > 0 && code < 0x110000 ? String.fromCodePoint(code) : m;
      })
      // Markdown: ![alt](url) → alt, [text](url) → text, emphasis and heading markers.
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/(^|\s)#{1,6}\s+/g, "$1")
      .replace(/(\*\*|__|`)/g, "")
      .replace(/\s+/g, " ")
      .trim()
  );
}

/** Characters one of stripMarkup's steps needs to find anything: table pipes, tags, entities, links, headings, emphasis. */
const MARKUP_TRIGGERS = /[|<>&[#*_`]/;

/** Clean a marked snippet, then split it into text and [start, end) highlight offsets. */
export function snippetText(raw: string): { snippet: string; highlights: [number, number][] } {
  return splitMarks(stripMarkup(raw));
}

/** Source code keeps its angle brackets and asterisks (`Array<string>`, `a ** b`); markup files and prose do not. */
export function isMarkupFree({ path, kind }: { path: string; kind: string }): boolean {
  return kind === "code" && !/\.(html?|xhtml|xml|svg|vue)$/i.test(path);
}

/** The snippet of a hit in `path`: marks split into highlights, markup removed unless it is code. */
export function snippetFor({ raw, where }: { raw: string; where: { path: string; kind: string } }): { snippet: string; highlights: [number, number][] } {
  return isMarkupFree(where) ? splitMarks(raw.replace(/\s+/g, " ").trim()) : snippetText(raw);
}

function splitMarks(raw: string): { snippet: string; highlights: [number, number][] } {
  let snippet = "";
  const highlights: [number, number][] = [];
  let open = -1;
  for (const ch of raw) {
    if (ch === MARK_OPEN) open = snippet.length;
    else if (ch === MARK_CLOSE) {
      if (open >= 0 && snippet.length > open) highlights.push([open, snippet.length]);
      open = -1;
    } else snippet += ch;
  }
  return { snippet, highlights };
}

/**
 * The marked snippets of rows given by text, by id, as `snippet(t, 0, MARK_OPEN, MARK_CLOSE, '…', 24)` of FTS5 gives
 * them (made for a page's shown rows only): the same function over the same tokens gives the same snippet, and FTS5
 * cannot look up a few rows of a broad MATCH by rowid without walking the whole match. A private in-memory FTS5 table
 * per tokenizer holds the rows for one transaction, which is rolled back: nothing to delete, and the table is empty
 * again for the next call.
 */
export function snippetsOf({ tokenize, match, rows }: { tokenize: string; match: string; rows: { id: number; text: string }[] }): Map<number, string> {
  if (rows.length === 0) return new Map();
  const t = snippetTable(tokenize);
  t.begin.run();
  try {
    for (const r of rows) t.insert.run(r.id, r.text);
    return new Map((t.read.all(match) as { id: number; s: string }[]).map((r) => [r.id, r.s]));
  } finally {
    t.rollback.run();
  }
}

type SnippetTable = { begin: Database.Statement; insert: Database.Statement; read: Database.Statement; rollback: Database.Statement };

function snippetTable(tokenize: string): SnippetTable {
  const known = snippetTables.get(tokenize);
  if (known) return known;
  const db = (snippetDb ??= new DatabaseCtor(":memory:"));
  const table = `snip_${snippetTables.size}`;
  db.exec(`create virtual table ${table} using fts5(text, tokenize='${tokenize.replaceAll("'", "''")}')`);
  const made = {
    begin: db.prepare("begin"),
    insert: db.prepare(`insert into ${table}(rowid, text) values (?, ?)`),
    read: db.prepare(`select rowid as id, snippet(${table}, 0, '${MARK_OPEN}', '${MARK_CLOSE}', '…', 24) as s from ${table} where ${table} match ?`),
    rollback: db.prepare("rollback"),
  };
  snippetTables.set(tokenize, made);
  return made;
}

let snippetDb: Database.Database | null = null;
const snippetTables = new Map<string, SnippetTable>();
