import type Database from "better-sqlite3";
import { z } from "zod";
import { openStoreReaderWithCore, type StoreHandle } from "../db/connection";
import { runWithinBudget, startQueryBudget, type QueryBudget } from "../db/query-budget";
import type { FRAME_COLUMNS } from "../db/schema/graph";
import type { KnnSource } from "../embed/vector-index";
import { CORE_STORE } from "../db/store-names";
import { preparedOnce } from "../db/statements";
import type { Fingerprint } from "../embed/providers";
import { answerReason, broadTopWithinBudget, confidenceBand, ExplainRecorder, fuseScores, fusionPolicyFor, matchExpression, termCoverage, weakAnswerReason, type ConfidenceBand, type FusionPolicy, matchTerms, planQueryVector, selectiveTopByBm25, similaritiesOf, similarityFloorFor, vectorNeighbours, type Explain, type Fallback, type RetrievalReason } from "../retrieval";
import type { QueryVectorPlan } from "../retrieval/readiness";
import { CONTEXT_EVIDENCE, contextScores, type ContextNeighbours } from "../retrieval/context";
import { NODE_KIND } from "./nodes";
import { THOUGHT_KIND } from "./thoughts";
import { parseJsonColumnOr, unitInterval } from "../common";
import { pushTo } from "../collections";

/**
 * Fused remember over thoughts and graph nodes of a store (and, read-only,
 * core).
 *
 *   score = w_sem·semantic + w_epi·recency·episodic + w_proc·procedure_match
 *         + w_rel·edge_weight − w_conflict·inconsistency
 *
 * semantic        cosine(query, vector) when the item has a current vector;
 *                 otherwise (not embedded yet, or vectors unusable) its bm25
 *                 relative to the best FTS hit of its list.
 * recency         exp(−Δt/τ), Δt = as_of − the item's time (thought timestamp,
 *                 node updated_at). as_of defaults to the newest candidate's
 *                 time, so the same data and query always score the same.
 * episodic        1 for a thought (an episode); for a node, the share of its
 *                 frames in the episodic column.
 * procedure_match share of the query's words found in the node's procedural
 *                 frames (for a build/debug thought: in its content).
 * edge_weight     the largest weight of a relation (≥ min_edge_weight)
 *                 linking the node to a node found directly.
 * inconsistency   for a node: (property keys with different values across its
 *                 frames + contradicting evidence links) / (property keys +
 *                 evidence links); for a thought: 1 − consistency.
 *
 * Defaults are set by measurement (bench/graph.bench.ts, known-item queries
 * at 10k thoughts + 5k nodes): larger episodic/procedural/relation weights
 * (0.3/0.3/0.4) cut MRR@10 from 0.65 (semantic only) to 0.36 as neighbours
 * and recent items crowded out the item asked for; at 0.05/0.05/0.1 they
 * reorder near-ties and stay within 0.02 of semantic only. The conflict
 * penalty only lowers items that disagree with themselves, so it stays high.
 * Returned with every response; any weight can be overridden per request.
 */
export type RememberWeights = { semantic: number; episodic: number; procedural: number; relation: number; conflict: number };
export const DEFAULT_REMEMBER_WEIGHTS: Readonly<RememberWeights> = { semantic: 1, episodic: 0.05, procedural: 0.05, relation: 0.1, conflict: 0.5 };
/** What each signal means, returned with every answer so a caller can read its scores. */
export const REMEMBER_SIGNALS = {
  semantic: "relevance: bm25 relative to the best FTS hit × (0.5 + 0.5 × share of the query's words the item holds) + context from the neighbouring turns + w_vec × cosine(query, item vector), w_vec calibrated for the store's model (fusion)",
  recency: "exp(−(as_of − item time)/τ); item time = thought timestamp or node updated_at",
  episodic: "1 for a thought; for a node, the share of its frames in the episodic column",
  procedure_match: "share of the query's words found in the node's procedural frames (or a build/debug thought's content)",
  edge_weight: "largest weight of a relation ≥ min_edge_weight linking the node to a directly found node",
  inconsistency: "node: (keys with different values across frames + contradicting evidence) / (keys + evidence); thought: 1 − consistency",
} as const;
export const REMEMBER_FORMULA = "w_sem·semantic + w_epi·recency·episodic + w_proc·procedure_match + w_rel·edge_weight − w_conflict·inconsistency";

const weight = z.number().min(0).max(10);
/** Words of the query matched by full-text (each one more doclist to merge). */
const MAX_FTS_TERMS = 16;
/** At most this many neighbours join by expansion (strongest edges first), so a hub node cannot flood the answer. */
export const MAX_EXPANDED_NODES = 100;
/** One-hop expansion reads at most this many edges per seed in each direction (its strongest), and this many in all. */
export const MAX_EDGES_PER_SEED = 25;
export const MAX_EDGES_READ = 500;

export const rememberInputSchema = z
  .object({
    query: z.string().trim().min(1).max(2000),
    include_core: z.boolean().default(false),
    limit: z.number().int().min(1).max(100).default(10),
    kinds: z
      .array(z.enum([THOUGHT_KIND, NODE_KIND]))
      .min(1)
      .default([THOUGHT_KIND, NODE_KIND]),
    weights: z.object({ semantic: weight, episodic: weight, procedural: weight, relation: weight, conflict: weight }).partial().strict().optional(),
    /** Recency time constant τ in hours. */
    tau_hours: z.number().positive().max(24 * 365 * 10).default(24 * 7),
    min_edge_weight: unitInterval.default(0.5),
    /** Reference time (epoch ms) for recency. */
    as_of: z.number().int().positive().optional(),
    /** Candidates taken from each source (kNN and FTS, per kind, per store). */
    candidates: z.number().int().min(1).max(200).default(25),
    /** Weight of the cosine beside the lexical score in `semantic` (lib/retrieval/fusion.ts); default: calibrated for the store's model. */
    w_vec: z.number().min(0).max(10).optional(),
    /** Add each stage's candidates and time (readiness, vector, lexical, fusion); each result's breakdown says why it ranked where it did. */
    explain: z.boolean().default(false),
  })
  .strict();
