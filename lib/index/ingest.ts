import type Database from "better-sqlite3";
import { syncChunkEmbeddings } from "./chunk-embeddings";
import { z } from "zod";
import { AppError } from "../errors";
import { chunkDocument, CHUNKING_VERSION, type ChunkKind } from "./chunking";
import { FILE_PREFIXES, kindForPath, normalizeRelativePath } from "./paths";
import { sha256Hex } from "../common";

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

/** UTF-8 text or null for binary. The BOM is kept so byte offsets index the file exactly. */
export function decodeText(bytes: Uint8Array): string | null {
  const head = bytes.subarray(0, 8192);
  if (head.includes(0)) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

type ExistingDoc = { doc_id: number; sha256: string; origin: string; stale: number };

/**
 * The one ingest step for every document (API, memory files, source roots):
 * unchanged sha256 and chunking version → no writes; otherwise the document
 * row is upserted and its chunks replaced, keeping the rowid of every chunk
 * whose id did not change. Runs in a transaction (a savepoint when nested in
 * a reindex), so a document is never half-written.
 */
export function ingestDocument({
  sqlite,
  path,
  origin,
  text,
  mtime,
  kind = kindForPath(path),
}: {
  sqlite: Database.Database;
  path: string;
  origin: "file" | "api";
  text: string;
  mtime: number;
  kind?: ChunkKind;
}): IngestResult {
  const sha256 = sha256Hex(text);
  return sqlite.transaction((): IngestResult => {
    const existing = sqlite
      .prepare(
        `select doc_id, sha256, origin,
           exists(select 1 from chunks c where c.doc_id = d.doc_id and c.chunking_version != ?) as stale
         from documents d where path = ?`,
      )
      .get(CHUNKING_VERSION, path) as ExistingDoc | undefined;
    if (existing && existing.origin !== origin) {
      throw new AppError("conflict", `${path} is already indexed as a ${existing.origin} document`);
    }
    if (existing && existing.sha256 === sha256 && !existing.stale) {
      const n = (sqlite.prepare("select count(*) as n from chunks where doc_id = ?").get(existing.doc_id) as { n: number }).n;
      return { path, docId: existing.doc_id, status: "unchanged", chunks: n, insertedChunkRowids: [], removedChunkRowids: [] };
    }
    const bytes = Buffer.byteLength(text, "utf8");
    const now = Date.now();
    const content = origin === "api" ? text : null;
    let docId: number;
    if (existing) {
      docId = existing.doc_id;
      sqlite
        .prepare("update documents set kind = ?, sha256 = ?, bytes = ?, mtime = ?, content = ?, indexed_at = ? where doc_id = ?")
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
    const old = sqlite.prepare("select id, chunk_id, chunking_version from chunks where doc_id = ?").all(docId) as { id: number; chunk_id: string; chunking_version: number }[];
    const kept = new Set<string>();
    const removedChunkRowids: number[] = [];
    const del = sqlite.prepare("delete from chunks where id = ?");
    for (const o of old) {
      if (wanted.has(o.chunk_id) && o.chunking_version === CHUNKING_VERSION) kept.add(o.chunk_id);
      else {
        del.run(o.id);
        removedChunkRowids.push(o.id);
      }
    }
    const ins = sqlite.prepare(
      "insert into chunks(chunk_id, doc_id, chunk_index, chunk_sha256, chunking_version, start_byte, end_byte, text) values (?, ?, ?, ?, ?, ?, ?, ?)",
    );
    const insertedChunkRowids: number[] = [];
    for (const c of chunks) {
      if (kept.has(c.chunkId)) continue;
      insertedChunkRowids.push(Number(ins.run(c.chunkId, docId, c.chunkIndex, c.chunkSha256, CHUNKING_VERSION, c.startByte, c.endByte, c.text).lastInsertRowid));
    }
    syncChunkEmbeddings(sqlite, { inserted: insertedChunkRowids, removed: removedChunkRowids });
    return { path, docId, status: existing ? "changed" : "added", chunks: chunks.length, insertedChunkRowids, removedChunkRowids };
    // Immediate: a deferred read-then-write fails with SQLITE_BUSY at once (no busy wait) when another process wrote in between.
  }).immediate();
}

/** Remove a document and (by cascade, firing the FTS triggers) its chunks and their vectors. */
export function deleteDocumentByPath({ sqlite, path }: { sqlite: Database.Database; path: string }): boolean {
  return sqlite.transaction(() => {
    const chunkIds = (sqlite.prepare("select c.id from chunks c join documents d on d.doc_id = c.doc_id where d.path = ?").all(path) as { id: number }[]).map((r) => r.id);
    const deleted = sqlite.prepare("delete from documents where path = ?").run(path).changes > 0;
    syncChunkEmbeddings(sqlite, { inserted: [], removed: chunkIds });
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

/** Upsert documents sent by an agent; a batch is one transaction. */
export function putDocuments({ sqlite, input }: { sqlite: Database.Database; input: z.output<typeof putDocumentsSchema> }): IngestResult[] {
  const docs = "documents" in input ? input.documents : [input];
  const paths = new Set<string>();
  for (const d of docs) {
    if (paths.has(d.path)) throw new AppError("invalid_request", `path ${d.path} appears twice in the batch`);
    paths.add(d.path);
  }
  const now = Date.now();
  return sqlite.transaction(() => docs.map((d) => ingestDocument({ sqlite, path: d.path, origin: "api", text: d.content, mtime: now }))).immediate();
}

export function deleteApiDocument({ sqlite, path }: { sqlite: Database.Database; path: string }): void {
  const row = sqlite.prepare("select origin from documents where path = ?").get(path) as { origin: string } | undefined;
  if (!row) throw new AppError("not_found", `no document at ${path}`);
  if (row.origin !== "api") throw new AppError("conflict", `${path} mirrors a file; delete the file (or the memory) instead`);
  deleteDocumentByPath({ sqlite, path });
}

export type DocumentSummary = { docId: number; path: string; origin: string; kind: string; sha256: string; bytes: number; mtime: number; indexedAt: number; chunks: number };

export function listDocumentsByPrefix({
  sqlite,
  prefix = "",
  limit = 100,
  offset = 0,
}: {
  sqlite: Database.Database;
  prefix?: string;
  limit?: number;
  offset?: number;
}): { total: number; documents: DocumentSummary[] } {
  // substr comparison, not LIKE, so `%` and `_` in the prefix are literal.
  const where = "substr(d.path, 1, length(?)) = ?";
  const total = (sqlite.prepare(`select count(*) as n from documents d where ${where}`).get(prefix, prefix) as { n: number }).n;
  const documents = sqlite
    .prepare(
      `select d.doc_id as docId, d.path, d.origin, d.kind, d.sha256, d.bytes, d.mtime, d.indexed_at as indexedAt,
         (select count(*) from chunks c where c.doc_id = d.doc_id) as chunks
       from documents d where ${where} order by d.path limit ? offset ?`,
    )
    .all(prefix, prefix, limit, offset) as DocumentSummary[];
  return { total, documents };
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

export function getChunkByChunkId({ sqlite, chunkId }: { sqlite: Database.Database; chunkId: string }): ChunkDetail {
  const row = sqlite
    .prepare(
      `select c.id, c.chunk_id as chunkId, d.path, d.kind, c.chunk_index as chunkIndex, c.chunk_sha256 as chunkSha256,
         c.chunking_version as chunkingVersion, c.start_byte as startByte, c.end_byte as endByte, c.text
       from chunks c join documents d on d.doc_id = c.doc_id where c.chunk_id = ?`,
    )
    .get(chunkId) as Omit<ChunkDetail, "stale"> | undefined;
  if (!row) throw new AppError("not_found", `no chunk ${chunkId}`);
  return { ...row, stale: row.chunkingVersion !== CHUNKING_VERSION };
}
