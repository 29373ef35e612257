import { randomUUID } from "node:crypto";
import { and, asc, count, desc, eq, exists, getTableColumns, inArray, isNull, lt, sql } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { embeddings } from "../db/schema/embed";
import { chains, FRAMEWORKS, thoughts, type ChainRow, type ThoughtRow } from "../db/schema/graph";
import { runWithinBudget, startQueryBudget } from "../db/query-budget";
import type { Embeddable } from "../embed/embeddables";
import { getEmbedder } from "../embed/model";
import { enqueueEmbeddings } from "../embed/queue";
import { blobToVector, forgetEmbeddings, knnSearch } from "../embed/vector-index";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { limitSchema, normalizeTags, notFound, offsetSchema, parseJsonColumnOr, sha256Hex, tagsSchema, unitInterval } from "../common";
import { buildFtsMatch } from "../retrieval";

export const THOUGHT_KIND = "thought";
/** Novelty compares a thought with this many thoughts written before it. */
export const NOVELTY_WINDOW = 50;
/** Weight of the newest feedback in the utility moving average. */
export const UTILITY_ALPHA = 0.3;

export const thoughtEmbeddable: Embeddable = {
  kind: THOUGHT_KIND,
  artifactType: THOUGHT_KIND,
  load({ handle, refIds }) {
    const rows = handle.db.select({ seq: thoughts.seq, text: thoughts.content, inputHash: thoughts.contentHash }).from(thoughts).where(inArray(thoughts.seq, refIds)).all();
    return new Map(rows.map(({ seq, ...text }) => [seq, text]));
  },
  listAll({ handle }) {
    return handle.db.select({ refId: thoughts.seq, inputHash: thoughts.contentHash }).from(thoughts).all();
  },
};

export const chainIdSchema = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, "chain ids are 1-128 chars of letters, digits, . _ : -");

export const thinkInputSchema = z
  .object({
    content: z.string().trim().min(1).max(20_000),
    framework: z.enum(FRAMEWORKS).default("conversation"),
    chain_id: chainIdSchema.optional(),
    thought_number: z.number().int().min(1).optional(),
    total_thoughts: z.number().int().min(1).optional(),
    importance: unitInterval.default(0.5),
    relevance: unitInterval.default(0.5),
    consistency: unitInterval.optional(),
    tags: tagsSchema.optional(),
    category: z.string().trim().min(1).max(200).optional(),
    /** Epoch ms of the thought; defaults to now. */
    timestamp: z.number().int().positive().optional(),
  })
  .strict()
  .refine((t) => t.chain_id !== undefined || t.thought_number === undefined, { message: "thought_number needs a chain_id", path: ["thought_number"] })
  .refine((t) => t.total_thoughts === undefined || t.thought_number === undefined || t.total_thoughts >= t.thought_number, { message: "total_thoughts must be ≥ thought_number", path: ["total_thoughts"] });
export type ThinkInput = z.input<typeof thinkInputSchema>;

export const listThoughtsQuerySchema = z
  .object({ chain_id: chainIdSchema.optional(), framework: z.enum(FRAMEWORKS).optional(), q: z.string().trim().min(1).max(500).optional(), limit: limitSchema, offset: offsetSchema })
  .strict();

export const feedbackInputSchema = z.object({ utility: unitInterval }).strict();

export type Thought = {
  id: string;
  content: string;
  framework: ThoughtRow["framework"];
  chain_id: string | null;
  thought_number: number | null;
  total_thoughts: number | null;
  timestamp: number;
  importance: number;
  relevance: number;
  tags: string[];
  category: string | null;
  novelty: number | null;
  consistency: number | null;
  utility: number | null;
  feedback_count: number;
  created_by: string;
  /** pending: queued for a vector; ready: embedded; missing: neither (e.g. parked after errors). */
  embedding: "pending" | "ready" | "missing";
};

/**
 * A thought row with the state of its vector. The subqueries name the outer
 * table itself: Drizzle leaves a single table's columns unqualified.
 */