export type RememberInput = z.input<typeof rememberInputSchema>;

export type Kind = typeof THOUGHT_KIND | typeof NODE_KIND;
export type MatchSource = "thought_knn" | "thought_fts" | "thought_context" | "node_knn" | "node_fts" | "expansion";

export type ScoreBreakdown = {
  /** The fused relevance: lexical + w_vec × vector (lib/retrieval/fusion.ts), never below the lexical evidence. */
  semantic: number;
  /** "lexical" when the item has no current vector (not embedded yet, or vectors unusable). */
  semantic_source: "vector" | "lexical";
  /** bm25 relative to the best full-text hit of its table × (0.5 + 0.5 × the share of the query's words it holds); 0 when the words did not find it. */
  lexical: number;
  /** Lexical evidence of the rows just before and after it, × the context weight (lib/retrieval/context.ts). */
  context: number;
  /** cosine(query, item vector); null without a current vector. */
  vector: number | null;
  recency: number;
  episodic: number;
  procedure_match: number;
  edge_weight: number;
  inconsistency: number;
  /** Each weighted term of the score; they sum to `score`. */
  terms: { semantic: number; episodic: number; procedural: number; relation: number; conflict: number };
};

export type RememberResult = {
  kind: Kind;
  id: string;
  /** The store this came from: the queried store, or "core" (read-only, never written). */
  store: string;
  title: string;
  entity_type: string | null;
  score: number;
  /** How well the evidence answers the query, for agents and people (lib/retrieval/confidence.ts). */
  confidence: ConfidenceBand;
  breakdown: ScoreBreakdown;
  matched_by: MatchSource[];
  evidence_thought_ids: string[];
  /** For results brought in by one-hop expansion: the relation that did it. */
  via: { relation_id: string; relationship_type: string; from_node_id: string; weight: number } | null;
  also_in_core?: boolean;
};

export type RememberResponse = {
  query: string;
  store: string;
  include_core: boolean;
  mode: "vector+fts" | "fts";
  fallback: { reason: string; message: string; count?: number } | null;
  core_fallback: { reason: string; message: string; count?: number } | null;
  /** Why the answer is empty or weak (null when it has hits and every signal answered). */
  reason: RetrievalReason | null;
  formula: string;
  signals: typeof REMEMBER_SIGNALS;
  weights: RememberWeights;
  tau_hours: number;
  min_edge_weight: number;
  as_of: number | null;
  /** The fusion policy that made `semantic` (lib/retrieval/fusion.ts): the model it is calibrated for and the vector weight. */
  fusion: { key: string; source: FusionPolicy["source"]; w_vec: number; detail: string };
  results: RememberResult[];
  /** With explain=true: each stage's candidates and time. */
  explain?: Explain;
};

/** One place to read candidates from: the store (main schema) or core (attached, read-only). */
type Source = { store: string; schema: "main" | "core"; db: Database.Database; fingerprintId: string | null; vectorsLoaded: boolean; floor: number };

const knnSource = (src: Source): KnnSource => ({ db: src.db, schema: src.schema, vectorsLoaded: src.vectorsLoaded });

/** One entity found by remember in one source (both dialects). */
export type Candidate = {
  key: string;
  kind: Kind;
  seq: number;
  id: string;
  title: string;
  /** Full thought content (titles are cut), for procedure matching. */
  text: string;
  entityType: string | null;
  time: number;
  hash: string;
  name: string | null;
  framework: string | null;
  consistency: number | null;
  matchedBy: Set<MatchSource>;
  lexical: number;
  /** Lexical evidence inherited from the rows just before and after it (lib/retrieval/context.ts). */
  context: number;
  edge: { weight: number; relationId: string; type: string; fromNodeId: string } | null;
  expanded: boolean;
};

const clamp01 = (x: number) => Math.min(1, Math.max(0, x));
const round = (x: number) => Math.round(x * 1e6) / 1e6;

function queryTerms(text: string): string[] {
  return [...new Set(text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [])].filter((w) => w.length >= 3);
}

function shareOfTermsIn(terms: string[], text: string): number {
  if (terms.length === 0 || !text) return 0;
  const words = new Set(text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []);
  return terms.filter((t) => words.has(t)).length / terms.length;
}

/** Flatten JSON property values to words for procedure matching. */
function propertyText(json: string): string {
  const values: string[] = [];
  const walk = (v: unknown) => {
    if (v === null || v === undefined) return;
    if (typeof v === "object") for (const x of Object.values(v as object)) walk(x);
    else values.push(String(v));
  };
  walk(parseJsonColumnOr<unknown>({ text: json, fallback: {} }));
  return values.join(" ");
}

/**
 * Rows read from a source, the same on both dialects. On SQLite the SQL stays hand-written here: the same text
 * reads the store (schema `main`) and the attached read-only core (schema `core`), which Drizzle's tables cannot address.
 */
export type ThoughtCandidateRow = { seq: number; id: string; content: string; timestamp: number; hash: string; framework: string; consistency: number | null };
export type NodeCandidateRow = { seq: number; id: string; name: string; displayName: string; entityType: string; updatedAt: number; hash: string };
type FtsRankRow = { seq: number; rank: number };
export type FrameFactRow = { id: string; nodeId: string; col: (typeof FRAME_COLUMNS)[number]; properties: string };
export type FrameEvidenceRow = { nodeId: string; thoughtId: string; stance: string };
export type RelationEvidenceRow = { relationId: string; thoughtId: string };
export type EdgeRow = { id: string; fromId: string; toId: string; type: string; weight: number };

