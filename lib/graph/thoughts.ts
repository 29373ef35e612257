import { pageWithinBudget } from "../governance/limits";
import { randomUUID } from "node:crypto";
import { and, asc, desc, eq, getTableColumns, sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import { rowsOf } from "../db/pg-store";
import { count, dialect, engineStep, insert, insertOrIgnore, isUniqueViolation, read, remove, row, rows, select, sqlRows, sqlRun, update, withinBudget, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import { FRAMEWORKS, thoughts, type ChainRow, type ThoughtRow } from "../db/schema/graph";
import { startQueryBudget } from "../db/query-budget";
import type { Embeddable } from "../embed/embeddables";
import { getEmbedder } from "../embed/model";
import { blobToVector } from "../embed/vector-index";
import { AppError } from "../errors";
import { tableEmbeddable, tableEmbeddablePg, type PgEmbeddable } from "../index/embed-kinds-pg";
import { tsqueryFor } from "../index/search-pg";
import { countSchema, limitSchema, normalizeTags, notFound, offsetSchema, parseJsonColumnOr, sha256Hex, snakeCased, tagsSchema, unitInterval, type SnakeCased } from "../common";
import { pushTo } from "../collections";
import { buildFtsMatch, matchTerms } from "../retrieval";
import { audit, forgetVectors } from "../index/engine-steps";
import { enqueueEmbeddingsOp } from "../embed/queue";
import { assertRoomForRow } from "../index/row-room";
import { graphTables } from "./tables";
import { rowWordsWritten, THOUGHT_WORDS } from "../index/engines/pg-words";
import { itemsDeletedOp, listViewQuerySchema, visibleWhere } from "../index/item-state";
import { factPropertySchema, factSubjectSchema } from "../index/facts";
import { poisonFlags, type PoisonFlag } from "../poison";

/**
 * Thoughts and chains, one repository over both engines (lib/db/port.ts). A write to a chain locks the chain's row
 * before it reads the chain's last thought number, so writers on any replica number a chain's thoughts one after the
 * other and the chain's count moves in the same transaction; the unique (chain_id, thought_number) index is the
 * backstop. A thought is queued for its vector in its insert's transaction; novelty (1 − max cosine to the
 * NOVELTY_WINDOW embedded thoughts before it) is filled in on reads once the vector has landed (refreshNovelty).
 */
const chainsTable = graphTables.chains;
const thoughtsTable = graphTables.thoughts;

export const THOUGHT_KIND = "thought";
/** Novelty compares a thought with this many thoughts written before it. */
export const NOVELTY_WINDOW = 50;
/** Weight of the newest feedback in the utility moving average. */
export const UTILITY_ALPHA = 0.3;

/** A thought's content by its seq; the content hash is the input hash (no chunking rules: no version). */
const THOUGHT_TABLE = { kind: THOUGHT_KIND, artifactType: THOUGHT_KIND, table: "thoughts", idColumn: "seq", textColumn: "content", hashColumn: "content_hash" };
export const thoughtEmbeddablePg: PgEmbeddable = tableEmbeddablePg(THOUGHT_TABLE);
export const thoughtEmbeddable: Embeddable = tableEmbeddable(THOUGHT_TABLE);

export const chainIdSchema = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, "chain ids are 1-128 chars of letters, digits, . _ : -");

export const thinkInputSchema = z
  .object({
    content: z.string().trim().min(1).max(20_000),
    framework: z.enum(FRAMEWORKS).default("conversation"),
    chain_id: chainIdSchema.optional(),
    thought_number: countSchema.optional(),
    total_thoughts: countSchema.optional(),
    importance: unitInterval.default(0.5),
    relevance: unitInterval.default(0.5),
    consistency: unitInterval.optional(),
    tags: tagsSchema.optional(),
    category: z.string().trim().min(1).max(200).optional(),
    /** Epoch ms of the thought; defaults to now. */
    timestamp: z.number().int().positive().optional(),
    /** Governed memory (lib/index/facts.ts): what the thought states a fact about and which property; a later thought with another value supersedes it (event time: its timestamp). */
    subject: factSubjectSchema.optional(),
    property: factPropertySchema.optional(),
  })
  .strict()
  .refine((t) => t.chain_id !== undefined || t.thought_number === undefined, { message: "thought_number needs a chain_id", path: ["thought_number"] })
  .refine((t) => t.total_thoughts === undefined || t.thought_number === undefined || t.total_thoughts >= t.thought_number, { message: "total_thoughts must be ≥ thought_number", path: ["total_thoughts"] });
export type ThinkInput = z.input<typeof thinkInputSchema>;

export const listThoughtsQuerySchema = z
  .object({ chain_id: chainIdSchema.optional(), framework: z.enum(FRAMEWORKS).optional(), q: z.string().trim().min(1).max(500).optional(), ...listViewQuerySchema, limit: limitSchema, offset: offsetSchema })
  .strict();

export const feedbackInputSchema = z.object({ utility: unitInterval }).strict();

/** A thought as returned: the row spelled snake_case (its seq and content hash stay inside), tags decoded. */
export type Thought = Omit<SnakeCased<ThoughtRow>, "seq" | "content_hash" | "tags"> & {
  tags: string[];
  /** pending: queued for a vector; ready: embedded; missing: neither (e.g. parked after errors). */
  embedding: "pending" | "ready" | "missing";
  /** Poisoning flags of its content, tags and category (lib/poison.ts); empty when clean. */
  flags: PoisonFlag[];
};

/**
 * A thought row with the state of its vector. The subqueries name the outer
 * table itself: Drizzle leaves a single table's columns unqualified.
 */
type ThoughtSelect = ThoughtRow & { embedding: Thought["embedding"] };
const thoughtSelect = (t: typeof thoughts) => ({
  ...getTableColumns(t),
  embedding: sql<Thought["embedding"]>`case
    when exists (select 1 from embed_queue q where q.kind = ${THOUGHT_KIND} and q.ref_id = thoughts.seq and q.parked_at is null) then 'pending'
    when exists (select 1 from embeddings e where e.kind = ${THOUGHT_KIND} and e.ref_id = thoughts.seq and e.input_hash = thoughts.content_hash) then 'ready'
    else 'missing' end`,
});

function toThought({ seq: _seq, contentHash: _hash, ...r }: ThoughtSelect): Thought {
  const tags = parseJsonColumnOr<string[]>({ text: r.tags, fallback: [] });
  return { ...snakeCased(r), tags, flags: poisonFlags({ fields: { content: r.content, tags, category: r.category } }) };
}

function* thoughtsWhere(where: (t: typeof thoughts) => SQL | undefined, page: { order?: "chain" | "recent"; limit?: number; offset?: number } = {}): Op<Thought[]> {
  const found = yield* select({ thoughts: thoughtsTable }, (db, t) => {
    let q = db.select(thoughtSelect(t.thoughts)).from(t.thoughts).where(where(t.thoughts)).$dynamic();
    if (page.order) q = q.orderBy(...(page.order === "chain" ? [asc(t.thoughts.thoughtNumber), asc(t.thoughts.seq)] : [desc(t.thoughts.timestamp), desc(t.thoughts.seq)]));
    if (page.limit !== undefined) q = q.limit(page.limit);
    if (page.offset !== undefined) q = q.offset(page.offset);
    return q;
  });
  return found.map(toThought);
}

function* thoughtById(id: string): Op<Thought | undefined> {
  const [found] = yield* thoughtsWhere((t) => eq(t.id, id));
  return found;
}

/** The 409 of a thought number already taken in its chain. */
function thoughtNumberTaken({ chainId, n }: { chainId: string; n: number }): AppError {
  return new AppError("conflict", `chain ${chainId} already has thought number ${n}`);
}

/** Write a thought (and its chain's count) in one transaction and queue its vector; see the module note for numbering. */
export function thinkThought<H extends AnyStoreHandle>({ handle, input, actor }: { handle: H; input: ThinkInput; actor: string }): On<H, Thought> {
  const t = thinkInputSchema.parse(input);
  const now = Date.now();
  const id = randomUUID();
  return write(handle, function* () {
    const tags = JSON.stringify(normalizeTags(t.tags));
    yield* assertRoomForRow({ store: handle.store, table: "thoughts", values: { id, content: t.content, tags, category: t.category, chain_id: t.chain_id, created_by: actor } });
    let thoughtNumber: number | null = null;
    if (t.chain_id) {
      const chainId = t.chain_id;
      yield* insertOrIgnore(chainsTable, { id: chainId, createdAt: now, updatedAt: now, thoughtCount: 0 }, (c) => [c.id]);
      yield* row(chainsTable, (c) => eq(c.id, chainId), { lock: "update" });
      if (t.thought_number !== undefined) {
        const number = t.thought_number;
        if (yield* row(thoughtsTable, (r) => and(eq(r.chainId, chainId), eq(r.thoughtNumber, number)))) throw thoughtNumberTaken({ chainId, n: number });
        thoughtNumber = number;
      } else {
        const [{ n }] = yield* select({ thoughts: thoughtsTable }, (db, { thoughts: r }) => db.select({ n: sql<number>`coalesce(max(${r.thoughtNumber}), 0)`.mapWith(Number) }).from(r).where(eq(r.chainId, chainId)));
        thoughtNumber = n + 1;
      }
    }
    // The thought number was read under the chain's write lock.
    const thought = {
      id, content: t.content, framework: t.framework, chainId: t.chain_id ?? null, thoughtNumber, totalThoughts: t.total_thoughts ?? null, timestamp: t.timestamp ?? now,
      importance: t.importance, relevance: t.relevance, tags, category: t.category ?? null, consistency: t.consistency ?? null, contentHash: sha256Hex(t.content), createdBy: actor,
    };
    let seq: number;
    try {
      ({ seq } = yield* insert(thoughtsTable, thought));
      yield* rowWordsWritten({ table: THOUGHT_WORDS, ids: [seq] });
    } catch (e) {
      // The backstop: the chain lock already orders writers, and the unique (chain_id, thought_number) index says the same.
      if (t.chain_id && t.thought_number !== undefined && isUniqueViolation(e)) throw thoughtNumberTaken({ chainId: t.chain_id, n: t.thought_number });
      throw e;
    }
    yield* enqueueEmbeddingsOp({ items: [{ kind: THOUGHT_KIND, refId: seq, inputHash: thought.contentHash }] });
    if (t.chain_id) {
      const chainId = t.chain_id;
      yield* update(chainsTable, { thoughtCount: sql`thought_count + 1`, updatedAt: now }, (c) => eq(c.id, chainId));
    }
    return (yield* thoughtById(id))!;
  });
}

/** Thoughts whose novelty one read fills in at most (the rest on the next read). */
const NOVELTY_BATCH = 200;

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) s += a[i] * b[i];
  return s;
};

