import { and, eq, inArray, isNotNull } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { embeddings, embedQueue } from "../db/schema/embed";
import { learnings, reasoningTraces } from "../db/schema/recall";
import { runWithinBudget, startQueryBudget, type QueryBudget } from "../db/query-budget";
import { knnSourceOf } from "../embed/vector-index";
import { AppError } from "../errors";
import { answerReason, broadTopWithinBudget, ExplainRecorder, fuseGatedScores, fusionPolicyFor, type FusionPolicy, matchExpression, matchTerms, planQueryVector, selectiveTopByBm25, similarityFloorFor, vectorNeighbours, type Bm25Row, type Explain, type RetrievalReason } from "../retrieval";
import { intentSchema, normalizeTrace, renderIntentQuery } from "./descriptors";
import { logRecallEvent, type RecallEventInput } from "./events";
import { LEARNING_KIND } from "./learnings";
import { sanitizeText } from "./sanitize";
import { getReflectionSettings, type ReflectionSettings } from "./settings";
import { TRACE_KIND } from "./traces";

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
  })
  .strict()
  .refine((b) => (b.query === undefined) !== (b.intent === undefined), { message: "give exactly one of query or intent", path: ["query"] });
export type RecallInput = z.input<typeof recallInputSchema>;

export type RecallMode = "hybrid" | "vector" | "lexical";

export type TraceHit = {
  id: number;
  score: number;
  similarity: number;
  recency: number;
  match: "vector" | "lexical";
  outcome: "success" | "failure";
  summary: string;
  intent: { verb: string; target: string };
  keyIssue: string;
  seenCount: number;
  lastSeenAt: number;
  ageDays: number;
};

export type LearningHit = {
  id: number;
  score: number;
  similarity: number;
  recency: number;
  match: "vector" | "lexical";
  predicate: string;
  description: string;
  confidence: number;
  summary: string;
  ageDays: number;
};

export type RecallResult = {
  eventId: number;
  mode: RecallMode;
  fallback: { reason: string; message: string; count?: number } | null;
  /** Why the answer is empty or weak (null when it has hits and every signal asked for answered). */
  reason: RetrievalReason | null;
  method: string;
  cacheHit: boolean;
  query: string;
  traces: TraceHit[];
  learnings: LearningHit[];
  /** Key names as the reflection API has always spelled them. */
  guidance: {
    past_failure_warning: { traceId: number; score: number; intent: { verb: string; target: string }; keyIssue: string; message: string } | null;
    aligned_preferences: { learningId: number; score: number; predicate: string; description: string; confidence: number }[];
  };
  latencyMs: number;
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
type FtsTextRow = { id: number; text: string };

/**
 * Lexical candidates: FTS5 finds rows sharing any term, ranked by bm25; the
 * similarity is their scaled term coverage (see LEXICAL_SCALE).
 */
function lexicalCandidates({ handle, table, terms, limit, onlyIds, budget }: { handle: StoreHandle; table: "reasoning_traces" | "learnings"; terms: string[]; limit: number; onlyIds?: number[]; budget: QueryBudget }): Candidate[] {
  if (terms.length === 0 || onlyIds?.length === 0) return [];
  const textColumn = table === "reasoning_traces" ? "summary_descriptor" : "semantic_handle";
  const only = onlyIds ? "and f.rowid in (select value from json_each(@ids))" : "";
  const statement = handle.sqlite.prepare(
    `select t.id, t.${textColumn} as text from ${table}_fts f join ${table} t on t.id = f.rowid
     where ${table}_fts match @expr ${only} order by bm25(${table}_fts) limit @limit`,
  );
  const expr = matchExpression(terms, "any")!;
  // Common words over a large store: scored on the selective words' best rows only (max-score pruning, same bm25 scores).
  const pruned = onlyIds ? null : runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => selectiveTopByBm25({ db: handle.sqlite, schema: "main", table: `${table}_fts`, terms, k: limit }) });
  // Broad matches on a table with word lists are ranked from them, exactly as the statement ranks them.
  const broad = onlyIds || pruned ? null : broadTopWithinBudget({ db: handle.sqlite, schema: "main", table: `${table}_fts`, match: expr, budget });
  const top = pruned ? (m: number) => pruned.rows.slice(0, m) : broad?.top;
  // Up to 32 OR-ed words: common ones over a large store are the slow case, so the query budget bounds it.
  const rows = top ? rowsInRankOrder({ handle, table, textColumn, top, limit }) : runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => statement.all({ expr, limit, ids: JSON.stringify(onlyIds ?? []) }) as FtsTextRow[] });
  return lexicalSimilarities(terms, rows);
}