function loadThoughts({ src, by }: { src: Source; by: { column: "seq" | "id"; values: (number | string)[] } }): ThoughtCandidateRow[] {
  if (by.values.length === 0) return [];
  return preparedOnce({
    sqlite: src.db,
    sql: `select seq, id, content, timestamp, content_hash as hash, framework, consistency from ${src.schema}.thoughts where ${by.column} in (select value from json_each(?))`,
  }).all(JSON.stringify(by.values)) as ThoughtCandidateRow[];
}

function loadNodes({ src, by }: { src: Source; by: { column: "seq" | "id"; values: (number | string)[] } }): NodeCandidateRow[] {
  if (by.values.length === 0) return [];
  return preparedOnce({
    sqlite: src.db,
    sql: `select seq, id, name, display_name as displayName, entity_type as entityType, updated_at as updatedAt, embed_hash as hash from ${src.schema}.kg_node where ${by.column} in (select value from json_each(?))`,
  }).all(JSON.stringify(by.values)) as NodeCandidateRow[];
}

/** Nearest refIds of a kind, at or above the similarity floor, through the one KNN (store or attached core). */
function nearestRefIds({ src, kind, query, k, belowFloor }: { src: Source; kind: Kind; query: Float32Array; k: number; belowFloor: { n: number } }): number[] {
  if (!src.fingerprintId) return [];
  const r = vectorNeighbours({ sources: [{ store: src.store, source: knnSource(src), fingerprintId: src.fingerprintId }], kind, query, k, floor: src.floor });
  belowFloor.n += r.belowFloor;
  return r.hits.map((h) => h.refId);
}

/** Lexical scores relative to the best hit (1 for the best); `rank` is better when larger. */
export function relativeLexical(rows: { seq: number; rank: number }[]): { seq: number; lexical: number }[] {
  const best = rows.length ? rows[0].rank : 0;
  return rows.map((r) => ({ seq: r.seq, lexical: best > 0 ? clamp01(r.rank / best) : 1 }));
}

/**
 * bm25 hits of an FTS table, best first, with a lexical score relative to the best hit (1 for the best). A query
 * with common words is first ranked from its rarer words' rows (selectiveTopByBm25, or null: the whole query runs);
 * `common` collects the words scored on those candidates only.
 */
function ftsHits({ src, table, terms, k, budget, common }: { src: Source; table: "thoughts_fts" | "kg_node_fts"; terms: string[]; k: number; budget: QueryBudget; common: Set<string> }): { seq: number; lexical: number }[] {
  const match = matchExpression(terms, "any");
  if (!match) return [];
  const pruned = runWithinBudget({ sqlite: src.db, budget, fn: () => selectiveTopByBm25({ db: src.db, schema: src.schema, table, terms, k }) });
  for (const w of pruned?.common ?? []) common.add(w);
  // Broad matches on a table with word lists are ranked from them, exactly as the statement below ranks them.
  const broad = pruned ? null : broadTopWithinBudget({ db: src.db, schema: src.schema, table, match, budget });
  const statement = preparedOnce({ sqlite: src.db, sql: `select rowid as seq, bm25(${table}) as rank from ${src.schema}.${table} where ${table} match ? order by rank, rowid limit ?` });
  const rows = pruned
    ? pruned.rows.map((r) => ({ seq: r.rowid, rank: r.rank }))
    : broad
      ? broad.top(k).map((r) => ({ seq: r.rowid, rank: r.rank }))
      : runWithinBudget({ sqlite: src.db, budget, fn: () => statement.all(match, k) as FtsRankRow[] });
  // bm25 is better when more negative.
  return relativeLexical(rows.map((r) => ({ seq: r.seq, rank: -r.rank })));
}

/**
 * The thoughts just before and after each of `seqs` in time, of the same chain (or both unchained), within the
 * context window (lib/retrieval/context.ts); each lookup walks the timestamp index from the hit outwards.
 */
function thoughtNeighbours({ src, seqs }: { src: Source; seqs: number[] }): ContextNeighbours[] {
  if (seqs.length === 0) return [];
  const t = `${src.schema}.thoughts`;
  return preparedOnce({
    sqlite: src.db,
    sql: `select h.seq as hit,
       (select n.seq from ${t} n where n.timestamp between h.timestamp - @w and h.timestamp and n.chain_id is h.chain_id and (n.timestamp < h.timestamp or n.seq < h.seq) order by n.timestamp desc, n.seq desc limit 1) as before,
       (select n.seq from ${t} n where n.timestamp between h.timestamp and h.timestamp + @w and n.chain_id is h.chain_id and (n.timestamp > h.timestamp or n.seq > h.seq) order by n.timestamp, n.seq limit 1) as after
     from ${t} h where h.seq in (select value from json_each(@seqs))`,
  }).all({ w: CONTEXT_EVIDENCE.windowMs, seqs: JSON.stringify(seqs) }) as ContextNeighbours[];
}

/** Cosine of each candidate's current vector (hash must match the row's text) with the query. */
function cosineByCandidate({ src, kind, cands, query }: { src: Source; kind: Kind; cands: Candidate[]; query: Float32Array }): Map<number, number> {
  const out = new Map<number, number>();
  if (!src.fingerprintId || cands.length === 0) return out;
  const sims = similaritiesOf({ source: knnSource(src), kind, fingerprintId: src.fingerprintId, refIds: cands.map((c) => c.seq), query });
  const hashes = new Map(cands.map((c) => [c.seq, c.hash]));
  for (const [refId, s] of sims) if (hashes.get(refId) === s.inputHash) out.set(refId, clamp01(s.similarity));
  return out;
}

