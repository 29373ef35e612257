import { pageWithinBudget } from "../governance/limits";
import { and, asc, eq, ne, sql, type Column, type SQL } from "drizzle-orm";
import { z } from "zod";
import { count as countRows, dialect, inCallerTx, insertOrIgnore, read, remove, row, rows, update, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import { learnings, type LearningRow } from "../db/schema/recall";
import type { Embeddable } from "../embed/embeddables";
import { AppError } from "../errors";
import { tableEmbeddable, tableEmbeddablePg, type PgEmbeddable } from "../index/embed-kinds-pg";
import { forgetVectors } from "../index/engine-steps";
import { enqueueEmbeddingsOp } from "../embed/queue";
import { assertRoomForRow } from "../index/row-room";
import { recallTables } from "./tables";
import { atLeast, decodedJson, encodedJson, withCurrentVector, type VectorInfo } from "./vector-info";
import { HANDLE_VERSION, learningInputSchema, normalizeLearning, renderLearningHandle, type LearningInput } from "./descriptors";
import { limitSchema, offsetSchema, sha256Hex, snakeCased, type SnakeCased } from "../common";
import { LEARNING_WORDS, rowWordsWritten } from "../index/engines/pg-words";
import { itemsDeletedOp, listViewQuerySchema, visibleWhere } from "../index/item-state";
import { poisonFlags, type PoisonFlag } from "../poison";

export const LEARNING_KIND = "learning";

/** A learning row of either engine, args decoded, with the vector of its current handle (or null). */
type LearningRecord = Omit<LearningRow, "args"> & { args: Record<string, unknown>; vector: VectorInfo | null };

/** The API's learning: the row spelled snake_case and the state of its vector. */
export type Learning = SnakeCased<LearningRecord> & { embedding: "vector" | "pending"; flags: PoisonFlag[] };

/**
 * Learnings, one repository over both engines (lib/db/port.ts): the same
 * handle twice is one row seen twice with the higher confidence, across
 * replicas too (the unique handle hash: insert or ignore, then the counter);
 * a new learning is queued for its vector in its insert's transaction.
 */
const table = recallTables.learnings;

/** Learnings with the vector of their current handle, as the API shows them. */
function* selectLearnings(query: { where?: (t: typeof learnings) => SQL | undefined; limit: number; offset?: number }): Op<Learning[]> {
  return (yield* withCurrentVector({ pair: table, ...query })).map((r) => learningOf({ ...r, args: decodedJson<Record<string, unknown>>(r.args) }));
}

function* learningById(id: number): Op<Learning> {
  const [found] = yield* selectLearnings({ where: (l) => eq(l.id, id), limit: 1 });
  if (!found) throw new AppError("not_found", `no learning ${id}`);
  return found;
}

function learningOf(r: LearningRecord): Learning {
  const flags = poisonFlags({ fields: { predicate: r.predicate, args: r.args, description: r.description, semantic_handle: r.semanticHandle } });
  return { ...snakeCased(r), embedding: r.vector ? "vector" : "pending", flags };
}

// Vectors are made from the stored handle, and its hash is the input hash.
const LEARNING_TABLE = { kind: LEARNING_KIND, artifactType: "learning", table: "learnings", textColumn: "semantic_handle", hashColumn: "handle_hash", versionColumn: "handle_version" };
export const learningEmbeddable: Embeddable = { ...tableEmbeddable(LEARNING_TABLE), backfill: ({ handle }) => inCallerTx(handle, learningHandlesBackfilled()) };
export const learningEmbeddablePg: PgEmbeddable = { ...tableEmbeddablePg(LEARNING_TABLE), backfill: ({ tx }) => inCallerTx(tx, learningHandlesBackfilled()) };

export type RecordLearningResult = { learning: Learning; deduped: boolean; embedding: "queued" | "unchanged" };

/**
 * Store a learning (sanitized). The same handle again bumps the counter and
 * last_seen, and keeps the higher confidence, instead of adding a vector.
 */
export function recordLearning<H extends AnyStoreHandle>({ handle, agentId, input }: { handle: H; agentId: string; input: LearningInput }): On<H, RecordLearningResult> {
  const fields = normalizeLearning(learningInputSchema.parse(input));
  const hash = sha256Hex(fields.semanticHandle);
  return write(handle, function* (): Op<RecordLearningResult> {
    const now = Date.now();
    const seenAgain = function* (): Op<RecordLearningResult | null> {
      const [seen] = yield* update(table, { seenCount: sql`seen_count + 1`, lastSeenAt: now, confidence: atLeast("confidence", fields.confidence) }, (t) => eq(t.handleHash, hash));
      return seen ? { learning: yield* learningById(seen.id), deduped: true, embedding: "unchanged" } : null;
    };
    const deduped = yield* seenAgain();
    if (deduped) {
      return deduped;
    }
    const engine = yield* dialect();
    const values = { agentId, ...fields, args: encodedJson(engine, fields.args), handleVersion: HANDLE_VERSION, handleHash: hash, seenCount: 1, createdAt: now, lastSeenAt: now };
    yield* assertRoomForRow({ store: handle.store, table: "learnings", values });
    const inserted = yield* insertOrIgnore(table, values, (t) => [t.handleHash]);
    // Another replica inserted the same handle meanwhile: count this sighting on its row.
    if (!inserted) {
      const again = (yield* seenAgain())!;
      return again;
    }
    yield* rowWordsWritten({ table: LEARNING_WORDS, ids: [inserted.id] });
    yield* enqueueEmbeddingsOp({ items: [{ kind: LEARNING_KIND, refId: inserted.id, inputHash: hash }] });
    return { learning: yield* learningById(inserted.id), deduped: false, embedding: "queued" };
  });
}

export function getLearningById<H extends AnyStoreHandle>({ handle, id }: { handle: H; id: number }): On<H, Learning> {
  return read(handle, learningById(id));
}

export const listLearningsQuerySchema = z
  .object({
    predicate: z.string().trim().min(1).max(120).optional(),
    ...listViewQuerySchema,
    limit: limitSchema,
    offset: offsetSchema,
  })
  .strict();

/** The answer stops at DUALMIND_LIST_MAX_BYTES with `next_offset`; the dashboard (`budget: false`) reads its page whole. */
export function listLearnings<H extends AnyStoreHandle>({ handle, filter, budget = true }: { handle: H; filter: z.input<typeof listLearningsQuerySchema>; budget?: boolean }): On<H, { learnings: Learning[]; total: number; next_offset: number | null }> {
  const f = listLearningsQuerySchema.parse(filter);
  const byPredicate = (predicate: Column, id: Column) => and(f.predicate === undefined ? undefined : eq(predicate, f.predicate), visibleWhere({ kind: "learning", id, includeRetired: f.include_retired, includeProposed: f.include_proposed }));
  return read(handle, function* () {
    const page = yield* selectLearnings({ where: (l) => byPredicate(l.predicate, l.id), limit: f.limit, offset: f.offset });
    const listed = { learnings: page, total: yield* countRows(table, (t) => byPredicate(t.predicate, t.id)) };
    return pageWithinBudget({ page: listed, key: "learnings", offset: f.offset, budget });
  }, { snapshot: true });
}

/**
 * Bring handles of an older version up to date, in the caller's transaction
 * (re-embed calls this first, so the vectors it queues are made from today's
 * text). Synthesized handles (they start with "Learning: ") are re-rendered; a
 * handle the agent gave is kept as written. A row that now matches another
 * merges into it (counts added, the later last_seen and the higher confidence
 * kept) and goes with its vectors and queue row.
 */
function* learningHandlesBackfilled(): Op<number> {
  const stale = yield* rows(table, { where: (t) => ne(t.handleVersion, HANDLE_VERSION), orderBy: (t) => [asc(t.id)], lock: "update" });
  for (const r of stale) {
    const text = r.semanticHandle.startsWith("Learning: ") ? renderLearningHandle({ predicate: r.predicate, args: decodedJson<Record<string, unknown>>(r.args), description: r.description }) : r.semanticHandle;
    const hash = sha256Hex(text);
    const twin = yield* row(table, (t) => and(eq(t.handleHash, hash), ne(t.id, r.id)));
    if (twin) {
      yield* update(table, { seenCount: sql`seen_count + ${r.seenCount}`, lastSeenAt: atLeast("last_seen_at", r.lastSeenAt, "bigint"), confidence: atLeast("confidence", r.confidence) }, (t) => eq(t.id, twin.id));
      yield* forgetVectors({ kind: LEARNING_KIND, refIds: [r.id] });
      yield* remove(table, (t) => eq(t.id, r.id));
      yield* itemsDeletedOp({ kind: "learning", ids: [String(r.id)] });
    } else {
      yield* update(table, { semanticHandle: text, handleHash: hash, handleVersion: HANDLE_VERSION }, (t) => eq(t.id, r.id));
      yield* rowWordsWritten({ table: LEARNING_WORDS, ids: [r.id] });
    }
  }
  return stale.length;
}
