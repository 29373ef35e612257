import { eq, inArray, sql } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { count as countRows, dialect, engineStep, read, row, select, sqlRows, sqlRun, tablePair, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import { chunks as chunksTable, documents } from "../db/schema/index";
import * as pgStore from "../db/schema/pg/store";
import { getConfig } from "../config";
import { assertAuditRoom } from "../governance/limits";
import { AppError } from "../errors";
import { CHUNK_KIND } from "./chunk-embeddings";
import { forgetEmbeddings } from "../embed/vector-index";
import { writeDocumentFts } from "./document-fts";
import { enqueueEmbeddingsOp } from "../embed/queue";
import { arrayLiteral, chunkTermsOf, rowTermsOf, writeChunkTermsPg, type ChunkTerms } from "./engines/pg-fulltext";
import { DOCUMENT_WORDS, documentWordValues, writeDocumentTermsPg } from "./engines/pg-words";
import { audit } from "./engine-steps";
import { blankFrontmatter } from "./frontmatter";
import { chunkDocument, CHUNKING_VERSION, type ChunkKind } from "./chunking";
import { DERIVED_COST, documentFreedMostSql, newDocumentLeastBytes } from "../db/store-usage";
import { FILE_PREFIXES, kindForPath, normalizeRelativePath } from "./paths";
import { sha256Hex } from "../common";
import { pushTo } from "../collections";
import { preparedOnce } from "../db/statements";
import { withinStoreQuota } from "./store-quota";

export type IngestResult = {
  path: string;
  doc_id: number;
  status: "added" | "changed" | "unchanged";
  chunks: number;
  /** Rowids of chunks written by this call (the embed step enqueues these). */
  inserted_chunk_rowids: number[];
  removed_chunk_rowids: number[];
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

const DOCUMENTS = tablePair(documents, pgStore.documents);
const CHUNKS = tablePair(chunksTable, pgStore.chunks);

/** Rows per multi-row statement: well under either engine's limit of bound parameters (9 per chunk). */
const BATCH = 500;

function slices<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += BATCH) out.push(items.slice(i, i + BATCH));
  return out;
}

export type IngestInput = { path: string; origin: "file" | "api"; text: string; mtime: number; kind?: ChunkKind };

/**
 * The one ingest step for every document (API, memory files, source roots),
 * on either engine (lib/db/port.ts): unchanged sha256 and chunking version →
 * no writes; otherwise the document row is upserted and its chunks replaced,
 * keeping the id of every chunk whose chunk_id did not change (its vectors
 * stay joined). Many documents take a handful of statements: the existing
 * rows are read in one (locked on PostgreSQL, in path order, so two batches
 * never deadlock), new rows inserted in one, chunks replaced together. Runs
 * in the caller's write (a savepoint when nested on SQLite), so a document is
 * never half-written. A path another PostgreSQL transaction inserted meanwhile
 * (ON CONFLICT) is ingested again as existing. Results in the order of `docs`.
 */