function hasGraphContent(src: Source): boolean {
  return !!preparedOnce({ sqlite: src.db, sql: `select 1 from ${src.schema}.thoughts union all select 1 from ${src.schema}.kg_node limit 1` }).get();
}

function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const it of items) {
    const k = key(it);
    const list = out.get(k);
    if (list) list.push(it);
    else out.set(k, [it]);
  }
  return out;
}

export type NodeFacts = { episodicShare: number; procedural: string; inconsistency: number; evidence: string[] };

/** Each node's frame facts (episodic share, procedural text, inconsistency, evidence) from its frames (ordered by node, created_at, id) and frame evidence. */
export function nodeFactsOf({ nodeIds, frames, evidence }: { nodeIds: string[]; frames: FrameFactRow[]; evidence: FrameEvidenceRow[] }): Map<string, NodeFacts> {
  const facts = new Map<string, NodeFacts>();
  const framesByNode = groupBy(frames, (f) => f.nodeId);
  const evidenceByNode = groupBy(evidence, (e) => e.nodeId);
  for (const id of nodeIds) {
    const mine = framesByNode.get(id) ?? [];
    const links = evidenceByNode.get(id) ?? [];
    const valuesByKey = new Map<string, Set<string>>();
    for (const f of mine) {
      for (const [k, v] of Object.entries(parseJsonColumnOr<Record<string, unknown>>({ text: f.properties, fallback: {} }))) {
        const set = valuesByKey.get(k) ?? new Set<string>();
        set.add(JSON.stringify(v));
        valuesByKey.set(k, set);
      }
    }
    const conflictingKeys = [...valuesByKey.values()].filter((s) => s.size > 1).length;
    const contradicting = links.filter((l) => l.stance === "contradicts").length;
    const denominator = valuesByKey.size + links.length;
    facts.set(id, {
      episodicShare: mine.length ? mine.filter((f) => f.col === "episodic").length / mine.length : 0,
      procedural: mine
        .filter((f) => f.col === "procedural")
        .map((f) => propertyText(f.properties))
        .join(" "),
      inconsistency: denominator ? clamp01((conflictingKeys + contradicting) / denominator) : 0,
      evidence: [...new Set(links.map((l) => l.thoughtId))],
    });
  }
  return facts;
}

function nodeFacts({ src, nodeIds }: { src: Source; nodeIds: string[] }): Map<string, NodeFacts> {
  if (nodeIds.length === 0) return new Map();
  // Frames and their evidence in one pass over the nodes' frames (two queries found each node's frames twice), ordered here.
  const rows = preparedOnce({
    sqlite: src.db,
    sql: `select f.id, f.node_id as nodeId, f."column" as col, f.properties, f.created_at as createdAt, e.thought_id as thoughtId, e.stance
       from ${src.schema}.kg_frame f left join ${src.schema}.kg_frame_evidence e on e.frame_id = f.id
      where f.node_id in (select value from json_each(?))`,
  }).all(JSON.stringify(nodeIds)) as (FrameFactRow & { createdAt: number; thoughtId: string | null; stance: string | null })[];
  const frames = new Map<string, FrameFactRow & { createdAt: number }>();
  const evidence: FrameEvidenceRow[] = [];
  for (const r of rows) {
    if (!frames.has(r.id)) frames.set(r.id, { id: r.id, nodeId: r.nodeId, col: r.col, properties: r.properties, createdAt: r.createdAt });
    if (r.thoughtId !== null) evidence.push({ nodeId: r.nodeId, thoughtId: r.thoughtId, stance: r.stance! });
  }
  // SQLite's order by node_id, created_at, id (ids are ASCII: code-unit order is its binary order).
  const byKey = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const ordered = [...frames.values()].sort((a, b) => byKey(a.nodeId, b.nodeId) || a.createdAt - b.createdAt || byKey(a.id, b.id));
  return nodeFactsOf({ nodeIds, frames: ordered, evidence });
}

export function relationEvidenceOf(rows: RelationEvidenceRow[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of rows) pushTo(out, r.relationId, r.thoughtId);
  return out;
}

function relationEvidence({ src, relationIds }: { src: Source; relationIds: string[] }): Map<string, string[]> {
  if (relationIds.length === 0) return new Map();
  const rows = preparedOnce({ sqlite: src.db, sql: `select relation_id as relationId, thought_id as thoughtId from ${src.schema}.kg_relation_evidence where relation_id in (select value from json_each(?))` }).all(JSON.stringify(relationIds)) as RelationEvidenceRow[];
  return relationEvidenceOf(rows);
}

/**
 * Candidates of one source, merged by entity: one entity found several ways
 * is one candidate, its sources accumulate, its lexical score is the best seen.
 */
