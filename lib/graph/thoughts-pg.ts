import { randomUUID } from "node:crypto";
import { and, asc, count, desc, eq, getTableColumns, sql, type SQL } from "drizzle-orm";
import type { z } from "zod";
import { bytewise, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { runWithinBudgetPg, startQueryBudget } from "../db/query-budget";
import { chains, thoughts } from "../db/schema/pg/store";
import { appendAuditPg } from "../governance/audit-pg";
import { isPgUniqueViolation } from "../db/pg";
import { tsqueryFor } from "../index/search-pg";
import { notFound } from "../common";
import { matchTerms } from "../retrieval";
import { feedbackInputSchema, listThoughtsQuerySchema, newThoughtRow, thinkInputSchema, thoughtNumberTaken, toChain, toThought, UTILITY_ALPHA, type Chain, type ThinkInput, type Thought } from "./thoughts";

/**
 * Thoughts and chains on PostgreSQL (the SQLite twin is ./thoughts.ts, whose
 * schemas and shapers this reuses). SQLite serializes writers with BEGIN
 * IMMEDIATE; here a write to a chain locks the chain's row (SELECT … FOR
 * UPDATE) before it reads the chain's last thought number, so writers on any
 * replica number a chain's thoughts one after the other, and the chain's
 * count moves in the same transaction. The unique (chain_id, thought_number)
 * index is the backstop.
 *
 * Vectors: PostgreSQL stores have no thought vectors yet (no embeddings
 * table for kinds other than chunks), so nothing is queued, a thought's
 * `embedding` is "missing" and its novelty stays null (on SQLite novelty
 * appears with the vector) — never an invented score.
 */

/** A thought row as the shaper reads it; `embedding` is honest: no vector is made on PostgreSQL yet. */
const THOUGHT_SELECT_PG = { ...getTableColumns(thoughts), embedding: sql<Thought["embedding"]>`'missing'` };

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
      await tx.insert(thoughts).values(newThoughtRow({ id, input: t, thoughtNumber, actor, now }));
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
    const [row] = await tx.delete(thoughts).where(eq(thoughts.id, id)).returning({ chainId: thoughts.chainId });
    if (!row) throw notFound("thought", id);
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
