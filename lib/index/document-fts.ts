import type Database from "better-sqlite3";
import type { StoreHandle } from "../db/connection";
import { preparedOnce } from "../db/statements";
import { rebuildMarkers, rebuildProgress, setRebuildRange, type MarkerRange } from "./rebuild-markers";

/**
 * The whole-document full-text index (`documents_fts`): one row per document (path words, title heading, whole text,
 * unstemmed) for group=document's whole-document bm25. Ingest writes a row, a trigger deletes it, and rows of older
 * documents are filled by the resumable rebuild in fts-rebuild.ts.
 */

/** A chunk of a document as the index holds it: its byte range in the document and its text. */
export type ChunkSpan = { startByte: number; endByte: number; text: string };

/**
 * A document's bytes from `lo` to `hi`: its stored content (API documents),
 * or rebuilt from the chunks that cover it (they overlap; runs of whitespace
 * between chunks are not stored and come back as newlines).
 */
export function documentBytes({ content, spans, lo, hi }: { content: string | null; spans: ChunkSpan[]; lo: number; hi: number }): Buffer {
  if (content !== null) return Buffer.from(content, "utf8").subarray(lo, hi);
  const out = Buffer.alloc(hi - lo, "\n");
  for (const s of spans) Buffer.from(s.text, "utf8").copy(out, s.startByte - lo);
  return out;
}

/** The title heading of a document's text: its first `#` heading, else its first line (≤ 200 characters). */
export function documentTitle(text: string): string {
  return (text.match(/^\s{0,3}#{1,6}\s+(.+)$/m)?.[1] ?? text.split("\n", 1)[0]).slice(0, 200);
}

/** Write (or replace) a document's row in the whole-document index. */
export function writeDocumentFts({ sqlite, docId, path, text }: { sqlite: Database.Database; docId: number; path: string; text: string }): void {
  preparedOnce({ sqlite, sql: "insert or replace into documents_fts(rowid, path, title, body) values (?, ?, ?, ?)" }).run(docId, path, documentTitle(text), text);
  // The row is logged for the table's word lists, when it has them (lib/retrieval/word-lists.ts; deletes: a trigger).
  preparedOnce({ sqlite, sql: "insert into fts_changes(tbl, rid) select 'documents_fts', ? where exists (select 1 from fts_word_lists_meta where tbl = 'documents_fts')" }).run(docId);
}

type DocumentRow = { docId: number; path: string; bytes: number; content: string | null };

/** A document's text as its documents_fts row was written from it: its stored content, or rebuilt from its chunks. */
function documentText(sqlite: Database.Database, d: DocumentRow): string {
  if (d.content !== null) return documentBytes({ content: d.content, spans: [], lo: 0, hi: d.bytes }).toString("utf8");
  const spans = preparedOnce({ sqlite, sql: "select start_byte as startByte, end_byte as endByte, text from chunks where doc_id = ? order by start_byte" }).all(d.docId) as ChunkSpan[];
  return documentBytes({ content: null, spans, lo: 0, hi: Math.max(0, ...spans.map((s) => s.endByte)) }).toString("utf8");
}

/**
 * Most bytes of documents whose documents_fts values are rebuilt for one search (documentFtsValues): tokenizing costs
 * follow the bytes; past it the caller ranks the index's own best documents.
 */
export const MAX_RESCORED_DOCUMENT_BYTES = 512 * 2 ** 10;

/**
 * The documents_fts values (path, title, body) of the given documents, as
 * their rows were written, for scoring them from their text
 * (bm25OfRows `texts`); null when they add up to more than `maxBytes`.
 */
export function documentFtsValues({ sqlite, docIds, maxBytes = MAX_RESCORED_DOCUMENT_BYTES }: { sqlite: Database.Database; docIds: number[]; maxBytes?: number }): Map<number, (string | null)[]> | null {
  const ids = JSON.stringify(docIds);
  // Their size first: a declined call reads no text.
  if ((preparedOnce({ sqlite, sql: "select coalesce(sum(bytes), 0) from documents where doc_id in (select value from json_each(?))" }).pluck().get(ids) as number) > maxBytes) return null;
  const docs = preparedOnce({ sqlite, sql: "select doc_id as docId, path, bytes, content from documents where doc_id in (select value from json_each(?))" }).all(ids) as DocumentRow[];
  const out = new Map<number, (string | null)[]>();
  for (const d of docs) {
    const text = documentText(sqlite, d);
    out.set(d.docId, [d.path, documentTitle(text), text]);
  }
  return out;
}

function rebuildRange(sqlite: Database.Database): MarkerRange | null {
  return rebuildMarkers(sqlite).documents;
}

/** Whether the whole-document index holds every document (no rebuild pending): search uses it only then, fts-rebuild.ts resumes it otherwise. */
export function documentFtsReady(handle: StoreHandle): boolean {
  return rebuildRange(handle.sqlite) === null;
}

/** Documents the pending rebuild has indexed and has to index (0 / 0 when none is pending). */
export function documentFtsRebuildState(handle: StoreHandle): { pending: boolean; done: number; total: number } {
  return rebuildProgress({ sqlite: handle.sqlite, range: rebuildRange(handle.sqlite), countUpTo: "select count(*) from documents where doc_id <= ?" });
}

/**
 * Index the next `batchSize` documents of a pending rebuild in the calling
 * transaction (the caller holds the write lock) and move the marker past
 * them. Writing a row is idempotent, so a document ingest wrote meanwhile is
 * only written again. Returns false when nothing is left (markers removed).
 */
export function rebuildDocumentFtsBatchInTransaction({ sqlite, batchSize }: { sqlite: Database.Database; batchSize: number }): boolean {
  const range = rebuildRange(sqlite);
  if (!range) return false;
  const docs = sqlite
    .prepare("select doc_id as docId, path, bytes, content from documents where doc_id > ? and doc_id <= ? order by doc_id limit ?")
    .all(range.through, range.target, batchSize) as DocumentRow[];
  if (docs.length === 0) {
    setRebuildRange({ sqlite, which: "documents", range: null });
    return false;
  }
  for (const d of docs) writeDocumentFts({ sqlite, docId: d.docId, path: d.path, text: documentText(sqlite, d) });
  setRebuildRange({ sqlite, which: "documents", range: { ...range, through: docs.at(-1)!.docId } });
  return true;
}

/** Empty the whole-document index and mark every document for the rebuild (with `reindex --fts-only`). */
export function restartDocumentFtsRebuildInTransaction({ sqlite }: { sqlite: Database.Database }): void {
  sqlite.prepare("insert into documents_fts(documents_fts) values ('delete-all')").run();
  setRebuildRange({ sqlite, which: "documents", range: { through: 0, target: sqlite.prepare("select coalesce(max(doc_id), 0) from documents").pluck().get() as number } });
}