/** Lexical candidates of found rows (both backends): each row's scaled share of the query terms it contains. */
export function lexicalSimilarities(terms: string[], rows: { id: number; text: string }[]): Candidate[] {
  const queryStems = new Set(terms.map(stem));
  return rows.map((r) => {
    const rowStems = new Set(lexicalTerms(r.text).map(stem));
    let shared = 0;
    for (const s of queryStems) if (rowStems.has(s)) shared++;
    return { refId: r.id, similarity: (LEXICAL_SCALE * shared) / queryStems.size, match: "lexical" as const };
  });
}

/** The first `limit` ranked rows that still exist, with their text (ranked rows read in growing batches). */
function rowsInRankOrder({ handle, table, textColumn, top, limit }: { handle: StoreHandle; table: "reasoning_traces" | "learnings"; textColumn: string; top: (m: number) => Bm25Row[]; limit: number }): FtsTextRow[] {
  const read = handle.sqlite.prepare(`select id, ${textColumn} as text from ${table} where id in (select value from json_each(?))`);
  for (let m = Math.max(limit, 16); ; m *= 4) {
    const ranked = top(m);
    const texts = new Map((read.all(JSON.stringify(ranked.map((r) => r.rowid))) as FtsTextRow[]).map((r) => [r.id, r.text]));
    const rows = ranked.flatMap((r) => (texts.has(r.rowid) ? [{ id: r.rowid, text: texts.get(r.rowid)! }] : []));
    if (rows.length >= limit || ranked.length < m) return rows.slice(0, limit);
  }
}

/** Rows written but not (yet) embedded: queued by write-behind, or stored without a vector under backpressure. */
function idsAwaitingVectors({ handle, kind }: { handle: StoreHandle; kind: typeof TRACE_KIND | typeof LEARNING_KIND }): number[] {
  const queued = handle.db.select({ id: embedQueue.refId }).from(embedQueue).where(eq(embedQueue.kind, kind)).all();
  const skipped = kind === TRACE_KIND ? handle.db.select({ id: reasoningTraces.id }).from(reasoningTraces).where(isNotNull(reasoningTraces.embedSkippedAt)).all() : [];
  return [...new Set([...queued, ...skipped].map((r) => r.id))];
}

/** Of these embedding rows, the ids whose trace or learning still exists with the text the vector was made from. */
function currentEmbeddingIds({ handle, kind, embeddingIds }: { handle: StoreHandle; kind: typeof TRACE_KIND | typeof LEARNING_KIND; embeddingIds: number[] }): Set<number> {
  const { db } = handle;
  const rows =
    kind === TRACE_KIND
      ? db
          .select({ id: embeddings.id })
          .from(embeddings)
          .innerJoin(reasoningTraces, and(eq(reasoningTraces.id, embeddings.refId), eq(reasoningTraces.descriptorHash, embeddings.inputHash)))
          .where(inArray(embeddings.id, embeddingIds))
          .all()
      : db
          .select({ id: embeddings.id })
          .from(embeddings)
          .innerJoin(learnings, and(eq(learnings.id, embeddings.refId), eq(learnings.handleHash, embeddings.inputHash)))
          .where(inArray(embeddings.id, embeddingIds))
          .all();
  return new Set(rows.map((r) => r.id));
}