const inList = (ids: number[]) => sql.join(ids.map((id) => sql`${id}`), sql`, `);

/**
 * The seqs of the NOVELTY_WINDOW embedded thoughts before each of `seqs`: one
 * lateral join on PostgreSQL, one indexed look-up per thought on SQLite.
 */
function noveltyWindows({ seqs, fingerprintId }: { seqs: number[]; fingerprintId: string }): Op<{ seq: number; prev: number }[]> {
  return engineStep({
    sqlite: (h) => {
      const previous = h.sqlite.prepare(
        `select t.seq from thoughts t where t.seq < ? and exists (select 1 from embeddings e where e.kind = ? and e.ref_id = t.seq and e.fingerprint_id = ?) order by t.seq desc limit ${NOVELTY_WINDOW}`,
      );
      return seqs.flatMap((seq) => (previous.all(seq, THOUGHT_KIND, fingerprintId) as { seq: number }[]).map((p) => ({ seq, prev: p.seq })));
    },
    pg: async (tx) => {
      const found = await rowsOf<{ seq: string; prev: string }>({
        tx,
        query: sql`select r.seq, p.seq as prev from unnest(${`{${seqs.join(",")}}`}::bigint[]) as r(seq) cross join lateral (
            select t.seq from thoughts t where t.seq < r.seq
              and exists (select 1 from embeddings e where e.kind = ${THOUGHT_KIND} and e.ref_id = t.seq and e.fingerprint_id = ${fingerprintId})
            order by t.seq desc limit ${NOVELTY_WINDOW}) p`,
      });
      return found.map((w) => ({ seq: Number(w.seq), prev: Number(w.prev) }));
    },
  });
}

