import { count, eq, sql } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { count as countRows, read, select, tablePair, type AnyStoreHandle, type On, type Op } from "../db/port";
import { chunks as chunksTable, documents, type ChunkRow, type DocumentRow } from "../db/schema/index";
import * as pgStore from "../db/schema/pg/store";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { syncChunkEmbeddings } from "./chunk-embeddings";
import { writeDocumentFts } from "./document-fts";
import { blankFrontmatter } from "./frontmatter";
import { chunkDocument, CHUNKING_VERSION, type ChunkKind } from "./chunking";
import { FILE_PREFIXES, kindForPath, normalizeRelativePath } from "./paths";
import { sha256Hex } from "../common";
import { withStoreQuota } from "./store-quota";

export type IngestStatus = "added" | "changed" | "unchanged";

export type IngestResult = {
  path: string;
  docId: number;
  status: IngestStatus;
  chunks: number;
  /** Rowids of chunks written by this call (the embed step enqueues these). */
  insertedChunkRowids: number[];
  removedChunkRowids: number[];
};

/**
 * A file's text, or null for binary. UTF-8 first (the BOM kept, so byte
 * offsets index the file exactly); a file that is not valid UTF-8 but reads
 * as text in Latin-1 (no NUL, no control characters but tab, newlines and
 * form feed: what older editors on Windows save) is decoded as Windows-1252.
 * Its index holds the UTF-8 of that text; hashes are of the decoded text.
 */
export function decodeText(bytes: Uint8Array): string | null {
  const head = bytes.subarray(0, 8192);
  if (head.includes(0)) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    for (const b of bytes) if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d) return null;
    return new TextDecoder("windows-1252").decode(bytes);
  }
}

type ExistingDoc = Pick<DocumentRow, "docId" | "sha256" | "origin"> & { stale: number };
type OldChunk = Pick<ChunkRow, "id" | "chunkId" | "chunkingVersion" | "startByte" | "endByte">;

/**
 * The one ingest step for every document (API, memory files, source roots):
 * unchanged sha256 and chunking version → no writes; otherwise the document
 * row is upserted and its chunks replaced, keeping the rowid of every chunk
 * whose id did not change. Runs in a transaction (a savepoint when nested in
 * a reindex), so a document is never half-written.
 */
export function ingestDocument({
  handle,
  path,
  origin,
  text,
  mtime,
  kind = kindForPath(path),
}: {
  handle: StoreHandle;
  path: string;
  origin: "file" | "api";
  text: string;
  mtime: number;
  kind?: ChunkKind;
}): IngestResult {
  const sha256 = sha256Hex(text);
  const { sqlite } = handle;
  return sqlite.transaction((): IngestResult => {
    const existing = sqlite
      .prepare(
        `select doc_id as docId, sha256, origin,
           exists(select 1 from chunks c where c.doc_id = d.doc_id and c.chunking_version != ?) as stale
         from documents d where path = ?`,
      )
      .get(CHUNKING_VERSION, path) as ExistingDoc | undefined;
    if (existing && existing.origin !== origin) {
      throw new AppError("conflict", `${path} is already indexed as a ${existing.origin} document`);
    }
    if (existing && existing.sha256 === sha256 && !existing.stale) {
      const n = handle.db.select({ n: count() }).from(chunksTable).where(eq(chunksTable.docId, existing.docId)).get()?.n ?? 0;
      return { path, docId: existing.docId, status: "unchanged", chunks: n, insertedChunkRowids: [], removedChunkRowids: [] };
    }
    const bytes = Buffer.byteLength(text, "utf8");
    const now = Date.now();
    const content = origin === "api" ? text : null;
    let docId: number;
    if (existing) {
      docId = existing.docId;
      sqlite
        // The file identity (ctime, inode) is the caller's to record: a reindex sets it after the read; other writers leave it unknown.
        .prepare("update documents set kind = ?, sha256 = ?, bytes = ?, mtime = ?, ctime = null, inode = null, content = ?, indexed_at = ? where doc_id = ?")
        .run(kind, sha256, bytes, mtime, content, now, docId);
    } else {
      docId = Number(
        sqlite
          .prepare("insert into documents(path, origin, kind, sha256, bytes, mtime, content, indexed_at) values (?, ?, ?, ?, ?, ?, ?, ?)")
          .run(path, origin, kind, sha256, bytes, mtime, content, now).lastInsertRowid,
      );
    }
    const chunks = chunkDocument({ path, kind, text });
    const wanted = new Set(chunks.map((c) => c.chunkId));
    const old = sqlite.prepare("select id, chunk_id as chunkId, chunking_version as chunkingVersion, start_byte as startByte, end_byte as endByte from chunks where doc_id = ?").all(docId) as OldChunk[];
    const kept = new Map<string, OldChunk>();
    const removedChunkRowids: number[] = [];
    const del = sqlite.prepare("delete from chunks where id = ?");
    for (const o of old) {
      if (wanted.has(o.chunkId) && o.chunkingVersion === CHUNKING_VERSION) kept.set(o.chunkId, o);
      else {
        del.run(o.id);
        removedChunkRowids.push(o.id);
      }
    }
    const ins = sqlite.prepare(
      "insert into chunks(chunk_id, doc_id, chunk_index, chunk_sha256, chunking_version, start_byte, end_byte, text) values (?, ?, ?, ?, ?, ?, ?, ?)",
    );
    const insertedChunkRowids: number[] = [];
    // A kept chunk (same text, index and path) moves when the text before it changed length: its byte range follows it.
    const move = sqlite.prepare("update chunks set start_byte = ?, end_byte = ? where id = ?");
    for (const c of chunks) {
      const k = kept.get(c.chunkId);
      if (k) {
        if (k.startByte !== c.startByte || k.endByte !== c.endByte) move.run(c.startByte, c.endByte, k.id);
        continue;
      }
      insertedChunkRowids.push(Number(ins.run(c.chunkId, docId, c.chunkIndex, c.chunkSha256, CHUNKING_VERSION, c.startByte, c.endByte, c.text).lastInsertRowid));
    }
    // A memory's frontmatter is not in its chunks, nor in its whole-document row.
    writeDocumentFts({ sqlite, docId, path, text: kind === "memory" ? blankFrontmatter(text) : text });
    syncChunkEmbeddings({ handle, inserted: insertedChunkRowids, removed: removedChunkRowids });
    return { path, docId, status: existing ? "changed" : "added", chunks: chunks.length, insertedChunkRowids, removedChunkRowids };
    // Immediate: a deferred read-then-write fails with SQLITE_BUSY at once (no busy wait) when another process wrote in between.
  }).immediate();
}

