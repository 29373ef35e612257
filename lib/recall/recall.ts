import { inArray } from "drizzle-orm";
import { z } from "zod";
import { select, type AnyStoreHandle, type Op } from "../db/port";
import { startQueryBudget, type QueryBudget } from "../db/query-budget";
import { AppError } from "../errors";
import { answerReason, ExplainRecorder, fuseGatedScores, fusionPolicyFor, type FusionPolicy, matchTerms, similarityFloorFor, type Explain, type RetrievalReason } from "../retrieval";
import type { QueryVectorPlan } from "../retrieval/readiness";
import { intentSchema, normalizeTrace, renderIntentQuery } from "./descriptors";
import { logRecallEvent } from "./events";
import { LEARNING_KIND } from "./learnings";
import { sanitizeText } from "./sanitize";
import { getReflectionSettings, type ReflectionSettings } from "./settings";
import { recallTables } from "./tables";
import { fixedRows } from "./statements";
import { TRACE_KIND } from "./traces";
import { hiddenItemsOp, hiddenRowsFilterOp, itemViewOf, itemViewQuerySchema, keepVisibleOp, type HiddenRowsFilter, type ItemView } from "../index/item-state";

const DAY_MS = 86_400_000;

export const recallInputSchema = z
  .object({
    /** Free text ("repair the login flow"), or a structured intent rendered like a trace descriptor. */
    query: z.string().trim().min(1).max(2000).optional(),
    intent: z
      .object({
        verb: intentSchema.shape.verb,
        target: intentSchema.shape.target,
        shard_type: z.string().trim().min(1).max(80).optional(),
        key_files: z.array(z.string().trim().min(1).max(400)).max(100).default([]),
        key_issue: z.string().trim().max(2000).default(""),
        error_tags: z.array(z.string().trim().min(1).max(80)).max(100).default([]),
      })
      .strict()
      .optional(),
    top_k: z.number().int().min(1).max(50).optional(),
    min_score: z.number().min(0).max(1).optional(),
    kinds: z.array(z.enum(["trace", "learning"])).min(1).max(2).default(["trace", "learning"]),
    /**
     * hybrid: vector KNN and FTS5 together, each row scored from both on the one fusion policy (fuseGatedScores;
     * the default: with the builtin provider the two catch different paraphrases, see bench/recall.bench.ts); vector: KNN only
     * (plus FTS5 for rows still waiting for a vector); lexical: FTS5 only. The response says what answered.
     */
    signals: z.enum(["hybrid", "vector", "lexical"]).default("hybrid"),
    /** Add each stage's candidates and time (readiness, vector, lexical, fusion: the min_score gate and recency). */
    explain: z.boolean().default(false),
    /** Governed memory (lib/index/item-state.ts): what was visible at this time (epoch ms), or retired items too. */
    ...itemViewQuerySchema,
  })
  .strict()
  .refine((b) => (b.query === undefined) !== (b.intent === undefined), { message: "give exactly one of query or intent", path: ["query"] });
export type RecallInput = z.input<typeof recallInputSchema>;

export type RecallMode = "hybrid" | "vector" | "lexical";

/** What every hit says: its relevance from both signals, its recency weight, and which signal gave more of it. */
type HitBase = { id: number; score: number; similarity: number; recency: number; match: "vector" | "lexical"; age_days: number };

export type TraceHit = HitBase & {
  outcome: "success" | "failure";
  summary: string;
  intent: { verb: string; target: string };
  key_issue: string;
  seen_count: number;
  last_seen_at: number;
};

export type LearningHit = HitBase & { predicate: string; description: string; confidence: number; summary: string };

export type RecallResult = {
  event_id: number;
  mode: RecallMode;
  fallback: { reason: string; message: string; count?: number } | null;
  /** Why the answer is empty or weak (null when it has hits and every signal asked for answered). */
  reason: RetrievalReason | null;
  method: string;
  cache_hit: boolean;
  query: string;
  traces: TraceHit[];
  learnings: LearningHit[];
  guidance: {
    past_failure_warning: { trace_id: number; score: number; intent: { verb: string; target: string }; key_issue: string; message: string } | null;
    aligned_preferences: { learning_id: number; score: number; predicate: string; description: string; confidence: number }[];
  };
  latency_ms: number;
  /** With explain=true: each stage's candidates and time. */
  explain?: Explain;
};