export function* ingestDocumentsOp({ docs, now = Date.now() }: { docs: IngestInput[]; now?: number }): Op<IngestResult[]> {
  const ordered = [...docs].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const forUpdate = (yield* dialect()) === "pg" ? sql` for update` : sql``;
  const locked = new Map<string, { docId: number; sha256: string; origin: string }>();
  for (const slice of slices(ordered)) {
    const found = yield* sqlRows<{ docId: number | string; path: string; sha256: string; origin: string }>(
      sql`select doc_id as "docId", path, sha256, origin from documents where path in ${slice.map((d) => d.path)} order by path${forUpdate}`,
    );
    for (const r of found) locked.set(r.path, { ...r, docId: Number(r.docId) });
  }
  const sameText = ordered.filter((d) => locked.get(d.path)?.sha256 === sha256Hex(d.text)).map((d) => locked.get(d.path)!.docId);
  const counts = new Map<number, { n: number; stale: boolean }>();
  for (const ids of slices(sameText)) {
    const found = yield* sqlRows<{ docId: number | string; n: number | string; stale: number | string }>(
      sql`select doc_id as "docId", count(*) as n, max(case when chunking_version <> ${CHUNKING_VERSION} then 1 else 0 end) as stale from chunks where doc_id in ${ids} group by doc_id`,
    );
    for (const r of found) counts.set(Number(r.docId), { n: Number(r.n), stale: Number(r.stale) === 1 });
  }
  const results = new Map<string, IngestResult>();
  const plans: ChunkPlan[] = [];
  const fresh: IngestInput[] = [];
  const keepFileIdentity = (yield* dialect()) === "pg" ? sql`` : sql`, ctime = null, inode = null`;
  for (const d of ordered) {
    const kind = d.kind ?? kindForPath(d.path);
    const existing = locked.get(d.path);
    if (!existing) {
      fresh.push(d);
      continue;
    }
    if (existing.origin !== d.origin) throw new AppError("conflict", `${d.path} is already indexed as a ${existing.origin} document`);
    const c = counts.get(existing.docId);
    if (existing.sha256 === sha256Hex(d.text) && !c?.stale) {
      results.set(d.path, { path: d.path, doc_id: existing.docId, status: "unchanged", chunks: c?.n ?? 0, inserted_chunk_rowids: [], removed_chunk_rowids: [] });
      continue;
    }
    // The file identity (ctime, inode; SQLite only) is the caller's to record: a reindex sets it after the read; other writers leave it unknown.
    yield* sqlRun(
      sql`update documents set kind = ${kind}, sha256 = ${sha256Hex(d.text)}, bytes = ${Buffer.byteLength(d.text, "utf8")}, mtime = ${d.mtime}, content = ${d.origin === "api" ? d.text : null}, indexed_at = ${now}${keepFileIdentity} where doc_id = ${existing.docId}`,
    );
    plans.push({ path: d.path, docId: existing.docId, kind, text: d.text, status: "changed", fresh: false });
  }
  const raced: IngestInput[] = [];
  for (const slice of slices(fresh)) {
    const values = slice.map((d) => sql`(${d.path}, ${d.origin}, ${d.kind ?? kindForPath(d.path)}, ${sha256Hex(d.text)}, ${Buffer.byteLength(d.text, "utf8")}, ${d.mtime}, ${d.origin === "api" ? d.text : null}, ${now})`);
    const inserted = yield* sqlRows<{ docId: number | string; path: string }>(
      sql`insert into documents (path, origin, kind, sha256, bytes, mtime, content, indexed_at) values ${sql.join(values, sql`, `)} on conflict (path) do nothing returning doc_id as "docId", path`,
    );
    const ids = new Map(inserted.map((r) => [r.path, Number(r.docId)]));
    for (const d of slice) {
      const docId = ids.get(d.path);
      if (docId === undefined) raced.push(d);
      else plans.push({ path: d.path, docId, kind: d.kind ?? kindForPath(d.path), text: d.text, status: "added", fresh: true });
    }
  }
  for (const r of yield* replaceChunks(plans)) results.set(r.path, r);
  // No row: another transaction inserted this path first and has committed (the unique index waited for it): now it is an existing row.
  if (raced.length > 0) for (const r of yield* ingestDocumentsOp({ docs: raced, now })) results.set(r.path, r);
  return docs.map((d) => results.get(d.path)!);
}

type ChunkPlan = { path: string; docId: number; kind: ChunkKind; text: string; status: "added" | "changed"; /** Just inserted: it has no chunks yet. */ fresh: boolean };
type NewChunk = typeof chunksTable.$inferInsert;

/**
 * Replace the chunks of documents whose rows are written: chunks whose
 * chunk_id (path, index, content, chunking version) is unchanged keep their
 * id; the others are deleted and the new ones inserted, in a few statements
 * for the whole set (one read of the old chunks, one delete, multi-row inserts).
 */
