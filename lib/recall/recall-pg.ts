import { inArray, sql } from "drizzle-orm";
import { rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { runWithinBudgetPg, startQueryBudget } from "../db/query-budget";
import { learnings, reasoningTraces } from "../db/schema/pg/store";
import { LEARNING_WORDS, rowsTopBm25Pg, startRowTermsBackfillPg, TRACE_WORDS, type RowWordTable } from "../index/engines/pg-words";
import { planQueryVectorPg } from "../index/query-vector-pg";
import { tsqueryFor } from "../index/search-pg";
import { kindVectorSpace, spaceNeighboursPg } from "../index/vectors-pg";
import { answerReason, ExplainRecorder, fusionPolicyFor, similarityFloorFor } from "../retrieval";
import { recallEventLogged } from "./events";
import { LEARNING_KIND } from "./learnings";
import {
  fusionExplain,
  learningHitsOf,
  LEXICAL_SCALE,
  lexicalSimilarities,
  recallEventOf,
  recallGuidance,
  recallInputSchema,
  recallPlan,
  roundScore,
  traceHitsOf,
  type Candidate,
  type RankOptions,
  type RecallInput,
  type RecallMode,
  type RecallResult,
} from "./recall";
import { reflectionSettingsInForce } from "./settings";
import { inCallerTx } from "../db/port";
import { TRACE_KIND } from "./traces";

/**
 * Reflection recall on PostgreSQL: the pipeline of recallReflections
 * (./recall.ts) — the same query text, readiness and query-embedding step
 * (planQueryVectorPg over the trace/learning vectors), scoring, min_score
 * gate, recency, guidance, reasons and recall log — with PostgreSQL's
 * full-text and KNN:
 * - lexical: the query's content words, OR-ed; the candidate cut by FTS5's
 *   bm25 from the stored token counts (lib/index/engines/pg-words.ts: the
 *   rows and order SQLite's FTS5 gives), or, until rows written before those
 *   statistics are tokenized, by ts_rank over the descriptor's or handle's
 *   generated tsvector (each word a bound plainto_tsquery); scored like
 *   SQLite by the share of query terms a row contains;
 * - vector: KNN over the kind's vectors in `embeddings` (HNSW with pgvector,
 *   else the bounded exact scan, lib/index/vectors-pg.ts), only vectors of
 *   the row's current text. When the exact scan refuses (too many vectors,
 *   no pgvector), the recall answers lexically with reason vectors_unavailable.
 */

type Kind = typeof TRACE_KIND | typeof LEARNING_KIND;

const KINDS: Record<Kind, { table: "reasoning_traces" | "learnings"; textColumn: string; hashColumn: string }> = {
  trace: { table: "reasoning_traces", textColumn: "summary_descriptor", hashColumn: "descriptor_hash" },
  learning: { table: "learnings", textColumn: "semantic_handle", hashColumn: "handle_hash" },
};

const KIND_WORDS: Record<Kind, RowWordTable> = { trace: TRACE_WORDS, learning: LEARNING_WORDS };

/**
 * Lexical candidates: rows holding any query term, best first by FTS5's bm25 from the stored token counts (SQLite's
 * order), or by ts_rank over the tsvector while rows written before those statistics wait for the backfill (started
 * here); similarity = scaled term coverage. `awaitingOnly`: only rows written but not (yet) embedded — queued by
 * write-behind, or stored without a vector under backpressure — as a subquery, never a list of ids the size of the backlog.
 */
async function lexicalCandidatesPg({ tx, handle, kind, terms, limit, awaitingOnly = false }: { tx: PgStoreTx; handle: PgStoreHandle; kind: Kind; terms: string[]; limit: number; awaitingOnly?: boolean }): Promise<Candidate[]> {
  if (terms.length === 0) return [];
  const { table, textColumn } = KINDS[kind];
  const skipped = kind === TRACE_KIND ? sql` or rid in (select id from reasoning_traces where embed_skipped_at is not null)` : sql``;
  const top = await rowsTopBm25Pg({ tx, table: KIND_WORDS[kind], words: terms, k: limit, only: awaitingOnly ? sql`rid in (select ref_id from embed_queue where kind = ${kind})${skipped}` : undefined });
  if (top.kind === "ranked") {
    const ids = top.hits.map((h) => h.rid);
    const texts = ids.length
      ? new Map((await rowsOf<{ id: string; text: string }>({ tx, query: sql`select id, ${sql.identifier(textColumn)} as text from ${sql.identifier(table)} where id = any(${`{${ids.join(",")}}`}::bigint[])` })).map((r) => [Number(r.id), r.text]))
      : new Map<number, string>();
    return lexicalSimilarities(
      terms,
      ids.flatMap((id) => (texts.has(id) ? [{ id, text: texts.get(id)! }] : [])),
    );
  }
  if (top.building) startRowTermsBackfillPg({ handle, table: KIND_WORDS[kind] });
  const query = tsqueryFor({ terms, match: "any" });
  if (!query) return [];
  const skippedRow = kind === TRACE_KIND ? sql` or t.embed_skipped_at is not null` : sql``;
  const only = awaitingOnly ? sql` and (t.id in (select ref_id from embed_queue where kind = ${kind})${skippedRow})` : sql``;
  const rows = await rowsOf<{ id: string; text: string }>({
    tx,
    query: sql`with q as (select (${query}) as q)
      select t.id, t.${sql.identifier(textColumn)} as text from ${sql.identifier(table)} t, q
      where t.tsv @@ q.q${only} order by ts_rank(t.tsv, q.q, 1) desc, t.id limit ${limit}`,
  });
  return lexicalSimilarities(
    terms,
    rows.map((r) => ({ id: Number(r.id), text: r.text })),
  );
}

type VectorLeg = { ok: true; candidates: Candidate[]; method: string; belowFloor: number } | { ok: false; message: string };

/** Vector candidates at or above the similarity floor (vectors of the row's current text only). */
async function vectorCandidatesPg({ tx, kind, fingerprintId, query, k, floor }: { tx: PgStoreTx; kind: Kind; fingerprintId: string; query: ArrayLike<number>; k: number; floor: number }): Promise<VectorLeg> {
  const { table, hashColumn } = KINDS[kind];
  const knn = await spaceNeighboursPg({ tx, space: kindVectorSpace({ kind, table, hashColumn }), fingerprintId, query, k });
  if (!knn.ok) return { ok: false, message: knn.message };
  const kept = knn.hits.filter((h) => h.similarity >= floor);
  return { ok: true, candidates: kept.map((h) => ({ refId: h.id, similarity: h.similarity, match: "vector" as const })), method: knn.method, belowFloor: knn.hits.length - kept.length };
}

async function rankPg({ tx, traceCandidates, learningCandidates, opts }: { tx: PgStoreTx; traceCandidates: Candidate[]; learningCandidates: Candidate[]; opts: RankOptions }) {
  const ids = (cs: Candidate[]) => [...new Set(cs.map((c) => c.refId))];
  const t = reasoningTraces;
  const l = learnings;
  const traceRows = traceCandidates.length
    ? await tx
        .select({ id: t.id, outcome: t.outcome, summary: t.summaryDescriptor, intentVerb: t.intentVerb, intentTarget: t.intentTarget, keyIssue: t.keyIssue, seenCount: t.seenCount, lastSeenAt: t.lastSeenAt })
        .from(t)
        .where(inArray(t.id, ids(traceCandidates)))
    : [];
  const learningRows = learningCandidates.length
    ? await tx
        .select({ id: l.id, predicate: l.predicate, description: l.description, confidence: l.confidence, summary: l.semanticHandle, lastSeenAt: l.lastSeenAt })
        .from(l)
        .where(inArray(l.id, ids(learningCandidates)))
    : [];
  return { traces: traceHitsOf({ candidates: traceCandidates, rows: traceRows, opts }), learningHits: learningHitsOf({ candidates: learningCandidates, rows: learningRows, opts }) };
}

/** "Have I faced this before?" on a PostgreSQL store; see recallReflections (./recall.ts) for the contract. */
export async function recallReflectionsPg({ handle, agentId, input }: { handle: PgStoreHandle; agentId: string; input: RecallInput }): Promise<RecallResult> {
  const started = performance.now();
  const body = recallInputSchema.parse(input);
  const settings = await withStoreTx({ handle, readOnly: true, work: (tx) => inCallerTx(tx, reflectionSettingsInForce()) });
  const { topK, minScore, queryText, terms, wantTraces, wantLearnings, pool } = recallPlan(body, settings, handle.store);
  const kinds = body.kinds as Kind[];
  const rec = body.explain ? new ExplainRecorder() : null;
  // Embedding the query may wait on the provider: outside any transaction.
  const plan = body.signals === "lexical" ? null : await planQueryVectorPg({ handle, text: queryText, kinds });
  if (plan) rec?.readiness(plan);

  return withStoreTx({ handle, work: async (tx) => {
    let mode: RecallMode = "lexical";
    let fallback: RecallResult["fallback"] = plan && !plan.ok ? { ...plan.fallback, message: `${plan.fallback.message}; answered by lexical recall over descriptors and handles` } : null;
    let reasonFallback = plan && !plan.ok ? plan.fallback : null;
    let method = "tsvector";
    let cacheHit = false;
    let belowFloor = 0;
    const candidates: Record<Kind, Candidate[]> = { trace: [], learning: [] };
    // Each full-text statement runs within the query budget (422 query_too_expensive), as on SQLite and in search.
    const budget = startQueryBudget({ hint: "try fewer or rarer words" });
    const lexicalLeg = (kind: Kind, awaitingOnly = false) => {
      const run = () => runWithinBudgetPg({ tx, budget, fn: () => lexicalCandidatesPg({ tx, handle, kind, terms, limit: pool, awaitingOnly }) });
      return rec
        ? rec.timeAsync("lexical", run, (c) => ({ candidates: c.length, detail: `${kind}: full text, ${terms.length ? terms.join(" OR ") : "no word"} (FTS5 bm25 from the stored token counts, ts_rank until they are built); similarity = ${LEXICAL_SCALE} × share of query terms found`, top: c.map((x) => ({ key: `${kind}:${x.refId}`, score: x.similarity })) }))
        : run();
    };

    if (plan?.ok) {
      const floor = similarityFloorFor(plan.fingerprint.provider);
      const legs: Partial<Record<Kind, VectorLeg>> = {};
      for (const kind of kinds) {
        const run = () => vectorCandidatesPg({ tx, kind, fingerprintId: plan.fingerprint.id, query: plan.vector, k: pool, floor });
        legs[kind] = rec
          ? await rec.timeAsync("vector", run, (v) => (v.ok ? { candidates: v.candidates.length, detail: `${kind}: KNN (${v.method}); ${v.belowFloor} neighbour(s) below the similarity floor left out`, top: v.candidates.map((c) => ({ key: `${kind}:${c.refId}`, score: c.similarity })) } : { candidates: 0, detail: `${kind}: ${v.message}` }))
          : await run();
      }
      const refused = Object.values(legs).find((v) => !v.ok);
      if (refused && !refused.ok) {
        // The exact scan refused (no pgvector, too many vectors): lexical over everything, and say why.
        reasonFallback = { reason: "vectors_unavailable", message: refused.message };
        fallback = { ...reasonFallback, message: `${refused.message}; answered by lexical recall over descriptors and handles` };
        for (const kind of kinds) candidates[kind] = await lexicalLeg(kind);
      } else {
        mode = body.signals;
        cacheHit = plan.cacheHit;
        for (const kind of kinds) {
          const v = legs[kind] as Extract<VectorLeg, { ok: true }>;
          method = v.method;
          belowFloor += v.belowFloor;
          // Rows still waiting for a vector are always searched lexically, so a fresh write is recalled at once.
          const lexical = await lexicalLeg(kind, body.signals !== "hybrid");
          candidates[kind] = [...v.candidates, ...lexical];
        }
        if (body.signals === "hybrid") method = `${method}+tsvector`;
      }
    } else {
      for (const kind of kinds) candidates[kind] = await lexicalLeg(kind);
    }

    const now = Date.now();
    const policy = fusionPolicyFor({ fingerprint: plan?.ok ? plan.fingerprint : null });
    const opts = { now, settings, minScore, topK, policy };
    const rank = () => rankPg({ tx, traceCandidates: candidates.trace, learningCandidates: candidates.learning, opts });
    const { traces, learningHits } = rec ? await rec.timeAsync("fusion", rank, (r) => fusionExplain({ ...r, settings, minScore, topK, candidates: candidates.trace.length + candidates.learning.length, policy })) : await rank();
    const guidance = recallGuidance({ traces, learningHits, settings });
    const latencyMs = roundScore(performance.now() - started);
    const eventId = await inCallerTx(tx, recallEventLogged(recallEventOf({ agentId, queryText, mode, fallback, latencyMs, cacheHit, guidance, traces, learningHits })));
    const [stored] = await rowsOf<{ any: boolean }>({
      tx,
      query: sql`select (${wantTraces} and exists (select 1 from reasoning_traces)) or (${wantLearnings} and exists (select 1 from learnings)) as any`,
    });
    const reason = answerReason({ found: traces.length + learningHits.length, searchable: stored.any ? 1 : 0, fallback: reasonFallback, belowFloor });
    return { eventId, mode, fallback, reason, method, cacheHit, query: queryText, traces, learnings: learningHits, guidance, latencyMs, ...(rec ? { explain: rec.result() } : {}) };
  } });
}