/** Vector candidates at or above the similarity floor whose row still exists with the text the vector was made from. */
function vectorCandidates({ handle, kind, fingerprintId, query, k, floor }: { handle: StoreHandle; kind: typeof TRACE_KIND | typeof LEARNING_KIND; fingerprintId: string; query: Float32Array; k: number; floor: number }): { candidates: Candidate[]; method: string; belowFloor: number } {
  const { hits, method, belowFloor } = vectorNeighbours({ sources: [{ store: handle.store, source: knnSourceOf(handle), fingerprintId }], kind, query, k, floor });
  if (hits.length === 0) return { candidates: [], method, belowFloor };
  const current = currentEmbeddingIds({ handle, kind, embeddingIds: hits.map((h) => h.embeddingId) });
  return { candidates: hits.filter((h) => current.has(h.embeddingId)).map((h) => ({ refId: h.refId, similarity: h.similarity, match: "vector" as const })), method, belowFloor };
}

/** Whether the store holds anything of the wanted kinds to recall. */
function hasReflections({ handle, traces, learnings: wantLearnings }: { handle: StoreHandle; traces: boolean; learnings: boolean }): boolean {
  const any = (table: string) => !!handle.sqlite.prepare(`select 1 from ${table} limit 1`).get();
  return (traces && any("reasoning_traces")) || (wantLearnings && any("learnings"));
}

function recencyWeight(lastSeenAt: number, now: number, halfLifeDays: number): number {
  if (halfLifeDays <= 0) return 1;
  return Math.pow(0.5, Math.max(0, now - lastSeenAt) / DAY_MS / halfLifeDays);
}


export type RankOptions = { now: number; settings: ReflectionSettings; minScore: number; topK: number; /** The fusion policy of the query's model (lib/retrieval/fusion.ts); lexical alone without one. */ policy: FusionPolicy };
type HitBase = { id: number; score: number; similarity: number; recency: number; match: Candidate["match"]; ageDays: number };

/**
 * One relevance per row from both its signals, on the one fusion policy
 * (lib/retrieval/fusion.ts fuseGatedScores: the lexical similarity + the
 * policy's gated vector weight × what the cosine has over it, never below the
 * lexical evidence), weighted by the row's recency, gated by min_score,
 * capped at top_k. `match` names the signal that gave more of it.
 */
function gateAndRank<R extends { id: number; lastSeenAt: number }, H extends { id: number; score: number }>({
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
    const recency = recencyWeight(r.lastSeenAt, opts.now, opts.settings.recency_half_life_days);
    const hit = toHit(r, { id: r.id, score: roundScore(similarity * recency), similarity: roundScore(similarity), recency: roundScore(recency), match: s.vector !== undefined && s.vector > (s.lexical ?? 0) ? "vector" : "lexical", ageDays: roundScore((opts.now - r.lastSeenAt) / DAY_MS) });
    if (hit.score >= opts.minScore) hits.push(hit);
  }
  return hits.sort((a, b) => b.score - a.score || a.id - b.id).slice(0, opts.topK);
}

/** The columns a trace hit shows (both backends read them for the candidates). */
export type TraceHitRow = Pick<TraceHit, "id" | "outcome" | "summary" | "keyIssue" | "seenCount" | "lastSeenAt"> & { intentVerb: string; intentTarget: string };
export type LearningHitRow = Pick<LearningHit, "id" | "predicate" | "description" | "confidence" | "summary"> & { lastSeenAt: number };

export function traceHitsOf({ candidates, rows, opts }: { candidates: Candidate[]; rows: TraceHitRow[]; opts: RankOptions }): TraceHit[] {
  return gateAndRank({
    candidates,
    rows,
    opts,
    toHit: (r, base) => ({ ...base, outcome: r.outcome, summary: r.summary, intent: { verb: r.intentVerb, target: r.intentTarget }, keyIssue: r.keyIssue, seenCount: r.seenCount, lastSeenAt: r.lastSeenAt }),
  });
}