export function candidateSet(store: string) {
  const cands = new Map<string, Candidate>();
  // A new candidate is made only when the entity is new, as one literal of a fixed shape: spreading a row's fields into
  // it took ~8 µs a candidate at 100k thoughts (1.4 ms of a remember call), measured.
  const merge = (kind: Kind, row: { id: string; seq: number }, how: MatchSource, lexical: Map<number, number>, make: (key: string, expanded: boolean) => Candidate) => {
    const key = `${store}:${kind}:${row.id}`;
    let c = cands.get(key);
    if (!c) cands.set(key, (c = make(key, how === "expansion")));
    c.matchedBy.add(how);
    if (how === "thought_context") c.context = Math.max(c.context, lexical.get(row.seq) ?? 0);
    else c.lexical = Math.max(c.lexical, lexical.get(row.seq) ?? 0);
  };
  return {
    cands,
    addThoughts(rows: ThoughtCandidateRow[], how: MatchSource, lexical: Map<number, number> = new Map()) {
      for (const r of rows) {
        merge(THOUGHT_KIND, r, how, lexical, (key, expanded) => ({
          key,
          kind: THOUGHT_KIND,
          seq: r.seq,
          id: r.id,
          title: r.content.length > 200 ? `${r.content.slice(0, 199)}…` : r.content,
          text: r.content,
          entityType: null,
          time: r.timestamp,
          hash: r.hash,
          name: null,
          framework: r.framework,
          consistency: r.consistency,
          matchedBy: new Set<MatchSource>(),
          lexical: 0,
          context: 0,
          edge: null,
          expanded,
        }));
      }
    },
    addNodes(rows: NodeCandidateRow[], how: MatchSource, lexical: Map<number, number> = new Map()) {
      for (const r of rows) {
        merge(NODE_KIND, r, how, lexical, (key, expanded) => ({
          key,
          kind: NODE_KIND,
          seq: r.seq,
          id: r.id,
          title: r.displayName,
          text: r.displayName,
          entityType: r.entityType,
          time: r.updatedAt,
          hash: r.hash,
          name: r.name,
          framework: null,
          consistency: null,
          matchedBy: new Set<MatchSource>(),
          lexical: 0,
          context: 0,
          edge: null,
          expanded,
        }));
      }
    },
    /** The ids of the nodes found directly: the seeds of one-hop expansion. */
    nodeIds: () => [...cands.values()].filter((c) => c.kind === NODE_KIND).map((c) => c.id),
  };
}
export type CandidateSet = ReturnType<typeof candidateSet>;

/** Candidates of one source: kNN + FTS seeds for each kind, merged by entity, then one hop over strong edges. */
function gatherCandidates({ src, ...args }: { src: Source; kinds: Kind[]; queryVector: Float32Array | null; ftsTerms: string[]; k: number; minEdgeWeight: number; budget: QueryBudget; belowFloor: { n: number }; common: Set<string> }): Map<string, Candidate> {
  const set = candidateSet(src.store);
  const lexicalOf = (hits: { seq: number; lexical: number }[]) => new Map(hits.map((h) => [h.seq, h.lexical]));
  if (args.kinds.includes(THOUGHT_KIND)) {
    if (args.queryVector) set.addThoughts(loadThoughts({ src, by: { column: "seq", values: nearestRefIds({ src, kind: THOUGHT_KIND, query: args.queryVector, k: args.k, belowFloor: args.belowFloor }) } }), "thought_knn");
    if (args.ftsTerms.length > 0) {
      const hits = ftsHits({ src, table: "thoughts_fts", terms: args.ftsTerms, k: args.k, budget: args.budget, common: args.common });
      set.addThoughts(loadThoughts({ src, by: { column: "seq", values: hits.map((h) => h.seq) } }), "thought_fts", lexicalOf(hits));
      const seeds = hits.slice(0, CONTEXT_EVIDENCE.seeds);
      const context = contextScores({ hits, neighbours: thoughtNeighbours({ src, seqs: seeds.map((h) => h.seq) }) });
      set.addThoughts(loadThoughts({ src, by: { column: "seq", values: [...context.keys()] } }), "thought_context", context);
    }
  }
  if (args.kinds.includes(NODE_KIND)) {
    if (args.queryVector) set.addNodes(loadNodes({ src, by: { column: "seq", values: nearestRefIds({ src, kind: NODE_KIND, query: args.queryVector, k: args.k, belowFloor: args.belowFloor }) } }), "node_knn");
    if (args.ftsTerms.length > 0) {
      const hits = ftsHits({ src, table: "kg_node_fts", terms: args.ftsTerms, k: args.k, budget: args.budget, common: args.common });
      set.addNodes(loadNodes({ src, by: { column: "seq", values: hits.map((h) => h.seq) } }), "node_fts", lexicalOf(hits));
    }
    const seeds = set.nodeIds();
    if (seeds.length > 0) {
      // Each seed's strongest edges only, each direction read through its (node, weight) index: a hub costs its cap, not its degree.
      const r = `${src.schema}.kg_relation`;
      const strongest = (end: "from_id" | "to_id") => `select x.id from ${r} x where x.${end} = s.value and x.weight >= @minWeight order by x.weight desc, x.id limit @perSeed`;
      const side = (end: "from_id" | "to_id") => `select e.id, e.from_id as fromId, e.to_id as toId, e.relationship_type as type, e.weight from json_each(@seeds) s join ${r} e on e.id in (${strongest(end)})`;
      const edges = preparedOnce({ sqlite: src.db, sql: `select * from (${side("from_id")} union ${side("to_id")}) order by weight desc, id limit @total` }).all({
        minWeight: args.minEdgeWeight,
        seeds: JSON.stringify(seeds),
        perSeed: MAX_EDGES_PER_SEED,
        total: MAX_EDGES_READ,
      }) as EdgeRow[];
      const hop = oneHop({ set, seeds, edges });
      hop.join(loadNodes({ src, by: { column: "id", values: hop.newcomers } }));
    }
  }
  return set.cands;
}

/**
 * One hop from the directly found nodes (`seeds`) over `edges` (relations
 * with weight ≥ the threshold touching a seed, strongest first). Every node
 * linked to a seed (seeds included) records the strongest such edge;
 * neighbours not found directly (`newcomers`, at most MAX_EXPANDED_NODES)
 * join as "expansion" once the caller has loaded their rows (`join`).
 */
