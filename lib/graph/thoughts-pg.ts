import { randomUUID } from "node:crypto";
import { and, asc, count, desc, eq, getTableColumns, sql, type SQL } from "drizzle-orm";
import type { z } from "zod";
import { bytewise, rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { runWithinBudgetPg, startQueryBudget } from "../db/query-budget";
import { chains, thoughts } from "../db/schema/pg/store";
import { appendAuditPg } from "../governance/audit-pg";
import { isPgUniqueViolation } from "../db/pg";
import { getEmbedder } from "../embed/model";
import { tableEmbeddablePg, type PgEmbeddable } from "../index/embed-kinds-pg";
import { enqueueEmbeddingsPg } from "../index/embed-queue-pg";
import { tsqueryFor } from "../index/search-pg";
import { forgetKindEmbeddingsPg } from "../index/vectors-pg";
import { notFound } from "../common";
import { pushTo } from "../collections";
import { matchTerms } from "../retrieval";
import { feedbackInputSchema, listThoughtsQuerySchema, newThoughtRow, NOVELTY_WINDOW, thinkInputSchema, THOUGHT_KIND, thoughtNumberTaken, toChain, toThought, UTILITY_ALPHA, type Chain, type ThinkInput, type Thought } from "./thoughts";

/**
 * Thoughts and chains on PostgreSQL (the SQLite twin is ./thoughts.ts, whose
 * schemas and shapers this reuses). SQLite serializes writers with BEGIN
 * IMMEDIATE; here a write to a chain locks the chain's row (SELECT … FOR
 * UPDATE) before it reads the chain's last thought number, so writers on any
 * replica number a chain's thoughts one after the other, and the chain's
 * count moves in the same transaction. The unique (chain_id, thought_number)
 * index is the backstop.
 *
 * Vectors: a thought is queued for its vector (kind "thought", the content
 * as text, content_hash as input hash) in its insert's transaction and
 * embedded by the PostgreSQL embed worker into `embeddings`; its `embedding`
 * says pending / ready / missing as on SQLite, and novelty (1 − max cosine to
 * the NOVELTY_WINDOW embedded thoughts before it) is filled in on reads once
 * its vector has landed (refreshNoveltyPg), as on SQLite.
 */

/** A thought row with the state of its vector (the subqueries name the outer table itself, as on SQLite). */
const THOUGHT_SELECT_PG = {
  ...getTableColumns(thoughts),
  embedding: sql<Thought["embedding"]>`case
    when exists (select 1 from embed_queue q where q.kind = ${THOUGHT_KIND} and q.ref_id = thoughts.seq and q.parked_at is null) then 'pending'
    when exists (select 1 from embeddings e where e.kind = ${THOUGHT_KIND} and e.ref_id = thoughts.seq and e.input_hash = thoughts.content_hash) then 'ready'
    else 'missing' end`,
};

/** The worker reads a thought's content by its seq; the content hash is the input hash (no chunking rules: no version). */
export const thoughtEmbeddablePg: PgEmbeddable = tableEmbeddablePg({ kind: THOUGHT_KIND, artifactType: THOUGHT_KIND, table: "thoughts", idColumn: "seq", textColumn: "content", hashColumn: "content_hash" });

/** Thoughts whose novelty one read fills in at most (the rest on the next read), as SQLite's catch-up batch. */
const NOVELTY_BATCH = 200;

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) s += a[i] * b[i];
  return s;
};

/**
 * Fill in novelty for thoughts whose vector (of this model, of their current
 * text) has landed: 1 − max cosine to the NOVELTY_WINDOW embedded thoughts
 * written before each (1 for the first), as computePendingNovelty does on
 * SQLite. Vectors are stored normalized, so cosine is their dot product.
 * Rows another replica is filling in are skipped (SKIP LOCKED); the value
 * is the same whoever computes it, and is written only while still null.
 */
