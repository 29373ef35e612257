import { z } from "zod";
import { read, withinBudget, type AnyStoreHandle } from "../db/port";
import { startQueryBudget, type QueryBudget } from "../db/query-budget";
import type { FRAME_COLUMNS } from "../db/schema/graph";
import { CORE_STORE } from "../db/store-names";
import type { Fingerprint } from "../embed/providers";
import { answerReason, CONFIDENCE_BANDS, confidenceBand, ExplainRecorder, fuseScores, fusionPolicyFor, termCoverage, weakAnswerReason, type FusionPolicy, matchTerms, similarityFloorFor, type Explain, type Fallback, type RetrievalReason } from "../retrieval";
import type { QueryVectorPlan } from "../retrieval/readiness";
import { CONTEXT_EVIDENCE, contextScores, type ContextNeighbours } from "../retrieval/context";
import { NODE_KIND } from "./nodes";
import { THOUGHT_KIND } from "./thoughts";
import { parseJsonColumnOr, unitInterval } from "../common";
import { pushTo } from "../collections";
import { contradictionsOf, type Contradiction } from "../index/facts";
import { factMatchesOp } from "../index/fact-match";
import { hiddenByKind, holdsItemState, itemViewQuerySchema, type ItemKind, type ItemStatus, type ItemView } from "../index/item-state";

/**
 * Fused remember over thoughts and graph nodes of a store (and, read-only, core): REMEMBER_FORMULA over the
 * REMEMBER_SIGNALS below (docs/api-and-mcp.md). as_of defaults to the newest candidate's time, so the same data and
 * query always score the same. The default weights are set by measurement (bench/graph.bench.ts): larger episodic,
 * procedural and relation weights let neighbours and recent items crowd out the item asked for; small ones reorder
 * near-ties. The conflict penalty only lowers items that disagree with themselves, so it stays high.
 */
export type RememberWeights = { semantic: number; episodic: number; procedural: number; relation: number; conflict: number };
const DEFAULT_REMEMBER_WEIGHTS: Readonly<RememberWeights> = { semantic: 1, episodic: 0.05, procedural: 0.05, relation: 0.1, conflict: 0.5 };
/** What each signal means, returned with every answer so a caller can read its scores. */
export const REMEMBER_SIGNALS = {
  semantic: "relevance: bm25 relative to the best FTS hit × (0.5 + 0.5 × share of the query's words the item holds) + context from the neighbouring turns + w_vec × cosine(query, item vector), w_vec calibrated for the store's model (fusion)",
  recency: "exp(−(as_of − item time)/τ); item time = thought timestamp or node updated_at",
  episodic: "1 for a thought; for a node, the share of its frames in the episodic column",
  procedure_match: "share of the query's words found in the node's procedural frames (or a build/debug thought's content)",
  edge_weight: "largest weight of a relation ≥ min_edge_weight linking the node to a directly found node",
  inconsistency: "node: (keys with different values across frames + contradicting evidence) / (keys + evidence); thought: 1 − consistency; each unresolved contradiction of the thought (or of the relation the node was reached by) adds 0.5, at most 1",
  fact_match: "for a thought written as a fact whose subject and property the query names: the query's words its key names relative to the key that names most (1 for it); 0 otherwise. Its weight (weights.fact) is max(1, the best score any candidate reached on the other terms)",
} as const;
export const REMEMBER_FORMULA = "w_sem·semantic + w_epi·recency·episodic + w_proc·procedure_match + w_rel·edge_weight − w_conflict·inconsistency + fact_match·max(1, the best candidate's score on the other terms)";
/**
 * fact_match: a thought written as a fact whose subject and property the query names (the property's words stemmed;
 * lib/index/fact-match.ts) scores the query's words its key names relative to the key that names most (1 for it); 0
 * otherwise. Its term is fact_match × the best score any candidate reached on the other terms (at least 1, a full
 * lexical match), as a lexical score is relative to the best hit: the named value answers before what only shares the
 * query's words; on equal scores it comes first. Supersession leaves one value of a key visible (the current one, or
 * the one that held at as_of), so it is that value that gains. No constant: its weight is the answer's own best.
 */

const weight = z.number().min(0).max(10);
const GRAPH_KINDS = [THOUGHT_KIND, NODE_KIND];
/** Words of the query matched by full-text (each one more doclist to merge). */
const MAX_FTS_TERMS = 16;
/** At most this many neighbours join by expansion (strongest edges first), so a hub node cannot flood the answer. */
const MAX_EXPANDED_NODES = 100;
/**
 * How far a leg reads past items the reader's view hides (proposals under review, retired or rejected items): asked
 * again for `factor` times as many, at most `rounds` more times, never for more than `maxRows`, while hidden items
 * took places its visible candidates would have had. So a flood of proposals that match a question better than its
 * real answer does not push that answer out for every reader, and the extra reading stays bounded.
 */
export const READ_PAST_HIDDEN = { factor: 4, rounds: 2, maxRows: 1000 } as const;
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
    /** Reference time (epoch ms) for recency, and what was visible then (governed memory: lib/index/item-state.ts). */
    as_of: z.number().int().positive().optional(),
    /** Retired thoughts, nodes and relations answer too. */
    include_retired: itemViewQuerySchema.include_retired,
    /** Proposals waiting for review answer too (lib/index/proposals.ts). */
    include_proposed: itemViewQuerySchema.include_proposed,
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
const MATCH_SOURCES = ["thought_knn", "thought_fts", "thought_context", "thought_fact", "node_knn", "node_fts", "expansion"] as const;
type MatchSource = (typeof MATCH_SOURCES)[number];