export function oneHop({ set, seeds, edges }: { set: CandidateSet; seeds: string[]; edges: EdgeRow[] }): { newcomers: string[]; join: (rows: NodeCandidateRow[]) => void } {
  const seedSet = new Set(seeds);
  const best = new Map<string, { weight: number; relationId: string; type: string; fromNodeId: string }>();
  for (const e of edges) {
    for (const [me, other] of [
      [e.toId, e.fromId],
      [e.fromId, e.toId],
    ]) {
      if (!seedSet.has(other)) continue;
      const cur = best.get(me);
      if (!cur || e.weight > cur.weight) best.set(me, { weight: e.weight, relationId: e.id, type: e.type, fromNodeId: other });
    }
  }
  return {
    newcomers: [...best.keys()].filter((id) => !seedSet.has(id)).slice(0, MAX_EXPANDED_NODES),
    join: (rows) => {
      set.addNodes(rows, "expansion");
      for (const c of set.cands.values()) {
        if (c.kind !== NODE_KIND) continue;
        const edge = best.get(c.id);
        if (edge) c.edge = edge;
      }
    },
  };
}

/** What a remember request asks, parsed, with the weights and the words each signal uses. */
export function rememberPlan(input: RememberInput) {
  const req = rememberInputSchema.parse(input);
  return {
    req,
    w: { ...DEFAULT_REMEMBER_WEIGHTS, ...(req.weights ?? {}) },
    ftsTerms: matchTerms(req.query, { maxTerms: MAX_FTS_TERMS }),
    terms: queryTerms(req.query),
  };
}
export type RememberPlan = ReturnType<typeof rememberPlan>;

/** One source's candidates with what scoring reads of them: cosines by seq (current vectors only), node facts, relation evidence. */
export type ScoredSource = { store: string; cands: Map<string, Candidate>; cosThought: Map<number, number>; cosNode: Map<number, number>; facts: Map<string, NodeFacts>; relEvidence: Map<string, string[]> };

/** Dedupe by entity across stores: a core node with the same name and type as a store node is the same entity; the store's copy wins. */
export function dropCoreTwins(perSource: { cands: Map<string, Candidate> }[]): Set<string> {
  const alsoInCore = new Set<string>();
  if (perSource.length !== 2) return alsoInCore;
  const storeNodes = new Map([...perSource[0].cands.values()].filter((c) => c.kind === NODE_KIND).map((c) => [`${c.name}\u0000${c.entityType}`, c.key]));
  for (const [key, c] of perSource[1].cands) {
    const twin = c.kind === NODE_KIND ? storeNodes.get(`${c.name}\u0000${c.entityType}`) : undefined;
    if (twin) {
      alsoInCore.add(twin);
      perSource[1].cands.delete(key);
    }
  }
  return alsoInCore;
}

/** The gathering's explain stages (vector, lexical, expansion), shown by what each leg found; the time is the whole gathering's. */
export function recordGatherExplain({ rec, perSource, gatherMs, hasQueryVector, belowFloor, plan, lexicalDetail }: { rec: ExplainRecorder; perSource: { store: string; cands: Map<string, Candidate> }[]; gatherMs: number; hasQueryVector: boolean; belowFloor: number; plan: RememberPlan; lexicalDetail: string }): void {
  const { req } = plan;
  const all = perSource.flatMap(({ store, cands }) => [...cands.values()].map((c) => ({ key: `${store}:${c.key}`, c })));
  const found = (how: MatchSource[]) => all.filter(({ c }) => how.some((h) => c.matchedBy.has(h)));
  const vec = found(["thought_knn", "node_knn"]);
  const lex = found(["thought_fts", "node_fts"]);
  rec.record("vector", gatherMs, { candidates: vec.length, detail: hasQueryVector ? `thought and node KNN, ${req.candidates} per kind and store; ${belowFloor} neighbour(s) below the similarity floor left out` : "no query vector: lexical only", top: [] });
  rec.record("lexical", 0, { candidates: lex.length, detail: lexicalDetail, top: lex.map(({ key, c }) => ({ key, score: c.lexical })).sort((a, b) => b.score - a.score) });
  rec.record("filters", 0, { candidates: found(["expansion"]).length, detail: `one-hop expansion over edges with weight ≥ ${req.min_edge_weight} (at most ${MAX_EXPANDED_NODES} nodes)` });
}

/** as_of: the request's, else the newest candidate's time (null when there is none), so the same data and query always score the same. */
export function asOfFor(req: RememberPlan["req"], perSource: { cands: Map<string, Candidate> }[]): number | null {
  let newest = 0;
  for (const { cands } of perSource) for (const c of cands.values()) newest = Math.max(newest, c.time);
  return req.as_of ?? (newest || null);
}

/** The fusion policy of one answer (the store's model) and what the confidence bands read of it. */
export type RememberFusion = { policy: FusionPolicy; provider: Fingerprint["provider"] | null; floor: number };

export function rememberFusion({ plan, fp }: { plan: RememberPlan; fp: Pick<Fingerprint, "provider" | "model" | "id"> | null }): RememberFusion {
  return { policy: fusionPolicyFor({ fingerprint: fp, override: { scoreVector: plan.req.w_vec } }), provider: fp?.provider ?? null, floor: fp ? similarityFloorFor(fp.provider) : 1 };
}