export async function computePendingNoveltyPg({ tx, fingerprintId }: { tx: PgStoreTx; fingerprintId: string }): Promise<number> {
  const ready = await rowsOf<{ seq: string; embedding: number[] }>(
    tx,
    sql`select t.seq, e.embedding from thoughts t join embeddings e on e.kind = ${THOUGHT_KIND} and e.ref_id = t.seq and e.fingerprint_id = ${fingerprintId} and e.input_hash = t.content_hash
      where t.novelty is null order by t.seq limit ${NOVELTY_BATCH} for update of t skip locked`,
  );
  if (ready.length === 0) return 0;
  const seqs = `{${ready.map((r) => r.seq).join(",")}}`;
  const window = await rowsOf<{ seq: string; prev: string }>(
    tx,
    sql`select r.seq, p.seq as prev from unnest(${seqs}::bigint[]) as r(seq) cross join lateral (
        select t.seq from thoughts t where t.seq < r.seq
          and exists (select 1 from embeddings e where e.kind = ${THOUGHT_KIND} and e.ref_id = t.seq and e.fingerprint_id = ${fingerprintId})
        order by t.seq desc limit ${NOVELTY_WINDOW}) p`,
  );
  const prevIds = [...new Set(window.map((w) => w.prev))];
  const vectors = new Map<string, number[]>();
  if (prevIds.length) {
    const found = await rowsOf<{ refId: string; embedding: number[] }>(tx, sql`select ref_id as "refId", embedding from embeddings where kind = ${THOUGHT_KIND} and fingerprint_id = ${fingerprintId} and ref_id = any(${`{${prevIds.join(",")}}`}::bigint[])`);
    for (const v of found) vectors.set(String(v.refId), v.embedding);
  }
  const before = new Map<string, string[]>();
  for (const w of window) pushTo(before, String(w.seq), String(w.prev));
  const novelty = ready.map((r) => {
    const sims = (before.get(String(r.seq)) ?? []).flatMap((p) => (vectors.has(p) ? [dot(r.embedding, vectors.get(p)!)] : []));
    return sims.length ? Math.min(1, Math.max(0, 1 - Math.max(...sims))) : 1;
  });
  await tx.execute(sql`update thoughts t set novelty = u.novelty from unnest(${seqs}::bigint[], ${`{${novelty.join(",")}}`}::float8[]) as u(seq, novelty) where t.seq = u.seq and t.novelty is null`);
  return ready.length;
}

/** Novelty catch-up for reads; a provider that cannot start leaves novelty pending, never fails the read. */
export async function refreshNoveltyPg({ handle }: { handle: PgStoreHandle }): Promise<void> {
  if (handle.readOnly) return;
  let fingerprintId: string;
  try {
    fingerprintId = (await getEmbedder().fingerprint).id;
  } catch {
    return;
  }
  await withStoreTx({ handle }, (tx) => computePendingNoveltyPg({ tx, fingerprintId }));
}

async function selectThoughtPg(tx: PgStoreTx, id: string): Promise<Thought | null> {
  const [row] = await tx.select(THOUGHT_SELECT_PG).from(thoughts).where(eq(thoughts.id, id));
  return row ? toThought(row) : null;
}

/** Write a thought (and its chain's count) in one transaction; see the module note for numbering across replicas. */
export async function thinkThoughtPg({ handle, input, actor }: { handle: PgStoreHandle; input: ThinkInput; actor: string }): Promise<Thought> {
  const t = thinkInputSchema.parse(input);
  const now = Date.now();
  const id = randomUUID();
  try {
    return await withStoreTx({ handle }, async (tx) => {
      let thoughtNumber: number | null = null;
      if (t.chain_id) {
        await tx.insert(chains).values({ id: t.chain_id, createdAt: now, updatedAt: now, thoughtCount: 0 }).onConflictDoNothing({ target: chains.id });
        await tx.select({ id: chains.id }).from(chains).where(eq(chains.id, t.chain_id)).for("update");
        const inChain = eq(thoughts.chainId, t.chain_id);
        if (t.thought_number !== undefined) {
          const [taken] = await tx.select({ seq: thoughts.seq }).from(thoughts).where(and(inChain, eq(thoughts.thoughtNumber, t.thought_number)));
          if (taken) throw thoughtNumberTaken(t.chain_id, t.thought_number);
          thoughtNumber = t.thought_number;
        } else {
          const [{ n }] = await tx.select({ n: sql<number>`coalesce(max(${thoughts.thoughtNumber}), 0)`.mapWith(Number) }).from(thoughts).where(inChain);
          thoughtNumber = n + 1;
        }
      }
      const row = newThoughtRow({ id, input: t, thoughtNumber, actor, now });
      const [{ seq }] = await tx.insert(thoughts).values(row).returning({ seq: thoughts.seq });
      await enqueueEmbeddingsPg({ tx, items: [{ kind: THOUGHT_KIND, refId: seq, inputHash: row.contentHash }], now });
      if (t.chain_id) await tx.update(chains).set({ thoughtCount: sql`${chains.thoughtCount} + 1`, updatedAt: now }).where(eq(chains.id, t.chain_id));
      return (await selectThoughtPg(tx, id))!;
    });
  } catch (e) {
    // A backstop: the chain lock already orders writers, and the unique (chain_id, thought_number) index says the same.
    if (t.chain_id && t.thought_number !== undefined && isPgUniqueViolation(e)) throw thoughtNumberTaken(t.chain_id, t.thought_number);
    throw e;
  }
}

export async function getThoughtByIdPg({ handle, id }: { handle: PgStoreHandle; id: string }): Promise<Thought> {
  await refreshNoveltyPg({ handle });
  const found = await withStoreTx({ handle, readOnly: true }, (tx) => selectThoughtPg(tx, id));
  if (!found) throw notFound("thought", id);
  return found;
}