/** The text a recall embeds: an intent renders as its descriptor values (no outcome); free text is sanitized. */
export function recallQueryText(input: z.output<typeof recallInputSchema>): string {
  if (!input.intent) return sanitizeText(input.query!);
  const f = normalizeTrace({
    intent: { verb: input.intent.verb, target: input.intent.target },
    shard_type: input.intent.shard_type ?? "",
    key_files: input.intent.key_files,
    outcome: "failure",
    key_issue: input.intent.key_issue,
    error_tags: input.intent.error_tags,
  });
  return renderIntentQuery(f);
}

// Descriptor labels carry no topic (stopwords are dropped by the match builder).
const DESCRIPTOR_LABELS: ReadonlySet<string> = new Set("intent shard files outcome key issue tags learning args description success failure".split(" "));

/** The words recall matches: the query's content words (lib/retrieval's builder), without descriptor labels or one-letter words. */
export function lexicalTerms(text: string): string[] {
  return matchTerms(text, { ignore: DESCRIPTOR_LABELS }).filter((w) => w.length > 1 && w.length <= 64);
}

/**
 * Lexical similarity is the share of query terms a row contains, scaled so one
 * min_score gates both signals: on the quality set (bench/recall.bench.ts) a
 * coverage of 0.4 gives the precision a cosine of 0.2 gives the builtin vectors.
 */
export const LEXICAL_SCALE = 0.5;

// A crude stem (the first five letters) to tell which query terms a row shares, since FTS5's porter stems are not visible.
const stem = (w: string) => w.slice(0, 5);

export type Candidate = { refId: number; similarity: number; match: "vector" | "lexical" };
/** Lexical candidates of found rows: each row's scaled share of the query terms it contains. */
export function lexicalSimilarities(terms: string[], rows: { id: number; text: string }[]): Candidate[] {
  const queryStems = new Set(terms.map(stem));
  return rows.map((r) => {
    const rowStems = new Set(lexicalTerms(r.text).map(stem));
    let shared = 0;
    for (const s of queryStems) if (rowStems.has(s)) shared++;
    return { refId: r.id, similarity: (LEXICAL_SCALE * shared) / queryStems.size, match: "lexical" as const };
  });
}

function recencyWeight(lastSeenAt: number, now: number, halfLifeDays: number): number {
  if (halfLifeDays <= 0) return 1;
  return Math.pow(0.5, Math.max(0, now - lastSeenAt) / DAY_MS / halfLifeDays);
}


type RankOptions = { now: number; settings: ReflectionSettings; minScore: number; topK: number; /** The fusion policy of the query's model (lib/retrieval/fusion.ts); lexical alone without one. */ policy: FusionPolicy };

/**
 * One relevance per row from both its signals, on the one fusion policy
 * (lib/retrieval/fusion.ts fuseGatedScores: the lexical similarity + the
 * policy's gated vector weight × what the cosine has over it, never below the
 * lexical evidence), weighted by the row's recency, gated by min_score,
 * capped at top_k. `match` names the signal that gave more of it.
 */
function gateAndRank<R extends { id: number; last_seen_at: number }, H extends { id: number; score: number }>({
  candidates,
  rows,
  opts,
  toHit,
}: {
  candidates: Candidate[];
  rows: R[];
  opts: RankOptions;
  toHit: (row: R, base: HitBase) => H;
}): H[] {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const signals = new Map<number, { lexical?: number; vector?: number }>();
  for (const c of candidates) {
    const s = signals.get(c.refId) ?? {};
    s[c.match] = Math.max(s[c.match] ?? 0, c.similarity);
    signals.set(c.refId, s);
  }
  const hits: H[] = [];
  for (const [id, s] of signals) {
    const r = byId.get(id);
    if (!r) continue;
    const similarity = fuseGatedScores({ lexical: s.lexical, vector: s.vector, policy: opts.policy });
    const recency = recencyWeight(r.last_seen_at, opts.now, opts.settings.recency_half_life_days);
    const hit = toHit(r, { id: r.id, score: roundScore(similarity * recency), similarity: roundScore(similarity), recency: roundScore(recency), match: s.vector !== undefined && s.vector > (s.lexical ?? 0) ? "vector" : "lexical", age_days: roundScore((opts.now - r.last_seen_at) / DAY_MS) });
    if (hit.score >= opts.minScore) hits.push(hit);
  }
  return hits.sort((a, b) => b.score - a.score || a.id - b.id).slice(0, opts.topK);
}