/** Score every candidate by the formula and order them totally (both dialects). */
export function scoreCandidates({ plan, sources, alsoInCore, asOf, fusion }: { plan: RememberPlan; sources: ScoredSource[]; alsoInCore: Set<string>; asOf: number | null; fusion: RememberFusion }): RememberResult[] {
  const { req, w, terms, ftsTerms } = plan;
  const tauMs = req.tau_hours * 3600_000;
  const scored: RememberResult[] = [];
  for (const { store, cands, cosThought, cosNode, facts, relEvidence } of sources) {
    for (const c of cands.values()) {
      const isThought = c.kind === THOUGHT_KIND;
      const f = isThought ? null : facts.get(c.id);
      const cosine = (isThought ? cosThought : cosNode).get(c.seq);
      // One fusion policy (lib/retrieval/fusion.ts): never below the lexical evidence alone.
      // bm25 is relative to the best hit of its own table: the best of a weak node match would tie with a thought that
      // holds every word, so the lexical score is weighed by the share of the query's words the item holds.
      const coverage = termCoverage({ terms: ftsTerms, text: isThought ? c.text : `${c.name ?? ""} ${c.text} ${f?.procedural ?? ""}` });
      const lexical = c.lexical * (0.5 + 0.5 * coverage);
      const semantic = fuseScores({ lexical: lexical + c.context, vector: cosine, policy: fusion.policy });
      const recency = asOf === null ? 1 : Math.exp(-Math.max(0, asOf - c.time) / tauMs);
      const episodic = isThought ? 1 : (f?.episodicShare ?? 0);
      const procedure = isThought ? (c.framework === "build" || c.framework === "debug" ? shareOfTermsIn(terms, c.text) : 0) : shareOfTermsIn(terms, f?.procedural ?? "");
      const edgeWeight = c.edge?.weight ?? 0;
      const inconsistency = isThought ? (c.consistency === null ? 0 : 1 - c.consistency) : (f?.inconsistency ?? 0);
      const weighted = {
        semantic: round(w.semantic * semantic),
        // Recency scales the item's relevance, so a recent item that merely shares a word cannot bury an old fact that answers.
        episodic: round(w.episodic * recency * episodic * Math.min(1, semantic)),
        procedural: round(w.procedural * procedure),
        relation: round(w.relation * edgeWeight),
        conflict: round(-w.conflict * inconsistency),
      };
      const evidence = isThought ? [c.id] : [...new Set([...(f?.evidence ?? []), ...(c.edge ? (relEvidence.get(c.edge.relationId) ?? []) : [])])].sort();
      scored.push({
        kind: c.kind,
        id: c.id,
        store,
        title: c.title,
        entity_type: c.entityType,
        score: round(weighted.semantic + weighted.episodic + weighted.procedural + weighted.relation + weighted.conflict),
        // A node is read by its name and what its procedural frames say; a thought by its content.
        confidence: confidenceBand({ coverage, cosine, provider: fusion.provider, floor: fusion.floor }),
        breakdown: { semantic: round(semantic), semantic_source: cosine === undefined ? "lexical" : "vector", lexical: round(lexical), context: round(c.context), vector: cosine === undefined ? null : round(cosine), recency: round(recency), episodic: round(episodic), procedure_match: round(procedure), edge_weight: round(edgeWeight), inconsistency: round(inconsistency), terms: weighted },
        matched_by: [...c.matchedBy].sort(),
        evidence_thought_ids: evidence,
        via: c.expanded && c.edge ? { relation_id: c.edge.relationId, relationship_type: c.edge.type, from_node_id: c.edge.fromNodeId, weight: c.edge.weight } : null,
        ...(alsoInCore.has(c.key) ? { also_in_core: true } : {}),
      });
    }
  }
  // Total order: score, then the cosine (a weak embedder's evidence still orders equal relevances), then the store
  // before core, then kind and id, so ties never reorder between calls.
  scored.sort((a, b) => b.score - a.score || (b.breakdown.vector ?? 0) - (a.breakdown.vector ?? 0) || Number(a.store === CORE_STORE) - Number(b.store === CORE_STORE) || a.kind.localeCompare(b.kind) || a.id.localeCompare(b.id));
  return scored;
}

/** The answer (both dialects): the ranked results cut to the limit, with everything a caller needs to read the scores. */
export function rememberAnswer({
  plan,
  store,
  includeCore,
  vectorsAnswered,
  fallback,
  coreFallback,
  scored,
  searchable,
  belowFloor,
  asOf,
  rec,
  fusion,
}: {
  plan: RememberPlan;
  store: string;
  includeCore: boolean;
  vectorsAnswered: boolean;
  fallback: Fallback | null;
  coreFallback: RememberResponse["core_fallback"];
  scored: RememberResult[];
  searchable: boolean;
  belowFloor: number;
  asOf: number | null;
  rec: ExplainRecorder | null;
  fusion: RememberFusion;
}): RememberResponse {
  const { req, w } = plan;
  const results = scored.slice(0, req.limit);
  return {
    query: req.query,
    store,
    include_core: includeCore,
    mode: vectorsAnswered ? "vector+fts" : "fts",
    fallback,
    core_fallback: coreFallback,
    reason: answerReason({ found: scored.length, searchable: searchable ? 1 : 0, fallback, belowFloor, weak: weakAnswerReason({ bands: results.map((r) => r.confidence), terms: plan.ftsTerms }) }),
    formula: REMEMBER_FORMULA,
    signals: REMEMBER_SIGNALS,
    weights: w,
    tau_hours: req.tau_hours,
    min_edge_weight: req.min_edge_weight,
    as_of: asOf,
    fusion: { key: fusion.policy.key, source: fusion.policy.source, w_vec: fusion.policy.scoreVector, detail: fusion.policy.detail },
    results,
    ...(rec ? { explain: rec.result() } : {}),
  };
}

/** The readiness stage of explain: per store, whether the query was embedded and with what, or why not. */
export function recordReadiness(rec: ExplainRecorder | null, plans: [string, QueryVectorPlan | null][]): void {
  for (const [name, p] of plans) {
    if (p) rec?.readiness(p, name);
  }
}