/**
 * Fill in novelty for thoughts whose vector has landed since they were
 * written: 1 − max cosine to the NOVELTY_WINDOW thoughts before them (1 for
 * the first thought; vectors are stored normalized, so cosine is their dot
 * product). On PostgreSQL rows another replica is filling in are skipped
 * (SKIP LOCKED): the value is the same whoever computes it, written only
 * while still null.
 */
function* pendingNoveltyFilled(fingerprintId: string): Op<number> {
  const pg = (yield* dialect()) === "pg";
  // The stored vector: a float4 BLOB on SQLite, a real[] on PostgreSQL.
  const vectorOf = (v: Buffer | number[]): ArrayLike<number> => (pg ? (v as number[]) : blobToVector(v as Buffer));
  const vector = pg ? sql`e.embedding` : sql`e.vector`;
  const ready = yield* sqlRows<{ seq: number | string; vector: Buffer | number[] }>(
    sql`select t.seq, ${vector} as vector from thoughts t join embeddings e on e.kind = ${THOUGHT_KIND} and e.ref_id = t.seq and e.fingerprint_id = ${fingerprintId} and e.input_hash = t.content_hash
      where t.novelty is null order by t.seq limit ${NOVELTY_BATCH}${pg ? sql` for update of t skip locked` : sql``}`,
  );
  if (ready.length === 0) return 0;
  const seqs = ready.map((r) => Number(r.seq));
  const windows = yield* noveltyWindows({ seqs, fingerprintId });
  const prevIds = [...new Set(windows.map((w) => w.prev))];
  const found = prevIds.length
    ? yield* sqlRows<{ refId: number | string; vector: Buffer | number[] }>(sql`select e.ref_id as "refId", ${vector} as vector from embeddings e where e.kind = ${THOUGHT_KIND} and e.fingerprint_id = ${fingerprintId} and e.ref_id in (${inList(prevIds)})`)
    : [];
  const vectors = new Map(found.map((v) => [Number(v.refId), vectorOf(v.vector)]));
  const before = new Map<number, number[]>();
  for (const w of windows) pushTo(before, w.seq, w.prev);
  const novelty = ready.map((r, i) => {
    const query = vectorOf(r.vector);
    const sims = (before.get(seqs[i]) ?? []).flatMap((p) => (vectors.has(p) ? [dot(query, vectors.get(p)!)] : []));
    return sims.length ? Math.min(1, Math.max(0, 1 - Math.max(...sims))) : 1;
  });
  const values = sql.join(seqs.map((seq, i) => sql`when ${seq} then cast(${novelty[i]} as double precision)`), sql` `);
  yield* sqlRun(sql`update thoughts set novelty = case seq ${values} end where seq in (${inList(seqs)}) and novelty is null`);
  return ready.length;
}