const termWeights = z.strictObject({ semantic: z.number(), episodic: z.number(), procedural: z.number(), relation: z.number(), conflict: z.number(), fact: z.number() });
/** One result as returned (the API's and MCP's response schema, lib/api/responses/graph.ts). */
export const rememberResultSchema = z.strictObject({
  kind: z.enum([THOUGHT_KIND, NODE_KIND]),
  id: z.string(),
  /** The store this came from: the queried store, or "core" (read-only, never written). */
  store: z.string(),
  title: z.string(),
  entity_type: z.string().nullable(),
  score: z.number(),
  /** How well the evidence answers the query, for agents and people: high, medium or low (lib/retrieval/confidence.ts). */
  confidence: z.enum(CONFIDENCE_BANDS),
  breakdown: z.strictObject({
    /** The fused relevance: lexical + w_vec × vector (lib/retrieval/fusion.ts), never below the lexical evidence. */
    semantic: z.number(),
    /** "lexical" when the item has no current vector (not embedded yet, or vectors unusable). */
    semantic_source: z.enum(["vector", "lexical"]),
    /** bm25 relative to the best full-text hit of its table × (0.5 + 0.5 × the share of the query's words it holds); 0 when the words did not find it. */
    lexical: z.number(),
    /** Lexical evidence of the rows just before and after it, × the context weight (lib/retrieval/context.ts). */
    context: z.number(),
    /** cosine(query, item vector); null without a current vector. */
    vector: z.number().nullable(),
    recency: z.number(),
    episodic: z.number(),
    procedure_match: z.number(),
    edge_weight: z.number(),
    inconsistency: z.number(),
    /** The query's words the thought's fact subject and property name, relative to the key that names most (lib/index/fact-match.ts); 0 when the query names no key of it. */
    fact_match: z.number(),
    /** Each weighted term of the score; they sum to `score`. */
    terms: termWeights,
  }),
  matched_by: z.array(z.enum(MATCH_SOURCES)),
  evidence_thought_ids: z.array(z.string()),
  /** For results brought in by one-hop expansion: the relation that did it. */
  via: z.strictObject({ relation_id: z.string(), relationship_type: z.string(), from_node_id: z.string(), weight: z.number() }).nullable(),
  also_in_core: z.boolean().optional(),
});
export type RememberResult = z.infer<typeof rememberResultSchema>;
export type ScoreBreakdown = RememberResult["breakdown"];

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
  /** The request's weights, and `fact`: fact_match's weight in this answer (not a setting: max(1, the best score on the other terms)). */
  weights: RememberWeights & { fact: number };
  tau_hours: number;
  min_edge_weight: number;
  as_of: number | null;
  /** The fusion policy that made `semantic` (lib/retrieval/fusion.ts): the model it is calibrated for and the vector weight. */
  fusion: { key: string; source: FusionPolicy["source"]; w_vec: number; detail: string };
  results: RememberResult[];
  /** With explain=true: each stage's candidates and time. */
  explain?: Explain;
};

/** One entity found by remember in one source. */
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
  /** Unresolved contradictions of the thought, or of the relation the node was reached by (lib/index/facts.ts). */
  contradicts?: Contradiction[];
  /** The strength of the fact key the query names, for a thought written as a fact (lib/index/fact-match.ts). */
  fact?: number;
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
export type FrameFactRow = { id: string; nodeId: string; col: (typeof FRAME_COLUMNS)[number]; properties: string; createdAt: number };
export type FrameEvidenceRow = { frameId: string; thoughtId: string; stance: string };

/**
 * What remember reads of the candidates' frames and evidence, whatever a store holds: each node's newest frames (a
 * frame's properties are up to 64 KiB), at most so many in all (in candidate order), and each frame's and relation's
 * first evidence links by thought id. Without these bounds one read token's remember over a node with many frames and
 * links read frames × links rows.
 */
export const MAX_FRAMES_PER_NODE = 8;
export const MAX_FRAMES_READ = 256;
export const MAX_EVIDENCE_PER_TARGET = 64;
type RelationEvidenceRow = { relationId: string; thoughtId: string };
export type EdgeRow = { id: string; fromId: string; toId: string; type: string; weight: number };