/** Whose vectors answer: the store's model; core's only when it is the same model (else core answers lexically and says why). */
export function vectorPlanOf({ plan, corePlan, includeCore }: { plan: QueryVectorPlan; corePlan: QueryVectorPlan | null; includeCore: boolean }) {
  const storeFp = plan.ok ? plan.fingerprint : null;
  const coreFp = corePlan?.ok && (!storeFp || corePlan.fingerprint.id === storeFp.id) ? corePlan.fingerprint : null;
  return {
    queryVector: plan.ok ? plan.vector : corePlan?.ok ? corePlan.vector : null,
    fallback: plan.ok ? null : plan.fallback,
    storeFp,
    coreFp,
    coreFallback: (includeCore && !coreFp ? (corePlan && !corePlan.ok ? corePlan.fallback : { reason: "model_mismatch", message: "core's vectors are from another model than the store's" }) : null) as RememberResponse["core_fallback"],
  };
}

/**
 * Fused, explained, deterministic recall over thoughts and the graph. `core`
 * is core's handle when the request asks to include it (the entry point opens
 * it once with openCoreFor); it is only read, through a read-only connection.
 */
export async function rememberByQuery({ handle, core, input }: { handle: StoreHandle; core: StoreHandle | null; input: RememberInput }): Promise<RememberResponse> {
  const plan = rememberPlan(input);
  const { req, ftsTerms } = plan;
  const store = handle.store;
  const coreHandle = req.include_core && store !== CORE_STORE ? core : null;
  const includeCore = coreHandle !== null;

  // The store's readiness and the query's vector (lib/retrieval); core answers with vectors only when its model is the same.
  const rec = req.explain ? new ExplainRecorder() : null;
  // The graph's vectors (thoughts and nodes): before the first exists, remember answers lexically (awaitingFirstVectors).
  const kinds = [THOUGHT_KIND, NODE_KIND];
  const storePlan = await planQueryVector({ handle, text: req.query, kinds });
  const corePlan = coreHandle ? await planQueryVector({ handle: coreHandle, text: req.query, kinds }) : null;
  recordReadiness(rec, [
    [store, storePlan],
    [CORE_STORE, corePlan],
  ]);
  const { queryVector, fallback, storeFp, coreFp, coreFallback } = vectorPlanOf({ plan: storePlan, corePlan, includeCore });

  const match = matchExpression(ftsTerms, "any");
  const common = new Set<string>();
  const budget = startQueryBudget({ hint: "use fewer or rarer words in the query" });
  const reader = coreHandle ? openStoreReaderWithCore({ handle, core: coreHandle }) : null;
  try {
    const sources: Source[] = [{ store, schema: "main", db: handle.sqlite, fingerprintId: storeFp?.id ?? null, vectorsLoaded: handle.vectors.available, floor: storeFp ? similarityFloorFor(storeFp.provider) : 1 }];
    // The reader loads sqlite-vec the same way as the store's handle, so the store's status tells whether core's index can be used.
    if (reader) sources.push({ store: CORE_STORE, schema: "core", db: reader, fingerprintId: coreFp?.id ?? null, vectorsLoaded: handle.vectors.available, floor: coreFp ? similarityFloorFor(coreFp.provider) : 1 });

    const belowFloor = { n: 0 };
    const gatherStarted = performance.now();
    const perSource = sources.map((src) => ({ src, store: src.store, cands: gatherCandidates({ src, kinds: req.kinds, queryVector: src.fingerprintId ? queryVector : null, ftsTerms, k: req.candidates, minEdgeWeight: req.min_edge_weight, budget, belowFloor, common }) }));
    if (rec) {
      const lexicalDetail = match ? `FTS5 over thoughts and nodes, MATCH ${match}${common.size ? `; word(s) ${[...common].join(", ")} scored only on the rarer words' best ${4 * req.candidates} rows` : ""}` : "no word to match";
      recordGatherExplain({ rec, perSource, gatherMs: performance.now() - gatherStarted, hasQueryVector: queryVector !== null, belowFloor: belowFloor.n, plan, lexicalDetail });
    }
    const fusionStarted = performance.now();
    const alsoInCore = dropCoreTwins(perSource);
    const asOf = asOfFor(req, perSource);
    const scoredSources = perSource.map(({ src, cands }): ScoredSource => {
      const list = [...cands.values()];
      const thoughtsList = list.filter((c) => c.kind === THOUGHT_KIND);
      const nodesList = list.filter((c) => c.kind === NODE_KIND);
      return {
        store: src.store,
        cands,
        cosThought: queryVector ? cosineByCandidate({ src, kind: THOUGHT_KIND, cands: thoughtsList, query: queryVector }) : new Map(),
        cosNode: queryVector ? cosineByCandidate({ src, kind: NODE_KIND, cands: nodesList, query: queryVector }) : new Map(),
        facts: nodeFacts({ src, nodeIds: nodesList.map((c) => c.id) }),
        relEvidence: relationEvidence({ src, relationIds: nodesList.flatMap((c) => (c.edge ? [c.edge.relationId] : [])) }),
      };
    });
    const fusion = rememberFusion({ plan, fp: storeFp });
    const scored = scoreCandidates({ plan, sources: scoredSources, alsoInCore, asOf, fusion });
    rec?.record("fusion", performance.now() - fusionStarted, { candidates: scored.length, detail: `${REMEMBER_FORMULA}; ${fusion.policy.detail}; each result's breakdown gives its terms`, top: scored.map((r) => ({ key: `${r.store}:${r.kind}:${r.id}`, score: r.score })) });
    return rememberAnswer({ plan, store, includeCore, vectorsAnswered: storeFp !== null, fallback, coreFallback, scored, searchable: sources.some(hasGraphContent), belowFloor: belowFloor.n, asOf, rec, fusion });
  } finally {
    reader?.close();
  }
}