export function learningHitsOf({ candidates, rows, opts }: { candidates: Candidate[]; rows: LearningHitRow[]; opts: RankOptions }): LearningHit[] {
  return gateAndRank({ candidates, rows, opts, toHit: (r, base) => ({ ...base, predicate: r.predicate, description: r.description, confidence: r.confidence, summary: r.summary }) });
}

function rankTraces({ handle, candidates, opts }: { handle: StoreHandle; candidates: Candidate[]; opts: RankOptions }): TraceHit[] {
  if (candidates.length === 0) return [];
  const t = reasoningTraces;
  const rows = handle.db
    .select({ id: t.id, outcome: t.outcome, summary: t.summaryDescriptor, intentVerb: t.intentVerb, intentTarget: t.intentTarget, keyIssue: t.keyIssue, seenCount: t.seenCount, lastSeenAt: t.lastSeenAt })
    .from(t)
    .where(
      inArray(
        t.id,
        candidates.map((c) => c.refId),
      ),
    )
    .all();
  return traceHitsOf({ candidates, rows, opts });
}

function rankLearnings({ handle, candidates, opts }: { handle: StoreHandle; candidates: Candidate[]; opts: RankOptions }): LearningHit[] {
  if (candidates.length === 0) return [];
  const l = learnings;
  const rows = handle.db
    .select({ id: l.id, predicate: l.predicate, description: l.description, confidence: l.confidence, summary: l.semanticHandle, lastSeenAt: l.lastSeenAt })
    .from(l)
    .where(
      inArray(
        l.id,
        candidates.map((c) => c.refId),
      ),
    )
    .all();
  return learningHitsOf({ candidates, rows, opts });
}

/** Oversample twice top_k so recency weighting and the gate can reorder; the KNN's cost grows with k, so no more than that. */
export const recallPool = (topK: number) => Math.max(10, topK * 2);

/** The per-recall numbers both backends start from: the settings in force and the body's overrides. */
export function recallPlan(body: z.output<typeof recallInputSchema>, settings: ReflectionSettings, store: string): { topK: number; minScore: number; queryText: string; terms: string[]; wantTraces: boolean; wantLearnings: boolean; pool: number } {
  if (!settings.enabled) throw new AppError("conflict", `reflection recall is disabled for store ${store}; an admin can enable it in the store's reflection settings`);
  const topK = body.top_k ?? settings.top_k;
  const queryText = recallQueryText(body);
  return { topK, minScore: body.min_score ?? settings.min_score, queryText, terms: lexicalTerms(queryText), wantTraces: body.kinds.includes("trace"), wantLearnings: body.kinds.includes("learning"), pool: recallPool(topK) };
}

/** The fusion stage's explain line (both backends). */
export function fusionExplain({ traces, learningHits, settings, minScore, topK, candidates, policy }: { traces: TraceHit[]; learningHits: LearningHit[]; settings: ReflectionSettings; minScore: number; topK: number; candidates: number; policy: FusionPolicy }) {
  return {
    candidates: traces.length + learningHits.length,
    detail: `each row scored by lexical + w_vec × the cosine's lead over it (${policy.detail}) × recency (half-life ${settings.recency_half_life_days} days), kept when ≥ min_score ${minScore}, top ${topK} per kind; ${candidates} candidate(s) in`,
    top: [...traces.map((t) => ({ key: `${TRACE_KIND}:${t.id}`, score: t.score })), ...learningHits.map((l) => ({ key: `${LEARNING_KIND}:${l.id}`, score: l.score }))].sort((a, b) => b.score - a.score),
  };
}

