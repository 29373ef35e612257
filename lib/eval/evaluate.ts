import { sql } from "drizzle-orm";
import { engineStep, read } from "../db/port";
import { getEmbedder } from "../embed/model";
import type { Fingerprint } from "../embed/providers";
import { knnSearch } from "../embed/vector-index";
import { graphBackend } from "../graph/backend";
import { CHUNKING_VERSION } from "../index/chunking";
import { DEFAULT_GROUP, DEFAULT_SEARCH_MODE, searchInputSchema } from "../index/search";
import { kindVectorSpace, spaceNeighboursPg, vectorNeighboursPg } from "../index/vectors-pg";
import { graphVectorSpace } from "../graph/engines/pg";
import { recallBackend } from "../recall/backend";
import { FUSION_WEIGHTS } from "../retrieval/fusion";
import { stores } from "../stores/backend";
import { listProbeCandidates, openStoreHere, readProbeSources, sharedSentenceCheck, storeReader, type StoreCandidates, type StoreReader } from "./content";
import { contentFingerprint, drawProbes, PROBE_GENERATOR_VERSION, PROBE_KINDS, probeSetStaleReason, type Probe, type ProbeKind } from "./probes";
import { latestProbeSet, saveProbeSet, type StoredProbeSet } from "./runs";
import { rankOf, scoreOf } from "./score";
import type { EvalMode, EvalProgress, EvalResults, EvalSettings, EvalTarget } from "./report";

/**
 * One self-recall evaluation of a store (docs/self-recall.md): its probe set,
 * each probe asked in each mode through the entry points agents use, scored
 * per kind and mode. `active` is the store as it answers now (plus `knn`, the
 * one measure a model can be compared on before it serves); `shadow` is the
 * held re-embed's candidate model, by `knn` alone.
 */
/** The mode whose figure is the store's self-recall (the default an agent gets). */
export const HEADLINE_MODE: EvalMode = "hybrid";
/** The mode a model switch is judged on (the only one both models can be asked in before the switch). */
export const GATE_MODE: EvalMode = "knn";

const SEARCH_DEPTH = 50;
const RECALL_DEPTH = 10;

function modesFor(kind: ProbeKind, target: EvalTarget, vectorsHere: boolean): EvalMode[] {
  if (target === "shadow") return ["knn"];
  const served: EvalMode[] = kind === "thought" ? ["hybrid"] : ["fts", "vector", "hybrid"];
  return vectorsHere ? [...served, "knn"] : served;
}

/**
 * Keeps a run to a share of one core: each step is timed, and after it the
 * run pauses so its own work is at most `share` of its time (1: it only
 * yields, so requests get turns between steps).
 */
export function pacer(cpuShare: number) {
  const share = Math.min(1, Math.max(0.001, cpuShare));
  const spent = { busyMs: 0, pausedMs: 0, share };
  return {
    spent,
    async step<T>(work: () => Promise<T>): Promise<T> {
      const started = performance.now();
      const out = await work();
      const took = performance.now() - started;
      spent.busyMs += took;
      const pause = share < 1 ? took * (1 / share - 1) : 0;
      spent.pausedMs += pause;
      await new Promise((resolve) => (pause >= 1 ? setTimeout(resolve, pause) : setImmediate(resolve)));
      return out;
    },
  };
}

/** The store's serving model (its meta), or null before its first vector. */
export async function activeFingerprintOf(reader: StoreReader): Promise<string | null> {
  const rows = await reader.rows<{ value: string }>(
    reader.dialect === "pg" ? sql`select value from store_meta where key = 'active_fingerprint'` : sql`select value from meta where key = 'active_fingerprint'`,
  );
  return rows[0]?.value ?? null;
}

/** The full-text tokenizer the store's chunks are indexed with (SQLite records it in meta; PostgreSQL's is the english text search configuration). */
async function tokenizerOf(reader: StoreReader): Promise<string> {
  if (reader.dialect === "pg") return "postgres english tsvector";
  return (await reader.rows<{ value: string }>(sql`select value from meta where key = 'fts_tokenizer'`))[0]?.value ?? "unicode61 remove_diacritics 2";
}