function* replaceChunks(docs: ChunkPlan[]): Op<IngestResult[]> {
  const withOld = docs.filter((d) => !d.fresh).map((d) => d.docId);
  const oldByDoc = new Map<number, { id: number; chunkId: string; chunkingVersion: number; startByte: number; endByte: number }[]>();
  for (const ids of slices(withOld)) {
    const old = yield* select({ c: CHUNKS }, (db, { c }) =>
      db.select({ id: c.id, docId: c.docId, chunkId: c.chunkId, chunkingVersion: c.chunkingVersion, startByte: c.startByte, endByte: c.endByte }).from(c).where(inArray(c.docId, ids)),
    );
    for (const o of old) pushTo(oldByDoc, o.docId, o);
  }
  const results: IngestResult[] = [];
  const rows: NewChunk[] = [];
  const owner = new Map<string, IngestResult>();
  const moved: { id: number; startByte: number; endByte: number }[] = [];
  for (const d of docs) {
    const chunks = chunkDocument({ path: d.path, kind: d.kind, text: d.text });
    const wanted = new Set(chunks.map((c) => c.chunkId));
    const kept = new Map<string, { id: number; startByte: number; endByte: number }>();
    const result: IngestResult = { path: d.path, doc_id: d.docId, status: d.status, chunks: chunks.length, inserted_chunk_rowids: [], removed_chunk_rowids: [] };
    for (const o of oldByDoc.get(d.docId) ?? []) {
      if (wanted.has(o.chunkId) && o.chunkingVersion === CHUNKING_VERSION) kept.set(o.chunkId, o);
      else result.removed_chunk_rowids.push(o.id);
    }
    // A kept chunk's index never collides with a new one: a chunk id covers its index.
    for (const c of chunks) {
      const k = kept.get(c.chunkId);
      if (k) {
        // A kept chunk moves when the text before it changed length: its byte range follows it.
        if (k.startByte !== c.startByte || k.endByte !== c.endByte) moved.push({ id: k.id, startByte: c.startByte, endByte: c.endByte });
        continue;
      }
      rows.push({ chunkId: c.chunkId, docId: d.docId, chunkIndex: c.chunkIndex, chunkSha256: c.chunkSha256, chunkingVersion: CHUNKING_VERSION, startByte: c.startByte, endByte: c.endByte, text: c.text });
      owner.set(c.chunkId, result);
    }
    results.push(result);
  }
  const removed = results.flatMap((r) => r.removed_chunk_rowids);
  yield* deleteChunks(removed);
  yield* moveChunks(moved);
  const inserted: { id: number; chunkId: string; chunkSha256: string }[] = [];
  for (const slice of slices(rows)) inserted.push(...(yield* insertChunks(slice)));
  for (const r of inserted) owner.get(r.chunkId)!.inserted_chunk_rowids.push(r.id);
  // New chunks wait for their vector in the same commit (write-behind: ingest never waits for the provider).
  yield* enqueueEmbeddingsOp({ items: inserted.map((c) => ({ kind: CHUNK_KIND, refId: c.id, inputHash: c.chunkSha256 })) });
  yield* documentsWritten(docs);
  return results;
}

// ---- what each engine does beside the rows: full-text statistics, vectors ---------------

/** Remove chunks (with their full-text rows: SQLite's by trigger, a statement each as FTS5 takes them best; PostgreSQL's bm25 statistics by trigger). */
function deleteChunks(ids: number[]): Op<void> {
  return engineStep({
    sqlite: (h) => {
      const del = preparedOnce({ sqlite: h.sqlite, sql: "delete from chunks where id = ?" });
      for (const id of ids) del.run(id);
      forgetChunkVectors(h, ids);
    },
    pg: async (tx) => {
      for (const slice of slices(ids)) await tx.execute(sql`delete from chunks where id in ${slice}`);
    },
  });
}

/** SQLite's vectors and queue rows of removed chunks go by hand, before any new chunk can take a removed one's rowid (PostgreSQL's go by cascade). */
const forgetChunkVectors = (handle: StoreHandle, ids: number[]) => forgetEmbeddings({ handle, items: ids.map((refId) => ({ kind: CHUNK_KIND, refId })) });