/** Guidance from the ranked hits (both backends): a past failure that scores high, learnings aligned with the query. */
export function recallGuidance({ traces, learningHits, settings }: { traces: TraceHit[]; learningHits: LearningHit[]; settings: ReflectionSettings }): RecallResult["guidance"] {
  const failure = traces.find((t) => t.outcome === "failure" && t.score >= settings.failure_warning_score);
  return {
    past_failure_warning: failure
      ? {
          traceId: failure.id,
          score: failure.score,
          intent: failure.intent,
          keyIssue: failure.keyIssue,
          message: `A similar attempt failed before (trace ${failure.id}: ${failure.intent.verb} ${failure.intent.target})${failure.keyIssue ? `; key issue: ${failure.keyIssue}` : ""}.`,
        }
      : null,
    aligned_preferences: learningHits
      .filter((l) => l.score >= settings.preference_score)
      .map((l) => ({ learningId: l.id, score: l.score, predicate: l.predicate, description: l.description, confidence: l.confidence })),
  };
}

/** The recall event a recall logs (both backends). */
export function recallEventOf({ agentId, queryText, mode, fallback, latencyMs, cacheHit, guidance, traces, learningHits }: { agentId: string; queryText: string; mode: RecallMode; fallback: RecallResult["fallback"]; latencyMs: number; cacheHit: boolean; guidance: RecallResult["guidance"]; traces: TraceHit[]; learningHits: LearningHit[] }): RecallEventInput {
  return {
    agentId,
    query: queryText,
    mode,
    fallbackReason: fallback?.reason ?? null,
    latencyMs,
    cacheHit,
    warning: guidance.past_failure_warning !== null,
    hits: [
      ...traces.map((t) => ({ artifact: "trace" as const, refId: t.id, score: t.score, summary: t.summary })),
      ...learningHits.map((l) => ({ artifact: "learning" as const, refId: l.id, score: l.score, summary: l.summary })),
    ],
  };
}

export const roundScore = (x: number) => Math.round(x * 10000) / 10000;

/**
 * "Have I faced this before?" Embeds the query as a query, searches traces and
 * learnings by vector and (hybrid) FTS5, gates by min_score after recency
 * weighting, caps at top_k, and adds guidance. When vectors cannot answer
 * (degraded, drifted, provider down) it ranks lexically and says why. Rows
 * still waiting for a vector (write-behind, or skipped under backpressure)
 * are always found lexically. Every recall is logged.
 */
