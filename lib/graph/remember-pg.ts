import { asc, eq, inArray, sql } from "drizzle-orm";
import { bytewise, rowsOf, withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { runWithinBudgetPg, startQueryBudget, type QueryBudget } from "../db/query-budget";
import { kgFrameEvidence, kgFrames, kgNodes, kgRelationEvidence, thoughts } from "../db/schema/pg/store";
import { CORE_STORE } from "../db/store-names";
import type { Fingerprint } from "../embed/providers";
import { NODE_WORDS, rowsTopBm25Pg, startRowTermsBackfillPg, THOUGHT_WORDS, type RowWordTable } from "../index/engines/pg-words";
import { planQueryVectorPg } from "../index/query-vector-pg";
import { normalizeVector, spaceNeighboursPg, type VectorSpace } from "../index/vectors-pg";
import { ExplainRecorder, similarityFloorFor, type Fallback } from "../retrieval";
import { CONTEXT_EVIDENCE, contextScores, type ContextNeighbours } from "../retrieval/context";
import { NODE_KIND } from "./nodes";
import {
  asOfFor,
  candidateSet,
  MAX_EDGES_PER_SEED,
  MAX_EDGES_READ,
  type EdgeRow,
  dropCoreTwins,
  nodeFactsOf,
  oneHop,
  recordGatherExplain,
  recordReadiness,
  relationEvidenceOf,
  relativeLexical,
  rememberAnswer,
  rememberFusion,
  rememberPlan,
  REMEMBER_FORMULA,
  scoreCandidates,
  vectorPlanOf,
  type Candidate,
  type Kind,
  type NodeCandidateRow,
  type RememberInput,
  type RememberPlan,
  type RememberResponse,
  type ScoredSource,
  type ThoughtCandidateRow,
} from "./remember";
import { THOUGHT_KIND } from "./thoughts";

/**
 * Remember on PostgreSQL: rememberByQuery (./remember.ts) — the same plan,
 * candidates, one-hop expansion, formula, scores, order, reasons and
 * answer — over a store's schema (and core's, read-only, when the request
 * includes it and the caller may read core: the route checked that), with
 * PostgreSQL's full-text and KNN:
 * - vectors: thoughts' and nodes' vectors in `embeddings` (kinds "thought"
 *   and "node", queued with their writes), KNN through the one PostgreSQL
 *   KNN (pgvector HNSW where installed, else the bounded exact scan), only
 *   vectors of the row's current text; cosine of a candidate = the dot
 *   product of the normalized vectors. When the exact scan refuses (too
 *   many vectors, no pgvector), the answer is lexical with reason
 *   vectors_unavailable; the provider down, a backlog or another model's
 *   vectors give provider_error / backlog / model_mismatch, as recall does.
 * - lexical: the query's words, each a bound plainto_tsquery (never
 *   concatenated into tsquery text), OR-ed over the generated tsvector of
 *   thoughts (content) and nodes (name, display name, tags); ranked by
 *   Σ idf(lexeme) × ts_rank(tsv, lexeme, 1) as search ranks chunks (the
 *   bm25-like order), the lexical score relative to the best hit as on
 *   SQLite. Every full-text statement runs within the query budget (422
 *   query_too_expensive with a hint).
 */

const GRAPH_KINDS = [THOUGHT_KIND, NODE_KIND];
const BUDGET_HINT = "use fewer or rarer words in the query";

/** Where each kind lives: its table (code constants), the column its vector's ref_id points at, and its text's hash. */
const KIND_TABLES: Record<Kind, { table: "thoughts" | "kg_node"; hashColumn: "content_hash" | "embed_hash" }> = {
  thought: { table: "thoughts", hashColumn: "content_hash" },
  node: { table: "kg_node", hashColumn: "embed_hash" },
};

/** One kind's vectors in `embeddings`, joined to its table by seq so only vectors of a row's current text are neighbours. */
export function graphVectorSpace(kind: Kind): VectorSpace {
  const { table, hashColumn } = KIND_TABLES[kind];
  return {
    table: "embeddings",
    from: sql`embeddings e join ${sql.identifier(table)} r on r.seq = e.ref_id and r.${sql.identifier(hashColumn)} = e.input_hash`,
    id: sql`e.ref_id`,
    where: [sql`e.kind = ${kind}`],
  };
}

/** One place to read candidates from: the store's schema, or core's (a read-only handle). */
type SourcePg = { store: string; handle: PgStoreHandle; fp: Fingerprint | null };

type GatheredPg = ScoredSource & { belowFloor: number; vectorFallback: Fallback | null; searchable: boolean; lexicalTerms: string[]; lexicalBy: LexicalHits["by"][] };

async function loadThoughtsPg(tx: PgStoreTx, seqs: number[]): Promise<ThoughtCandidateRow[]> {
  if (seqs.length === 0) return [];
  const t = thoughts;
  return tx.select({ seq: t.seq, id: t.id, content: t.content, timestamp: t.timestamp, hash: t.contentHash, framework: t.framework, consistency: t.consistency }).from(t).where(inArray(t.seq, seqs));
}

async function loadNodesPg(tx: PgStoreTx, by: { seqs: number[] } | { ids: string[] }): Promise<NodeCandidateRow[]> {
  const n = kgNodes;
  const where = "seqs" in by ? (by.seqs.length ? inArray(n.seq, by.seqs) : null) : by.ids.length ? inArray(n.id, by.ids) : null;
  if (!where) return [];
  return tx.select({ seq: n.seq, id: n.id, name: n.name, displayName: n.displayName, entityType: n.entityType, updatedAt: n.updatedAt, hash: n.embedHash }).from(n).where(where);
}

/** Each kind's full-text statistics (FTS5's bm25 of its SQLite twin table, lib/index/engines/pg-words.ts). */
const KIND_WORDS: Record<Kind, RowWordTable> = { thought: THOUGHT_WORDS, node: NODE_WORDS };

type LexicalHits = { hits: { seq: number; lexical: number }[]; lexemes: string[]; by: "bm25" | "ts_rank" };

/**
 * The best `k` rows of a kind's table for the query's words (any), best first, with a lexical score relative to
 * the best: by FTS5's bm25 from the stored token counts (SQLite's ranks and scores), or, while rows written before
 * those statistics wait for the backfill (started here), by Σ idf × ts_rank per lexeme over the tsvector. Every
 * statement runs within the query budget. Returns the tokens or lexemes used (for explain).
 */
async function lexicalHitsPg({ tx, handle, kind, terms, k, budget }: { tx: PgStoreTx; handle: PgStoreHandle; kind: Kind; terms: string[]; k: number; budget: QueryBudget }): Promise<LexicalHits> {
  if (terms.length === 0) return { hits: [], lexemes: [], by: "bm25" };
  return runWithinBudgetPg({ tx, budget, fn: async () => {
    const top = await rowsTopBm25Pg({ tx, table: KIND_WORDS[kind], words: terms, k });
    if (top.kind === "ranked") return { hits: relativeLexical(top.hits.map((h) => ({ seq: h.rid, rank: h.score }))), lexemes: top.tokens, by: "bm25" as const };
    if (top.building) startRowTermsBackfillPg({ handle, table: KIND_WORDS[kind] });
    return tsRankHitsPg({ tx, kind, terms, k });
  } });
}

/** lexicalHitsPg by Σ idf × ts_rank per lexeme (idf from each lexeme's row count, counted on the GIN index). */
async function tsRankHitsPg({ tx, kind, terms, k }: { tx: PgStoreTx; kind: Kind; terms: string[]; k: number }): Promise<LexicalHits> {
  const table = sql.identifier(KIND_TABLES[kind].table);
  const words = sql`array[${sql.join(
    terms.map((t) => sql`${t}`),
    sql`, `,
  )}]::text[]`;
  const stats = await rowsOf<{ q: string; df: number; n: number }>({
    tx,
    query: sql`with t as (select plainto_tsquery('english', w) as q, i from unnest(${words}) with ordinality as u(w, i)),
      kept as (select q::text as q, min(i) as i from t where numnode(q) > 0 group by q::text)
      select kept.q, (select count(*) from ${table} x where x.tsv @@ kept.q::tsquery)::int as df, (select count(*) from ${table})::int as n
      from kept order by kept.i`,
  });
  if (stats.length === 0) return { hits: [], lexemes: [], by: "ts_rank" };
  // bm25's idf: rare words weigh more than common ones. Each lexeme's text is PostgreSQL's own, passed back as a parameter.
  const idf = (df: number, n: number) => Math.log(1 + (n - df + 0.5) / (df + 0.5));
  const rank = sql.join(
    stats.map((s) => sql`${idf(s.df, s.n)}::float8 * ts_rank(x.tsv, ${s.q}::tsquery, 1)`),
    sql` + `,
  );
  const query = sql.join(
    stats.map((s) => sql`${s.q}::tsquery`),
    sql` || `,
  );
  const rows = await rowsOf<{ seq: string; rank: number }>({ tx, query: sql`select x.seq, ${rank} as rank from ${table} x where x.tsv @@ (${query}) order by rank desc, x.seq limit ${k}` });
  return { hits: relativeLexical(rows.map((r) => ({ seq: Number(r.seq), rank: Number(r.rank) }))), lexemes: stats.map((s) => s.q), by: "ts_rank" };
}

/** The thoughts just before and after each hit in time, of the same chain, within the context window (thoughtNeighbours on SQLite). */
async function thoughtNeighboursPg(tx: PgStoreTx, seqs: number[]): Promise<ContextNeighbours[]> {
  if (seqs.length === 0) return [];
  const w = CONTEXT_EVIDENCE.windowMs;
  const rows = await rowsOf<{ hit: string; before: string | null; after: string | null }>({
    tx,
    query: sql`select h.seq as hit,
       (select n.seq from thoughts n where n.timestamp between h.timestamp - ${w} and h.timestamp and n.chain_id is not distinct from h.chain_id and (n.timestamp < h.timestamp or n.seq < h.seq) order by n.timestamp desc, n.seq desc limit 1) as before,
       (select n.seq from thoughts n where n.timestamp between h.timestamp and h.timestamp + ${w} and n.chain_id is not distinct from h.chain_id and (n.timestamp > h.timestamp or n.seq > h.seq) order by n.timestamp, n.seq limit 1) as after
     from thoughts h where h.seq = any(${`{${seqs.join(",")}}`}::bigint[])`,
  });
  return rows.map((r) => ({ hit: Number(r.hit), before: r.before === null ? null : Number(r.before), after: r.after === null ? null : Number(r.after) }));
}

/** Cosine of each candidate's current vector (its hash must match the row's text) with the query; vectors are stored normalized. */
async function cosineByCandidatePg({ tx, kind, cands, fingerprintId, query }: { tx: PgStoreTx; kind: Kind; cands: Candidate[]; fingerprintId: string; query: number[] }): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (cands.length === 0) return out;
  const ids = `{${cands.map((c) => c.seq).join(",")}}`;
  const rows = await rowsOf<{ refId: string; inputHash: string; embedding: number[] }>({
    tx,
    query: sql`select ref_id as "refId", input_hash as "inputHash", embedding from embeddings where kind = ${kind} and fingerprint_id = ${fingerprintId} and ref_id = any(${ids}::bigint[])`,
  });
  const hashes = new Map(cands.map((c) => [c.seq, c.hash]));
  for (const r of rows) {
    const seq = Number(r.refId);
    if (hashes.get(seq) !== r.inputHash || r.embedding.length !== query.length) continue;
    let dot = 0;
    for (let i = 0; i < query.length; i++) dot += query[i] * r.embedding[i];
    out.set(seq, Math.min(1, Math.max(0, dot)));
  }
  return out;
}