/** Lexical scores relative to the best hit (1 for the best); `rank` is better when larger. */
export function relativeLexical(rows: { seq: number; rank: number }[]): { seq: number; lexical: number }[] {
  const best = rows.length ? rows[0].rank : 0;
  return rows.map((r) => ({ seq: r.seq, lexical: best > 0 ? clamp01(r.rank / best) : 1 }));
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

/** Each node's frame facts (episodic share, procedural text, inconsistency, evidence) from its frames and their evidence. */
export function nodeFactsOf({ nodeIds, frames, evidence }: { nodeIds: string[]; frames: FrameFactRow[]; evidence: FrameEvidenceRow[] }): Map<string, NodeFacts> {
  const facts = new Map<string, NodeFacts>();
  // By node, created_at, id (ids are ASCII: code-unit order is both engines' binary order).
  const byKey = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const framesByNode = groupBy(
    [...frames].sort((a, b) => byKey(a.nodeId, b.nodeId) || a.createdAt - b.createdAt || byKey(a.id, b.id)),
    (f) => f.nodeId,
  );
  const nodeOfFrame = new Map(frames.map((f) => [f.id, f.nodeId]));
  const evidenceByNode = groupBy(evidence, (e) => nodeOfFrame.get(e.frameId) ?? "");
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

export function relationEvidenceOf(rows: RelationEvidenceRow[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of rows) pushTo(out, r.relationId, r.thoughtId);
  return out;
}

/**
 * Candidates of one source, merged by entity: one entity found several ways
 * is one candidate, its sources accumulate, its lexical score is the best seen.
 */
function candidateSet(store: string) {
  const cands = new Map<string, Candidate>();
  // Each kind's candidates by seq: a row already found is credited with a new source without being read again.
  const bySeq = new Map<Kind, Map<number, Candidate>>([
    [THOUGHT_KIND, new Map()],
    [NODE_KIND, new Map()],
  ]);
  const credit = (c: Candidate, how: MatchSource, lexical: Map<number, number>) => {
    c.matchedBy.add(how);
    if (how === "thought_context") c.context = Math.max(c.context, lexical.get(c.seq) ?? 0);
    else c.lexical = Math.max(c.lexical, lexical.get(c.seq) ?? 0);
  };
  // A new candidate is made only when the entity is new, as one literal of a fixed shape (spreading a row's fields into it was measurably slower).
  type Fields = Pick<Candidate, "title" | "text" | "entityType" | "time" | "name" | "framework" | "consistency">;
  const merge = (kind: Kind, row: { id: string; seq: number; hash: string }, how: MatchSource, lexical: Map<number, number>, fields: () => Fields) => {
    const key = `${store}:${kind}:${row.id}`;
    let c = cands.get(key);
    if (!c) {
      const f = fields();
      c = { key, kind, seq: row.seq, id: row.id, title: f.title, text: f.text, entityType: f.entityType, time: f.time, hash: row.hash, name: f.name, framework: f.framework, consistency: f.consistency, matchedBy: new Set<MatchSource>(), lexical: 0, context: 0, edge: null, expanded: how === "expansion" };
      cands.set(key, c);
      bySeq.get(kind)!.set(row.seq, c);
    }
    credit(c, how, lexical);
  };
  return {
    cands,
    /** Of `seqs`, the ones not yet candidates of `kind` (to be read and added); those that are gain `how` and its score now. */
    unseen(kind: Kind, seqs: number[], how: MatchSource, lexical: Map<number, number>): number[] {
      const known = bySeq.get(kind)!;
      const out: number[] = [];
      for (const seq of seqs) {
        const c = known.get(seq);
        if (c) credit(c, how, lexical);
        else out.push(seq);
      }
      return out;
    },
    addThoughts(rows: ThoughtCandidateRow[], how: MatchSource, lexical: Map<number, number> = new Map()) {
      const title = (content: string) => (content.length > 200 ? `${content.slice(0, 199)}…` : content);
      for (const r of rows) merge(THOUGHT_KIND, r, how, lexical, () => ({ title: title(r.content), text: r.content, entityType: null, time: r.timestamp, name: null, framework: r.framework, consistency: r.consistency }));
    },
    addNodes(rows: NodeCandidateRow[], how: MatchSource, lexical: Map<number, number> = new Map()) {
      for (const r of rows) merge(NODE_KIND, r, how, lexical, () => ({ title: r.displayName, text: r.displayName, entityType: r.entityType, time: r.updatedAt, name: r.name, framework: null, consistency: null }));
    },
    /** The ids of the nodes found directly: the seeds of one-hop expansion. */
    nodeIds: () => [...bySeq.get(NODE_KIND)!.values()].map((c) => c.id),
  };
}
type CandidateSet = ReturnType<typeof candidateSet>;

/**
 * One hop from the directly found nodes (`seeds`) over `edges` (relations
 * with weight ≥ the threshold touching a seed, strongest first). Every node
 * linked to a seed (seeds included) records the strongest such edge;
 * neighbours not found directly (`newcomers`, at most MAX_EXPANDED_NODES)
 * join as "expansion" once the caller has loaded their rows (`join`).
 */
function oneHop({ set, seeds, edges }: { set: CandidateSet; seeds: string[]; edges: EdgeRow[] }): { newcomers: string[]; join: (rows: NodeCandidateRow[]) => void } {
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
type ScoredSource = { store: string; cands: Map<string, Candidate>; cosThought: Map<number, number>; cosNode: Map<number, number>; facts: Map<string, NodeFacts>; relEvidence: Map<string, string[]> };

/** Dedupe by entity across stores: a core node with the same name and type as a store node is the same entity; the store's copy wins. */
function dropCoreTwins(perSource: { cands: Map<string, Candidate> }[]): Set<string> {
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

/** The fusion policy of one answer (the store's model) and what the confidence bands read of it. */
type RememberFusion = { policy: FusionPolicy; provider: Fingerprint["provider"] | null; floor: number };

function rememberFusion({ plan, fp }: { plan: RememberPlan; fp: Pick<Fingerprint, "provider" | "model" | "id"> | null }): RememberFusion {
  return { policy: fusionPolicyFor({ fingerprint: fp, override: { scoreVector: plan.req.w_vec } }), provider: fp?.provider ?? null, floor: fp ? similarityFloorFor(fp.provider) : 1 };
}

/** One candidate scored: its score and the signals its breakdown shows (the result itself is built only for the answer's hits). */
type Scored = {
  c: Candidate;
  store: string;
  f: NodeFacts | null | undefined;
  relEvidence: Map<string, string[]>;
  cosine: number | undefined;
  /** The share of the query's words the item holds; null until needed (it weighs a lexical score, and makes a hit's band). */
  coverage: number | null;
  lexical: number;
  semantic: number;
  recency: number;
  episodic: number;
  procedure: number;
  edgeWeight: number;
  inconsistency: number;
  factMatch: number;
  terms: ScoreBreakdown["terms"];
  score: number;
  /** The rounded cosine the order reads (null without a current vector). */
  vector: number | null;
};

/** What the word coverage reads of a candidate: a node is read by its name and what its procedural frames say; a thought by its content. */
const coverageText = (c: Candidate, f: NodeFacts | null | undefined) => (c.kind === THOUGHT_KIND ? c.text : `${c.name ?? ""} ${c.text} ${f?.procedural ?? ""}`);

/** Score every candidate by the formula and order them totally. */
function scoreCandidates({ plan, sources, asOf, fusion }: { plan: RememberPlan; sources: ScoredSource[]; asOf: number | null; fusion: RememberFusion }): { scored: Scored[]; factWeight: number } {
  const { req, w, terms, ftsTerms } = plan;
  const tauMs = req.tau_hours * 3600_000;
  const scored: Scored[] = [];
  for (const { store, cands, cosThought, cosNode, facts, relEvidence } of sources) {
    for (const c of cands.values()) {
      const isThought = c.kind === THOUGHT_KIND;
      const f = isThought ? null : facts.get(c.id);
      const cosine = (isThought ? cosThought : cosNode).get(c.seq);
      // One fusion policy (lib/retrieval/fusion.ts): never below the lexical evidence alone.
      // bm25 is relative to the best hit of its own table: the best of a weak node match would tie with a thought that
      // holds every word, so the lexical score is weighed by the share of the query's words the item holds.
      const coverage = c.lexical > 0 ? termCoverage({ terms: ftsTerms, text: coverageText(c, f) }) : null;
      const lexical = coverage === null ? 0 : c.lexical * (0.5 + 0.5 * coverage);
      const semantic = fuseScores({ lexical: lexical + c.context, vector: cosine, policy: fusion.policy });
      const recency = asOf === null ? 1 : Math.exp(-Math.max(0, asOf - c.time) / tauMs);
      const episodic = isThought ? 1 : (f?.episodicShare ?? 0);
      const procedure = isThought ? (c.framework === "build" || c.framework === "debug" ? shareOfTermsIn(terms, c.text) : 0) : shareOfTermsIn(terms, f?.procedural ?? "");
      const edgeWeight = c.edge?.weight ?? 0;
      const inconsistency = clamp01((isThought ? (c.consistency === null ? 0 : 1 - c.consistency) : (f?.inconsistency ?? 0)) + 0.5 * (c.contradicts?.length ?? 0));
      const factMatch = c.fact ?? 0;
      const weighted = {
        semantic: round(w.semantic * semantic),
        // Recency scales the item's relevance, so a recent item that merely shares a word cannot bury an old fact that answers.
        episodic: round(w.episodic * recency * episodic * Math.min(1, semantic)),
        procedural: round(w.procedural * procedure),
        relation: round(w.relation * edgeWeight),
        conflict: round(-w.conflict * inconsistency),
        fact: 0,
      };
      const score = round(weighted.semantic + weighted.episodic + weighted.procedural + weighted.relation + weighted.conflict);
      scored.push({ c, store, f, relEvidence, cosine, coverage, lexical, semantic, recency, episodic, procedure, edgeWeight, inconsistency, factMatch, terms: weighted, score, vector: cosine === undefined ? null : round(cosine) });
    }
  }
  // fact_match (REMEMBER_FORMULA): a named key is worth the best score any candidate reached on the other terms.
  const best = Math.max(1, ...scored.map((s) => s.score));
  for (const s of scored) {
    if (s.factMatch === 0) continue;
    s.terms.fact = round(s.factMatch * best);
    s.score = round(s.score + s.terms.fact);
  }
  // Total order: score, then the cosine (a weak embedder's evidence still orders equal relevances), then the store
  // before core, then kind and id, so ties never reorder between calls.
  scored.sort((a, b) => b.score - a.score || b.factMatch - a.factMatch || (b.vector ?? 0) - (a.vector ?? 0) || Number(a.store === CORE_STORE) - Number(b.store === CORE_STORE) || a.c.kind.localeCompare(b.c.kind) || a.c.id.localeCompare(b.c.id));
  return { scored, factWeight: round(best) };
}

/** The result of one scored candidate, with its confidence band and breakdown. */
function resultOf({ s, alsoInCore, fusion, ftsTerms }: { s: Scored; alsoInCore: Set<string>; fusion: RememberFusion; ftsTerms: string[] }): RememberResult {
  const { c, f, cosine } = s;
  const evidence = c.kind === THOUGHT_KIND ? [c.id] : [...new Set([...(f?.evidence ?? []), ...(c.edge ? (s.relEvidence.get(c.edge.relationId) ?? []) : [])])].sort();
  const coverage = s.coverage ?? termCoverage({ terms: ftsTerms, text: coverageText(c, f) });
  return {
    kind: c.kind,
    id: c.id,
    store: s.store,
    title: c.title,
    entity_type: c.entityType,
    score: s.score,
    confidence: confidenceBand({ coverage, cosine, provider: fusion.provider, floor: fusion.floor }),
    breakdown: { semantic: round(s.semantic), semantic_source: cosine === undefined ? "lexical" : "vector", lexical: round(s.lexical), context: round(c.context), vector: s.vector, recency: round(s.recency), episodic: round(s.episodic), procedure_match: round(s.procedure), edge_weight: round(s.edgeWeight), inconsistency: round(s.inconsistency), fact_match: round(s.factMatch), terms: s.terms },
    matched_by: [...c.matchedBy].sort(),
    evidence_thought_ids: evidence,
    via: c.expanded && c.edge ? { relation_id: c.edge.relationId, relationship_type: c.edge.type, from_node_id: c.edge.fromNodeId, weight: c.edge.weight } : null,
    ...(alsoInCore.has(c.key) ? { also_in_core: true } : {}),
  };
}

/** Whose vectors answer: the store's model; core's only when it is the same model (else core answers lexically and says why). */
function vectorPlanOf({ plan, corePlan, includeCore }: { plan: QueryVectorPlan; corePlan: QueryVectorPlan | null; includeCore: boolean }) {
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

type Awaitable<T> = T | Promise<T>;

/** What a lexical leg says of how it ranked, for explain: FTS5's words scored on pruned candidates, or PostgreSQL's lexemes. */
export type LexicalNote = { words: string[]; tsRank: boolean };

/**
 * One source's reads (the store, or core read-only beside it): the only part of remember that differs per
 * engine (engines/sqlite.ts: FTS5 and the store's KNN; engines/pg.ts: PostgreSQL full-text and pgvector).
 * Row reads take seqs or ids; the vector reads use the source's fingerprint and query vector.
 */
export type RememberReader = {
  thoughts: (seqs: number[]) => Awaitable<ThoughtCandidateRow[]>;
  /** Thoughts by id (the ones a fact key named, lib/index/fact-match.ts). */
  thoughtsByIds: (ids: string[]) => Awaitable<ThoughtCandidateRow[]>;
  nodes: (by: { seqs: number[] } | { ids: string[] }) => Awaitable<NodeCandidateRow[]>;
  /** The kind's nearest seqs at or above the similarity floor, or why the KNN refused. */
  nearest: (a: { kind: Kind; k: number }) => Awaitable<{ ok: true; seqs: number[]; belowFloor: number } | { ok: false; message: string }>;
  /** The best `k` rows for the query's words (any), best first, each relative to the best (relativeLexical), within the budget. */
  lexical: (a: { kind: Kind; terms: string[]; k: number; budget: QueryBudget }) => Awaitable<{ hits: { seq: number; lexical: number }[]; note: LexicalNote }>;
  /** The thoughts just before and after each of `seqs` in time, of the same chain, within the context window (lib/retrieval/context.ts). */
  thoughtNeighbours: (seqs: number[]) => Awaitable<ContextNeighbours[]>;
  /** Each seed's strongest edges (≥ minWeight) in each direction, MAX_EDGES_PER_SEED per seed, MAX_EDGES_READ in all: a hub costs its cap, not its degree. */
  strongestEdges: (a: { seeds: string[]; minWeight: number }) => Awaitable<EdgeRow[]>;
  /** The query's cosine with each stored vector of these rows, with the hash of the text it was made from. */
  similarities: (a: { kind: Kind; seqs: number[] }) => Awaitable<Map<number, { similarity: number; inputHash: string }>>;
  /** The nodes' newest frames and those frames' first evidence links (MAX_FRAMES_PER_NODE, MAX_FRAMES_READ, MAX_EVIDENCE_PER_TARGET), within the budget; the view's filter is the caller's (visibleNodeFacts). */
  nodeFrames: (a: { nodeIds: string[]; budget: QueryBudget }) => Awaitable<{ frames: FrameFactRow[]; evidence: FrameEvidenceRow[] }>;
  /** Each relation's first evidence links by thought id (MAX_EVIDENCE_PER_TARGET), within the budget. */
  relationEvidence: (a: { relationIds: string[]; budget: QueryBudget }) => Awaitable<Map<string, string[]>>;
  /** Whether the source holds any thought or node. */
  searchable: () => Awaitable<boolean>;
};

export type RememberEngine = {
  planQueryVector: (a: { handle: AnyStoreHandle; text: string; kinds: string[] }) => Promise<QueryVectorPlan>;
  /** Run `work` over one source's reader: the store's own (`core` null), or core's beside it. */
  readSource: <T>(a: { handle: AnyStoreHandle; core: AnyStoreHandle | null; fp: Fingerprint | null; query: Float32Array | null }, work: (reader: RememberReader) => Promise<T>) => Promise<T>;
  /** The lexical stage's explain detail. */
  lexicalDetail: (a: { plan: RememberPlan; notes: LexicalNote[] }) => string;
};

type Gathered = ScoredSource & { belowFloor: number; vectorFallback: Fallback | null; searchable: boolean; notes: LexicalNote[] };

/**
 * One source: the KNN of each kind (when one refuses, this source answers lexically), full-text seeds with their
 * context, merged by entity, one hop over strong edges, then what scoring reads of every candidate.
 */
async function gather({ reader, store, plan, vectors, budget, hide = null, named = new Map() }: { reader: RememberReader; store: string; plan: RememberPlan; vectors: boolean; budget: QueryBudget; /** The view's item filter, applied while gathering (null: every item answers). */ hide?: HiddenLookup | null; /** Thoughts whose fact key the query names, by id, with the strength (lib/index/fact-match.ts). */ named?: Map<string, number> }): Promise<Gathered> {
  const { req, ftsTerms } = plan;
  const set = candidateSet(store);
  const kinds = req.kinds as Kind[];
  let belowFloor = 0;
  let vectorFallback: Fallback | null = null;
  const nearest = new Map<Kind, number[]>();
  // Each kind's candidate rows by seq, read once: the view's lookup learns their ids from them, the sources below join them.
  const thoughtRows = new Map<number, ThoughtCandidateRow>();
  const nodeRows = new Map<number, NodeCandidateRow>();
  const rowsBySeq = async <R extends { seq: number }>(known: Map<number, R>, seqs: number[], readRows: (seqs: number[]) => Awaitable<R[]>): Promise<R[]> => {
    const wanted = [...new Set(seqs)];
    const missing = wanted.filter((seq) => !known.has(seq));
    if (missing.length > 0) for (const r of await readRows(missing)) known.set(r.seq, r);
    return wanted.flatMap((seq) => known.get(seq) ?? []).sort((a, b) => a.seq - b.seq);
  };
  const thoughtsBySeq = (seqs: number[]) => rowsBySeq(thoughtRows, seqs, (missing) => reader.thoughts(missing));
  const nodesBySeq = (seqs: number[]) => rowsBySeq(nodeRows, seqs, (missing) => reader.nodes({ seqs: missing }));
  /** Of `seqs` of `kind`, those the view hides. */
  const hiddenSeqs = async (kind: Kind, seqs: number[]): Promise<Set<number>> => {
    if (!hide || seqs.length === 0) return new Set();
    const rows: { seq: number; id: string }[] = kind === THOUGHT_KIND ? await thoughtsBySeq(seqs) : await nodesBySeq(seqs);
    const gone = (await hide({ [kind === THOUGHT_KIND ? "thought" : "node"]: rows.map((r) => r.id) })).get(kind === THOUGHT_KIND ? "thought" : "node");
    return new Set(gone ? rows.filter((r) => gone.has(r.id)).map((r) => r.seq) : []);
  };
  /** A leg's best `candidates` the view shows, read past hidden ones within READ_PAST_HIDDEN; null when the leg failed. */
  const visibleTop = async <H extends { seq: number }>(kind: Kind, fetch: (k: number) => Promise<H[] | null>): Promise<H[] | null> => {
    for (let k = req.candidates, round = 0; ; round++) {
      const got = await fetch(k);
      if (got === null || !hide || got.length === 0) return got;
      const hidden = await hiddenSeqs(kind, got.map((h) => h.seq));
      const visible = hidden.size === 0 ? got : got.filter((h) => !hidden.has(h.seq));
      const next = Math.min(k * READ_PAST_HIDDEN.factor, READ_PAST_HIDDEN.maxRows);
      if (visible.length >= req.candidates || got.length < k || round >= READ_PAST_HIDDEN.rounds || next <= k) return visible.slice(0, req.candidates);
      k = next;
    }
  };
  for (const kind of vectors ? kinds : []) {
    let refused: string | null = null;
    let below = 0;
    const seqs = await visibleTop(kind, async (k) => {
      const knn = await reader.nearest({ kind, k });
      if (!knn.ok) {
        refused = knn.message;
        return null;
      }
      below = knn.belowFloor;
      return knn.seqs.map((seq) => ({ seq }));
    });
    belowFloor += below;
    if (seqs === null) {
      vectorFallback = { reason: "vectors_unavailable", message: `${store}: ${refused}` };
      nearest.clear();
      break;
    }
    nearest.set(kind, seqs.map((h) => h.seq));
  }
  const useVectors = vectors && vectorFallback === null;
  const notes: LexicalNote[] = [];
  const lexical = async (kind: Kind) => {
    if (ftsTerms.length === 0) return [];
    let last: LexicalNote | null = null;
    const hits =
      (await visibleTop(kind, async (k) => {
        const { hits, note } = await reader.lexical({ kind, terms: ftsTerms, k, budget });
        last = note;
        return hits;
      })) ?? [];
    if (last) notes.push(last);
    // Relative to the best hit the reader can see, as when nothing is hidden.
    const best = hits.length ? Math.max(...hits.map((h) => h.lexical)) : 0;
    return best > 0 && best < 1 ? hits.map((h) => ({ ...h, lexical: clamp01(h.lexical / best) })) : hits;
  };
  const lexicalOf = (hits: { seq: number; lexical: number }[]) => new Map(hits.map((h) => [h.seq, h.lexical]));
  // Each kind's rows are read once, for every source at a time (the KNN's, the full-text hits', the context's), and
  // join in that order; a row a source before found is credited, not added again.
  const rowsOf = <R extends { seq: number }>(rows: R[]) => (seqs: number[]) => {
    const wanted = new Set(seqs);
    return rows.filter((r) => wanted.has(r.seq));
  };
  if (kinds.includes(THOUGHT_KIND)) {
    const knn = useVectors ? (nearest.get(THOUGHT_KIND) ?? []) : [];
    const hits = await lexical(THOUGHT_KIND);
    const scores = lexicalOf(hits);
    const context = hits.length > 0 ? contextScores({ hits, neighbours: await reader.thoughtNeighbours(hits.slice(0, CONTEXT_EVIDENCE.seeds).map((h) => h.seq)) }) : new Map<number, number>();
    const read = rowsOf(await thoughtsBySeq([...knn, ...hits.map((h) => h.seq), ...context.keys()]));
    if (useVectors) set.addThoughts(read(knn), "thought_knn");
    if (hits.length > 0) {
      set.addThoughts(read(set.unseen(THOUGHT_KIND, hits.map((h) => h.seq), "thought_fts", scores)), "thought_fts", scores);
      set.addThoughts(read(set.unseen(THOUGHT_KIND, [...context.keys()], "thought_context", context)), "thought_context", context);
    }
    if (named.size > 0) await admitNamed({ reader, set, store, named, hide, limit: req.candidates });
  }
  if (kinds.includes(NODE_KIND)) {
    const knn = useVectors ? (nearest.get(NODE_KIND) ?? []) : [];
    const hits = await lexical(NODE_KIND);
    const scores = lexicalOf(hits);
    const read = rowsOf(await nodesBySeq([...knn, ...hits.map((h) => h.seq)]));
    if (useVectors) set.addNodes(read(knn), "node_knn");
    set.addNodes(read(set.unseen(NODE_KIND, hits.map((h) => h.seq), "node_fts", scores)), "node_fts", scores);
    // A hidden node neither answers nor seeds; a hidden relation carries nothing; a node reached only through it does not join.
    if (hide) await dropHiddenNodes({ hide, cands: set.cands });
    const seeds = set.nodeIds().filter((id) => set.cands.has(`${store}:${NODE_KIND}:${id}`));
    if (seeds.length > 0) {
      let edges = await reader.strongestEdges({ seeds, minWeight: req.min_edge_weight });
      if (hide && edges.length > 0) {
        const gone = (await hide({ relation: edges.map((e) => e.id) })).get("relation");
        if (gone) edges = edges.filter((e) => !gone.has(e.id));
      }
      const hop = oneHop({ set, seeds, edges });
      const goneNodes = hide && hop.newcomers.length > 0 ? (await hide({ node: hop.newcomers })).get("node") : undefined;
      hop.join(await reader.nodes({ ids: goneNodes ? hop.newcomers.filter((id) => !goneNodes.has(id)) : hop.newcomers }));
    }
  }
  const list = [...set.cands.values()];
  const nodeIds = list.filter((c) => c.kind === NODE_KIND).map((c) => c.id);
  // Only a vector of the row's current text counts.
  const cosines = async (kind: Kind) => {
    const mine = list.filter((c) => c.kind === kind);
    const out = new Map<number, number>();
    if (!useVectors || mine.length === 0) return out;
    const sims = await reader.similarities({ kind, seqs: mine.map((c) => c.seq) });
    const hashes = new Map(mine.map((c) => [c.seq, c.hash]));
    for (const [seq, s] of sims) if (hashes.get(seq) === s.inputHash) out.set(seq, clamp01(s.similarity));
    return out;
  };
  return {
    store,
    cands: set.cands,
    cosThought: await cosines(THOUGHT_KIND),
    cosNode: await cosines(NODE_KIND),
    facts: await visibleNodeFacts({ reader, nodeIds, budget, hide }),
    relEvidence: await reader.relationEvidence({ relationIds: list.flatMap((c) => (c.kind === NODE_KIND && c.edge ? [c.edge.relationId] : [])), budget }),
    belowFloor,
    vectorFallback,
    // A source that gave a candidate holds something; the read only matters to an answer with none (store_empty).
    searchable: set.cands.size > 0 || (await reader.searchable()),
    notes,
  };
}

/**
 * The thoughts whose fact key the query names join as candidates ("thought_fact") when the other sources missed them,
 * the view's hidden ones left out first (a superseded value stays out by default), the strongest `limit` of them (as
 * many as each other source may bring); each named candidate carries its strength.
 */
async function admitNamed({ reader, set, store, named, hide, limit }: { reader: RememberReader; set: CandidateSet; store: string; /** Strongest first. */ named: Map<string, number>; hide: HiddenLookup | null; limit: number }): Promise<void> {
  const keyOf = (id: string) => `${store}:${THOUGHT_KIND}:${id}`;
  let missing = [...named.keys()].filter((id) => !set.cands.has(keyOf(id)));
  if (hide && missing.length > 0) {
    const gone = (await hide({ thought: missing })).get("thought");
    if (gone) missing = missing.filter((id) => !gone.has(id));
  }
  missing = missing.slice(0, limit);
  if (missing.length > 0) set.addThoughts(await reader.thoughtsByIds(missing), "thought_fact");
  for (const [id, strength] of named) {
    const c = set.cands.get(keyOf(id));
    if (!c) continue;
    c.matchedBy.add("thought_fact");
    c.fact = strength;
  }
}

/**
 * The nodes' facts from their frames the view shows (governed memory: active frames by default, those visible then
 * under as_of, proposed ones too with include_proposed): a retired, rejected or proposed frame is not what is known
 * about the node, as the node's detail and the frame listings say. Of each node's newest frames read, the hidden ones
 * (one lookup) and their evidence leave before the facts are made.
 */
async function visibleNodeFacts({ reader, nodeIds, budget, hide }: { reader: RememberReader; nodeIds: string[]; budget: QueryBudget; hide: HiddenLookup | null }): Promise<Map<string, NodeFacts>> {
  if (nodeIds.length === 0) return new Map();
  const { frames, evidence } = await reader.nodeFrames({ nodeIds, budget });
  const gone = hide && frames.length > 0 ? (await hide({ frame: frames.map((f) => f.id) })).get("frame") : undefined;
  if (!gone) return nodeFactsOf({ nodeIds, frames, evidence });
  const shown = frames.filter((f) => !gone.has(f.id));
  return nodeFactsOf({ nodeIds, frames: shown, evidence: evidence.filter((e) => !gone.has(e.frameId)) });
}

/** The unresolved contradictions of each result that has any (the backend shows them as flags). */
export const contradictionsOfResult = new WeakMap<RememberResult, Contradiction[]>();

/** Each candidate's unresolved contradictions (a store with item state only; one lookup). */
async function markContradictions({ handle, cands }: { handle: AnyStoreHandle; cands: Map<string, Candidate> }): Promise<void> {
  const list = [...cands.values()];
  if (list.length === 0) return;
  const found = await contradictionsOf({ handle, ids: { thought: list.filter((c) => c.kind === THOUGHT_KIND).map((c) => c.id), relation: list.flatMap((c) => (c.edge ? [c.edge.relationId] : [])) } });
  if (found.size === 0) return;
  for (const c of list) {
    const mine = c.kind === THOUGHT_KIND ? found.get(`thought:${c.id}`) : c.edge ? found.get(`relation:${c.edge.relationId}`) : undefined;
    if (mine?.length) c.contradicts = mine;
  }
}

/** The view's hidden items of a source, by kind (lib/index/item-state.ts hiddenByKind on its handle). */
type HiddenLookup = (ids: Partial<Record<ItemKind, string[]>>) => Promise<Map<ItemKind, Map<string, ItemStatus>>>;

/** Of the node candidates gathered so far, the hidden ones leave before they seed the one-hop expansion. */
async function dropHiddenNodes({ hide, cands }: { hide: HiddenLookup; cands: Map<string, Candidate> }): Promise<void> {
  const nodes = [...cands.values()].filter((c) => c.kind === NODE_KIND);
  if (nodes.length === 0) return;
  const gone = (await hide({ node: nodes.map((c) => c.id) })).get("node");
  if (gone) for (const c of nodes) if (gone.has(c.id)) cands.delete(c.key);
}

/** With include_proposed a proposal answers (it is not hidden while gathering); retired and rejected items still do not. */
function answeringProposals({ hidden, view }: { hidden: Map<ItemKind, Map<string, ItemStatus>>; view: ItemView }): Map<ItemKind, Map<string, ItemStatus>> {
  if (!view.includeProposed) return hidden;
  for (const of of hidden.values()) for (const [id, status] of of) if (status === "proposed") of.delete(id);
  return hidden;
}

/**
 * Governed memory (lib/index/item-state.ts): a source's candidates whose thought or node, or the relation a node
 * was reached by, the view hides are dropped, in one lookup; a store without item state pays that one lookup.
 */
async function dropHidden({ handle, cands, view }: { handle: AnyStoreHandle; cands: Map<string, Candidate>; view: ItemView }): Promise<void> {
  if (view.includeRetired || cands.size === 0) return;
  const list = [...cands.values()];
  const hidden = await hiddenByKind({ handle, view, ids: { thought: list.filter((c) => c.kind === THOUGHT_KIND).map((c) => c.id), node: list.filter((c) => c.kind === NODE_KIND).map((c) => c.id), relation: list.flatMap((c) => (c.edge ? [c.edge.relationId] : [])) } });
  if (hidden.size === 0) return;
  // With include_proposed a proposal answers; what is retired or rejected still does not.
  const hides = (kind: "thought" | "node" | "relation", id: string) => {
    const status = hidden.get(kind)?.get(id);
    return status !== undefined && !(view.includeProposed && status === "proposed");
  };
  for (const [key, c] of cands) {
    if (hides(c.kind === THOUGHT_KIND ? "thought" : "node", c.id) || (c.edge && hides("relation", c.edge.relationId))) cands.delete(key);
  }
}

/**
 * Fused, explained, deterministic recall over thoughts and the graph, on the
 * engine the composition root picked (lib/graph/backend.ts). `core` is core's
 * handle when the request asks to include it; it is only read.
 */
export async function rememberByQuery({ engine, handle, core, input }: { engine: RememberEngine; handle: AnyStoreHandle; core: AnyStoreHandle | null; input: RememberInput }): Promise<RememberResponse> {
  const plan = rememberPlan(input);
  const { req, w } = plan;
  const store = handle.store;
  const coreHandle = req.include_core && store !== CORE_STORE ? core : null;
  const includeCore = coreHandle !== null;

  // Embedding the query may wait on the provider: outside any transaction. Before the first graph vector exists, remember answers lexically.
  const rec = req.explain ? new ExplainRecorder() : null;
  const storePlan = await engine.planQueryVector({ handle, text: req.query, kinds: GRAPH_KINDS });
  const corePlan = coreHandle ? await engine.planQueryVector({ handle: coreHandle, text: req.query, kinds: GRAPH_KINDS }) : null;
  for (const [name, p] of [[store, storePlan], [CORE_STORE, corePlan]] as const) if (p) rec?.readiness(p, name);
  const vp = vectorPlanOf({ plan: storePlan, corePlan, includeCore });

  const budget = startQueryBudget({ hint: "use fewer or rarer words in the query" });
  const sources = [{ store, core: null, fp: vp.storeFp }, ...(coreHandle ? [{ store: CORE_STORE, core: coreHandle, fp: vp.coreFp }] : [])];
  const gatherStarted = performance.now();
  const perSource: Gathered[] = [];
  const hides: (HiddenLookup | null)[] = [];
  for (const src of sources) {
    const query = src.fp ? vp.queryVector : null;
    const on = src.core ?? handle;
    const view = { asOf: req.as_of, includeRetired: req.include_retired, includeProposed: req.include_proposed };
    // A store that never had a decision pays one probe for the whole request, and nothing while gathering.
    const stateful = await holdsItemState({ handle: on });
    const hide: HiddenLookup | null = view.includeRetired || (view.asOf === undefined && !stateful) ? null : async (ids) => answeringProposals({ hidden: await hiddenByKind({ handle: on, view, ids }), view });
    hides.push(hide);
    // A store without item state holds no fact: no lookup.
    // The statuses the view shows, within the request's query budget.
    const named = stateful && req.kinds.includes(THOUGHT_KIND) ? new Map((await read(on, withinBudget(budget, factMatchesOp({ kind: "thought", query: req.query, view })))).map((m) => [m.id, m.strength] as const)) : undefined;
    perSource.push(await engine.readSource({ handle, core: src.core, fp: src.fp, query }, (reader) => gather({ reader, store: src.store, plan, vectors: query !== null, budget, hide, named })));
  }
  for (const [i, src] of perSource.entries()) if (hides[i]) await markContradictions({ handle: i === 0 ? handle : coreHandle!, cands: src.cands });
  for (const [i, src] of perSource.entries()) if (hides[i]) await dropHidden({ handle: i === 0 ? handle : coreHandle!, cands: src.cands, view: { asOf: req.as_of, includeRetired: req.include_retired, includeProposed: req.include_proposed } });
  const belowFloor = perSource.reduce((n, s) => n + s.belowFloor, 0);
  // The store's own KNN decides the mode: when it could not answer, the whole answer is lexical and says why; core's refusal is core's fallback.
  const storeRefused = perSource[0].vectorFallback;
  const fallback = vp.fallback ?? storeRefused;
  const coreFallback = vp.coreFallback ?? perSource[1]?.vectorFallback ?? null;
  if (rec) {
    // The gathering's stages, shown by what each leg found; the time is the whole gathering's.
    const all = perSource.flatMap(({ store, cands }) => [...cands.values()].map((c) => ({ key: `${store}:${c.key}`, c })));
    const found = (how: MatchSource[]) => all.filter(({ c }) => how.some((h) => c.matchedBy.has(h)));
    const lex = found(["thought_fts", "node_fts"]);
    const vectorDetail = vp.queryVector !== null && !storeRefused ? `thought and node KNN, ${req.candidates} per kind and store; ${belowFloor} neighbour(s) below the similarity floor left out` : "no query vector: lexical only";
    rec.record("vector", performance.now() - gatherStarted, { candidates: found(["thought_knn", "node_knn"]).length, detail: vectorDetail, top: [] });
    rec.record("lexical", 0, { candidates: lex.length, detail: engine.lexicalDetail({ plan, notes: perSource.flatMap((s) => s.notes) }), top: lex.map(({ key, c }) => ({ key, score: c.lexical })).sort((a, b) => b.score - a.score) });
    rec.record("filters", 0, { candidates: found(["expansion"]).length, detail: `one-hop expansion over edges with weight ≥ ${req.min_edge_weight} (at most ${MAX_EXPANDED_NODES} nodes)` });
  }
  const fusionStarted = performance.now();
  const alsoInCore = dropCoreTwins(perSource);
  // as_of: the request's, else the newest candidate's time (null when there is none), so the same data and query always score the same.
  const newest = Math.max(0, ...perSource.flatMap((src) => [...src.cands.values()].map((c) => c.time)));
  const asOf = req.as_of ?? (newest || null);
  const fusion = rememberFusion({ plan, fp: storeRefused ? null : vp.storeFp });
  const { scored, factWeight } = scoreCandidates({ plan, sources: perSource, asOf, fusion });
  rec?.record("fusion", performance.now() - fusionStarted, { candidates: scored.length, detail: `${REMEMBER_FORMULA}; ${fusion.policy.detail}; each result's breakdown gives its terms`, top: scored.map((r) => ({ key: `${r.store}:${r.c.kind}:${r.c.id}`, score: r.score })) });
  const results = scored.slice(0, req.limit).map((s) => resultOf({ s, alsoInCore, fusion, ftsTerms: plan.ftsTerms }));
  scored.slice(0, req.limit).forEach((s, i) => s.c.contradicts && contradictionsOfResult.set(results[i], s.c.contradicts));
  return {
    query: req.query,
    store,
    include_core: includeCore,
    mode: vp.storeFp !== null && !storeRefused ? "vector+fts" : "fts",
    fallback,
    core_fallback: coreFallback,
    reason: answerReason({ found: scored.length, searchable: perSource.some((s) => s.searchable) ? 1 : 0, fallback, belowFloor, weak: weakAnswerReason({ bands: results.map((r) => r.confidence), terms: plan.ftsTerms }) }),
    formula: REMEMBER_FORMULA,
    signals: REMEMBER_SIGNALS,
    weights: { ...w, fact: factWeight },
    tau_hours: req.tau_hours,
    min_edge_weight: req.min_edge_weight,
    as_of: asOf,
    fusion: { key: fusion.policy.key, source: fusion.policy.source, w_vec: fusion.policy.scoreVector, detail: fusion.policy.detail },
    results,
    ...(rec ? { explain: rec.result() } : {}),
  };
}
