import { and, asc, eq, gt, lt, sql } from "drizzle-orm";
import { withStoreTx, type PgStoreHandle } from "../db/pg-store";
import { chunkEmbeddings, chunks, documents, embedQueue, memories } from "../db/schema/pg/store";
import { configuredFingerprint } from "../embed/status";
import { AppError } from "../errors";
import { getProofsByArtifactPg } from "../governance/ledger-pg";
import { CHUNK_KIND } from "./chunk-embeddings";
import { assembleChunkReader, chunkVectorArtifact, chunkVectorOf, memoryPathOf, readerWindow, type ChunkReader, type NeighbourRow } from "./reader";

/**
 * The search reader on PostgreSQL (the SQLite twin and the rules: ./reader.ts): one chunk in its
 * document, its neighbours, the document's metadata and its vector's state and provenance, read in
 * one read-only transaction. The serving model is the configured one (what a query would be embedded
 * with); a vector from another model is named by its fingerprint only.
 */
export async function readChunkInDocumentPg({ handle, chunkId }: { handle: PgStoreHandle; chunkId: string }): Promise<ChunkReader> {
  const { fp } = await configuredFingerprint();
  return withStoreTx({ handle, readOnly: true }, async (tx) => {
    const [row] = await tx
      .select({
        id: chunks.id,
        chunkId: chunks.chunkId,
        docId: chunks.docId,
        chunkIndex: chunks.chunkIndex,
        chunkSha256: chunks.chunkSha256,
        chunkingVersion: chunks.chunkingVersion,
        startByte: chunks.startByte,
        endByte: chunks.endByte,
        text: chunks.text,
        path: documents.path,
        kind: documents.kind,
        origin: documents.origin,
        sha256: documents.sha256,
        bytes: documents.bytes,
        mtime: documents.mtime,
        content: documents.content,
        indexedAt: documents.indexedAt,
        chunks: sql<number>`(select count(*)::int from chunks x where x.doc_id = ${chunks.docId})`,
      })
      .from(chunks)
      .innerJoin(documents, eq(documents.docId, chunks.docId))
      .where(eq(chunks.chunkId, chunkId));
    if (!row) throw new AppError("not_found", `no chunk ${chunkId} in store ${handle.store}`);

    const window = readerWindow(row);
    const spans = await tx
      .select({ startByte: chunks.startByte, endByte: chunks.endByte, text: chunks.text })
      .from(chunks)
      .where(and(eq(chunks.docId, row.docId), gt(chunks.endByte, window.lo), lt(chunks.startByte, window.hi)))
      .orderBy(asc(chunks.startByte));
    const neighbour = async (chunkIndex: number): Promise<NeighbourRow | undefined> =>
      (
        await tx
          .select({ chunkId: chunks.chunkId, chunkIndex: chunks.chunkIndex, text: sql<string>`substr(${chunks.text}, 1, 400)` })
          .from(chunks)
          .where(and(eq(chunks.docId, row.docId), eq(chunks.chunkIndex, chunkIndex)))
      )[0];
    const memoryPath = row.kind === "memory" ? memoryPathOf(row.path) : null;
    const [memoryRow] = memoryPath ? await tx.select({ tags: memories.tags, summary: memories.summary }).from(memories).where(eq(memories.path, memoryPath)) : [];
    const vectors = await tx
      .select({ fingerprintId: chunkEmbeddings.fingerprintId, dimension: chunkEmbeddings.dimension, inputHash: chunkEmbeddings.inputHash, createdAt: chunkEmbeddings.embeddedAt })
      .from(chunkEmbeddings)
      .where(eq(chunkEmbeddings.chunkRowId, row.id))
      .orderBy(sql`${chunkEmbeddings.embeddedAt} desc`);
    const [queue] = await tx
      .select({ enqueuedAt: embedQueue.enqueuedAt, attempts: embedQueue.attempts, lastError: embedQueue.lastError, parkedAt: embedQueue.parkedAt })
      .from(embedQueue)
      .where(and(eq(embedQueue.kind, CHUNK_KIND), eq(embedQueue.refId, row.id)));
    const proofs = await getProofsByArtifactPg({ db: tx, input: chunkVectorArtifact({ store: handle.store, chunkRowId: row.id }) });
    return assembleChunkReader({
      store: handle.store,
      row,
      spans,
      prev: await neighbour(row.chunkIndex - 1),
      next: await neighbour(row.chunkIndex + 1),
      memory: memoryPath && memoryRow ? { path: memoryPath, tags: memoryRow.tags, summary: memoryRow.summary } : null,
      vector: chunkVectorOf({
        chunk: row,
        active: fp,
        modelOf: (fingerprintId) => (fp && fingerprintId === fp.id ? fp : null),
        vectors,
        queue: queue ?? null,
        provenance: proofs.provenance,
      }),
    });
  });
}