type ThoughtSelect = ThoughtRow & { embedding: Thought["embedding"] };
const THOUGHT_SELECT = {
  ...getTableColumns(thoughts),
  embedding: sql<Thought["embedding"]>`case
    when exists (select 1 from embed_queue q where q.kind = 'thought' and q.ref_id = thoughts.seq and q.parked_at is null) then 'pending'
    when exists (select 1 from embeddings e where e.kind = 'thought' and e.ref_id = thoughts.seq and e.input_hash = thoughts.content_hash) then 'ready'
    else 'missing' end`,
};

export function toThought(r: ThoughtSelect): Thought {
  return {
    id: r.id,
    content: r.content,
    framework: r.framework,
    chain_id: r.chainId,
    thought_number: r.thoughtNumber,
    total_thoughts: r.totalThoughts,
    timestamp: r.timestamp,
    importance: r.importance,
    relevance: r.relevance,
    tags: parseJsonColumnOr<string[]>(r.tags, []),
    category: r.category,
    novelty: r.novelty,
    consistency: r.consistency,
    utility: r.utility,
    feedback_count: r.feedbackCount,
    created_by: r.createdBy,
    embedding: r.embedding,
  };
}

function selectThoughtById({ handle, id }: { handle: StoreHandle; id: string }): ThoughtSelect | undefined {
  return handle.db.select(THOUGHT_SELECT).from(thoughts).where(eq(thoughts.id, id)).get();
}

/** A new thought's columns (both dialects); the thought number is the caller's, read under its write lock. */
export function newThoughtRow({ id, input: t, thoughtNumber, actor, now }: { id: string; input: z.output<typeof thinkInputSchema>; thoughtNumber: number | null; actor: string; now: number }) {
  return {
    id,
    content: t.content,
    framework: t.framework,
    chainId: t.chain_id ?? null,
    thoughtNumber,
    totalThoughts: t.total_thoughts ?? null,
    timestamp: t.timestamp ?? now,
    importance: t.importance,
    relevance: t.relevance,
    tags: JSON.stringify(normalizeTags(t.tags)),
    category: t.category ?? null,
    consistency: t.consistency ?? null,
    contentHash: sha256Hex(t.content),
    createdBy: actor,
  };
}

/** The 409 of a thought number already taken in its chain (both dialects). */
export function thoughtNumberTaken(chainId: string, n: number): AppError {
  return new AppError("conflict", `chain ${chainId} already has thought number ${n}`);
}

/**
 * Write a thought (and its chain's count) in one transaction and queue its
 * vector. BEGIN IMMEDIATE: the chain count and the default thought number
 * are read and written under the write lock, so concurrent writers from
 * other processes never lose a count or reuse a number.
 */
export function thinkThought({ handle, input, actor }: { handle: StoreHandle; input: ThinkInput; actor: string }): Thought {
  const t = thinkInputSchema.parse(input);
  const { db } = handle;
  const now = Date.now();
  const id = randomUUID();
  const contentHash = sha256Hex(t.content);
  handle.sqlite
    .transaction(() => {
      let thoughtNumber: number | null = null;
      if (t.chain_id) {
        db.insert(chains).values({ id: t.chain_id, createdAt: now, updatedAt: now, thoughtCount: 0 }).onConflictDoNothing({ target: chains.id }).run();
        const inChain = eq(thoughts.chainId, t.chain_id);
        if (t.thought_number !== undefined) {
          if (db.select({ seq: thoughts.seq }).from(thoughts).where(and(inChain, eq(thoughts.thoughtNumber, t.thought_number))).get()) {
            throw thoughtNumberTaken(t.chain_id, t.thought_number);
          }
          thoughtNumber = t.thought_number;
        } else {
          thoughtNumber = db.select({ n: sql<number>`coalesce(max(${thoughts.thoughtNumber}), 0)` }).from(thoughts).where(inChain).get()!.n + 1;
        }
      }
      const { seq } = db
        .insert(thoughts)
        .values(newThoughtRow({ id, input: t, thoughtNumber, actor, now }))
        .returning({ seq: thoughts.seq })
        .get();
      if (t.chain_id) db.update(chains).set({ thoughtCount: sql`${chains.thoughtCount} + 1`, updatedAt: now }).where(eq(chains.id, t.chain_id)).run();
      enqueueEmbeddings({ handle, items: [{ kind: THOUGHT_KIND, refId: seq, inputHash: contentHash }] });
    })
    .immediate();
  return toThought(selectThoughtById({ handle, id })!);
}