/** Kept chunks' new byte ranges: a statement each on SQLite, one for the set on PostgreSQL. */
function moveChunks(moved: { id: number; startByte: number; endByte: number }[]): Op<void> {
  return engineStep({
    sqlite: (h) => {
      const move = preparedOnce({ sqlite: h.sqlite, sql: "update chunks set start_byte = ?, end_byte = ? where id = ?" });
      for (const m of moved) move.run(m.startByte, m.endByte, m.id);
    },
    pg: async (tx) => {
      for (const slice of slices(moved)) {
        const values = sql.join(slice.map((m) => sql`(${m.id}::bigint, ${m.startByte}::int, ${m.endByte}::int)`), sql`, `);
        await tx.execute(sql`update chunks as c set start_byte = v.s, end_byte = v.e from (values ${values}) as v(id, s, e) where c.id = v.id`);
      }
    },
  });
}

/**
 * Insert new chunks. SQLite's chunks_fts follows by trigger; on PostgreSQL
 * each chunk's FTS5 tokens are made here and stored in the same transaction
 * (engines/pg-fulltext.ts), and the chunks are queued for their vectors.
 */
function insertChunks(rows: NewChunk[]): Op<{ id: number; chunkId: string; chunkSha256: string }[]> {
  return engineStep({
    sqlite: (h) => {
      const insert = preparedOnce({ sqlite: h.sqlite, sql: "insert into chunks(chunk_id, doc_id, chunk_index, chunk_sha256, chunking_version, start_byte, end_byte, text) values (?, ?, ?, ?, ?, ?, ?, ?)" });
      return rows.map((c) => ({ id: Number(insert.run(c.chunkId, c.docId, c.chunkIndex, c.chunkSha256, c.chunkingVersion, c.startByte, c.endByte, c.text).lastInsertRowid), chunkId: c.chunkId, chunkSha256: c.chunkSha256 }));
    },
    pg: async (tx) => {
      const terms = new Map<string, ChunkTerms>();
      const values = chunkTermsOf(rows.map((r) => r.text)).map((t, j) => {
        terms.set(rows[j].chunkId, t);
        return { ...rows[j], ftsLen: t.len };
      });
      const inserted = await tx.insert(pgStore.chunks).values(values).returning({ id: pgStore.chunks.id, chunkId: pgStore.chunks.chunkId, chunkSha256: pgStore.chunks.chunkSha256 });
      await writeChunkTermsPg({ tx, chunks: inserted.map((r) => ({ id: r.id, terms: terms.get(r.chunkId)! })) });
      return inserted;
    },
  });
}

/**
 * After the chunks: the whole-document index (SQLite's documents_fts row;
 * PostgreSQL's document word statistics, after the chunks': every writer
 * takes the chunk totals first). A memory's frontmatter is not in its
 * whole-document row.
 */
function documentsWritten(docs: ChunkPlan[]): Op<void> {
  return engineStep({
    sqlite: (handle) => {
      for (const d of docs) writeDocumentFts({ sqlite: handle.sqlite, docId: d.docId, path: d.path, text: d.kind === "memory" ? blankFrontmatter(d.text) : d.text });
    },
    pg: (tx) => writeDocumentTermsPg({ tx, docs }),
  });
}

/** Remove a document and (by cascade, with the full-text rows by trigger) its chunks and their vectors (SQLite's vec0 rows by hand). */
export function* deleteDocumentOp(path: string): Op<boolean> {
  const chunkIds = (yield* sqlRows<{ id: number | string }>(sql`select c.id from chunks c join documents d on d.doc_id = c.doc_id where d.path = ${path}`)).map((r) => Number(r.id));
  const deleted = yield* sqlRows<{ docId: number }>(sql`delete from documents where path = ${path} returning doc_id as "docId"`);
  yield* engineStep({ sqlite: (handle) => forgetChunkVectors(handle, chunkIds), pg: async () => undefined });
  return deleted.length > 0;
}

/** Ingest one document (SQLite, synchronously; nested in the caller's transaction as a savepoint). */
export function ingestDocument({ handle, ...doc }: IngestInput & { handle: StoreHandle }): IngestResult {
  return write(handle, ingestDocumentsOp({ docs: [doc] }))[0];
}