/**
 * Novelty catch-up for reads, on either engine; a provider that cannot start
 * leaves novelty pending, never fails the read, and a read-only handle (core
 * beside another store) leaves it to a read of that store. On SQLite it runs
 * outside a transaction: its one write is a single statement, taken only once
 * the reads found work.
 */
export async function refreshNovelty({ handle }: { handle: AnyStoreHandle }): Promise<void> {
  if (handle.kind === "pg" && handle.readOnly) return;
  let fingerprintId: string;
  try {
    fingerprintId = (await getEmbedder().fingerprint).id;
  } catch {
    return;
  }
  if (handle.kind === "pg") await write(handle, pendingNoveltyFilled(fingerprintId));
  else read(handle, pendingNoveltyFilled(fingerprintId));
}

export async function getThoughtById({ handle, id }: { handle: AnyStoreHandle; id: string }): Promise<Thought> {
  await refreshNovelty({ handle });
  const found = await read(handle, thoughtById(id));
  if (!found) throw notFound({ what: "thought", id });
  return found;
}

const LISTING_HINT = "use fewer or rarer words in q, a smaller offset, or filter by chain_id or framework";

/**
 * A listing's `q` filter, any of its words as typed (stopwords kept): FTS5's thoughts_fts (quoted words only) or the
 * tsvector column, each word a bound plainto_tsquery. Null: no word to look for.
 */
function listingTextFilter(q: string): Op<SQL | null> {
  return engineStep({
    sqlite: () => {
      const match = buildFtsMatch(q, { match: "any", stopwords: "keep", maxTerms: 16 });
      return match ? sql`thoughts.seq in (select rowid from thoughts_fts where thoughts_fts match ${match})` : null;
    },
    pg: async () => {
      const query = tsqueryFor({ terms: matchTerms(q, { stopwords: "keep", maxTerms: 16 }), match: "any" });
      return query ? sql`thoughts.tsv @@ (${query})` : null;
    },
  });
}