/** Remove a document and (by cascade, firing the FTS triggers) its chunks and their vectors. */
export function deleteDocumentByPath({ handle, path }: { handle: StoreHandle; path: string }): boolean {
  const { sqlite, db } = handle;
  return sqlite.transaction(() => {
    const chunkIds = db
      .select({ id: chunksTable.id })
      .from(chunksTable)
      .innerJoin(documents, eq(documents.docId, chunksTable.docId))
      .where(eq(documents.path, path))
      .all()
      .map((r) => r.id);
    const deleted = db.delete(documents).where(eq(documents.path, path)).run().changes > 0;
    syncChunkEmbeddings({ handle, inserted: [], removed: chunkIds });
    return deleted;
  }).immediate();
}

// ---- the documents API ----------------------------------------------------

export const apiDocumentPathSchema = z
  .string()
  .min(1)
  .max(512)
  .transform((raw, ctx) => {
    try {
      const p = normalizeRelativePath(raw);
      if (FILE_PREFIXES.some((prefix) => p.startsWith(prefix))) {
        ctx.addIssue({ code: "custom", message: `paths under ${FILE_PREFIXES.join(", ")} belong to files; use the memories API or a source root` });
        return z.NEVER;
      }
      return p;
    } catch (e) {
      ctx.addIssue({ code: "custom", message: e instanceof Error ? e.message : "invalid path" });
      return z.NEVER;
    }
  });

const apiDocumentSchema = z.object({ path: apiDocumentPathSchema, content: z.string().max(4 * 1024 * 1024) }).strict();

export const putDocumentsSchema = z.union([
  apiDocumentSchema,
  z.object({ documents: z.array(apiDocumentSchema).min(1).max(500) }).strict(),
]);

/** The documents of a PUT (one or a batch); a path twice in one batch is refused (which copy would win?). */
export function documentsOfBatch(input: z.output<typeof putDocumentsSchema>) {
  const docs = "documents" in input ? input.documents : [input];
  const paths = new Set<string>();
  for (const d of docs) {
    if (paths.has(d.path)) throw new AppError("invalid_request", `path ${d.path} appears twice in the batch`);
    paths.add(d.path);
  }
  return docs;
}

