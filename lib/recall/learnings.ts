import { and, count, desc, eq, getTableColumns, inArray, ne, sql } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { learnings, type LearningRow } from "../db/schema/recall";
import type { Embeddable } from "../embed/embeddables";
import { enqueueEmbeddings } from "../embed/queue";
import { forgetEmbeddings } from "../embed/vector-index";
import { AppError } from "../errors";
import { currentVectorInfo } from "./vector-info";
import type { VectorInfo } from "./traces";
import { HANDLE_VERSION, learningInputSchema, normalizeLearning, renderLearningHandle, type LearningFields, type LearningInput } from "./descriptors";
import { sha256Hex } from "../common";

export const LEARNING_KIND = "learning";

export type Learning = {
  id: number;
  agentId: string;
  predicate: string;
  args: Record<string, unknown>;
  description: string;
  confidence: number;
  semanticHandle: string;
  handleVersion: number;
  handleHash: string;
  embedding: "vector" | "pending";
  vector: VectorInfo | null;
  seenCount: number;
  createdAt: number;
  lastSeenAt: number;
};

/**
 * A learning row with the vector made from its current handle, if any (which model, dimension and task made it).
 */
type LearningSelect = LearningRow & { vectorInfo: string | null };
const LEARNING_SELECT = {
  ...getTableColumns(learnings),
  vectorInfo: currentVectorInfo({ kind: "learning", table: "learnings", inputHashColumn: "handle_hash" }),
};

/** A learning row of either backend, args decoded, with the vector of its current handle (or null). */
export type LearningRecord = Omit<LearningRow, "args"> & { args: Record<string, unknown>; vector: VectorInfo | null };

function toLearning({ vectorInfo, ...r }: LearningSelect): Learning {
  return learningOf({ ...r, args: JSON.parse(r.args) as Record<string, unknown>, vector: vectorInfo ? (JSON.parse(vectorInfo) as VectorInfo) : null });
}

/** A learning as it is stored, on both backends: validated, sanitized fields and the handle's hash (the dedup key). */
export function prepareLearning(input: LearningInput): { fields: LearningFields; hash: string } {
  const fields = normalizeLearning(learningInputSchema.parse(input));
  return { fields, hash: sha256Hex(fields.semanticHandle) };
}

/** A new learning's row (args as an object: SQLite stores it as JSON text). */
export function newLearningRow({ agentId, fields, hash, now }: { agentId: string; fields: LearningFields; hash: string; now: number }) {
  return {
    agentId,
    predicate: fields.predicate,
    args: fields.args,
    description: fields.description,
    confidence: fields.confidence,
    semanticHandle: fields.semanticHandle,
    handleVersion: HANDLE_VERSION,
    handleHash: hash,
    seenCount: 1,
    createdAt: now,
    lastSeenAt: now,
  };
}

/** The API's learning, on both backends. */
export function learningOf(r: LearningRecord): Learning {
  return {
    id: r.id,
    agentId: r.agentId,
    predicate: r.predicate,
    args: r.args,
    description: r.description,
    confidence: r.confidence,
    semanticHandle: r.semanticHandle,
    handleVersion: r.handleVersion,
    handleHash: r.handleHash,
    embedding: r.vector ? "vector" : "pending",
    vector: r.vector,
    seenCount: r.seenCount,
    createdAt: r.createdAt,
    lastSeenAt: r.lastSeenAt,
  };
}

export const learningEmbeddable: Embeddable = {
  kind: LEARNING_KIND,
  artifactType: "learning",
  load({ handle, refIds }) {
    const rows = handle.db.select({ id: learnings.id, text: learnings.semanticHandle, inputHash: learnings.handleHash }).from(learnings).where(inArray(learnings.id, refIds)).all();
    return new Map(rows.map(({ id, ...text }) => [id, text]));
  },
  listAll({ handle }) {
    return handle.db.select({ refId: learnings.id, inputHash: learnings.handleHash }).from(learnings).all();
  },
  chunkingVersion({ handle, refId }) {
    return handle.db.select({ v: learnings.handleVersion }).from(learnings).where(eq(learnings.id, refId)).get()?.v ?? null;
  },
  backfill: backfillLearningHandles,
};

export type RecordLearningResult = { learning: Learning; deduped: boolean; embedding: "queued" | "unchanged" };

/**
 * Store a learning (sanitized). The same handle again bumps the counter and
 * last_seen, and keeps the higher confidence, instead of adding a vector.
 */