/** The store's probe set for this seed and size: the stored one while it fits the content, else a new one (saved). */
export async function currentProbeSet({
  store,
  reader,
  candidates,
  seed,
  perKind,
  pace = pacer(1),
}: {
  store: string;
  reader: StoreReader;
  candidates: StoreCandidates;
  seed: number;
  perKind: number;
  /** Drawing reads the store (a look-up per probe): paced like the questions. */
  pace?: ReturnType<typeof pacer>;
}): Promise<{ set: StoredProbeSet; drawnBecause: string | null }> {
  const now = contentFingerprint(candidates);
  const hashes = new Map(PROBE_KINDS.flatMap((k) => candidates[k].map((c) => [`${k}:${c.key}`, c.hash] as const)));
  const stored = await latestProbeSet({ store });
  let drawnBecause: string | null = stored ? null : "the store had no probe set";
  if (stored) {
    drawnBecause =
      stored.perKind !== perKind
        ? `another size was asked for (${stored.perKind} → ${perKind} per kind)`
        : probeSetStaleReason({ set: stored, now, seed, currentHashes: (p) => hashes.get(`${p.kind}:${p.target}`) });
    if (!drawnBecause) return { set: stored, drawnBecause: null };
  }
  const shared = sharedSentenceCheck(reader);
  const probes = await drawProbes({
    candidates,
    seed,
    perKind,
    read: (kind, keys) => pace.step(() => readProbeSources(reader, kind, keys)),
    shared: (sentence, key) => pace.step(() => shared(sentence, key)),
  });
  const set = await saveProbeSet({ store, seed, perKind, content: now, probes, generatorVersion: PROBE_GENERATOR_VERSION });
  return { set, drawnBecause };
}