/**
 * One source in one read-only transaction: kNN + full-text seeds for each kind, merged by entity, one hop over
 * strong edges, then what scoring reads (cosines, frame facts, relation evidence) of every candidate.
 */
async function gatherPg({ src, plan, queryVector, budget }: { src: SourcePg; plan: RememberPlan; queryVector: number[] | null; budget: QueryBudget }): Promise<GatheredPg> {
  const { req, ftsTerms } = plan;
  return withStoreTx({ handle: src.handle, readOnly: true, work: async (tx) => {
    const set = candidateSet(src.store);
    let belowFloor = 0;
    let vectorFallback: Fallback | null = null;
    const kinds = req.kinds as Kind[];
    // The KNN of each kind first: when one refuses (the exact scan's limit), this source answers lexically.
    const nearest = new Map<Kind, number[]>();
    if (queryVector && src.fp) {
      const floor = similarityFloorFor(src.fp.provider);
      for (const kind of kinds) {
        const knn = await spaceNeighboursPg({ tx, space: graphVectorSpace(kind), fingerprintId: src.fp.id, query: queryVector, k: req.candidates });
        if (!knn.ok) {
          vectorFallback = { reason: "vectors_unavailable", message: `${src.store}: ${knn.message}` };
          nearest.clear();
          break;
        }
        const kept = knn.hits.filter((h) => h.similarity >= floor);
        belowFloor += knn.hits.length - kept.length;
        nearest.set(kind, kept.map((h) => h.id));
      }
    }
    const useVectors = queryVector !== null && src.fp !== null && vectorFallback === null;
    const lexicalTerms: string[] = [];
    const lexicalBy: LexicalHits["by"][] = [];
    const lexicalOf = (hits: { seq: number; lexical: number }[]) => new Map(hits.map((h) => [h.seq, h.lexical]));
    if (kinds.includes(THOUGHT_KIND)) {
      if (useVectors) set.addThoughts(await loadThoughtsPg(tx, nearest.get(THOUGHT_KIND) ?? []), "thought_knn");
      const { hits, lexemes, by } = await lexicalHitsPg({ tx, handle: src.handle, kind: THOUGHT_KIND, terms: ftsTerms, k: req.candidates, budget });
      lexicalTerms.push(...lexemes);
      lexicalBy.push(by);
      set.addThoughts(await loadThoughtsPg(tx, hits.map((h) => h.seq)), "thought_fts", lexicalOf(hits));
      const seeds = hits.slice(0, CONTEXT_EVIDENCE.seeds);
      const context = contextScores({ hits, neighbours: await thoughtNeighboursPg(tx, seeds.map((h) => h.seq)) });
      set.addThoughts(await loadThoughtsPg(tx, [...context.keys()]), "thought_context", context);
    }
    if (kinds.includes(NODE_KIND)) {
      if (useVectors) set.addNodes(await loadNodesPg(tx, { seqs: nearest.get(NODE_KIND) ?? [] }), "node_knn");
      const { hits, lexemes, by } = await lexicalHitsPg({ tx, handle: src.handle, kind: NODE_KIND, terms: ftsTerms, k: req.candidates, budget });
      lexicalTerms.push(...lexemes);
      lexicalBy.push(by);
      set.addNodes(await loadNodesPg(tx, { seqs: hits.map((h) => h.seq) }), "node_fts", lexicalOf(hits));
      const seeds = set.nodeIds();
      if (seeds.length > 0) {
        // Each seed's strongest edges only, each direction read through its (node, weight) index: a hub costs its cap, not its degree.
        const ids = sql`${`{${seeds.map((id) => `"${id.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`).join(",")}}`}::text[]`;
        const side = (end: "from_id" | "to_id") =>
          sql`select e.id, e.from_id as "fromId", e.to_id as "toId", e.relationship_type as type, e.weight from unnest(${ids}) s(id)
              cross join lateral (select * from kg_relation x where x.${sql.identifier(end)} = s.id and x.weight >= ${req.min_edge_weight} order by x.weight desc, x.id collate "C" limit ${MAX_EDGES_PER_SEED}) e`;
        const edges = (await rowsOf<EdgeRow>({ tx, query: sql`select * from (${side("from_id")} union ${side("to_id")}) u order by weight desc, id collate "C" limit ${MAX_EDGES_READ}` })).map((e) => ({ ...e, weight: Number(e.weight) }));
        const hop = oneHop({ set, seeds, edges });
        hop.join(await loadNodesPg(tx, { ids: hop.newcomers }));
      }
    }

    const list = [...set.cands.values()];
    const nodesList = list.filter((c) => c.kind === NODE_KIND);
    const nodeIds = nodesList.map((c) => c.id);
    const cosines = async (kind: Kind) => (useVectors ? cosineByCandidatePg({ tx, kind, cands: list.filter((c) => c.kind === kind), fingerprintId: src.fp!.id, query: queryVector! }) : new Map<number, number>());
    const f = kgFrames;
    const frames = nodeIds.length
      ? await tx.select({ id: f.id, nodeId: f.nodeId, col: f.column, properties: f.properties }).from(f).where(inArray(f.nodeId, nodeIds)).orderBy(bytewise(f.nodeId), asc(f.createdAt), bytewise(f.id))
      : [];
    const evidence = nodeIds.length
      ? await tx.select({ nodeId: f.nodeId, thoughtId: kgFrameEvidence.thoughtId, stance: kgFrameEvidence.stance }).from(kgFrameEvidence).innerJoin(f, eq(f.id, kgFrameEvidence.targetId)).where(inArray(f.nodeId, nodeIds))
      : [];
    const relationIds = nodesList.flatMap((c) => (c.edge ? [c.edge.relationId] : []));
    const relEvidence = relationIds.length
      ? await tx.select({ relationId: kgRelationEvidence.targetId, thoughtId: kgRelationEvidence.thoughtId }).from(kgRelationEvidence).where(inArray(kgRelationEvidence.targetId, relationIds))
      : [];
    const [{ searchable }] = await rowsOf<{ searchable: boolean }>({ tx, query: sql`select exists (select 1 from thoughts) or exists (select 1 from kg_node) as searchable` });
    return {
      store: src.store,
      cands: set.cands,
      cosThought: await cosines(THOUGHT_KIND),
      cosNode: await cosines(NODE_KIND),
      facts: nodeFactsOf({ nodeIds, frames, evidence }),
      relEvidence: relationEvidenceOf(relEvidence),
      belowFloor,
      vectorFallback,
      searchable,
      lexicalTerms,
      lexicalBy,
    };
  } });
}