export function deleteDocumentByPath({ handle, path }: { handle: StoreHandle; path: string }): boolean {
  return write(handle, deleteDocumentOp(path));
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
function documentsOfBatch(input: z.output<typeof putDocumentsSchema>) {
  const docs = "documents" in input ? input.documents : [input];
  const paths = new Set<string>();
  for (const d of docs) {
    if (paths.has(d.path)) throw new AppError("invalid_request", `path ${d.path} appears twice in the batch`);
    paths.add(d.path);
  }
  return docs;
}

/**
 * Refuse, before any write, a document that would split into more than DUALMIND_MAX_CHUNKS_PER_DOCUMENT chunks,
 * or a request whose documents would together make more than DUALMIND_MAX_CHUNKS_PER_REQUEST (422 naming it).
 */
function assertChunksWithinLimit(docs: { path: string; content: string }[]): void {
  const { maxChunksPerDocument: max, maxChunksPerRequest } = getConfig().limits;
  let total = 0;
  for (const d of docs) {
    const n = chunkDocument({ path: d.path, kind: kindForPath(d.path), text: d.content }).length;
    if (n > max) {
      throw new AppError("unprocessable", `document ${d.path} would split into ${n} chunks, past the most of ${max} (limit DUALMIND_MAX_CHUNKS_PER_DOCUMENT): split it into smaller documents or join its short lines`, [
        { path: "content", message: "too many chunks", limit: "DUALMIND_MAX_CHUNKS_PER_DOCUMENT" },
      ]);
    }
    total += n;
    if (total > maxChunksPerRequest) {
      throw new AppError("unprocessable", `the request's documents would split into more than ${maxChunksPerRequest} chunks together (limit DUALMIND_MAX_CHUNKS_PER_REQUEST): send them in smaller requests`, [
        { path: "documents", message: "too many chunks in one request", limit: "DUALMIND_MAX_CHUNKS_PER_REQUEST" },
      ]);
    }
  }
}

/**
 * What writing documents grows their store by at least (lib/db/store-usage.ts), on either engine: their new rows'
 * least bytes, less at most what the rows they replace free (`freeing`: the documents at those paths, by default
 * their own; one query for the whole batch).
 */
export function* documentsLeastGrowth({ docs, freeing = docs.map((d) => d.path) }: { docs: { path: string; text: string }[]; freeing?: string[] }): Op<number> {
  if (docs.length === 0) return 0;
  const engine = yield* dialect();
  const chunkTexts = docs.map((d) => chunkDocument({ path: d.path, kind: kindForPath(d.path), text: d.text }).map((c) => c.text));
  let least = docs.reduce((n, d, i) => n + newDocumentLeastBytes({ engine, path: d.path, contentBytes: Buffer.byteLength(d.text, "utf8"), chunkTexts: chunkTexts[i] }), 0);
  const paths = sql.join(freeing.map((p) => sql`${p}`), sql`, `);
  const query = documentFreedMostSql(engine).split("?");
  const [row] = yield* sqlRows<{ freed: unknown }>(sql.join(query.map((part, i) => (i === 0 ? sql.raw(part) : sql`${paths}${sql.raw(part)}`)), sql``));
  if (engine === "pg") least += yield* postingsLeastBytes({ docs, chunkTexts: chunkTexts.flat() });
  return least - Number(row?.freed ?? 0);
}

/**
 * PostgreSQL's per-word rows a write adds at least (most of what text of words that never repeat takes): a posting
 * per distinct word of each chunk and of each document's whole-document index, tokenized as the write will, and a
 * term row per word the store does not hold yet.
 */
function* postingsLeastBytes({ docs, chunkTexts }: { docs: { path: string; text: string }[]; chunkTexts: string[] }): Op<number> {
  const cost = DERIVED_COST.pg.postings;
  const chunkTerms = chunkTermsOf(chunkTexts);
  const docTerms = rowTermsOf({ tokenize: DOCUMENT_WORDS.tokenize, columns: DOCUMENT_WORDS.columns, rows: docs.map((d) => documentWordValues({ path: d.path, kind: kindForPath(d.path), text: d.text })) });
  const postings = (terms: ChunkTerms[]) => terms.reduce((n, t) => n + t.tf.size, 0);
  const words = (terms: ChunkTerms[]) => arrayLiteral([...new Set(terms.flatMap((t) => [...t.tf.keys()]))]);
  const [fresh] = yield* sqlRows<{ fts: unknown; word: unknown }>(
    sql`select (select count(*) from unnest(${words(chunkTerms)}::text[]) u(t) where not exists (select 1 from fts_terms f where f.term = u.t)) as fts,
      (select count(*) from unnest(${words(docTerms)}::text[]) u(t) where not exists (select 1 from word_terms w where w.tbl = ${DOCUMENT_WORDS.tbl} and w.term = u.t)) as word`,
  );
  return postings(chunkTerms) * cost.fts_postings + postings(docTerms) * cost.word_postings + Number(fresh?.fts ?? 0) * cost.fts_terms + Number(fresh?.word ?? 0) * cost.word_terms;
}

/** Upsert documents sent by an agent; a batch is one transaction, audited as one entry. */
export function putDocuments<H extends AnyStoreHandle>({ handle, input, actor }: { handle: H; input: z.output<typeof putDocumentsSchema>; actor: string }): On<H, IngestResult[]> {
  const docs = documentsOfBatch(input);
  assertChunksWithinLimit(docs);
  const now = Date.now();
  const op = function* (): Op<IngestResult[]> {
    // Refused before any work when its audit row would be (a refused write's index entries outlive its rollback on PostgreSQL).
    yield* assertAuditRoom({ actor });
    const adds = () => documentsLeastGrowth({ docs: docs.map((d) => ({ path: d.path, text: d.content })) });
    const results = yield* withinStoreQuota({ store: handle.store, adds, op: ingestDocumentsOp({ docs: docs.map((d) => ({ path: d.path, origin: "api", text: d.content, mtime: now })), now }) });
    const changed = results.filter((r) => r.status !== "unchanged").map((r) => r.path);
    // An unchanged re-send writes nothing, so there is nothing to audit.
    if (changed.length > 0) {
      yield* audit({ actor, action: "documents.put", target: `store:${handle.store}`, details: { paths: changed.slice(0, 20), changed: changed.length, unchanged: results.length - changed.length } });
    }
    return results;
  };
  return write(handle, op());
}

export function deleteApiDocument<H extends AnyStoreHandle>({ handle, path, actor }: { handle: H; path: string; actor: string }): On<H, void> {
  const op = function* (): Op<void> {
    const found = yield* row(DOCUMENTS, (d) => eq(d.path, path), { lock: "update" });
    if (!found) throw new AppError("not_found", `no document at ${path}`);
    if (found.origin !== "api") throw new AppError("conflict", `${path} mirrors ${(yield* dialect()) === "pg" ? "a memory; delete the memory" : "a file; delete the file (or the memory)"} instead`);
    yield* deleteDocumentOp(path);
    yield* audit({ actor, action: "document.delete", target: `store:${handle.store}/document:${path}` });
  };
  return write(handle, op());
}

export type DocumentSummary = { doc_id: number; path: string; origin: string; kind: string; sha256: string; bytes: number; mtime: number; indexed_at: number; chunks: number };

/** A store's documents under `prefix` (path order, paged) and how many there are, on either engine. */
export function listDocumentsByPrefix<H extends AnyStoreHandle>({ handle, prefix = "", limit = 100, offset = 0 }: { handle: H; prefix?: string; limit?: number; offset?: number }): On<H, { total: number; documents: DocumentSummary[] }> {
  const op = function* (): Op<{ total: number; documents: DocumentSummary[] }> {
    // substr comparison, not LIKE, so `%` and `_` in the prefix are literal (`|| ''` gives the parameter a text type on PostgreSQL).
    const underPrefix = (d: typeof documents) => sql`substr(${d.path}, 1, length(${prefix} || '')) = ${prefix} || ''`;
    const total = yield* countRows(DOCUMENTS, (d) => underPrefix(d as typeof documents));
    const rows = yield* select({ d: DOCUMENTS }, (db, { d }, q) =>
      db
        .select({
          doc_id: d.docId,
          path: d.path,
          origin: d.origin,
          kind: d.kind,
          sha256: d.sha256,
          bytes: d.bytes,
          mtime: d.mtime,
          indexed_at: d.indexedAt,
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