/** Chunk row ids to their documents' paths (one SQL for both databases). */
async function pathsOfChunks(reader: StoreReader, ids: number[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await reader.rows<{ id: number | string; path: string }>(
    sql`select c.id as id, d.path as path from chunks c join documents d on d.doc_id = c.doc_id where c.id in (${sql.join(
      ids.map((id) => sql`${id}`),
      sql`, `,
    )})`,
  );
  const byId = new Map(rows.map((r) => [Number(r.id), r.path]));
  return ids.map((id) => byId.get(id)).filter((p): p is string => p !== undefined);
}

/**
 * Where the vectors of traces, learnings and thoughts are, and how a hit's
 * ref id (the embed queue's) names the probe's answer: traces and learnings
 * by their id, thoughts by their seq (the answer is the thought's id). Only
 * vectors of the text the row holds now are neighbours. Code constants.
 */
const KIND_VECTORS: Record<"trace" | "learning" | "thought", { table: string; refColumn: string; hashColumn: string }> = {
  trace: { table: "reasoning_traces", refColumn: "id", hashColumn: "descriptor_hash" },
  learning: { table: "learnings", refColumn: "id", hashColumn: "handle_hash" },
  thought: { table: "thoughts", refColumn: "seq", hashColumn: "content_hash" },
};

/** A kind's vectors on PostgreSQL: a thought's by its seq (as remember finds them), a trace's or learning's by its id (as recall does). */
const kindSpace = (kind: keyof typeof KIND_VECTORS) => (kind === "thought" ? graphVectorSpace(kind) : kindVectorSpace({ kind, ...KIND_VECTORS[kind] }));

/** Ref ids of one kind to its answer keys, nearest first (rows gone or changed since their vector drop out). */
async function keysOfRefs(reader: StoreReader, kind: keyof typeof KIND_VECTORS, refIds: number[]): Promise<string[]> {
  if (refIds.length === 0) return [];
  const { table, refColumn } = KIND_VECTORS[kind];
  const rows = await reader.rows<{ ref: number | string; key: string }>(
    sql`select ${sql.identifier(refColumn)} as ref, cast(id as text) as key from ${sql.identifier(table)} where ${sql.identifier(refColumn)} in (${sql.join(
      refIds.map((id) => sql`${id}`),
      sql`, `,
    )})`,
  );
  const byRef = new Map(rows.map((r) => [Number(r.ref), String(r.key)]));
  return refIds.map((id) => byRef.get(id)).filter((k): k is string => k !== undefined);
}

/** The answers of a probe's nearest vectors of its kind under one model (both databases): documents for chunks, else the kind's own ids. */
async function knnKeys({ store, reader, kind, fingerprintId, query }: { store: string; reader: StoreReader; kind: ProbeKind; fingerprintId: string; query: Float32Array }): Promise<string[]> {
  const chunks = kind === "document" || kind === "memory";
  const ids = await read(
    await openStoreHere(store),
    engineStep({
      sqlite: (handle) => knnSearch({ handle, kind: chunks ? "chunk" : kind, fingerprintId, query, k: SEARCH_DEPTH }).hits.map((h) => h.refId),
      pg: async (tx) => {
        const knn = chunks ? await vectorNeighboursPg({ tx, fingerprintId, query, k: SEARCH_DEPTH, where: [] }) : await spaceNeighboursPg({ tx, space: kindSpace(kind), fingerprintId, query, k: SEARCH_DEPTH });
        return knn.ok ? knn.hits.map((h) => h.id) : [];
      },
    }),
  );
  return chunks ? pathsOfChunks(reader, ids) : keysOfRefs(reader, kind, ids);
}

type Asked = { keys: string[]; fallback: boolean };

async function ask({ store, reader, probe, mode, fingerprintId, embed }: { store: string; reader: StoreReader; probe: Probe; mode: EvalMode; fingerprintId: string; embed: (q: string) => Promise<Float32Array> }): Promise<Asked> {
  const q = probe.q.slice(0, 2000);
  if (mode === "knn") {
    // A provider that fails mid-run costs this question its answer (counted as a fallback), not the run.
    const query = await embed(q).catch(() => null);
    return query ? { keys: await knnKeys({ store, reader, kind: probe.kind, fingerprintId, query }), fallback: false } : { keys: [], fallback: true };
  }
  if (probe.kind === "document" || probe.kind === "memory") {
    const r = await stores().search({ store, input: searchInputSchema.parse({ q, mode, limit: SEARCH_DEPTH }) });
    return { keys: (r.results as { path: string }[]).map((h) => h.path), fallback: r.effective_mode !== mode };
  }
  if (probe.kind === "trace" || probe.kind === "learning") {
    const signals = mode === "fts" ? "lexical" : mode;
    const r = await recallBackend().recall({ store, agentId: "system:self-recall", input: { query: q, kinds: [probe.kind], top_k: RECALL_DEPTH, min_score: 0, signals } });
    const hits = probe.kind === "trace" ? r.traces : r.learnings;
    return { keys: hits.map((h) => String(h.id)), fallback: r.fallback !== null };
  }
  const r = await graphBackend().remember({ store, input: { query: q, kinds: ["thought"], limit: RECALL_DEPTH } });
  return { keys: r.results.filter((h) => h.kind === "thought").map((h) => h.id), fallback: r.fallback !== null };
}

export type EvaluationOutcome = {
  set: StoredProbeSet;
  drawnBecause: string | null;
  target: EvalTarget;
  fingerprintId: string;
  settings: EvalSettings;
  results: EvalResults;
  durationMs: number;
};

/**
 * Ask every current probe of the store's set in each mode of `target` and
 * score the answers. `onProgress` is told after each probe (the job's
 * progress and heartbeat); it may throw to stop the run.
 *
 * `cpuShare` paces the run: after each question it pauses so that its own
 * work (the time the question took) is at most that share of the time it
 * runs — a scheduled run at 0.05 takes twenty times its work in wall time,
 * and the requests it shares the process with wait on it only that often.
 */
export async function evaluateStore({
  store,
  target,
  seed,
  perKind,
  configured,
  cpuShare = 1,
  onProgress,
}: {
  store: string;
  target: EvalTarget;
  seed: number;
  perKind: number;
  configured: Fingerprint;
  cpuShare?: number;
  onProgress?: (p: EvalProgress) => void | Promise<void>;
}): Promise<EvaluationOutcome> {
  const started = Date.now();
  const reader = await storeReader(store);
  await onProgress?.({ phase: "probes", done: 0, total: 0 });
  const pace = pacer(cpuShare);
  const candidates = await pace.step(() => listProbeCandidates(reader));
  const { set, drawnBecause } = await currentProbeSet({ store, reader, candidates, seed, perKind, pace });
  const hashes = new Map(PROBE_KINDS.flatMap((k) => candidates[k].map((c) => [`${k}:${c.key}`, c.hash] as const)));
  const probes = set.probes.filter((p) => hashes.get(`${p.kind}:${p.target}`) === p.targetHash);
  const active = (await activeFingerprintOf(reader)) ?? configured.id;
  // The active model's raw neighbours can be asked only while it is the configured one (queries are embedded by it).
  const fingerprintId = target === "shadow" ? configured.id : active;
  const vectorsHere = active === configured.id;
  const { provider } = getEmbedder();
  const embed = async (q: string) => (await provider.embed([q], "query"))[0];
  const modes = Object.fromEntries(PROBE_KINDS.map((k) => [k, modesFor(k, target, vectorsHere)])) as Record<ProbeKind, EvalMode[]>;
  const total = probes.reduce((n, p) => n + modes[p.kind].length, 0);
  const ranks = new Map<string, { ranks: number[]; fallbacks: number }>();
  let done = 0;
  for (const probe of probes) {
    for (const mode of modes[probe.kind]) {
      // A long run leaves room for requests between its questions; a paced one pauses for its share.
      const answer = await pace.step(() => ask({ store, reader, probe, mode, fingerprintId, embed }));
      const cell = ranks.get(`${probe.kind}:${mode}`) ?? { ranks: [], fallbacks: 0 };
      cell.ranks.push(rankOf(answer.keys, probe.target));
      if (answer.fallback) cell.fallbacks++;
      ranks.set(`${probe.kind}:${mode}`, cell);
      done++;
      await onProgress?.({ phase: "asking", done, total });
    }
  }
  const byKind: EvalResults["by_kind"] = {};
  for (const kind of PROBE_KINDS) {
    for (const mode of modes[kind]) {
      const cell = ranks.get(`${kind}:${mode}`);
      const score = cell ? scoreOf(cell.ranks, cell.fallbacks) : null;
      if (score) (byKind[kind] ??= {})[mode] = score;
    }
  }
  const pooledScore = (kinds: readonly ProbeKind[], mode: EvalMode) => {
    const cells = kinds.map((k) => ranks.get(`${k}:${mode}`)).filter((c) => c !== undefined);
    return scoreOf(
      cells.flatMap((c) => c.ranks),
      cells.reduce((n, c) => n + c.fallbacks, 0),
    );
  };
  const overall = pooledScore(PROBE_KINDS, target === "shadow" ? GATE_MODE : HEADLINE_MODE);
  return {
    set,
    drawnBecause,
    target,
    fingerprintId,
    settings: {
      seed,
      per_kind: perKind,
      generator_version: set.generatorVersion,
      modes,
      search: { default_mode: DEFAULT_SEARCH_MODE, group: DEFAULT_GROUP, chunking_version: CHUNKING_VERSION, fusion_weights: FUSION_WEIGHTS[configured.provider], tokenizer: await tokenizerOf(reader) },
      model: { provider: configured.provider, model: configured.model, dimension: configured.dimension },
    },
    results: {
      by_kind: byKind,
      overall,
      gate: pooledScore(PROBE_KINDS, GATE_MODE),
      excluded: set.probes.length - probes.length,
      cost: { busy_ms: Math.round(pace.spent.busyMs), paused_ms: Math.round(pace.spent.pausedMs), cpu_share: pace.spent.share },
    },
    durationMs: Date.now() - started,
  };
}