/** Upsert documents sent by an agent; a batch is one transaction, audited as one entry. */
export function putDocuments({ handle, input, actor }: { handle: StoreHandle; input: z.output<typeof putDocumentsSchema>; actor: string }): IngestResult[] {
  const docs = documentsOfBatch(input);
  const now = Date.now();
  return handle.sqlite
    .transaction(() => {
      const results = withStoreQuota({ handle, write: () => docs.map((d) => ingestDocument({ handle, path: d.path, origin: "api", text: d.content, mtime: now })) });
      const changed = results.filter((r) => r.status !== "unchanged").map((r) => r.path);
      // An unchanged re-send writes nothing, so there is nothing to audit.
      if (changed.length > 0) {
        appendAudit({ actor, action: "documents.put", target: `store:${handle.store}`, details: { paths: changed.slice(0, 20), changed: changed.length, unchanged: results.length - changed.length } });
      }
      return results;
    })
    .immediate();
}

export function deleteApiDocument({ handle, path, actor }: { handle: StoreHandle; path: string; actor: string }): void {
  const row = handle.db.select({ origin: documents.origin }).from(documents).where(eq(documents.path, path)).get();
  if (!row) throw new AppError("not_found", `no document at ${path}`);
  if (row.origin !== "api") throw new AppError("conflict", `${path} mirrors a file; delete the file (or the memory) instead`);
  handle.sqlite
    .transaction(() => {
      deleteDocumentByPath({ handle, path });
      appendAudit({ actor, action: "document.delete", target: `store:${handle.store}/document:${path}` });
    })
    .immediate();
}

const DOCUMENTS = tablePair(documents, pgStore.documents);
const CHUNKS = tablePair(chunksTable, pgStore.chunks);

export type DocumentSummary = { docId: number; path: string; origin: string; kind: string; sha256: string; bytes: number; mtime: number; indexedAt: number; chunks: number };

/** A store's documents under `prefix` (path order, paged) and how many there are, on either engine. */
export function listDocumentsByPrefix<H extends AnyStoreHandle>({ handle, prefix = "", limit = 100, offset = 0 }: { handle: H; prefix?: string; limit?: number; offset?: number }): On<H, { total: number; documents: DocumentSummary[] }> {
  const op = function* (): Op<{ total: number; documents: DocumentSummary[] }> {
    // substr comparison, not LIKE, so `%` and `_` in the prefix are literal (`|| ''` gives the parameter a text type on PostgreSQL).
    const underPrefix = (d: typeof documents) => sql`substr(${d.path}, 1, length(${prefix} || '')) = ${prefix} || ''`;
    const total = yield* countRows(DOCUMENTS, (d) => underPrefix(d as typeof documents));
    const rows = yield* select({ d: DOCUMENTS }, (db, { d }, q) =>
      db
        .select({
          docId: d.docId,
          path: d.path,
          origin: d.origin,
          kind: d.kind,
          sha256: d.sha256,
          bytes: d.bytes,
          mtime: d.mtime,
          indexedAt: d.indexedAt,
          // The outer table is named in full: in a select list Drizzle renders a column unqualified, which the subquery would bind to c.
          chunks: sql<number>`(select count(*) from chunks c where c.doc_id = documents.doc_id)`.mapWith(Number),
        })
        .from(d)
        .where(underPrefix(d))
        .orderBy(q.bytewise(d.path))
        .limit(limit)
        .offset(offset),
    );
    return { total, documents: rows };
  };
  return read(handle, op(), { snapshot: true });
}

export const chunkIdSchema = z.string().regex(/^[0-9a-f]{32}$/, "chunk ids are 32 hex characters");

export type ChunkDetail = {
  id: number;
  chunkId: string;
  path: string;
  kind: string;
  chunkIndex: number;
  chunkSha256: string;
  chunkingVersion: number;
  stale: boolean;
  startByte: number;
  endByte: number;
  text: string;
};

export function getChunkByChunkId<H extends AnyStoreHandle>({ handle, chunkId }: { handle: H; chunkId: string }): On<H, ChunkDetail> {
  const op = function* (): Op<ChunkDetail> {
    const [row] = yield* select({ c: CHUNKS, d: DOCUMENTS }, (db, { c, d }) =>
      db
        .select({
          id: c.id,
          chunkId: c.chunkId,
          path: d.path,
          kind: d.kind,
          chunkIndex: c.chunkIndex,
          chunkSha256: c.chunkSha256,
          chunkingVersion: c.chunkingVersion,
          startByte: c.startByte,
          endByte: c.endByte,
          text: c.text,
        })
        .from(c)
        .innerJoin(d, eq(d.docId, c.docId))
        .where(eq(c.chunkId, chunkId)),
    );
    if (!row) throw new AppError("not_found", `no chunk ${chunkId}`);
    return { ...row, stale: row.chunkingVersion !== CHUNKING_VERSION };
  };
  return read(handle, op());
}
