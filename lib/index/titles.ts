import { and, eq, inArray } from "drizzle-orm";
import { read, select, tablePair, type AnyStoreHandle, type On } from "../db/port";
import { chunks, documents } from "../db/schema/index";
import * as pgStore from "../db/schema/pg/store";

/** A title is a line a person scans: longer ones are cut at a word. */
const TITLE_MAX_CHARS = 90;

function cutAtWord(text: string): string {
  if (text.length <= TITLE_MAX_CHARS) return text;
  const cut = text.slice(0, TITLE_MAX_CHARS);
  const space = cut.lastIndexOf(" ");
  return `${(space > TITLE_MAX_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/**
 * What a result list calls a document: its first markdown heading, else its
 * first line of text (a memory's frontmatter is blank lines in its chunks),
 * else its file name. Source code is named by its file: its first line is
 * an import, not a title.
 */
export function documentTitleOf({ path, kind, firstChunk }: { path: string; kind: string; firstChunk: string | null }): string {
  const fileName = path.slice(path.lastIndexOf("/") + 1);
  if (kind === "code" || !firstChunk) return fileName;
  const heading = firstChunk.match(/^\s{0,3}#{1,6}[ \t]+(.+?)[ \t#]*$/m)?.[1];
  const line = heading ?? firstChunk.split("\n").find((l) => l.trim() !== "" && !/^(---|```|<)/.test(l.trim()));
  const words = line
    ?.replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/(\*\*|__|`)/g, "")
    .replace(/^\s*(?:[-*+>]|\d+\.)\s+/, "")
    .replace(/\s+/g, " ")
    .trim();
  return words ? cutAtWord(words) : fileName;
}

const titleTables = { documents: tablePair(documents, pgStore.documents), chunks: tablePair(chunks, pgStore.chunks) };

/** The titles of some documents of a store, by path (one query over their first chunks); unknown paths are left out. */
export function listDocumentTitles<H extends AnyStoreHandle>({ handle, paths }: { handle: H; paths: string[] }): On<H, Map<string, string>> {
  return read(handle, function* () {
    if (paths.length === 0) return new Map<string, string>();
    const rows = yield* select(titleTables, (db, t) =>
      db
        .select({ path: t.documents.path, kind: t.documents.kind, text: t.chunks.text })
        .from(t.documents)
        .leftJoin(t.chunks, and(eq(t.chunks.docId, t.documents.docId), eq(t.chunks.chunkIndex, 0)))
        .where(inArray(t.documents.path, [...new Set(paths)])),
    );
    return new Map(rows.map((r) => [r.path, documentTitleOf({ path: r.path, kind: r.kind, firstChunk: r.text })]));
  });
}