export async function recallReflections({ handle, agentId, input }: { handle: StoreHandle; agentId: string; input: RecallInput }): Promise<RecallResult> {
  const started = performance.now();
  const body = recallInputSchema.parse(input);
  const settings = getReflectionSettings({ handle });
  const { topK, minScore, queryText, terms, wantTraces, wantLearnings, pool } = recallPlan(body, settings, handle.store);
  const budget = startQueryBudget({ hint: "use fewer or rarer words in the query, or fewer kinds" });

  let mode: RecallMode = "lexical";
  let fallback: RecallResult["fallback"] = null;
  let method = "fts5";
  let cacheHit = false;
  let traceCandidates: Candidate[] = [];
  let learningCandidates: Candidate[] = [];

  let belowFloor = 0;
  const rec = body.explain ? new ExplainRecorder() : null;
  // Before the first trace or learning vector exists, recall answers lexically and says so (awaitingFirstVectors).
  const plan = body.signals === "lexical" ? null : await planQueryVector({ handle, text: queryText, kinds: body.kinds });
  if (plan) rec?.readiness(plan);
  // Each leg's candidates, timed, when explaining.
  const vectorLeg = (kind: typeof TRACE_KIND | typeof LEARNING_KIND, run: () => ReturnType<typeof vectorCandidates>) =>
    rec ? rec.time("vector", run, (v) => ({ candidates: v.candidates.length, detail: `${kind}: KNN (${v.method}); ${v.belowFloor} neighbour(s) below the similarity floor left out`, top: v.candidates.map((c) => ({ key: `${kind}:${c.refId}`, score: c.similarity })) })) : run();
  const lexicalLeg = (kind: typeof TRACE_KIND | typeof LEARNING_KIND, run: () => Candidate[]) =>
    rec ? rec.time("lexical", run, (c) => ({ candidates: c.length, detail: `${kind}: FTS5 over ${terms.length ? terms.join(" OR ") : "no word"}; similarity = ${LEXICAL_SCALE} × share of query terms found`, top: c.map((x) => ({ key: `${kind}:${x.refId}`, score: x.similarity })) })) : run();
  if (plan?.ok) {
    mode = body.signals;
    cacheHit = plan.cacheHit;
    const fpId = plan.fingerprint.id;
    const floor = similarityFloorFor(plan.fingerprint.provider);
    // Rows still waiting for a vector are always searched lexically, so a fresh write is recalled at once.
    const lexicalOver = (kind: typeof TRACE_KIND | typeof LEARNING_KIND) => (body.signals === "hybrid" ? undefined : idsAwaitingVectors({ handle, kind }));
    if (wantTraces) {
      const v = vectorLeg(TRACE_KIND, () => vectorCandidates({ handle, kind: TRACE_KIND, fingerprintId: fpId, query: plan.vector, k: pool, floor }));
      method = v.method;
      belowFloor += v.belowFloor;
      traceCandidates = [...v.candidates, ...lexicalLeg(TRACE_KIND, () => lexicalCandidates({ handle, table: "reasoning_traces", terms, limit: pool, onlyIds: lexicalOver(TRACE_KIND), budget }))];
    }
    if (wantLearnings) {
      const v = vectorLeg(LEARNING_KIND, () => vectorCandidates({ handle, kind: LEARNING_KIND, fingerprintId: fpId, query: plan.vector, k: pool, floor }));
      method = v.method;
      belowFloor += v.belowFloor;
      learningCandidates = [...v.candidates, ...lexicalLeg(LEARNING_KIND, () => lexicalCandidates({ handle, table: "learnings", terms, limit: pool, onlyIds: lexicalOver(LEARNING_KIND), budget }))];
    }
    if (body.signals === "hybrid") method = `${method}+fts5`;
    if (!handle.vectors.available) method = `${method} (vectors_index_unavailable)`;
  } else {
    if (plan && !plan.ok) fallback = { ...plan.fallback, message: `${plan.fallback.message}; answered by lexical recall over descriptors and handles` };
    if (wantTraces) traceCandidates = lexicalLeg(TRACE_KIND, () => lexicalCandidates({ handle, table: "reasoning_traces", terms, limit: pool, budget }));
    if (wantLearnings) learningCandidates = lexicalLeg(LEARNING_KIND, () => lexicalCandidates({ handle, table: "learnings", terms, limit: pool, budget }));
  }

  const now = Date.now();
  const policy = fusionPolicyFor({ fingerprint: plan?.ok ? plan.fingerprint : null });
  const rank = () => ({
    traces: rankTraces({ handle, candidates: traceCandidates, opts: { now, settings, minScore, topK, policy } }),
    learningHits: rankLearnings({ handle, candidates: learningCandidates, opts: { now, settings, minScore, topK, policy } }),
  });
  const { traces, learningHits } = rec
    ? rec.time("fusion", rank, (r) => fusionExplain({ ...r, settings, minScore, topK, candidates: traceCandidates.length + learningCandidates.length, policy }))
    : rank();
  const guidance = recallGuidance({ traces, learningHits, settings });
  const latencyMs = roundScore(performance.now() - started);
  const eventId = logRecallEvent({ handle, event: recallEventOf({ agentId, queryText, mode, fallback, latencyMs, cacheHit, guidance, traces, learningHits }) });
  const found = traces.length + learningHits.length;
  // Candidates the min_score gate turned away are weak matches, not none: the reason says nothing matched well enough.
  const reason = answerReason({ found, searchable: hasReflections({ handle, traces: wantTraces, learnings: wantLearnings }) ? 1 : 0, fallback: plan && !plan.ok ? plan.fallback : null, belowFloor });
  return { eventId, mode, fallback, reason, method, cacheHit, query: queryText, traces, learnings: learningHits, guidance, latencyMs, ...(rec ? { explain: rec.result() } : {}) };
}
