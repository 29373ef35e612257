import { and, asc, count, desc, eq, getTableColumns, ne, sql } from "drizzle-orm";
import type { z } from "zod";
import { withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { learnings } from "../db/schema/pg/store";
import { AppError } from "../errors";
import { tableEmbeddablePg, type PgEmbeddable } from "../index/embed-kinds-pg";
import { enqueueEmbeddingsPg } from "../index/embed-queue-pg";
import { HANDLE_VERSION, type LearningInput } from "./descriptors";
import { forgetKindEmbeddingsPg } from "../index/vectors-pg";
import { learningOf, LEARNING_KIND, listLearningsQuerySchema, newLearningRow, prepareLearning, rerenderLearningHandle, type Learning, type RecordLearningResult } from "./learnings";
import { currentVectorInfoPg } from "./traces-pg";

/**
 * Learnings on PostgreSQL (the SQLite twin is ./learnings.ts, whose handle
 * and sanitizing rules this shares): the same handle twice is one row seen
 * twice with the higher confidence, across replicas too; a new learning is
 * queued for its vector in its insert's transaction.
 */

const LEARNING_SELECT = { ...getTableColumns(learnings), vector: currentVectorInfoPg({ kind: LEARNING_KIND, table: "learnings", inputHashColumn: "handle_hash" }) };

export const learningEmbeddablePg: PgEmbeddable = {
  ...tableEmbeddablePg({
    kind: LEARNING_KIND,
    artifactType: "learning",
    table: "learnings",
    textColumn: "semantic_handle",
    hashColumn: "handle_hash",
    versionColumn: "handle_version",
  }),
  backfill: ({ tx }) => backfillLearningHandlesPg(tx),
};

/**
 * Bring handles of an older version up to date, in the caller's transaction
 * (the twin of backfillLearningHandles, ./learnings.ts, whose rendering this
 * shares): synthesized handles are re-rendered, an agent's own is kept. A row
 * that now matches another merges into it (counts added, the later last_seen
 * and the higher confidence kept) and goes with its vectors and queue row.
 */
export async function backfillLearningHandlesPg(tx: PgStoreTx): Promise<number> {
  const stale = await tx.select().from(learnings).where(ne(learnings.handleVersion, HANDLE_VERSION)).orderBy(asc(learnings.id)).for("update");
  for (const r of stale) {
    const { text, hash } = rerenderLearningHandle(r);
    const [twin] = await tx
      .select({ id: learnings.id })
      .from(learnings)
      .where(and(eq(learnings.handleHash, hash), ne(learnings.id, r.id)))
      .limit(1);
    if (twin) {
      await tx
        .update(learnings)
        .set({
          seenCount: sql`${learnings.seenCount} + ${r.seenCount}`,
          lastSeenAt: sql`greatest(${learnings.lastSeenAt}, ${r.lastSeenAt})`,
          confidence: sql`greatest(${learnings.confidence}, ${r.confidence}::float8)`,
        })
        .where(eq(learnings.id, twin.id));
      await forgetKindEmbeddingsPg({ tx, kind: LEARNING_KIND, refIds: [r.id] });
      await tx.delete(learnings).where(eq(learnings.id, r.id));
    } else {
      await tx.update(learnings).set({ semanticHandle: text, handleHash: hash, handleVersion: HANDLE_VERSION }).where(eq(learnings.id, r.id));
    }
  }
  return stale.length;
}

async function learningByIdIn(tx: PgStoreTx, id: number): Promise<Learning> {
  const [row] = await tx.select(LEARNING_SELECT).from(learnings).where(eq(learnings.id, id));
  if (!row) throw new AppError("not_found", `no learning ${id}`);
  return learningOf(row);
}

/** Store a learning (sanitized) or bump the one with the same handle; see recordLearning (./learnings.ts). */
export async function recordLearningPg({ handle, agentId, input }: { handle: PgStoreHandle; agentId: string; input: LearningInput }): Promise<RecordLearningResult> {
  const { fields, hash } = prepareLearning(input);
  return withStoreTx({ handle }, async (tx) => {
    const now = Date.now();
    const bump = async (): Promise<RecordLearningResult | null> => {
      const [seen] = await tx
        .update(learnings)
        .set({ seenCount: sql`${learnings.seenCount} + 1`, lastSeenAt: now, confidence: sql`greatest(${learnings.confidence}, ${fields.confidence}::float8)` })
        .where(eq(learnings.handleHash, hash))
        .returning({ id: learnings.id });
      return seen ? { learning: await learningByIdIn(tx, seen.id), deduped: true, embedding: "unchanged" } : null;
    };
    const deduped = await bump();
    if (deduped) return deduped;
    const [inserted] = await tx
      .insert(learnings)
      .values(newLearningRow({ agentId, fields, hash, now }))
      .onConflictDoNothing({ target: learnings.handleHash })
      .returning({ id: learnings.id });
    // Another replica inserted the same handle meanwhile: count this sighting on its row.
    if (!inserted) return (await bump())!;
    await enqueueEmbeddingsPg({ tx, items: [{ kind: LEARNING_KIND, refId: inserted.id, inputHash: hash }], now });
    return { learning: await learningByIdIn(tx, inserted.id), deduped: false, embedding: "queued" };
  });
}

export async function getLearningByIdPg({ handle, id }: { handle: PgStoreHandle; id: number }): Promise<Learning> {
  return withStoreTx({ handle, readOnly: true }, (tx) => learningByIdIn(tx, id));
}

export async function listLearningsPg({ handle, filter }: { handle: PgStoreHandle; filter: z.input<typeof listLearningsQuerySchema> }): Promise<{ learnings: Learning[]; total: number }> {
  const f = listLearningsQuerySchema.parse(filter);
  const where = f.predicate === undefined ? undefined : eq(learnings.predicate, f.predicate);
  return withStoreTx({ handle, readOnly: true }, async (tx) => {
    const rows = await tx.select(LEARNING_SELECT).from(learnings).where(where).orderBy(desc(learnings.lastSeenAt), desc(learnings.id)).limit(f.limit).offset(f.offset);
    const [{ total }] = await tx.select({ total: count() }).from(learnings).where(where);
    return { learnings: rows.map(learningOf), total };
  });
}