/** Fused, explained, deterministic recall over thoughts and the graph of a PostgreSQL store; see rememberByQuery (./remember.ts) for the contract. */
export async function rememberByQueryPg({ handle, core, input }: { handle: PgStoreHandle; core: PgStoreHandle | null; input: RememberInput }): Promise<RememberResponse> {
  const plan = rememberPlan(input);
  const { req } = plan;
  const store = handle.store;
  const coreHandle = req.include_core && store !== CORE_STORE ? core : null;
  const includeCore = coreHandle !== null;

  // Embedding the query may wait on the provider: outside any transaction.
  const rec = req.explain ? new ExplainRecorder() : null;
  const storePlan = await planQueryVectorPg({ handle, text: req.query, kinds: GRAPH_KINDS });
  const corePlan = coreHandle ? await planQueryVectorPg({ handle: coreHandle, text: req.query, kinds: GRAPH_KINDS }) : null;
  recordReadiness(rec, [
    [store, storePlan],
    [CORE_STORE, corePlan],
  ]);
  const vp = vectorPlanOf({ plan: storePlan, corePlan, includeCore });
  const queryVector = vp.queryVector ? normalizeVector(vp.queryVector) : null;

  const budget = startQueryBudget({ hint: BUDGET_HINT });
  const sources: SourcePg[] = [{ store, handle, fp: vp.storeFp }];
  if (coreHandle) sources.push({ store: CORE_STORE, handle: coreHandle, fp: vp.coreFp });
  const gatherStarted = performance.now();
  const perSource: GatheredPg[] = [];
  for (const src of sources) perSource.push(await gatherPg({ src, plan, queryVector: src.fp ? queryVector : null, budget }));
  const belowFloor = perSource.reduce((n, s) => n + s.belowFloor, 0);
  // The store's own KNN decides the mode: when it could not answer, the whole answer is lexical and says why; core's refusal is core's fallback.
  const storeRefused = perSource[0].vectorFallback;
  const fallback = vp.fallback ?? storeRefused;
  const coreFallback = vp.coreFallback ?? perSource[1]?.vectorFallback ?? null;
  if (rec) {
    const lexemes = [...new Set(perSource.flatMap((s) => s.lexicalTerms))];
    const tsRank = perSource.some((s) => s.lexicalBy.includes("ts_rank"));
    const ranking = tsRank ? "ranked by Σ idf × ts_rank per lexeme (FTS5's bm25 once the full-text statistics are built)" : "ranked by FTS5's bm25 from the stored token counts";
    const lexicalDetail = lexemes.length ? `thoughts and nodes, ${lexemes.join(" OR ")}; ${ranking}` : "no word to match";
    recordGatherExplain({ rec, perSource, gatherMs: performance.now() - gatherStarted, hasQueryVector: queryVector !== null && !storeRefused, belowFloor, plan, lexicalDetail });
  }
  const fusionStarted = performance.now();
  const alsoInCore = dropCoreTwins(perSource);
  const asOf = asOfFor(req, perSource);
  const fusion = rememberFusion({ plan, fp: storeRefused ? null : vp.storeFp });
  const scored = scoreCandidates({ plan, sources: perSource, alsoInCore, asOf, fusion });
  rec?.record("fusion", performance.now() - fusionStarted, { candidates: scored.length, detail: `${REMEMBER_FORMULA}; ${fusion.policy.detail}; each result's breakdown gives its terms`, top: scored.map((r) => ({ key: `${r.store}:${r.kind}:${r.id}`, score: r.score })) });
  return rememberAnswer({
    plan,
    store,
    includeCore,
    vectorsAnswered: vp.storeFp !== null && !storeRefused,
    fallback,
    coreFallback,
    scored,
    searchable: perSource.some((s) => s.searchable),
    belowFloor,
    asOf,
    rec,
    fusion,
  });
}