/** Thoughts by filter; the answer stops at DUALMIND_LIST_MAX_BYTES with `next_offset` (a chain's own view and the dashboard, which pages by number, read their page whole: `budget: false`). */
export async function listThoughtsByFilter({ handle, filter, budget = true }: { handle: AnyStoreHandle; filter: z.input<typeof listThoughtsQuerySchema>; budget?: boolean }): Promise<{ thoughts: Thought[]; total: number; next_offset: number | null }> {
  const f = listThoughtsQuerySchema.parse(filter);
  await refreshNovelty({ handle });
  return read(handle, function* () {
    const text = f.q ? yield* listingTextFilter(f.q) : undefined;
    if (text === null) return { thoughts: [], total: 0, next_offset: null };
    const where = (t: typeof thoughts) => and(f.chain_id ? eq(t.chainId, f.chain_id) : undefined, f.framework ? eq(t.framework, f.framework) : undefined, text, visibleWhere({ kind: "thought", id: t.id, includeRetired: f.include_retired, includeProposed: f.include_proposed }));
    // A text filter (`q`) or a deep offset is the caller's to make expensive: both statements share one query budget.
    return yield* withinBudget(startQueryBudget({ hint: LISTING_HINT }), function* () {
      const page = { thoughts: yield* thoughtsWhere(where, { order: f.chain_id ? "chain" : "recent", limit: f.limit, offset: f.offset }), total: yield* count(thoughtsTable, (t) => where(t as typeof thoughts)) };
      return pageWithinBudget({ page, key: "thoughts", offset: f.offset, budget });
    });
  });
}

/** Feedback moves utility as an exponential moving average (first feedback sets it), in one statement. */
export function recordThoughtFeedback<H extends AnyStoreHandle>({ handle, id, input }: { handle: H; id: string; input: z.input<typeof feedbackInputSchema> }): On<H, Thought> {
  const { utility } = feedbackInputSchema.parse(input);
  // Cast: PostgreSQL types a bare parameter from its neighbours, and would take 1 − α or a utility of 1 for an integer.
  const real = (v: number) => sql`cast(${v} as double precision)`;
  return write(handle, function* () {
    const changed = yield* update(
      thoughtsTable,
      { utility: sql`case when utility is null then ${real(utility)} else ${real(1 - UTILITY_ALPHA)} * utility + ${real(UTILITY_ALPHA)} * ${real(utility)} end`, feedbackCount: sql`feedback_count + 1` },
      (t) => eq(t.id, id),
    );
    if (changed.length === 0) throw notFound({ what: "thought", id });
    return (yield* thoughtById(id))!;
  });
}

/** Delete a thought: its chain count, evidence links (cascade), vector, state and contradictions go with it. Audited. */
export function deleteThought<H extends AnyStoreHandle>({ handle, id, actor }: { handle: H; id: string; actor: string }): On<H, { deleted: string }> {
  return write(handle, function* () {
    const [gone] = yield* remove(thoughtsTable, (t) => eq(t.id, id));
    if (!gone) throw notFound({ what: "thought", id });
    if (gone.chainId) {
      const chainId = gone.chainId;
      yield* update(chainsTable, { thoughtCount: sql`thought_count - 1`, updatedAt: Date.now() }, (c) => eq(c.id, chainId));
    }
    yield* forgetVectors({ kind: THOUGHT_KIND, refIds: [gone.seq] });
    yield* itemsDeletedOp({ kind: "thought", ids: [id] });
    yield* audit({ actor, action: "thought.delete", target: `store:${handle.store}/thought:${id}` });
    return { deleted: id };
  });
}

export type Chain = { id: string; created_at: number; updated_at: number; thought_count: number };

const toChain = (r: ChainRow): Chain => ({ id: r.id, created_at: r.createdAt, updated_at: r.updatedAt, thought_count: r.thoughtCount });

export function listChainsByRecency<H extends AnyStoreHandle>({ handle, limit = 50, offset = 0 }: { handle: H; limit?: number; offset?: number }): On<H, { chains: Chain[]; total: number }> {
  return read(handle, function* () {
    const page = yield* rows(chainsTable, { orderBy: (c, o) => [desc(c.updatedAt), o.bytewise(c.id)], limit, offset });
    return { chains: page.map(toChain), total: yield* count(chainsTable) };
  });
}

/** A chain with its first thoughts in order, within DUALMIND_LIST_MAX_BYTES: `next_offset` continues them through the thoughts list (`chain_id`, `offset`). */
export async function getChainById({ handle, id }: { handle: AnyStoreHandle; id: string }): Promise<Chain & { thoughts: Thought[]; next_offset: number | null }> {
  const found = await read(handle, row(chainsTable, (c) => eq(c.id, id)));
  if (!found) throw notFound({ what: "chain", id });
  const { thoughts: inChain, next_offset } = await listThoughtsByFilter({ handle, filter: { chain_id: id, limit: 200 } });
  return { ...toChain(found), thoughts: inChain, next_offset };
}