/** The columns a trace hit shows (both backends read them for the candidates). */
type TraceHitRow = Pick<TraceHit, "id" | "outcome" | "summary" | "key_issue" | "seen_count" | "last_seen_at"> & { intentVerb: string; intentTarget: string };
type LearningHitRow = Pick<LearningHit, "id" | "predicate" | "description" | "confidence" | "summary"> & { last_seen_at: number };

function traceHitsOf({ candidates, rows, opts }: { candidates: Candidate[]; rows: TraceHitRow[]; opts: RankOptions }): TraceHit[] {
  return gateAndRank({
    candidates,
    rows,
    opts,
    toHit: (r, base) => ({ ...base, outcome: r.outcome, summary: r.summary, intent: { verb: r.intentVerb, target: r.intentTarget }, key_issue: r.key_issue, seen_count: r.seen_count, last_seen_at: r.last_seen_at }),
  });
}

function learningHitsOf({ candidates, rows, opts }: { candidates: Candidate[]; rows: LearningHitRow[]; opts: RankOptions }): LearningHit[] {
  return gateAndRank({ candidates, rows, opts, toHit: (r, base) => ({ ...base, predicate: r.predicate, description: r.description, confidence: r.confidence, summary: r.summary }) });
}

/** Oversample twice top_k so recency weighting and the gate can reorder; the KNN's cost grows with k, so no more than that. */
export const recallPool = (topK: number) => Math.max(10, topK * 2);

/** The fusion stage's explain line. */
function fusionExplain({ traces, learningHits, settings, minScore, topK, candidates, policy }: { traces: TraceHit[]; learningHits: LearningHit[]; settings: ReflectionSettings; minScore: number; topK: number; candidates: number; policy: FusionPolicy }) {
  return {
    candidates: traces.length + learningHits.length,
    detail: `each row scored by lexical + w_vec × the cosine's lead over it (${policy.detail}) × recency (half-life ${settings.recency_half_life_days} days), kept when ≥ min_score ${minScore}, top ${topK} per kind; ${candidates} candidate(s) in`,
    top: [...traces.map((t) => ({ key: `${TRACE_KIND}:${t.id}`, score: t.score })), ...learningHits.map((l) => ({ key: `${LEARNING_KIND}:${l.id}`, score: l.score }))].sort((a, b) => b.score - a.score),
  };
}

/** Guidance from the ranked hits: a past failure that scores high, learnings aligned with the query. */
function recallGuidance({ traces, learningHits, settings }: { traces: TraceHit[]; learningHits: LearningHit[]; settings: ReflectionSettings }): RecallResult["guidance"] {
  const failure = traces.find((t) => t.outcome === "failure" && t.score >= settings.failure_warning_score);
  return {
    past_failure_warning: failure
      ? {
          trace_id: failure.id,
          score: failure.score,
          intent: failure.intent,
          key_issue: failure.key_issue,
          message: `A similar attempt failed before (trace ${failure.id}: ${failure.intent.verb} ${failure.intent.target})${failure.key_issue ? `; key issue: ${failure.key_issue}` : ""}.`,
        }
      : null,
    aligned_preferences: learningHits
      .filter((l) => l.score >= settings.preference_score)
      .map((l) => ({ learning_id: l.id, score: l.score, predicate: l.predicate, description: l.description, confidence: l.confidence })),
  };
}

const roundScore = (x: number) => Math.round(x * 10000) / 10000;