export function recordLearning({ handle, agentId, input }: { handle: StoreHandle; agentId: string; input: LearningInput }): RecordLearningResult {
  const { fields, hash } = prepareLearning(input);
  const { db } = handle;
  return handle.sqlite
    .transaction((): RecordLearningResult => {
      const now = Date.now();
      const existing = db.select({ id: learnings.id }).from(learnings).where(eq(learnings.handleHash, hash)).get();
      if (existing) {
        db.update(learnings)
          .set({ seenCount: sql`${learnings.seenCount} + 1`, lastSeenAt: now, confidence: sql`max(${learnings.confidence}, ${fields.confidence})` })
          .where(eq(learnings.id, existing.id))
          .run();
        return { learning: getLearningById({ handle, id: existing.id }), deduped: true, embedding: "unchanged" };
      }
      const { id } = db
        .insert(learnings)
        .values({ ...newLearningRow({ agentId, fields, hash, now }), args: JSON.stringify(fields.args) })
        .returning({ id: learnings.id })
        .get();
      enqueueEmbeddings({ handle, items: [{ kind: LEARNING_KIND, refId: id, inputHash: hash }] });
      return { learning: getLearningById({ handle, id }), deduped: false, embedding: "queued" };
    })
    .immediate();
}

export function getLearningById({ handle, id }: { handle: StoreHandle; id: number }): Learning {
  const row = handle.db.select(LEARNING_SELECT).from(learnings).where(eq(learnings.id, id)).get();
  if (!row) throw new AppError("not_found", `no learning ${id}`);
  return toLearning(row);
}

export const listLearningsQuerySchema = z
  .object({
    predicate: z.string().trim().min(1).max(120).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();

export function listLearnings({ handle, filter }: { handle: StoreHandle; filter: z.input<typeof listLearningsQuerySchema> }): { learnings: Learning[]; total: number } {
  const f = listLearningsQuerySchema.parse(filter);
  const where = f.predicate === undefined ? undefined : eq(learnings.predicate, f.predicate);
  const rows = handle.db.select(LEARNING_SELECT).from(learnings).where(where).orderBy(desc(learnings.lastSeenAt), desc(learnings.id)).limit(f.limit).offset(f.offset).all();
  const { total } = handle.db.select({ total: count() }).from(learnings).where(where).get()!;
  return { learnings: rows.map(toLearning), total };
}

/**
 * A learning of an older handle version, brought up to date (both backends'
 * backfill): a synthesized handle (it starts with "Learning: ") is rendered by
 * today's rules; a handle the agent gave is kept as written. With its hash.
 */
export function rerenderLearningHandle(r: { semanticHandle: string; predicate: string; args: Record<string, unknown>; description: string }): { text: string; hash: string } {
  const synthesized = r.semanticHandle.startsWith("Learning: ");
  const text = synthesized ? renderLearningHandle({ predicate: r.predicate, args: r.args, description: r.description }) : r.semanticHandle;
  return { text, hash: sha256Hex(text) };
}

/**
 * Bring handles of an older version up to date (re-embed calls this first).
 * Synthesized handles (they start with "Learning: ") are re-rendered; a handle
 * the agent gave is kept as written. Rows that now match merge into the older.
 */
export function backfillLearningHandles({ handle }: { handle: StoreHandle }): number {
  const { db } = handle;
  const stale = db.select().from(learnings).where(ne(learnings.handleVersion, HANDLE_VERSION)).all();
  let changed = 0;
  for (const r of stale) {
    const { text, hash } = rerenderLearningHandle({ ...r, args: JSON.parse(r.args) as Record<string, unknown> });
    const twin = db
      .select({ id: learnings.id })
      .from(learnings)
      .where(and(eq(learnings.handleHash, hash), ne(learnings.id, r.id)))
      .get();
    if (twin) {
      db.update(learnings)
        .set({ seenCount: sql`${learnings.seenCount} + ${r.seenCount}`, lastSeenAt: sql`max(${learnings.lastSeenAt}, ${r.lastSeenAt})`, confidence: sql`max(${learnings.confidence}, ${r.confidence})` })
        .where(eq(learnings.id, twin.id))
        .run();
      forgetEmbeddings({ handle, items: [{ kind: LEARNING_KIND, refId: r.id }] });
      db.delete(learnings).where(eq(learnings.id, r.id)).run();
    } else {
      db.update(learnings).set({ semanticHandle: text, handleHash: hash, handleVersion: HANDLE_VERSION }).where(eq(learnings.id, r.id)).run();
    }
    changed++;
  }
  return changed;
}