/**
 * Fill in novelty for thoughts whose vector has landed since they were
 * written: 1 − max cosine to the NOVELTY_WINDOW thoughts before them (1 for
 * the first thought). Runs on reads, so novelty appears with the vector.
 */
export function computePendingNovelty({ handle, fingerprintId }: { handle: StoreHandle; fingerprintId: string }): number {
  const { db } = handle;
  const ready = db
    .select({ seq: thoughts.seq, vector: embeddings.vector })
    .from(thoughts)
    .innerJoin(
      embeddings,
      and(eq(embeddings.kind, THOUGHT_KIND), eq(embeddings.refId, thoughts.seq), eq(embeddings.fingerprintId, fingerprintId), eq(embeddings.inputHash, thoughts.contentHash)),
    )
    .where(isNull(thoughts.novelty))
    .orderBy(asc(thoughts.seq))
    .limit(500)
    .all();
  if (ready.length === 0) return 0;
  const embedded = db
    .select({ one: sql`1` })
    .from(embeddings)
    .where(and(eq(embeddings.kind, THOUGHT_KIND), eq(embeddings.refId, thoughts.seq), eq(embeddings.fingerprintId, fingerprintId)));
  const previous = db
    .select({ seq: thoughts.seq })
    .from(thoughts)
    .where(and(lt(thoughts.seq, sql.placeholder("seq")), exists(embedded)))
    .orderBy(desc(thoughts.seq))
    .limit(NOVELTY_WINDOW)
    .prepare();
  const update = db
    .update(thoughts)
    .set({ novelty: sql`${sql.placeholder("novelty")}` })
    .where(and(eq(thoughts.seq, sql.placeholder("seq")), isNull(thoughts.novelty)))
    .prepare();
  handle.sqlite.transaction(() => {
    for (const r of ready) {
      const ids = previous.all({ seq: r.seq }).map((p) => p.seq);
      const query = blobToVector(r.vector);
      const nearest = ids.length ? knnSearch({ handle, kind: THOUGHT_KIND, fingerprintId, query, k: 1, allowedRefIds: ids }).hits[0] : undefined;
      const novelty = nearest ? Math.min(1, Math.max(0, nearest.distance)) : 1;
      update.run({ novelty, seq: r.seq });
    }
  })();
  return ready.length;
}

/** Novelty catch-up for reads; a provider that cannot start leaves novelty pending, never fails the read. */
export async function refreshNovelty({ handle }: { handle: StoreHandle }): Promise<void> {
  let fingerprintId: string;
  try {
    fingerprintId = (await getEmbedder().fingerprint).id;
  } catch {
    return;
  }
  computePendingNovelty({ handle, fingerprintId });
}

export async function getThoughtById({ handle, id }: { handle: StoreHandle; id: string }): Promise<Thought> {
  await refreshNovelty({ handle });
  const row = selectThoughtById({ handle, id });
  if (!row) throw notFound("thought", id);
  return toThought(row);
}