export type RecallKind = typeof TRACE_KIND | typeof LEARNING_KIND;
type Awaitable<T> = T | Promise<T>;
type VectorLeg = { ok: true; candidates: Candidate[]; method: string; belowFloor: number } | { ok: false; message: string };

/**
 * Recall's reads that differ per engine (engines/sqlite.ts: FTS5 and the store's KNN; engines/pg.ts: PostgreSQL
 * full-text and pgvector), in one read of the store; `run` runs a read written once (lib/db/port.ts) in it.
 */
export type RecallReader = {
  run: <T>(op: Op<T>) => Awaitable<T>;
  /** What answered, for the response: the KNN's method (null: none) and whether full-text joined it. */
  method: (knn: string | null, hybrid: boolean) => string;
  /** Rows holding any of the terms, best first, within the budget; `awaitingOnly`: only rows still waiting for a vector; `hidden`: the view's hidden rows left out as they are ranked. */
  lexical: (a: { kind: RecallKind; terms: string[]; limit: number; awaitingOnly: boolean; budget: QueryBudget; hidden: HiddenRowsFilter }) => Awaitable<Candidate[]>;
  /** Vector candidates at or above the similarity floor whose row still exists with the text the vector was made from, or why the KNN refused. */
  vector: (a: { kind: RecallKind; fingerprintId: string; query: Float32Array; k: number; floor: number }) => Awaitable<VectorLeg>;
};

export type RecallEngine = {
  planQueryVector: (a: { handle: AnyStoreHandle; text: string; kinds: string[] }) => Promise<QueryVectorPlan>;
  read: <T>(handle: AnyStoreHandle, work: (reader: RecallReader) => Promise<T>) => Promise<T>;
  /** The lexical stage's explain detail, before its similarity rule. */
  lexicalDetail: (a: { kind: RecallKind; terms: string[] }) => string;
};

/**
 * A vector leg's `pool` nearest the view shows: the KNN cannot filter inside its index, so where the view hides rows
 * it is asked again for RECALL_VECTOR_PAST_HIDDEN.factor times as many while hidden rows took the places, bounded.
 */
export const RECALL_VECTOR_PAST_HIDDEN = { factor: 4, maxK: 1000 } as const;

async function visibleNeighbours({ reader, kind, pool, hidden, view, knn }: { reader: RecallReader; kind: RecallKind; pool: number; hidden: HiddenRowsFilter; view: ItemView; knn: (k: number) => Awaitable<VectorLeg> }): Promise<VectorLeg> {
  for (let k = pool; ; k = Math.min(RECALL_VECTOR_PAST_HIDDEN.maxK, k * RECALL_VECTOR_PAST_HIDDEN.factor)) {
    const leg = await knn(k);
    if (!leg.ok || !hidden || leg.candidates.length === 0) return leg;
    const gone = await reader.run(hiddenItemsOp({ kind, ids: leg.candidates.map((c) => String(c.refId)), view }));
    const shown = gone.size === 0 ? leg.candidates : leg.candidates.filter((c) => { const status = gone.get(String(c.refId)); return status === undefined || (hidden.includeProposed && status === "proposed"); });
    if (shown.length >= pool || leg.candidates.length + leg.belowFloor < k || k >= RECALL_VECTOR_PAST_HIDDEN.maxK) return { ...leg, candidates: shown.slice(0, pool) };
  }
}

/** The rows the hits show, of the candidates of each kind. */
function* hitRows(candidates: Record<RecallKind, Candidate[]>): Op<{ traces: TraceHitRow[]; learnings: LearningHitRow[] }> {
  const ids = (cs: Candidate[]) => [...new Set(cs.map((c) => c.refId))];
  const traces = candidates.trace.length
    ? yield* select({ t: recallTables.traces }, (db, { t }) =>
        db.select({ id: t.id, outcome: t.outcome, summary: t.summaryDescriptor, intentVerb: t.intentVerb, intentTarget: t.intentTarget, key_issue: t.keyIssue, seen_count: t.seenCount, last_seen_at: t.lastSeenAt }).from(t).where(inArray(t.id, ids(candidates.trace))),
      )
    : [];
  const learnings = candidates.learning.length
    ? yield* select({ l: recallTables.learnings }, (db, { l }) =>
        db.select({ id: l.id, predicate: l.predicate, description: l.description, confidence: l.confidence, summary: l.semanticHandle, last_seen_at: l.lastSeenAt }).from(l).where(inArray(l.id, ids(candidates.learning))),
      )
    : [];
  return { traces, learnings };
}