/** A listing's `q`: any of its words, stopwords kept, as typed (as on SQLite), each a bound plainto_tsquery. */
function listingTsquery(q: string): SQL | null {
  return tsqueryFor(matchTerms(q, { stopwords: "keep", maxTerms: 16 }), "any");
}

export async function listThoughtsByFilterPg({ handle, filter }: { handle: PgStoreHandle; filter: z.input<typeof listThoughtsQuerySchema> }): Promise<{ thoughts: Thought[]; total: number }> {
  const f = listThoughtsQuerySchema.parse(filter);
  await refreshNoveltyPg({ handle });
  const query = f.q ? listingTsquery(f.q) : null;
  if (f.q && !query) return { thoughts: [], total: 0 };
  const where = and(
    f.chain_id ? eq(thoughts.chainId, f.chain_id) : undefined,
    f.framework ? eq(thoughts.framework, f.framework) : undefined,
    // The tsvector column is hand-written (0005), so it is named here, not in the Drizzle table.
    query ? sql`thoughts.tsv @@ (${query})` : undefined,
  );
  const order = f.chain_id ? [asc(thoughts.thoughtNumber), asc(thoughts.seq)] : [desc(thoughts.timestamp), desc(thoughts.seq)];
  // A text filter (`q`) or a deep offset is the caller's to make expensive: both statements share one query budget.
  const budget = startQueryBudget({ hint: "use fewer or rarer words in q, a smaller offset, or filter by chain_id or framework" });
  return withStoreTx({ handle, readOnly: true }, (tx) =>
    runWithinBudgetPg(tx, budget, async () => {
      const rows = await tx
        .select(THOUGHT_SELECT_PG)
        .from(thoughts)
        .where(where)
        .orderBy(...order)
        .limit(f.limit)
        .offset(f.offset);
      const [{ n }] = await tx.select({ n: count() }).from(thoughts).where(where);
      return { thoughts: rows.map(toThought), total: n };
    }),
  );
}

/** Feedback moves utility as an exponential moving average (first feedback sets it), in one statement. */
export async function recordThoughtFeedbackPg({ handle, id, input }: { handle: PgStoreHandle; id: string; input: z.input<typeof feedbackInputSchema> }): Promise<Thought> {
  const { utility } = feedbackInputSchema.parse(input);
  const found = await withStoreTx({ handle }, async (tx) => {
    const changed = await tx
      .update(thoughts)
      .set({
        utility: sql`case when ${thoughts.utility} is null then ${utility}::float8 else (1 - ${UTILITY_ALPHA}::float8) * ${thoughts.utility} + ${UTILITY_ALPHA}::float8 * ${utility}::float8 end`,
        feedbackCount: sql`${thoughts.feedbackCount} + 1`,
      })
      .where(eq(thoughts.id, id))
      .returning({ id: thoughts.id });
    return changed.length ? selectThoughtPg(tx, id) : null;
  });
  if (!found) throw notFound("thought", id);
  return found;
}

/** Delete a thought: its chain count and evidence links (cascade) go with it. Audited, in the same transaction. */
export async function deleteThoughtPg({ handle, id, actor }: { handle: PgStoreHandle; id: string; actor: string }): Promise<{ deleted: string }> {
  await withStoreTx({ handle }, async (tx) => {
    const [row] = await tx.delete(thoughts).where(eq(thoughts.id, id)).returning({ seq: thoughts.seq, chainId: thoughts.chainId });
    if (!row) throw notFound("thought", id);
    await forgetKindEmbeddingsPg({ tx, kind: THOUGHT_KIND, refIds: [row.seq] });
    if (row.chainId) await tx.update(chains).set({ thoughtCount: sql`${chains.thoughtCount} - 1`, updatedAt: Date.now() }).where(eq(chains.id, row.chainId));
    await appendAuditPg({ db: tx, entry: { actor, action: "thought.delete", target: `store:${handle.store}/thought:${id}` } });
  });
  return { deleted: id };
}

export async function listChainsByRecencyPg({ handle, limit = 50, offset = 0 }: { handle: PgStoreHandle; limit?: number; offset?: number }): Promise<{ chains: Chain[]; total: number }> {
  return withStoreTx({ handle, readOnly: true }, async (tx) => {
    const rows = await tx.select().from(chains).orderBy(desc(chains.updatedAt), bytewise(chains.id)).limit(limit).offset(offset);
    const [{ n }] = await tx.select({ n: count() }).from(chains);
    return { chains: rows.map(toChain), total: n };
  });
}

export async function getChainByIdPg({ handle, id }: { handle: PgStoreHandle; id: string }): Promise<Chain & { thoughts: Thought[] }> {
  const [row] = await withStoreTx({ handle, readOnly: true }, (tx) => tx.select().from(chains).where(eq(chains.id, id)));
  if (!row) throw notFound("chain", id);
  const { thoughts: inChain } = await listThoughtsByFilterPg({ handle, filter: { chain_id: id, limit: 200 } });
  return { ...toChain(row), thoughts: inChain };
}