export async function listThoughtsByFilter({ handle, filter }: { handle: StoreHandle; filter: z.input<typeof listThoughtsQuerySchema> }): Promise<{ thoughts: Thought[]; total: number }> {
  const f = listThoughtsQuerySchema.parse(filter);
  await refreshNovelty({ handle });
  const match = f.q ? listingMatch(f.q) : null;
  if (f.q && !match) return { thoughts: [], total: 0 };
  const where = and(
    f.chain_id ? eq(thoughts.chainId, f.chain_id) : undefined,
    f.framework ? eq(thoughts.framework, f.framework) : undefined,
    // FTS5 finds the rows; user text reaches MATCH only as quoted words (lib/retrieval buildFtsMatch).
    match ? inArray(thoughts.seq, sql`(select rowid from thoughts_fts where thoughts_fts match ${match})`) : undefined,
  );
  const order = f.chain_id ? [asc(thoughts.thoughtNumber), asc(thoughts.seq)] : [desc(thoughts.timestamp), desc(thoughts.seq)];
  const page = handle.db.select(THOUGHT_SELECT).from(thoughts).where(where).orderBy(...order).limit(f.limit).offset(f.offset).prepare();
  const total = handle.db.select({ n: count() }).from(thoughts).where(where).prepare();
  // A text filter (`q`) or a deep offset is the caller's to make expensive: both statements share one query budget.
  const budget = startQueryBudget({ hint: "use fewer or rarer words in q, a smaller offset, or filter by chain_id or framework" });
  const rows = runWithinBudget(handle.sqlite, budget, () => page.all());
  const { n } = runWithinBudget(handle.sqlite, budget, () => total.get()!);
  return { thoughts: rows.map(toThought), total: n };
}

/** Feedback moves utility as an exponential moving average (first feedback sets it). */
export function recordThoughtFeedback({ handle, id, input }: { handle: StoreHandle; id: string; input: z.input<typeof feedbackInputSchema> }): Thought {
  const { utility } = feedbackInputSchema.parse(input);
  const changed = handle.db
    .update(thoughts)
    .set({
      utility: sql`case when ${thoughts.utility} is null then ${utility} else (1 - ${UTILITY_ALPHA}) * ${thoughts.utility} + ${UTILITY_ALPHA} * ${utility} end`,
      feedbackCount: sql`${thoughts.feedbackCount} + 1`,
    })
    .where(eq(thoughts.id, id))
    .run().changes;
  if (changed === 0) throw notFound("thought", id);
  return toThought(selectThoughtById({ handle, id })!);
}

/** Delete a thought: its chain count, evidence links (cascade) and vector go with it. Audited. */
export function deleteThought({ handle, id, actor }: { handle: StoreHandle; id: string; actor: string }): { deleted: string } {
  const { db } = handle;
  handle.sqlite
    .transaction(() => {
      const row = db.delete(thoughts).where(eq(thoughts.id, id)).returning({ seq: thoughts.seq, chainId: thoughts.chainId }).get();
      if (!row) throw notFound("thought", id);
      if (row.chainId) db.update(chains).set({ thoughtCount: sql`${chains.thoughtCount} - 1`, updatedAt: Date.now() }).where(eq(chains.id, row.chainId)).run();
      forgetEmbeddings({ handle, items: [{ kind: THOUGHT_KIND, refId: row.seq }] });
      appendAudit({ actor, action: "thought.delete", target: `store:${handle.store}/thought:${id}` });
    })
    .immediate();
  return { deleted: id };
}

export type Chain = { id: string; created_at: number; updated_at: number; thought_count: number };

export const toChain = (r: ChainRow): Chain => ({ id: r.id, created_at: r.createdAt, updated_at: r.updatedAt, thought_count: r.thoughtCount });

export function listChainsByRecency({ handle, limit = 50, offset = 0 }: { handle: StoreHandle; limit?: number; offset?: number }): { chains: Chain[]; total: number } {
  const rows = handle.db.select().from(chains).orderBy(desc(chains.updatedAt), asc(chains.id)).limit(limit).offset(offset).all();
  const { n } = handle.db.select({ n: count() }).from(chains).get()!;
  return { chains: rows.map(toChain), total: n };
}

export async function getChainById({ handle, id }: { handle: StoreHandle; id: string }): Promise<Chain & { thoughts: Thought[] }> {
  const row = handle.db.select().from(chains).where(eq(chains.id, id)).get();
  if (!row) throw notFound("chain", id);
  const { thoughts: inChain } = await listThoughtsByFilter({ handle, filter: { chain_id: id, limit: 200 } });
  return { ...toChain(row), thoughts: inChain };
}

/** A listing's `q` filter: any of its words (quoted by the one match builder), stopwords kept, as typed. */
function listingMatch(q: string): string | null {
  return buildFtsMatch(q, { match: "any", stopwords: "keep", maxTerms: 16 });
}