/** Whether the store holds anything of these kinds to recall. */
function* holdsAny(kinds: RecallKind[]): Op<boolean> {
  for (const kind of kinds) {
    const [found] = yield* fixedRows(kind === TRACE_KIND ? "select 1 from reasoning_traces limit 1" : "select 1 from learnings limit 1");
    if (found) return true;
  }
  return false;
}

/**
 * "Have I faced this before?" (docs/api-and-mcp.md): traces and learnings by vector and (hybrid) full text, gated by
 * min_score after recency weighting, capped at top_k, with guidance. When vectors cannot answer it ranks lexically and
 * says why; rows still waiting for a vector are always found lexically. Every recall is logged.
 */
export async function recallReflections({ engine, handle, agentId, input }: { engine: RecallEngine; handle: AnyStoreHandle; agentId: string; input: RecallInput }): Promise<RecallResult> {
  const started = performance.now();
  const body = recallInputSchema.parse(input);
  const settings = await getReflectionSettings({ handle });
  if (!settings.enabled) throw new AppError("conflict", `reflection recall is disabled for store ${handle.store}; an admin can enable it in the store's reflection settings`);
  const topK = body.top_k ?? settings.top_k;
  const minScore = body.min_score ?? settings.min_score;
  const queryText = recallQueryText(body);
  const terms = lexicalTerms(queryText);
  const pool = recallPool(topK);
  const kinds = ([TRACE_KIND, LEARNING_KIND] as const).filter((k) => body.kinds.includes(k));
  const rec = body.explain ? new ExplainRecorder() : null;
  // Embedding the query may wait on the provider: outside any transaction. Before the first trace or learning vector exists, recall answers lexically and says so.
  const plan = body.signals === "lexical" ? null : await engine.planQueryVector({ handle, text: queryText, kinds: body.kinds });
  if (plan) rec?.readiness(plan);
  const lexicalFallback = (f: { reason: string; message: string; count?: number }) => ({ ...f, message: `${f.message}; answered by lexical recall over descriptors and handles` });
  // Each full-text statement runs within the query budget (422 query_too_expensive), as in search.
  const budget = startQueryBudget({ hint: "use fewer or rarer words in the query, or fewer kinds" });
  const view = itemViewOf(body);

  const found = await engine.read(handle, async (reader) => {
    let mode: RecallMode = "lexical";
    let reasonFallback = plan && !plan.ok ? plan.fallback : null;
    let knnMethod: string | null = null;
    let belowFloor = 0;
    const candidates: Record<RecallKind, Candidate[]> = { trace: [], learning: [] };
    // Each leg's candidates, timed, when explaining.
    const time = <T>(stage: "vector" | "lexical", run: () => Awaitable<T>, describe: (r: T) => { candidates: number; detail: string; top?: { key: string; score: number }[] }) => (rec ? rec.timeAsync(stage, async () => run(), describe) : run());
    const top = (kind: RecallKind, cs: Candidate[]) => cs.map((c) => ({ key: `${kind}:${c.refId}`, score: c.similarity }));
    // The view's hidden traces and learnings are left out inside the full-text statements (null: a store without item state).
    const hidden = await reader.run(hiddenRowsFilterOp({ view }));
    const lexicalLeg = (kind: RecallKind, awaitingOnly = false) =>
      time("lexical", () => reader.lexical({ kind, terms, limit: pool, awaitingOnly, budget, hidden }), (c) => ({ candidates: c.length, detail: `${engine.lexicalDetail({ kind, terms })}; similarity = ${LEXICAL_SCALE} × share of query terms found`, top: top(kind, c) }));
    if (plan?.ok) {
      const floor = similarityFloorFor(plan.fingerprint.provider);
      const legs: Partial<Record<RecallKind, VectorLeg>> = {};
      for (const kind of kinds) {
        legs[kind] = await time("vector", () => visibleNeighbours({ reader, kind, pool, hidden, view, knn: (k) => reader.vector({ kind, fingerprintId: plan.fingerprint.id, query: plan.vector, k, floor }) }), (v) => (v.ok ? { candidates: v.candidates.length, detail: `${kind}: KNN (${v.method}); ${v.belowFloor} neighbour(s) below the similarity floor left out`, top: top(kind, v.candidates) } : { candidates: 0, detail: `${kind}: ${v.message}` }));
      }
      const refused = Object.values(legs).find((v) => !v.ok);
      if (refused && !refused.ok) {
        // The KNN refused (no pgvector, too many vectors): lexical over everything, and say why.
        reasonFallback = { reason: "vectors_unavailable", message: refused.message };
      } else {
        mode = body.signals;
        for (const kind of kinds) {
          const v = legs[kind] as Extract<VectorLeg, { ok: true }>;
          knnMethod = v.method;
          belowFloor += v.belowFloor;
          // Rows still waiting for a vector are always searched lexically, so a fresh write is recalled at once.
          candidates[kind] = [...v.candidates, ...(await lexicalLeg(kind, body.signals !== "hybrid"))];
        }
      }
    }
    if (mode === "lexical") for (const kind of kinds) candidates[kind] = await lexicalLeg(kind);
    // Retired traces and learnings do not answer: as_of and include_retired are read from each row's state here.
    for (const kind of kinds) candidates[kind] = await reader.run(keepVisibleOp({ kind, items: candidates[kind], idOf: (c) => String(c.refId), view }));
    const policy = fusionPolicyFor({ fingerprint: plan?.ok ? plan.fingerprint : null });
    const opts = { now: Date.now(), settings, minScore, topK, policy };
    const rank = async () => {
      const rows = await reader.run(hitRows(candidates));
      return { traces: traceHitsOf({ candidates: candidates.trace, rows: rows.traces, opts }), learningHits: learningHitsOf({ candidates: candidates.learning, rows: rows.learnings, opts }) };
    };
    const ranked = rec ? await rec.timeAsync("fusion", rank, (r) => fusionExplain({ ...r, settings, minScore, topK, candidates: candidates.trace.length + candidates.learning.length, policy })) : await rank();
    return { ...ranked, mode, reasonFallback, method: reader.method(knnMethod, mode === "hybrid"), belowFloor, searchable: await reader.run(holdsAny(kinds)) };
  });

  const { traces, learningHits, mode, reasonFallback, method, belowFloor } = found;
  const fallback = reasonFallback ? lexicalFallback(reasonFallback) : null;
  const cacheHit = mode !== "lexical" && plan?.ok === true && plan.cacheHit;
  const guidance = recallGuidance({ traces, learningHits, settings });
  const latencyMs = roundScore(performance.now() - started);
  const hits = [
    ...traces.map((t) => ({ artifact: "trace" as const, refId: t.id, score: t.score, summary: t.summary })),
    ...learningHits.map((l) => ({ artifact: "learning" as const, refId: l.id, score: l.score, summary: l.summary })),
  ];
  const eventId = await logRecallEvent({ handle, event: { agentId, query: queryText, mode, fallbackReason: fallback?.reason ?? null, latencyMs, cacheHit, warning: guidance.past_failure_warning !== null, hits } });
  // Candidates the min_score gate turned away are weak matches, not none: the reason says nothing matched well enough.
  const reason = answerReason({ found: traces.length + learningHits.length, searchable: found.searchable ? 1 : 0, fallback: reasonFallback, belowFloor });
  return { event_id: eventId, mode, fallback, reason, method, cache_hit: cacheHit, query: queryText, traces, learnings: learningHits, guidance, latency_ms: latencyMs, ...(rec ? { explain: rec.result() } : {}) };
}
